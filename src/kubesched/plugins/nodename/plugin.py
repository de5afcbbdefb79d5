"""NodeName: a pod naming a node in spec.nodeName fits that node only."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
)
from kubesched.framework.signature import NODE_NAME_SIGNER, SignFragment, SignPlugin
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(SignPlugin, FilterPlugin, EnqueueExtensions):
    name = "NodeName"

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: spec.nodeName."""
        return [(NODE_NAME_SIGNER, pod.pod.spec.node_name)], Status.success()

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's name.
        return FilterScope.NODE

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        wanted = pod.pod.spec.node_name
        if not wanted:
            return NodeVerdicts.passing(len(rows))
        row = nodes.row_of(wanted)
        mismatch = np.ones(len(rows), dtype=np.bool_) if row is None else rows != row
        return NodeVerdicts.failing(
            len(rows), [(ERR_REASON, mismatch)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # No hint: a node being added always deserves a retry.
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]
