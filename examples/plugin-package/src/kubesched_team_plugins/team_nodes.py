"""TeamNodes (Filter): a node labelled for a team takes only that team's pods.

A node with the label `example.com/team=<team>` is dedicated: only pods labelled
`example.com/team=<team>` may run there. Nodes without the label take anyone.
Written in the one-node-at-a-time form (`NodeFilterPlugin.filter_node`).
"""

from __future__ import annotations

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterScope,
    NodeFilterPlugin,
)
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource

TEAM_LABEL = "example.com/team"
REASON = "node(s) were dedicated to another team"


class TeamNodes(NodeFilterPlugin, EnqueueExtensions):
    name = "TeamNodes"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        owner = node.labels.get(TEAM_LABEL)
        if owner is None or owner == pod.pod.metadata.labels.get(TEAM_LABEL):
            return Status.success()
        # Only a change of the node's labels can make it fit: no preemption can help.
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON], self.name)

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's labels only.
        return FilterScope.NODE

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            )
        ]
