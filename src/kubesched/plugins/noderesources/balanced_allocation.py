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
from kubesched.framework.signature import SignFragment, SignPlugin
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.helpers.args import raw_args
from kubesched.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    balanced_allocation_args,
)
from kubesched.plugins.noderesources.fit import sign_requests
from kubesched.plugins.noderesources.resource_allocation import (
    CPU_AND_MEMORY,
    balanced_allocation,
    balanced_allocation_cpu_memory,
    node_amounts,
    pod_request_list,
)

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]


def _best_effort(requests: Sequence[int]) -> bool:
    return all(request == 0 for request in requests)


class NodeResourcesBalancedAllocation(SignPlugin, PreScorePlugin, ScorePlugin):
    name = NAME
    args_decoder = staticmethod(balanced_allocation_args)

    def __init__(
        self,
        args: Mapping[str, Any] | NodeResourcesBalancedAllocationArgs | None = None,
        handle: Handle | None = None,
    ) -> None:
        super().__init__(raw_args(args), handle)
        self.balanced_args = balanced_allocation_args(args)
        self.resources = self.balanced_args.resources
        self._cpu_memory = tuple(spec.name for spec in self.resources) == CPU_AND_MEMORY

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's requests; not signable when a DeviceClass backs one
        of them (DRAExtendedResource)."""
        return sign_requests(self._handle, pod)

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
