"""CheapestNode (Score): prefer nodes with a lower hourly cost.

Nodes carry their price in the label `example.com/hourly-cost` (dollars per
hour). Written in the simple per-node form; NormalizeScore turns the costs into
0..100 with the cheapest node at 100. Nodes without a price score 0.

    kubesched simulate -f cluster/ --plugin examples/plugins/cheapest_node.py:CheapestNode \
        --enable CheapestNode:5
"""

from __future__ import annotations

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import MAX_NODE_SCORE, NodeScorePlugin
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.state.node_table import IntArray
from kubesched.framework.types import PodInfo

COST_LABEL = "example.com/hourly-cost"
UNPRICED = -1


class CheapestNode(NodeScorePlugin):
    name = "CheapestNode"

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """The node's cost in cents per hour (raw; NormalizeScore maps it to 0..100)."""
        try:
            return round(float(node.labels[COST_LABEL]) * 100)
        except (KeyError, ValueError):
            return UNPRICED

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        priced = scores >= 0
        if not priced.any():
            scores[:] = 0
            return
        cheapest = scores[priced].min()
        dearest = scores[priced].max()
        span = max(int(dearest - cheapest), 1)
        normalized = MAX_NODE_SCORE - (scores - cheapest) * MAX_NODE_SCORE // span
        scores[:] = normalized.clip(0, MAX_NODE_SCORE)
        scores[~priced] = 0
