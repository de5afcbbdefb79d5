"""The results: ratios, a table on the terminal, the JSON file and the PNG plot."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.schedulers import KUBE_SCHEDULER, KUBESCHED

Result = dict[str, Any]
# Above this share of the CPUs taken by other processes, a figure is flagged.
FOREIGN_WARN = 0.1


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or b == 0:
        return None
    if math.isnan(a) or math.isnan(b):
        return None
    return round(a / b, 3)


def ratios(entry: Result) -> dict[str, float | None]:
    """kubesched / kube-scheduler for one workload (None where either is missing).

    e2e_pods_per_second: > 1 means kubesched is faster. e2e_p99_latency (of the
    /metrics attempt histograms), e2e_p99_create_to_bound (seen by the client),
    e2e_peak_rss and e2e_cpu_seconds (the scheduler's CPU time in the measured
    phase): < 1 means kubesched is better. inprocess_vs_e2e: kubesched's
    in-process rate over kube-scheduler's end-to-end rate (no API for kubesched:
    an upper bound on what a faster API path could give, not a like-for-like)."""
    e2e = entry.get("e2e") or {}
    ks, us = e2e.get(KUBE_SCHEDULER) or {}, e2e.get(KUBESCHED) or {}
    ok = ks.get("status") == "ok" and us.get("status") == "ok"
    inproc = entry.get("inprocess") or {}
    return {
        "e2e_pods_per_second": _ratio(us.get("pods_per_second"), ks.get("pods_per_second"))
        if ok
        else None,
        "e2e_p99_latency": _ratio(
            _get(us, "attempt_latency_ms", "p99"), _get(ks, "attempt_latency_ms", "p99")
        )
        if ok
        else None,
        "e2e_p99_create_to_bound": _ratio(
            _get(us, "create_to_bound_ms", "p99"), _get(ks, "create_to_bound_ms", "p99")
        )
        if ok
        else None,
        "e2e_peak_rss": _ratio(us.get("peak_rss_mb"), ks.get("peak_rss_mb")) if ok else None,
        "e2e_cpu_seconds": _ratio(us.get("scheduler_cpu_seconds"), ks.get("scheduler_cpu_seconds"))
        if ok
        else None,
        "inprocess_vs_e2e": _ratio(inproc.get("pods_per_second"), ks.get("pods_per_second"))
        if inproc.get("status") == "ok" and ks.get("status") == "ok"
        else None,
    }


def _why(result: Result | None) -> str | None:
    """The table's text for a result that has no figure, or None."""
    if not result:
        return "—"
    status = result.get("status")
    if status == "n/a":
        missing = result.get("plugin") or result.get("missing")
        return f"n/a: no {missing}" if missing else "n/a"
    if status != "ok":
        return str(status)
    return None


def missing(entry: Result) -> list[str]:
    """Why figures of a workload are missing or suspect, one line each."""
    lines = []
    results = [("in-process", "kubesched", entry.get("inprocess"))]
    results += [("e2e", who, r) for who, r in (entry.get("e2e") or {}).items()]
    for mode, who, result in results:
        if not isinstance(result, dict):
            continue
        if result.get("status") != "ok":
            reason = str(result.get("reason", "")).strip().splitlines()
            lines.append(f"{mode} {who}: {result.get('status')} — {reason[0] if reason else ''}")
        if result.get("violations"):
            lines.append(f"{mode} {who}: placements wrong: {'; '.join(result['violations'])}")
        share = _get(result, "cpu", "foreign_share")
        if result.get("status") == "ok" and isinstance(share, float) and share > FOREIGN_WARN:
            lines.append(
                f"{mode} {who}: other processes took {share:.0%} of the CPUs while measured"
            )
    return lines


def _rate(result: Result | None) -> str:
    why = _why(result)
    if why is not None or result is None:
        return why or "—"
    text = f"{result['pods_per_second']:,.0f}"
    if result.get("violations"):
        text += " (!)"
    return text


