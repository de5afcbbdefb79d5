"""AppPool (Filter): keep each app's pods on the node pool labelled for it.

A pod that carries the label `example.com/pool` may only run on nodes with the
same `example.com/pool` label. Written in the columnar form: one numpy
comparison answers for every candidate node.

    kubesched simulate -f cluster/ --plugin examples/plugins/app_pool.py:AppPool --enable AppPool
"""

from __future__ import annotations

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
)
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource

POOL_LABEL = "example.com/pool"
REASON = "node(s) are not in the pod's pool"


class AppPool(FilterPlugin, EnqueueExtensions):
    name = "AppPool"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        wanted = pod.pod.metadata.labels.get(POOL_LABEL)
        if wanted is None:
            return NodeVerdicts.passing(len(rows))
        column = nodes.label(POOL_LABEL)
        code = None if column is None else column.vocab.get(wanted)
        # With no node in that pool at all, every node is outside it.
        outside = rows >= 0 if column is None or code is None else column.codes[rows] != code
        # No other pod's fate changes a node's pool: only a label change can help.
        return NodeVerdicts.failing(
            len(rows), [(REASON, outside)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's labels only: preemption may dry-run many nodes at once.
        return FilterScope.NODE

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            )
        ]
