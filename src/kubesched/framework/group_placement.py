"""Whole-group feasibility: can this many of a group's pods be placed at once, on the
cluster as it is now? A trial placement through the profile's own PreFilter and Filter
plugins, one pod after the other, each placed pod counted on its node for the next,
and the node table put back afterwards.

It is how Coscheduling refuses, before any pod of a group is reserved, a group that
cannot fit whole (scheduler-plugins v0.35.4-devel only compares the group's
minResources with the cluster's free total, and lets the pods reserve one by one, so
two groups can each hold part of what both need until both time out). It is kept
here, apart from the plugin, so that a group scheduling cycle (kube-scheduler 1.36's
schedule_one_podgroup.go, PlacementGenerate then the per-pod filters) can run the
same check: `place_group(runner, pods, need, table)`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import fit_error_message
from kubesched.framework.interfaces import FrameworkRunner
from kubesched.framework.state.node_table import NodeTable, SavedRow
from kubesched.framework.types import PodInfo


@dataclass(slots=True)
class GroupPlacement:
    """A trial's outcome: the node of each pod placed (pod key -> node name), in
    placement order, and why the pods that could not be placed did not fit."""

    needed: int
    placed: dict[str, str] = field(default_factory=dict)
    unplaced: dict[str, str] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return len(self.placed) >= self.needed

    def reason(self) -> str:
        """One line on why the group does not fit (empty when it does)."""
        if self.feasible:
            return ""
        text = f"only {len(self.placed)} of the {self.needed} pods still needed fit together"
        if self.unplaced:
            key, why = next(iter(self.unplaced.items()))
            text += f" ({key}: {why})"
        return text


def place_group(
    runner: FrameworkRunner,
    pods: Sequence[PodInfo],
    needed: int,
    nodes: NodeTable,
    preferred: Mapping[str, str] | None = None,
) -> GroupPlacement:
    """Try to place `needed` of `pods` (in their order) together on `nodes`: each pod
    goes to its `preferred` node when that still passes, else to the first feasible
    node in the table's order (first fit, which packs a group onto few nodes). The
    table is left exactly as it was found."""
    outcome = GroupPlacement(needed)
    saved: dict[int, SavedRow] = {}
    preferred = preferred or {}
    try:
        for pod in pods:
            if outcome.feasible:
                break
            state = CycleState()
            result, status = runner.run_pre_filter(state, pod, nodes)
            if not status.is_success():
                outcome.unplaced[pod.key] = status.message()
                continue
            rows = nodes.order()
            if result is not None and result.node_names is not None:
                allowed = result.node_names
                rows = np.array([r for r in rows if nodes.names[r] in allowed], dtype=np.intp)
            feasible, diagnosis = runner.run_filters(state, pod, nodes, rows)
            if len(feasible) == 0:
                outcome.unplaced[pod.key] = fit_error_message(len(nodes), diagnosis)
                continue
            row = int(feasible[0])
            wanted = nodes.row_of(preferred.get(pod.key, ""))
            if wanted is not None and wanted in set(feasible.tolist()):
                row = wanted
            if row not in saved:
                saved[row] = nodes.save_row(row)
            nodes.add_pod(pod, row)
            outcome.placed[pod.key] = nodes.names[row]
    finally:
        for row_state in reversed(saved.values()):
            nodes.restore_row(row_state)
    return outcome