def _lat(result: Result | None, key: str = "attempt_latency_ms") -> str:
    lat = _get(result, key)
    if _why(result) is not None or not isinstance(lat, dict):
        return "—"
    return "/".join("—" if lat.get(k) is None else f"{lat[k]:.1f}" for k in ("p50", "p90", "p99"))


def _mb(result: Result | None) -> str:
    if _why(result) is not None or result is None or result.get("peak_rss_mb") is None:
        return "—"
    return f"{result['peak_rss_mb']:.0f}"


def _c2b(result: Result | None) -> str:
    lat = _get(result, "create_to_bound_ms")
    if _why(result) is not None or not isinstance(lat, dict) or lat.get("p99") is None:
        return "—"
    return f"{lat['p50']:,.0f}/{lat['p99']:,.0f}"


def _cpu(result: Result | None) -> str:
    if _why(result) is not None or result is None:
        return "—"
    return f"{result.get('scheduler_cpu_seconds', 0):.1f}"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _sizes(entry: Result) -> str:
    params = entry["params"]
    text = f"{params['nodes']}/{params['init_pods']}/{params['measure_pods']}"
    return text + (f"+{params['unschedulable_pods']}" if params.get("unschedulable_pods") else "")


def print_table(doc: Result, console: Console | None = None) -> None:
    """Two tables (throughput; latency and memory), then why figures are missing."""
    console = console or Console(width=max(150, shutil.get_terminal_size().columns))
    title = (
        f"kubesched vs kube-scheduler {doc['kubernetes_version']} — size {doc['size']}, "
        f"{doc['machine']['nproc']} CPUs, kubesched {doc.get('kubesched_commit', '')}"
    )
    speed = Table(title=f"{title}: throughput", title_justify="left")
    for column in (
        "workload",
        "nodes/init/\nmeasured",
        "in-process\npods/s",
        "in-process\npeak RSS MB",
        "e2e pods/s\nkube-scheduler",
        "e2e pods/s\nkubesched",
        "ratio\nks / k-s",
        "sched CPU s\nk-s / ks",
    ):
        speed.add_column(column, justify="left" if column == "workload" else "right")
    cost = Table(title=f"{title}: latency (ms) and memory", title_justify="left")
    for column in (
        "workload",
        "attempt p50/p90/p99\nkube-scheduler",
        "attempt p50/p90/p99\nkubesched",
        "create→bound p50/p99\nkube-scheduler",
        "create→bound p50/p99\nkubesched",
        "peak MB\nkube-scheduler",
        "peak MB\nkubesched",
    ):
        cost.add_column(column, justify="left" if column == "workload" else "right")
    for name, entry in doc["workloads"].items():
        e2e = entry.get("e2e") or {}
        ks, us = e2e.get(KUBE_SCHEDULER), e2e.get(KUBESCHED)
        inproc = entry.get("inprocess")
        speed.add_row(
            name,
            _sizes(entry),
            _rate(inproc) if "inprocess" in entry else "—",
            _mb(inproc) if "inprocess" in entry else "—",
            _rate(ks) if "e2e" in entry else "—",
            _rate(us) if "e2e" in entry else "—",
            _x(entry["ratios"]["e2e_pods_per_second"]),
            f"{_cpu(ks)} / {_cpu(us)}",
        )
        cost.add_row(name, _lat(ks), _lat(us), _c2b(ks), _c2b(us), _mb(ks), _mb(us))
    console.print(speed)
    console.print(cost)
    for name, entry in doc["workloads"].items():
        for line in missing(entry):
            console.print(f"  {name} — {line}", markup=False, highlight=False)


