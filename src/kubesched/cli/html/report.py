"""The HTML report: what the page shows, gathered from a simulation's result (its
explanations as framework/explain.py recorded them, nothing recomputed) and from
capacity results, rendered with Jinja2 templates shipped as package data.

The page must stay usable at 5,000 nodes: the heat map is drawn in the browser from a
compact JSON array (one cell per node, grouped by zone, one resource at a time),
tables list groups (workloads, reasons, verdicts) rather than pods, and every long
list of names is cut to a few with a count of the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import Node
from kubesched.api.quantity import format_amount
from kubesched.cli.explain_report import node_list, score_cell, shortfall_line
from kubesched.cli.report import SIMULATED_TIME_NOTE, evictions, profile_line
from kubesched.cli.workloads import (
    NO_ZONE,
    WorkloadPlacement,
    WorkloadRef,
    new_and_running,
    placements_by_workload,
    reason_groups,
    workload_of,
)
from kubesched.framework.explain import Explanation
from kubesched.framework.state.dra import DraState
from kubesched.simulation.capacity import CapacityResult
from kubesched.simulation.simulator import SimulationResult

if TYPE_CHECKING:
    import jinja2

# The heat map's resource for DRA devices (allocated / published on the node).
DEVICES = "devices"
# Rows and names shown before "… N more": enough to read, few enough for 5,000 nodes.
MAX_WORKLOAD_ROWS = 300
MAX_PODS_PER_REASON = 100
NODE_NAMES_SHOWN = 12
MAX_SCORE_GROUPS = 10
MAX_CAPACITY_NODES = 200
# Resources every node has, first in the heat map's selector, in this order.
_CORE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")


@functools.cache
def _environment() -> jinja2.Environment:
    # Lazy: jinja2 only for --html, not for every command that imports the CLI.
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kubesched.cli.html", "templates"),
        autoescape=True,  # every name and reason from the input is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["node_list"] = node_list
    env.filters["score_cell"] = score_cell
    env.filters["shortfall_line"] = shortfall_line
    return env


@dataclass(slots=True)
class PendingGroup:
    """Pending pods that share one FailedScheduling text."""

    reason: str
    pods: list[str]
    more: int


@dataclass(slots=True)
class ExplainedPod:
    """A pod's last explained attempt, for the drill-down."""

    pod: str
    workload: WorkloadRef
    anchor: str
    final_node: str | None
    attempts: int
    explanation: Explanation


@dataclass(slots=True)
class Page:
    """Everything a report page shows; sections without data are left out."""

    title: str
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    profiles: list[str] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    heat: dict[str, Any] | None = None
    workloads: list[WorkloadPlacement] = field(default_factory=list)
    workloads_more: int = 0
    pending: list[PendingGroup] = field(default_factory=list)
    # Pods held at PreEnqueue and never attempted, grouped by "plugin: message".
    not_attempted: list[PendingGroup] = field(default_factory=list)
    evicted: dict[str, str] = field(default_factory=dict)
    explained: list[ExplainedPod] = field(default_factory=list)
    capacity: CapacityResult | None = None
    capacity_zones: list[dict[str, int]] = field(default_factory=list)


def anchor(pod: str) -> str:
    """The drill-down's element id for a pod (namespace/name has no characters an id
    may not hold once the slash is replaced)."""
    return "explain-" + pod.replace("/", "--")


def _device_usage(
    dra: DraState | None, result: SimulationResult
) -> dict[str, tuple[int, int]] | None:
    """Per node: (devices allocated, devices published in node-local ResourceSlices),
    None without slices. Devices of slices for several nodes are on no one node."""
    if dra is None or not dra.slices:
        return None
    node_of: dict[tuple[str, str, str], str] = {}
    published: dict[str, int] = {}
    for rs in dra.slices.values():
        node = rs.spec.node_name
        if not node:
            continue
        published[node] = published.get(node, 0) + len(rs.spec.devices)
        for device in rs.spec.devices:
            node_of[(rs.spec.driver, rs.spec.pool.name, device.name)] = node
    allocated: dict[str, int] = {}
    for claim in result.claims.values():
        if claim.status.allocation is None:
            continue
        for r in claim.status.allocation.devices.results:
            at = node_of.get((r.driver, r.pool, r.device))
            if at is not None:
                allocated[at] = allocated.get(at, 0) + 1
    return {node: (allocated.get(node, 0), total) for node, total in published.items()}


