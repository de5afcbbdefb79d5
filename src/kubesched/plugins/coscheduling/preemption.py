"""Gang-aware preemption (not in scheduler-plugins v0.35.4-devel, whose Coscheduling
leaves preemption to DefaultPreemption, pod by pod).

A group that does not fit whole may evict lower-priority pods only if, without them,
the whole group fits (the trial placement of framework.group_placement). Victims come
in units: a pod of no group is a unit of its own; the pods of a PodGroup placed on the
cluster are one unit, taken whole, and only when every one of them has a lower
priority than the preemptor. As DefaultPreemption's SelectVictimsOnNode does per node,
all candidate units are taken off first, then given back one at a time, the most
important first, as long as the group still fits: what is left are the victims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubesched.api.pod_groups import pod_group_key
from kubesched.framework.group_placement import GroupPlacement, place_group
from kubesched.framework.interfaces import FrameworkRunner
from kubesched.framework.pod_groups import PodGroupState
from kubesched.framework.state.node_table import NodeTable, SavedRow
from kubesched.framework.types import PodInfo


@dataclass(slots=True)
class VictimUnit:
    """Pods evicted together: one pod, or a whole group's placed pods."""

    pods: list[tuple[PodInfo, int]]  # each with its row
    priority: int  # the highest of its pods'

    @property
    def keys(self) -> list[str]:
        return [p.key for p, _ in self.pods]


def victim_units(
    table: NodeTable, groups: PodGroupState, preemptor_priority: int, own_group: str
) -> list[VictimUnit]:
    """Every unit whose pods all have a lower priority than the preemptor's, none of
    them being deleted already, most important first (higher priority, then more
    pods: a bigger group is more costly to evict)."""
    singles: list[VictimUnit] = []
    grouped: dict[str, list[tuple[PodInfo, int]]] = {}
    for row in table.order():
        row = int(row)
        for pod in table.pods_on(row):
            key = pod_group_key(pod.pod)
            if key and key != own_group and groups.get(key) is not None:
                grouped.setdefault(key, []).append((pod, row))
            elif not key or groups.get(key) is None:
                singles.append(VictimUnit([(pod, row)], pod.priority))
    units = [
        VictimUnit(pods, max(p.priority for p, _ in pods)) for pods in grouped.values()
    ] + singles
    return sorted(
        (
            u
            for u in units
            if u.priority < preemptor_priority
            and all(p.pod.metadata.deletion_timestamp is None for p, _ in u.pods)
        ),
        key=lambda u: (-u.priority, -len(u.pods)),
    )


def select_gang_victims(
    runner: FrameworkRunner,
    table: NodeTable,
    units: Sequence[VictimUnit],
    pods: Sequence[PodInfo],
    needed: int,
) -> tuple[list[VictimUnit], GroupPlacement] | None:
    """The units to evict so that `needed` of `pods` fit together, and the placement
    they then get; None when even evicting every unit would not make room. The table
    is left as it was found."""
    saved: dict[int, SavedRow] = {}

    def take(unit: VictimUnit) -> None:
        for pod, row in unit.pods:
            if row not in saved:
                saved[row] = table.save_row(row)
            table.remove_pod(pod, row)

    def give_back(unit: VictimUnit) -> None:
        for pod, row in unit.pods:
            table.add_pod(pod, row)

    try:
        for unit in units:
            take(unit)
        placement = place_group(runner, pods, needed, table)
        if not placement.feasible:
            return None
        victims: list[VictimUnit] = []
        for unit in units:  # most important first: they are reprieved first
            give_back(unit)
            trial = place_group(runner, pods, needed, table)
            if trial.feasible:
                placement = trial
            else:
                take(unit)
                victims.append(unit)
        return victims, placement
    finally:
        for row_state in reversed(saved.values()):
            table.restore_row(row_state)
