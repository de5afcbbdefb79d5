"""PreferNodeLabel (Score): score nodes by the value of one of their labels.

Its pluginConfig args say which label and what each value is worth (0..100):

    pluginConfig:
      - name: PreferNodeLabel
        args:
          label: example.com/capacity-type
          scores: {spot: 100, on-demand: 30}

A node without the label, or with a value not listed, scores 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import MAX_NODE_SCORE, NodeScorePlugin
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.types import PodInfo

DEFAULT_LABEL = "example.com/capacity-type"


class PreferNodeLabel(NodeScorePlugin):
    name = "PreferNodeLabel"

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None):
        super().__init__(args, handle)
        label = self.args.get("label", DEFAULT_LABEL)
        scores = self.args.get("scores", {})
        # Bad args stop the scheduler at start, naming the field, rather than score wrongly.
        if not isinstance(label, str) or not label:
            raise ValueError(f"{self.name} args.label: must be a non-empty string, got {label!r}")
        if not isinstance(scores, Mapping):
            raise ValueError(f"{self.name} args.scores: must be a map of value to score")
        for value, score in scores.items():
            if not isinstance(score, int) or not 0 <= score <= MAX_NODE_SCORE:
                raise ValueError(
                    f"{self.name} args.scores[{value!r}]: must be an integer in "
                    f"[0, {MAX_NODE_SCORE}], got {score!r}"
                )
        self.label: str = label
        self.scores: dict[str, int] = {str(k): v for k, v in scores.items()}

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self.scores.get(node.labels.get(self.label, ""), 0)