def heat_map(
    result: SimulationResult, zones: Mapping[str, str], dra: DraState | None
) -> dict[str, Any]:
    """The heat map's data: resources, zones, and per node [name, zone index, pods,
    per resource [percent used (-1: none offered), "requested/allocatable"]]."""
    offered: set[str] = set()
    for u in result.nodes:
        offered.update(r for r, v in u.allocatable.items() if v)
    resources = [r for r in _CORE_RESOURCES if r in offered]
    resources += sorted(offered - set(_CORE_RESOURCES))
    devices = _device_usage(dra, result)
    zone_names = sorted({zones.get(u.name, NO_ZONE) for u in result.nodes})
    zone_index = {z: i for i, z in enumerate(zone_names)}
    rows: list[list[Any]] = []
    for u in sorted(result.nodes, key=lambda n: n.name):
        cells: list[list[Any]] = []
        for r in resources:
            requested, allocatable = u.requested.get(r, 0), u.allocatable.get(r, 0)
            cells.append(_cell(r, requested, allocatable))
        if devices is not None:
            used, total = devices.get(u.name, (0, 0))
            cells.append(_cell(DEVICES, used, total))
        rows.append([u.name, zone_index[zones.get(u.name, NO_ZONE)], u.pods, cells])
    return {
        "resources": resources + ([DEVICES] if devices is not None else []),
        "zones": zone_names,
        "nodes": rows,
    }


def _cell(resource: str, requested: int, allocatable: int) -> list[Any]:
    percent = round(100 * requested / allocatable) if allocatable else -1
    return [percent, f"{format_amount(resource, requested)}/{format_amount(resource, allocatable)}"]


def pending_groups(result: SimulationResult) -> list[PendingGroup]:
    """The pods left pending, grouped by their FailedScheduling text, largest first."""
    groups = reason_groups(result.reasons)
    return [
        PendingGroup(reason, keys[:MAX_PODS_PER_REASON], max(0, len(keys) - MAX_PODS_PER_REASON))
        for reason, keys in groups
    ]


def not_attempted_groups(result: SimulationResult) -> list[PendingGroup]:
    """The pods held at PreEnqueue, grouped by plugin and message, largest first."""
    by_gate: dict[str, list[str]] = {}
    for key, gate in result.not_attempted.items():
        by_gate.setdefault(f"{gate.plugin}: {gate.message}", []).append(key)
    groups = sorted(by_gate.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [
        PendingGroup(gate, keys[:MAX_PODS_PER_REASON], max(0, len(keys) - MAX_PODS_PER_REASON))
        for gate, keys in groups
    ]


def explained_pods(result: SimulationResult, keys: Iterable[str]) -> list[ExplainedPod]:
    """The last explained attempt of each pod asked about (in the order asked)."""
    found = []
    for key in keys:
        attempts = result.explanations.get(key, [])
        if attempts:
            found.append(
                ExplainedPod(
                    key,
                    workload_of(result.pods[key]),
                    anchor(key),
                    result.placements.get(key),
                    len(attempts),
                    attempts[-1],
                )
            )
    return found


def simulation_page(
    result: SimulationResult,
    *,
    title: str,
    nodes: Sequence[Node],
    running: Collection[str],
    zones: Mapping[str, str],
    notes: Sequence[str] = (),
    problems: Sequence[str] = (),
    dra: DraState | None = None,
    explained: Sequence[str] = (),
    seed: int | None = None,
) -> Page:
    """The page of a simulation (`simulate --html`, `explain --html`): explained pods
    are those of `explained` that the result holds explanations for."""
    placed, pending, already = new_and_running(result, running)
    workloads = placements_by_workload(result, running, zones)
    used = {pod.spec.scheduler_name for pod in result.pods.values()}
    return Page(
        title=title,
        notes=list(notes),
        problems=list(problems),
        profiles=[profile_line(p) for p in result.profiles if p.profile in used],
        summary={
            "nodes": len(nodes),
            "placed": placed,
            "pending": pending,
            "running": already,
            "evicted": len(result.evicted),
            "attempts": result.attempts,
            "wall": f"{result.wall_seconds:.2f}",
            "simulated": f"{result.simulated_seconds:.0f}",
            "simulated_note": SIMULATED_TIME_NOTE,
            "seed": seed,
        },
        heat=heat_map(result, zones, dra),
        workloads=workloads[:MAX_WORKLOAD_ROWS],
        workloads_more=max(0, len(workloads) - MAX_WORKLOAD_ROWS),
        pending=pending_groups(result),
        not_attempted=not_attempted_groups(result),
        evicted=evictions(result),
        explained=explained_pods(result, explained),
    )


def capacity_page(
    result: CapacityResult, *, title: str, zones: Mapping[str, str], notes: Sequence[str] = ()
) -> Page:
    """The page of `capacity --html`: each spec's count, stop reason and copies per
    zone and node."""
    per_zone: list[dict[str, int]] = []
    for spec in result.specs:
        counts: dict[str, int] = {}
        for node, count in spec.nodes.items():
            zone = zones.get(node, NO_ZONE)
            counts[zone] = counts.get(zone, 0) + count
        per_zone.append(dict(sorted(counts.items())))
    return Page(
        title=title,
        notes=list(notes),
        profiles=[profile_line(p) for p in result.profiles],
        capacity=result,
        capacity_zones=per_zone,
    )


def render_page(page: Page) -> str:
    template = _environment().get_template("report.html.j2")
    return template.render(
        page=page,
        max_score_groups=MAX_SCORE_GROUPS,
        names_shown=NODE_NAMES_SHOWN,
        max_capacity_nodes=MAX_CAPACITY_NODES,
    )


def write_page(page: Page, path: Path) -> None:
    path.write_text(render_page(page), encoding="utf-8")
