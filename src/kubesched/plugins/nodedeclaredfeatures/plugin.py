"""NodeDeclaredFeatures: a node must declare (status.declaredFeatures) every feature
the pod's spec needs, as kube-scheduler v1.36.3 checks it.

What a pod needs is inferred by api.declared_features (component-helpers
v0.36.3); the node table keeps what each node declares as a bitmap column, so
Filter is one numpy expression over the candidate rows. Most pods need nothing,
and PreFilter then skips the plugin's Filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubesched.api.declared_features import infer_for_scheduling
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.signature import FEATURES_SIGNER, SignFragment, SignPlugin
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_node, as_pod, same_pod

PRE_FILTER_STATE_KEY = "PreFilterNodeDeclaredFeatures"
# v1.36.3's text: a fixed reason, without the missing features' names (the alpha
# plugin of 1.35 listed them).
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    required: int  # bitmap of the features the pod needs, never 0


class NodeDeclaredFeatures(SignPlugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = "NodeDeclaredFeatures"

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the features the pod needs (InferForPodScheduling)."""
        return [(FEATURES_SIGNER, infer_for_scheduling(pod.pod.spec))], Status.success()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        # PreFilter upstream: the spec alone, the pod's status is not read.
        required = infer_for_scheduling(pod.pod.spec)
        if not required:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(required))
        return None, Status.success()

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the Node object's declared features.
        return FilterScope.NODE

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        required = state.read(PRE_FILTER_STATE_KEY, _PreFilterState).required
        # FeatureSet.IsSubset: every bit the pod needs is set on the node.
        lacking = (nodes.declared_features[rows] & required) != required
        return NodeVerdicts.failing(
            len(rows),
            [(ERR_REASON_UNSATISFIED_REQUIREMENTS, lacking)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE
                ),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.UPDATE),
                self.is_schedulable_after_pod_update,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> bool:
        """isSchedulableAfterNodeChange: any node added, or a node whose declared
        features changed (whatever they became)."""
        modified = as_node(new)
        original = as_node(old)
        if modified is None or (old is not None and original is None):
            return True
        if original is None:
            return True
        return original.status.declared_features != modified.status.declared_features

    def is_schedulable_after_pod_update(self, pod: PodInfo, old: object, new: object) -> bool:
        """isSchedulableAfterPodUpdate: the pod itself now needs other features."""
        original = as_pod(old)
        modified = as_pod(new)
        if original is None or modified is None:
            return True
        if not same_pod(pod.pod, modified):
            return False
        return infer_for_scheduling(original.spec) != infer_for_scheduling(modified.spec)
