"""How `simulate --optimize` shows greedy's placement beside the batch engine's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubesched.api.durations import DurationError, parse_go_duration

if TYPE_CHECKING:
    from kubesched.simulation.optimize import Comparison


def parse_timeout(text: str) -> float:
    """`1s`, `500ms`, `2` (seconds), as a Go duration's common forms."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parse_go_duration(value)
        except DurationError:
            raise click.BadParameter(f"{text!r} is not a duration (e.g. 1s, 500ms)") from None
    if not 0 < seconds <= 3600:
        raise click.BadParameter(f"{text!r} must be more than 0s and at most 1h")
    return seconds


def comparison_document(comparison: Comparison) -> dict[str, Any]:
    batch = comparison.batch
    return {
        "profile": comparison.profile,
        "pending": comparison.pending,
        "answer": batch.source,
        "solverStatus": batch.solver_status,
        "solveSeconds": round(batch.solve_seconds, 3),
        "placedByPriority": {
            str(p): {
                "greedy": batch.greedy_placed.get(p, 0),
                "optimized": batch.placed.get(p, 0),
                "bound": batch.bound.get(p),
            }
            for p in batch.placed
        },
        "placed": {"greedy": sum(batch.greedy_placed.values()), "optimized": batch.total},
        "nodesUsed": {"greedy": batch.greedy_nodes_used, "optimized": batch.nodes_used},
        "placements": dict(sorted(batch.placements.items())),
        "held": dict(sorted(batch.held.items())),
        "refusedByFilters": dict(sorted(batch.rejected.items())),
        "evictedByGreedy": comparison.evicted,
        "note": batch.note,
    }


def print_comparison(console: Console, comparison: Comparison) -> None:
    batch = comparison.batch
    table = Table(
        title=f"Greedy and optimized (profile {comparison.profile}, "
        f"{comparison.pending} pending pods)",
        title_justify="left",
    )
    table.add_column("priority", justify="right")
    table.add_column("greedy", justify="right")
    table.add_column("optimized", justify="right")
    table.add_column("bound", justify="right")
    for priority, placed in batch.placed.items():
        bound = batch.bound.get(priority)
        table.add_row(
            str(priority),
            str(batch.greedy_placed.get(priority, 0)),
            str(placed),
            "-" if bound is None else str(bound),
        )
    table.add_row(
        "all",
        str(sum(batch.greedy_placed.values())),
        str(batch.total),
        str(sum(batch.bound.values())) if batch.bound else "-",
        style="bold",
    )
    table.add_row("nodes used", str(batch.greedy_nodes_used), str(batch.nodes_used), "")
    console.print(table)
    console.print(
        Text(
            f"answer: {batch.source}'s placement; solver {batch.solver_status} in "
            f"{batch.solve_seconds:.2f}s" + (f"; {batch.note}" if batch.note else "")
        )
    )
    if batch.held:
        reasons: dict[str, int] = {}
        for reason in batch.held.values():
            reasons[reason] = reasons.get(reason, 0) + 1
        for reason, count in sorted(reasons.items()):
            console.print(Text(f"held at greedy's placement: {count} pod(s): {reason}"))
    if batch.rejected:
        console.print(
            Text(f"{len(batch.rejected)} of the solver's placements refused by the filters")
        )
    if comparison.evicted:
        console.print(
            Text(
                f"greedy's preemption evicted {comparison.evicted} pod(s); "
                "the engine does not preempt"
            )
        )
