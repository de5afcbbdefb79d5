"""How `simulate` shows its result: a readable report, or JSON / YAML for programs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubesched.api.quantity import format_amount
from kubesched.cli.gangs import gang_outcomes, gangs_scheduled
from kubesched.cli.workloads import new_and_running, placements_by_workload, reason_groups
from kubesched.framework.explain import ProfilePlugins
from kubesched.simulation.simulator import SimulationResult

# What "simulated" means in the summary line, said once under it.
SIMULATED_TIME_NOTE = (
    "simulated time: the scheduler's own clock in the simulation; backoffs and Permit "
    "waits are jumped over rather than waited for, so it is how long a real scheduler "
    "would have spent waiting, not how long this run took"
)
# Node names shown per workload in the text report; the rest are counted.
NODES_SHOWN = 4
# Workloads listed in the text report (the largest first); -o json has every pod.
WORKLOAD_ROWS = 50


def evictions(result: SimulationResult) -> dict[str, str]:
    """Each pod deleted by preemption, with its Preempted event's text (which names
    the node and the preemptor's UID, as kube-scheduler's does)."""
    why = {e.pod: e.message for e in result.events if e.reason == "Preempted"}
    return {key: why.get(key, "") for key in result.evicted}


def allocated_devices(result: SimulationResult) -> dict[str, list[dict[str, str]]]:
    """Each bound pod's devices: those of the allocated claims reserved for it."""
    found: dict[str, list[dict[str, str]]] = {}
    for claim in result.claims.values():
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for ref in claim.status.reserved_for:
            key = f"{claim.metadata.namespace}/{ref.name}"
            if ref.resource != "pods" or result.placements.get(key) is None:
                continue
            found.setdefault(key, []).extend(
                {
                    "claim": claim.metadata.name,
                    "request": r.request,
                    "device": f"{r.driver}/{r.pool}/{r.device}",
                }
                for r in allocation.devices.results
            )
    return dict(sorted(found.items()))


def as_document(
    result: SimulationResult, problems: list[str], notes: list[str], seed: int | None = None
) -> dict[str, Any]:
    """The machine-readable result: `placements` and `reasons` first, then details."""
    return {
        "placements": result.placements,
        "reasons": result.reasons,
        # Pods held at PreEnqueue, never attempted: no FailedScheduling, as in a cluster.
        "notAttempted": {
            key: {"plugin": gate.plugin, "message": gate.message}
            for key, gate in result.not_attempted.items()
        },
        # Victims of preemption are gone from the cluster, so not in `placements`.
        "evicted": evictions(result),
        # DRA devices of the bound pods, by pod (only with ResourceClaims).
        **({"devices": allocated_devices(result)} if result.claims else {}),
        # scheduler-plugins PodGroups: placed, waiting or impossible (only with PodGroups).
        **(
            {"gangs": {k: g.as_dict() for k, g in gang_outcomes(result).items()}}
            if gangs_scheduled(result)
            else {}
        ),
        "summary": {
            "pods": len(result.placements),
            "scheduled": result.scheduled,
            "unscheduled": len(result.placements) - result.scheduled,
            "evicted": len(result.evicted),
            "attempts": result.attempts,
            "wallSeconds": round(result.wall_seconds, 3),
            "simulatedSeconds": round(result.simulated_seconds, 3),
            "seed": seed,
        },
        # The profiles that ran (by schedulerName) and their plugins.
        "profiles": [msgspec.to_builtins(p) for p in result.profiles],
        "nodes": {
            u.name: {
                "pods": u.pods,
                "requested": {k: v for k, v in u.requested.items() if v},
                "allocatable": {k: v for k, v in u.allocatable.items() if v},
            }
            for u in result.nodes
        },
        "problems": problems,
        "notes": notes,
    }


def profile_line(profile: ProfilePlugins) -> str:
    """Which profile ran, with its filters and its score plugins' weights."""
    scores = ", ".join(f"{name}×{weight}" for name, weight in profile.score.items())
    post = f"; postFilter: {', '.join(profile.post_filter)}" if profile.post_filter else ""
    return (
        f"profile {profile.profile}: filter: {', '.join(profile.filter) or '-'}; "
        f"score: {scores or '-'}{post}"
    )


def _usage(requested: int, allocatable: int, resource: str) -> str:
    pct = f"{100 * requested / allocatable:5.1f}%" if allocatable else "  n/a "
    return f"{format_amount(resource, requested)}/{format_amount(resource, allocatable)} {pct}"


def counted(names: Counter[str], shown: int) -> str:
    """The most used names with their counts (`a×3, b×2`), and how many more."""
    top = sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{name}×{count}" if count > 1 else name for name, count in top[:shown])
    return text + (f" … +{len(top) - shown}" if len(top) > shown else "")


