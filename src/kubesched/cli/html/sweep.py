"""`kubesched sweep --html`: the sweep's table and two plots, as one self-contained page.

The plots are SVG drawn by the template from coordinates worked out here (no
script, nothing fetched): pending pods against nodes added, a point per
variation and one line per scheduler config, scale and gates through the
fewest pending at each count of nodes; and each variation's CPU and memory
utilisation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubesched.sweep.task import VariationResult

if TYPE_CHECKING:
    import jinja2


@functools.cache
def _environment() -> jinja2.Environment:
    # Lazy: jinja2 only for --html, not for every command that imports the CLI.
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("kubesched.cli.html", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


WIDTH, HEIGHT, MARGIN = 640, 300, 48
# Distinguishable on white, and in grey print.
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")


@dataclass(slots=True)
class Series:
    label: str
    colour: str
    points: list[tuple[float, float, str]] = field(default_factory=list)  # x, y, tooltip

    @property
    def polyline(self) -> str:
        """The line through the fewest pending pods at each x (several variations
        may add as many nodes, of different pools): what that many nodes can do."""
        best: dict[float, float] = {}
        for x, y, _ in self.points:
            best[x] = max(best.get(x, y), y)  # SVG's y grows downwards
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in sorted(best.items()))


@dataclass(slots=True)
class Axis:
    ticks: list[tuple[float, str]]  # position, label


def _scale(value: float, top: float, length: int) -> float:
    return 0.0 if top <= 0 else value / top * length


def _ticks(top: float, length: int, horizontal: bool) -> Axis:
    """About five ticks at whole steps (counts of nodes and pods are whole)."""
    step = max(1, math.ceil(top / 5))
    ticks = []
    value = 0
    while value <= top:
        pos = _scale(value, top, length)
        position = MARGIN + pos if horizontal else HEIGHT - MARGIN - pos
        ticks.append((position, str(value)))
        value += step
    return Axis(ticks)


def pending_series(rows: Sequence[VariationResult]) -> tuple[list[Series], Axis, Axis]:
    """Pending pods (y) against nodes added (x), one series per config, scale and
    gates (whatever else varies), points in order of x."""
    ok = [r for r in rows if not r.error]
    groups: dict[str, list[VariationResult]] = {}
    for row in ok:
        p = row.params
        label = f"config {p['config']}, scale {p['scale']}, gates {p['featureGates']}"
        groups.setdefault(label, []).append(row)
    top_x = float(max((r.nodes_added for r in ok), default=0)) or 1.0
    top_y = float(max((r.pending for r in ok), default=0)) or 1.0
    inner_w, inner_h = WIDTH - 2 * MARGIN, HEIGHT - 2 * MARGIN
    series = []
    for i, (label, members) in enumerate(sorted(groups.items())):
        s = Series(label, COLOURS[i % len(COLOURS)])
        for row in sorted(members, key=lambda r: (r.nodes_added, r.index)):
            x = MARGIN + _scale(row.nodes_added, top_x, inner_w)
            y = HEIGHT - MARGIN - _scale(row.pending, top_y, inner_h)
            tip = f"#{row.index} {row.params['nodes']}: {row.pending} pending"
            s.points.append((x, y, tip))
        series.append(s)
    return series, _ticks(top_x, inner_w, True), _ticks(top_y, inner_h, False)


def sweep_page(spec: str, rows: Sequence[VariationResult]) -> str:
    series, x_axis, y_axis = pending_series(rows)
    ok = [r for r in rows if not r.error]
    bar_width = max(2.0, (WIDTH - 2 * MARGIN) / max(1, 2 * len(ok)))
    bars = []
    for i, row in enumerate(ok):
        x = MARGIN + i * 2 * bar_width
        bars.append(
            {
                "x": x,
                "width": bar_width * 0.9,
                "cpu": _scale(row.cpu_utilisation, 1.0, HEIGHT - 2 * MARGIN),
                "memory": _scale(row.memory_utilisation, 1.0, HEIGHT - 2 * MARGIN),
                "label": f"#{row.index}: cpu {row.cpu_utilisation:.0%}, "
                f"memory {row.memory_utilisation:.0%}",
            }
        )
    template = _environment().get_template("sweep.html.j2")
    return template.render(
        spec=spec,
        rows=rows,
        series=series,
        x_axis=x_axis,
        y_axis=y_axis,
        bars=bars,
        bar_width=bar_width,
        width=WIDTH,
        height=HEIGHT,
        margin=MARGIN,
    )
