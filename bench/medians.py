"""The median of a workload's repeated runs, and the spread of its figures.

Shared by `python -m bench` (the repeats of one run) and `python -m bench.report
--merge` (single runs of one commit made in several sessions, pooled)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Figures of which --repeat keeps the minimum, median and maximum ("spread").
SPREAD_KEYS = (
    ("pods_per_second",),
    ("scheduler_cpu_seconds",),
    ("peak_rss_mb",),
    ("create_to_bound_ms", "p50"),
    ("create_to_bound_ms", "p99"),
    ("start_to_bound_ms", "p50"),
    ("start_to_bound_ms", "p99"),
)


def median_run(tries: list[dict[str, Any]]) -> dict[str, Any]:
    """The try with the median pods/s among the successful ones (the lower median
    for an even count; the last try if none succeeded), with every try's rate in
    ``repeats`` and the minimum, median and maximum of each SPREAD_KEYS figure
    over the successful tries in ``spread``."""
    ok = sorted((r for r in tries if r.get("status") == "ok"), key=lambda r: r["pods_per_second"])
    chosen = dict(ok[(len(ok) - 1) // 2] if ok else tries[-1])
    if len(tries) > 1:
        chosen["repeats"] = [
            {
                "status": r.get("status"),
                "pods_per_second": r.get("pods_per_second"),
                "foreign_share": (r.get("cpu") or {}).get("foreign_share"),
                **({"broken": r["broken"]} if r.get("broken") else {}),
            }
            for r in tries
        ]
        spread: dict[str, dict[str, float]] = {}
        for path in SPREAD_KEYS:
            values = sorted(v for r in ok if isinstance(v := _dig(r, path), int | float))
            if values:
                spread[".".join(path)] = {
                    "min": values[0],
                    "median": values[(len(values) - 1) // 2],
                    "max": values[-1],
                }
        chosen["spread"] = spread
    return chosen


def _dig(d: Any, path: Sequence[str]) -> Any:
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None
    return d
