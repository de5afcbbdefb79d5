"""TaintToleration: filter on NoSchedule/NoExecute taints, score on PreferNoSchedule ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import Taint, Toleration
from kubesched.api.taints import (
    PREFER_NO_SCHEDULE,
    do_not_schedule_taints,
    find_matching_untolerated_taint,
    tolerations_tolerate_taint,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
    PreScorePlugin,
    ScorePlugin,
    Uniform,
)
from kubesched.framework.signature import (
    TOLERATIONS_SIGNER,
    SignFragment,
    SignPlugin,
    tolerations_signer,
)
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_node, as_pod, same_pod
from kubesched.plugins.helpers.normalize import default_normalize_score
from kubesched.plugins.helpers.taints import per_taint_set

PRE_SCORE_STATE_KEY = "PreScoreTaintToleration"

# Since kubernetes#134740 (v1.35, and v1.34 patch releases through #135023) the
# reason no longer names the taint: "node(s) had untolerated taint {key: value}"
# became this fixed text, and the taint is only logged.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    tolerations_prefer_no_schedule: tuple[Toleration, ...]


def tolerations_prefer_no_schedule(tolerations: list[Toleration]) -> tuple[Toleration, ...]:
    """The tolerations with effect PreferNoSchedule or empty (empty means every effect)."""
    return tuple(t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


def count_intolerable_prefer_no_schedule(
    taints: tuple[Taint, ...] | list[Taint], tolerations: tuple[Toleration, ...]
) -> int:
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(tolerations, taint)
    )


class TaintToleration(SignPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    """Weight 3 in the default profile (set by the profile, not here)."""

    name = "TaintToleration"

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's tolerations."""
        return [(TOLERATIONS_SIGNER, tolerations_signer(pod.pod))], Status.success()

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's taints.
        return FilterScope.NODE

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        if nodes.num_tainted == 0:
            return NodeVerdicts.passing(len(rows))
        tolerations = pod.pod.spec.tolerations
        untolerated = per_taint_set(
            nodes,
            rows,
            lambda taints: (
                find_matching_untolerated_taint(taints, tolerations, do_not_schedule_taints)
                is not None
            ),
            np.bool_,
        ).astype(np.bool_)
        return NodeVerdicts.failing(
            len(rows), [(ERR_REASON_UNTOLERATED, untolerated)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        state.write(
            PRE_SCORE_STATE_KEY,
            _PreScoreState(tolerations_prefer_no_schedule(pod.pod.spec.tolerations)),
        )
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        """How many PreferNoSchedule taints of the node the pod does not tolerate."""
        tolerations = state.read(PRE_SCORE_STATE_KEY, _PreScoreState).tolerations_prefer_no_schedule
        if nodes.num_tainted == 0:
            return np.zeros(len(rows), dtype=np.int64)
        counts = per_taint_set(
            nodes, rows, lambda taints: count_intolerable_prefer_no_schedule(taints, tolerations)
        )
        return counts.astype(np.int64)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)

    def uniform_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> Uniform | None:
        """No node has a taint: every count is 0, which NormalizeScore (reversed)
        turns into MaxNodeScore everywhere."""
        state.read(PRE_SCORE_STATE_KEY, _PreScoreState)  # Score fails without it
        return (0, MAX_NODE_SCORE) if nodes.num_tainted == 0 else None

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
        """The node now has no untolerated NoSchedule/NoExecute taint, and had one before."""
        modified = as_node(new)
        original = as_node(old)
        if modified is None or (old is not None and original is None):
            return True
        tolerations = pod.pod.spec.tolerations
        was_untolerated = original is None or (
            find_matching_untolerated_taint(
                original.spec.taints, tolerations, do_not_schedule_taints
            )
            is not None
        )
        is_untolerated = (
            find_matching_untolerated_taint(
                modified.spec.taints, tolerations, do_not_schedule_taints
            )
            is not None
        )
        return was_untolerated and not is_untolerated

    def is_schedulable_after_pod_toleration_change(
        self, pod: PodInfo, old: object, new: object
    ) -> bool:
        """Only a new toleration on the pod itself can help it."""
        modified = as_pod(new)
        if modified is None:
            return True
        return same_pod(pod.pod, modified)