def write_json(doc: Result, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def _gap(entry: Result) -> str:
    """Why a workload has no end-to-end ratio, in a few words."""
    e2e = entry.get("e2e") or {}
    for who in (KUBESCHED, KUBE_SCHEDULER):
        result = e2e.get(who)
        if isinstance(result, dict) and result.get("status") != "ok":
            missing = result.get("plugin") or result.get("missing")
            if result.get("status") == "n/a" and missing:
                return f"{who}: n/a — no {missing}"
            return f"{who}: {result.get('status')}"
    inproc = entry.get("inprocess")
    if isinstance(inproc, dict) and inproc.get("status") == "n/a":
        return f"kubesched: n/a — no {inproc.get('plugin', 'plugin')}"
    return "not run"


def plot(doc: Result, path: Path) -> None:
    """Bars of kubesched / kube-scheduler per workload, on a log scale around 1.

    Left, throughput (higher is better for kubesched): end-to-end pods/s, and
    kubesched in-process over kube-scheduler end-to-end. Right, costs (lower is
    better): p99 scheduling-attempt latency and peak memory, end to end. A
    workload without a ratio says why where its bars would be."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(doc["workloads"])
    panels = [
        (
            "throughput: kubesched / kube-scheduler (higher is better)",
            [
                ("e2e_pods_per_second", "end-to-end pods/s", "#1f77b4", ""),
                ("inprocess_vs_e2e", "kubesched in-process ÷ kube-scheduler e2e", "#aec7e8", "//"),
            ],
        ),
        (
            "cost: kubesched / kube-scheduler (lower is better)",
            [
                (
                    "e2e_p99_latency",
                    "p99 attempt latency, /metrics (k-s: incl. bind)",
                    "#d62728",
                    "..",
                ),
                ("e2e_p99_create_to_bound", "p99 create→bound (client)", "#ff7f0e", ""),
                ("e2e_peak_rss", "peak memory (VmHWM)", "#ff9896", ""),
                ("e2e_cpu_seconds", "scheduler CPU time", "#9467bd", ""),
            ],
        ),
    ]
    fig, axes = plt.subplots(1, 2, figsize=(16, 7))
    for ax, (title, series) in zip(axes, panels, strict=True):
        width = 0.8 / len(series)
        seen: list[float] = []
        for i, (key, label, color, hatch) in enumerate(series):
            xs, ys = [], []
            for j, name in enumerate(names):
                value = doc["workloads"][name]["ratios"].get(key)
                if value is None:
                    continue
                x = j - 0.4 + width * (i + 0.5)
                xs.append(x)
                ys.append(value)
                seen.append(value)
                ax.annotate(
                    f"{value:.2f}",
                    (x, value),
                    ha="center",
                    va="bottom",
                    fontsize=6.5,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
            ax.bar(xs, ys, width, label=label, color=color, hatch=hatch, edgecolor="black")
        low = min([*seen, 0.5]) / 2
        high = max([*seen, 2.0]) * 2
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        for j, name in enumerate(names):
            ratios_ = doc["workloads"][name]["ratios"]
            gaps = [i for i, (key, *_) in enumerate(series) if ratios_.get(key) is None]
            if gaps:  # say why in the first empty slot
                x = j - 0.4 + width * (gaps[0] + 0.5) if len(gaps) < len(series) else j
                ax.text(
                    x,
                    1.0,
                    _gap(doc["workloads"][name]),
                    ha="center",
                    va="center",
                    rotation=90,
                    fontsize=8,
                    color="#555555",
                )
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([_tick(doc, n) for n in names], rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10, pad=40)
        ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
        ax.grid(axis="y", which="both", alpha=0.3)
    machine = doc["machine"]
    fig.suptitle(
        f"kubesched vs kube-scheduler {doc['kubernetes_version']}, size {doc['size']} — "
        f"{machine['nproc']} CPUs ({machine['cpu_model']}), {doc['timestamp']}",
        fontsize=11,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tick(doc: Result, name: str) -> str:
    """The workload's name and its end-to-end rates (kube-scheduler / kubesched)."""
    e2e = doc["workloads"][name].get("e2e") or {}
    rates = []
    for who, short in ((KUBE_SCHEDULER, "k-s"), (KUBESCHED, "ks")):
        result = e2e.get(who)
        if isinstance(result, dict) and result.get("status") == "ok":
            rates.append(f"{short} {result['pods_per_second']:,.0f}")
    return name + (f"\n{' / '.join(rates)} pods/s" if rates else "")
