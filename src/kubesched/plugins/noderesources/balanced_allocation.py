"""NodeResourcesBalancedAllocation: favour nodes whose resources stay evenly used.

For each node, the fractions requested/allocatable of the configured resources
(plain requests, not the non-zero defaults) give a standard deviation and a
balance score int64((1 - std) * 100). The node's score compares the balance
with and without the pod: 50 + (50 + with - without) / 2, so about 75 when the
pod changes little, toward 100 when it evens the node out, toward 50 when it
skews it. A pod that requests none of the resources is not scored (PreScore
says Skip).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import PreScorePlugin, ScorePlugin
from kubesched.framework.node_table import IntArray, NodeTable, Rows
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.noderesources.resource_allocation import (
    CPU_AND_MEMORY,
    ArgsError,
    ResourceSpec,
    aggregate_errors,
    balanced_allocation,
    balanced_allocation_cpu_memory,
    go_quote,
    node_amounts,
    parse_resources,
    pod_request_list,
)

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def parse_balanced_allocation_args(args: Mapping[str, Any]) -> tuple[ResourceSpec, ...]:
    """NodeResourcesBalancedAllocationArgs: `resources` (default cpu and memory),
    each named once and weighted 1."""
    resources = parse_resources(args.get("resources"))
    errors: list[str] = []
    seen: set[str] = set()
    for i, spec in enumerate(resources):
        if spec.name in seen:
            errors.append(f"resources[{i}].name: Duplicate value: {go_quote(spec.name)}")
        seen.add(spec.name)
        if spec.weight != 1:
            errors.append(f"resources[{i}].weight: Invalid value: {spec.weight}: must be 1")
    if errors:
        raise ArgsError(aggregate_errors(errors))
    return tuple(resources)


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]


def _best_effort(requests: Sequence[int]) -> bool:
    return all(request == 0 for request in requests)


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin):
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.resources = parse_balanced_allocation_args(self.args)
        self._cpu_memory = tuple(spec.name for spec in self.resources) == CPU_AND_MEMORY

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        requests = pod_request_list(pod, self.resources, use_requested=True)
        if _best_effort(requests):
            # Scoring pods that request nothing would pile them onto one node.
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(tuple(requests)))
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        pre = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(pre, _PreScoreState):
            requests: Sequence[int] = pre.pod_requests
        else:
            requests = pod_request_list(pod, self.resources, use_requested=True)
            if _best_effort(requests):
                return np.zeros(len(rows), dtype=np.int64)
        if self._cpu_memory:
            fast = balanced_allocation_cpu_memory(state, nodes, rows, requests)
            if fast is not None:
                return fast
        found = node_amounts(nodes, rows, self.resources, requests, use_requested=True)
        return balanced_allocation(found)