def print_workloads(
    console: Console,
    result: SimulationResult,
    running: Collection[str],
    zones: Mapping[str, str],
) -> None:
    """One row per workload: its new pods placed and pending, those already running,
    and the nodes and zones the new ones went to (the most used first)."""
    table = Table(title="Placements by workload", title_justify="left")
    table.add_column("workload", overflow="fold")
    table.add_column("new placed", justify="right")
    table.add_column("pending", justify="right")
    table.add_column("running before", justify="right")
    table.add_column("zones", overflow="fold")
    table.add_column("nodes", overflow="fold")
    workloads = placements_by_workload(result, running, zones)
    if len(workloads) > WORKLOAD_ROWS:
        table.caption = (
            f"… {len(workloads) - WORKLOAD_ROWS} more workloads (-o json lists every pod)"
        )
    for w in workloads[:WORKLOAD_ROWS]:
        table.add_row(
            Text(str(w.workload)),
            str(w.placed),
            str(w.pending),
            str(w.running),
            Text(counted(w.zones, NODES_SHOWN)),
            Text(counted(w.nodes, NODES_SHOWN)),
        )
    console.print(table)


def print_report(
    console: Console,
    result: SimulationResult,
    notes: list[str],
    running: Collection[str] = (),
    zones: Mapping[str, str] | None = None,
) -> None:
    """The text report (the problems went to stderr). Every text from the input (names,
    kinds, reasons)
    goes in as a rich Text, never as a str: rich would read `[bold]` in a node's name
    as markup (and fail on `[/]`), `:smile:` as an emoji code."""
    for note in notes:
        console.print(Text(f"note: {note}", style="dim"))
    used = {pod.spec.scheduler_name for pod in result.pods.values()}
    for profile in result.profiles:
        if profile.profile in used:  # the profiles that scheduled something
            console.print(Text(profile_line(profile)))

    table = Table(title="Nodes", title_justify="left")
    table.add_column("node")
    table.add_column("pods", justify="right")
    table.add_column("cpu requested/allocatable", justify="right")
    table.add_column("memory requested/allocatable", justify="right")
    for u in sorted(result.nodes, key=lambda n: n.name):
        table.add_row(
            Text(u.name),
            f"{u.pods}/{u.allocatable.get('pods', 0)}",
            _usage(u.requested.get("cpu", 0), u.allocatable.get("cpu", 0), "cpu"),
            _usage(u.requested.get("memory", 0), u.allocatable.get("memory", 0), "memory"),
        )
    console.print(table)
    print_workloads(console, result, running, zones or {})

    if result.reasons:
        # Replicas of one workload usually fail for one reason: show each reason once.
        pending = Table(title="Unscheduled pods", title_justify="left", show_lines=True)
        pending.add_column("pods", justify="right")
        pending.add_column("examples")
        pending.add_column("reason", overflow="fold")
        for reason, keys in reason_groups(result.reasons):
            shown = "\n".join(keys[:3]) + (f"\n… {len(keys) - 3} more" if len(keys) > 3 else "")
            pending.add_row(str(len(keys)), Text(shown), Text(reason))
        console.print(pending)

    if result.not_attempted:
        # Held back before any attempt: kube-scheduler writes no event for these.
        by_gate: dict[tuple[str, str], list[str]] = {}
        for key, gate in result.not_attempted.items():
            by_gate.setdefault((gate.plugin, gate.message), []).append(key)
        held = Table(
            title="Not attempted (held at PreEnqueue)", title_justify="left", show_lines=True
        )
        held.add_column("pods", justify="right")
        held.add_column("examples")
        held.add_column("plugin")
        held.add_column("message", overflow="fold")
        for (plugin, message), keys in sorted(by_gate.items(), key=lambda kv: -len(kv[1])):
            shown = "\n".join(keys[:3]) + (f"\n… {len(keys) - 3} more" if len(keys) > 3 else "")
            held.add_row(str(len(keys)), Text(shown), Text(plugin), Text(message))
        console.print(held)

    if gangs_scheduled(result):
        gangs = Table(title="Gangs (PodGroups)", title_justify="left", show_lines=True)
        gangs.add_column("group")
        gangs.add_column("scheduled/min", justify="right")
        gangs.add_column("state")
        gangs.add_column("phase")
        gangs.add_column("reason", overflow="fold")
        for key, gang in gang_outcomes(result).items():
            gangs.add_row(
                Text(key),
                f"{gang.scheduled}/{gang.min_member} (of {gang.pods})",
                gang.state,
                Text(gang.phase),
                Text(gang.reason),
            )
        console.print(gangs)

    if result.evicted:
        evicted = Table(title="Evicted by preemption", title_justify="left")
        evicted.add_column("pod")
        evicted.add_column("event", overflow="fold")
        for key, message in evictions(result).items():
            evicted.add_row(Text(key), Text(message))
        console.print(evicted)

    placed, unscheduled, already = new_and_running(result, running)
    gone = f", {len(result.evicted)} evicted by preemption" if result.evicted else ""
    console.print(
        f"[bold]{placed}/{placed + unscheduled} new pods scheduled[/bold], "
        f"{unscheduled} unscheduled"
        f"{gone}; {already} already running; {result.attempts} attempts in "
        f"{result.wall_seconds:.2f}s ({result.simulated_seconds:.0f}s simulated)",
        highlight=False,
    )
    console.print(Text(SIMULATED_TIME_NOTE, style="dim"))
