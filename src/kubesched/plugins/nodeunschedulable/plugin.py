"""NodeUnschedulable: cordoned nodes take only pods tolerating the unschedulable taint."""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.api.objects import Pod, Taint
from kubesched.api.taints import NO_SCHEDULE, TAINT_NODE_UNSCHEDULABLE, tolerations_tolerate_taint
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
)
from kubesched.framework.signature import (
    TOLERATIONS_SIGNER,
    SignFragment,
    SignPlugin,
    tolerations_signer,
)
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_node, as_pod, same_pod

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"

UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


def tolerates_unschedulable(pod: Pod) -> bool:
    """Whether the pod tolerates node.kubernetes.io/unschedulable:NoSchedule."""
    return tolerations_tolerate_taint(pod.spec.tolerations, UNSCHEDULABLE_TAINT)


class NodeUnschedulable(SignPlugin, FilterPlugin, EnqueueExtensions):
    name = "NodeUnschedulable"

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's tolerations."""
        return [(TOLERATIONS_SIGNER, tolerations_signer(pod.pod))], Status.success()

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's unschedulable flag and taints.
        return FilterScope.NODE

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        if nodes.num_unschedulable == 0:
            return NodeVerdicts.passing(len(rows))
        cordoned = nodes.unschedulable[rows]
        if not cordoned.any() or tolerates_unschedulable(pod.pod):
            return NodeVerdicts.passing(len(rows))
        return NodeVerdicts.failing(
            len(rows), [(ERR_REASON_UNSCHEDULABLE, cordoned)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> bool:
        """A node added schedulable, or updated from unschedulable to schedulable."""
        modified = as_node(new)
        original = as_node(old)
        if modified is None or (old is not None and original is None):
            return True
        if original is None:
            return not modified.spec.unschedulable
        return original.spec.unschedulable and not modified.spec.unschedulable

    def is_schedulable_after_pod_toleration_change(
        self, pod: PodInfo, old: object, new: object
    ) -> bool:
        """The pod itself got a toleration of the unschedulable taint."""
        modified = as_pod(new)
        if modified is None:
            return True
        return same_pod(pod.pod, modified) and tolerates_unschedulable(modified)
