"""NodeAffinity: spec.nodeSelector, required and preferred node affinity, addedAffinity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.node_affinity import (
    IN,
    OBJECT_NAME_FIELD,
    ParsedTerm,
    PreferredTerms,
    RequiredNodeAffinity,
    node_matches_terms,
    parse_node_selector,
    parse_preferred_terms,
    required_node_affinity,
)
from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.framework.signature import (
    NODE_AFFINITY_SIGNER,
    NODE_SELECTOR_SIGNER,
    SignFragment,
    SignPlugin,
    node_affinity_signer,
)
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.args import raw_args
from kubesched.plugins.helpers.hints import as_node
from kubesched.plugins.helpers.normalize import default_normalize_score
from kubesched.plugins.helpers.selectors import (
    match_node_selector_terms,
    preferred_score_rows,
    required_affinity_rows,
)
from kubesched.plugins.nodeaffinity.args import NodeAffinityArgs, node_affinity_args

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

PRE_FILTER_STATE_KEY = "PreFilterNodeAffinity"
PRE_SCORE_STATE_KEY = "PreScoreNodeAffinity"

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    required: RequiredNodeAffinity


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    preferred: PreferredTerms | None


def _pod_preferred_terms(pod: Pod) -> PreferredTerms | None:
    """getPodPreferredNodeAffinity; raises ValueError when a term does not parse."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    terms = affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    return parse_preferred_terms(terms) if terms else None


class NodeAffinity(
    SignPlugin, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions
):
    """Args (NodeAffinityArgs): `addedAffinity`, a NodeAffinity applied to every pod.

    Its required terms must hold on top of the pod's own (failing them gives the
    "scheduler-enforced" reason); its preferred terms add to every node's score.
    Terms that do not parse make the plugin fail to build (ValueError).
    """

    name = "NodeAffinity"
    args_decoder = staticmethod(node_affinity_args)

    def __init__(
        self,
        args: Mapping[str, Any] | NodeAffinityArgs | None = None,
        handle: Handle | None = None,
    ):
        super().__init__(raw_args(args), handle)
        self.added_node_selector: tuple[ParsedTerm, ...] | None = None
        self.added_preferred: PreferredTerms | None = None
        # Validated: addedAffinity's terms parse.
        self.affinity_args = node_affinity_args(args)
        added = self.affinity_args.added_affinity
        if added is None:
            return
        required = added.required_during_scheduling_ignored_during_execution
        if required is not None:
            self.added_node_selector = parse_node_selector(required)
        preferred = added.preferred_during_scheduling_ignored_during_execution
        if preferred:
            self.added_preferred = parse_preferred_terms(preferred)

    # --- filtering -----------------------------------------------------------------

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's node affinity and node selector."""
        return [
            (NODE_AFFINITY_SIGNER, node_affinity_signer(pod.pod)),
            (NODE_SELECTOR_SIGNER, pod.pod.spec.node_selector),
        ], Status.success()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        spec = pod.pod.spec
        node_affinity = None if spec.affinity is None else spec.affinity.node_affinity
        required = (
            None
            if node_affinity is None
            else node_affinity.required_during_scheduling_ignored_during_execution
        )
        if required is None and self.added_node_selector is None and not spec.node_selector:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(required_node_affinity(pod.pod)))
        if required is None or not required.node_selector_terms:
            return None, Status.success()

        # Terms naming nodes through matchFields metadata.name In narrow the candidates.
        node_names: set[str] = set()
        for term in required.node_selector_terms:
            term_names: set[str] | None = None
            for req in term.match_fields:
                if req.key == OBJECT_NAME_FIELD and req.operator == IN:
                    names = set(req.values)
                    term_names = names if term_names is None else term_names & names
            if term_names is None:
                # A term without a node name can match any node: the terms are ORed.
                return None, Status.success()
            node_names |= term_names
        if not node_names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT, plugin=self.name)
        return PreFilterResult(node_names), Status.success()

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's labels and name.
        return FilterScope.NODE

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        verdicts = NodeVerdicts.passing(len(rows))
        allowed = np.ones(len(rows), dtype=np.bool_)
        if self.added_node_selector is not None:
            allowed = match_node_selector_terms(nodes, rows, self.added_node_selector)
            verdicts.add(ERR_REASON_ENFORCED, ~allowed, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        found = state.get(PRE_FILTER_STATE_KEY)
        # Without PreFilter (disabled), compute the requirement here as upstream does.
        required = (
            found.required
            if isinstance(found, _PreFilterState)
            else required_node_affinity(pod.pod)
        )
        mismatch = allowed & ~required_affinity_rows(required, nodes, rows)
        verdicts.add(ERR_REASON_POD, mismatch, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        return verdicts

    # --- scoring -------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        try:
            preferred = _pod_preferred_terms(pod.pod)
        except ValueError as err:
            return Status.as_error(err, plugin=self.name)
        if preferred is None and self.added_preferred is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        """The sum of the weights of the preferred terms (added and the pod's) a node matches."""
        total = np.zeros(len(rows), dtype=np.int64)
        if self.added_preferred is not None:
            total += preferred_score_rows(self.added_preferred, nodes, rows)
        found = state.get(PRE_SCORE_STATE_KEY)
        preferred = (
            found.preferred if isinstance(found, _PreScoreState) else _pod_preferred_terms(pod.pod)
        )
        if preferred is not None:
            total += preferred_score_rows(preferred, nodes, rows)
        return total

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)

    # --- queueing ------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> bool:
        """A node that now matches, and (for updates) did not match before."""
        modified = as_node(new)
        original = as_node(old)
        if modified is None or (old is not None and original is None):
            return True
        if self.added_node_selector is not None and not node_matches_terms(
            modified, self.added_node_selector
        ):
            return False
        required = required_node_affinity(pod.pod)
        matched, parse_error = required.match(modified)
        if parse_error:
            return True  # upstream returns Queue with the error
        if not matched:
            return False
        if original is None:
            return True
        was_matched, parse_error = required.match(original)
        return parse_error or not was_matched
