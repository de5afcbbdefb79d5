"""InterPodAffinity: required and preferred pod affinity and anti-affinity.

PreFilter counts, per (topology key, value), the existing pods that match the
incoming pod's required affinity (all terms) and anti-affinity terms, and the
existing pods whose required anti-affinity terms match the incoming pod; Filter
looks every node's domain up in those counts. PreScore sums the weights of the
preferred terms (the incoming pod's, matched by existing pods, and the existing
pods', matched by the incoming pod, with required affinity terms of existing
pods weighing hardPodAffinityWeight) per domain; Score adds up a node's domains.

The incoming pod's terms are matched against the NodeTable's pod index (groups
of pods with equal labels); the existing pods' terms come from the index's list
of pods with affinity, parsed when the pod was placed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.framework.signature import LABELS_SIGNER, SignFragment, SignPlugin, not_signable
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.state.pod_index import (
    AffinityTerm,
    PodAffinityTerms,
    WeightedAffinityTerm,
    pod_affinity_terms,
    sparse_counts,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.args import raw_args
from kubesched.plugins.helpers.hints import as_node, as_pod, same_pod
from kubesched.plugins.interpodaffinity.args import InterPodAffinityArgs, inter_pod_affinity_args

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

PRE_FILTER_STATE_KEY = "PreFilterInterPodAffinity"
PRE_SCORE_STATE_KEY = "PreScoreInterPodAffinity"

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"


# --- counts per topology pair ------------------------------------------------------------


def _sum(a: IntArray | None, b: IntArray) -> IntArray:
    if a is None:
        return b
    if len(a) < len(b):
        a, b = b, a
    out = a.copy()
    out[: len(b)] += b
    return out


class TopologyCounts:
    """topologyToMatchedTermCount / scoreMap: (topology key, value) -> count, kept as one
    array per key, indexed by the code of the value in the key's label column."""

    __slots__ = ("by_key",)

    def __init__(self, by_key: dict[str, IntArray] | None = None) -> None:
        self.by_key: dict[str, IntArray] = by_key if by_key is not None else {}

    def copy(self) -> TopologyCounts:
        return TopologyCounts({k: v.copy() for k, v in self.by_key.items()})

    def add_rows(self, nodes: NodeTable, key: str, rows: Rows, counts: IntArray) -> bool:
        """Add `counts` of pods on `rows` to the domains of those nodes; False when no
        such node carries the key (nothing is counted then)."""
        column = nodes.labels.get(key)
        if column is None or len(rows) == 0:
            return False
        codes = column.codes[rows]
        ok = codes >= 0
        if not ok.any():
            return False
        added = np.bincount(codes[ok], weights=counts[ok], minlength=len(column.values))
        self.by_key[key] = _sum(self.by_key.get(key), added.astype(np.int64))
        return True

    def update(self, nodes: NodeTable, row: int, key: str, delta: int) -> bool:
        """Add `delta` to the domain of one node; False when it lacks the key."""
        column = nodes.labels.get(key)
        if column is None:
            return False
        code = int(column.codes[row])
        if code < 0:
            return False
        current = self.by_key.get(key)
        if current is None or len(current) <= code:
            grown = np.zeros(max(len(column.values), code + 1), dtype=np.int64)
            if current is not None:
                grown[: len(current)] = current
            current = self.by_key[key] = grown
        current[code] += delta
        return True

    def at(self, nodes: NodeTable, rows: Rows, key: str) -> tuple[IntArray, IntArray]:
        """(label value codes of the rows, -1 lacking the key; the count of their domain)."""
        column = nodes.labels.get(key)
        if column is None:
            return np.full(len(rows), -1, dtype=np.int64), np.zeros(len(rows), dtype=np.int64)
        codes = column.codes[rows].astype(np.int64)
        counts = np.zeros(len(rows), dtype=np.int64)
        values = self.by_key.get(key)
        if values is not None:
            ok = (codes >= 0) & (codes < len(values))
            counts[ok] = values[codes[ok]]
        return codes, counts

    def is_empty(self) -> bool:
        """len(map) == 0: no pair with a non-zero count."""
        return not any(v.any() for v in self.by_key.values())


def _any_namespace_selector(terms: PodAffinityTerms, *, preferred: bool) -> bool:
    """Whether a term (preferred ones, or required ones) has a namespaceSelector that
    selects some namespaces but not all: only those are unrolled."""
    found: Iterable[AffinityTerm] = (
        (w.term for w in (*terms.preferred_affinity, *terms.preferred_anti_affinity))
        if preferred
        else (*terms.required_affinity, *terms.required_anti_affinity)
    )
    return any(not (t.namespace_selector.empty() or t.namespace_selector.nothing) for t in found)


def pod_matches_all_terms(terms: Iterable[AffinityTerm], pod: Pod) -> bool:
    """podMatchesAllAffinityTerms (no namespace labels: the terms' selectors are unrolled)."""
    terms = tuple(terms)
    return bool(terms) and all(t.matches_pod(pod) for t in terms)


# --- state -------------------------------------------------------------------------------


@dataclass(slots=True)
class _PreFilterState:
    terms: PodAffinityTerms  # the incoming pod's, namespaceSelector unrolled
    namespace_labels: Mapping[str, str]
    existing_anti_affinity: TopologyCounts
    affinity: TopologyCounts
    anti_affinity: TopologyCounts
    # whether the incoming pod matches all its own required affinity terms
    self_match: bool

    def copy(self) -> _PreFilterState:
        return replace(
            self,
            existing_anti_affinity=self.existing_anti_affinity.copy(),
            affinity=self.affinity.copy(),
            anti_affinity=self.anti_affinity.copy(),
        )


@dataclass(slots=True)
class _PreScoreState:
    topology_score: TopologyCounts


# --- the plugin --------------------------------------------------------------------------


class InterPodAffinity(
    SignPlugin,
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    EnqueueExtensions,
):
    """Args (InterPodAffinityArgs): `hardPodAffinityWeight` (0..100, default 1), the score
    weight of an existing pod's required affinity term the incoming pod matches, and
    `ignorePreferredTermsOfExistingPods` (default false): skip scoring for pods
    without preferred terms of their own.

    Weight 2 in the default profile (set by the profile, not here).
    """

    name = "InterPodAffinity"
    args_decoder = staticmethod(inter_pod_affinity_args)

    def __init__(
        self,
        args: Mapping[str, Any] | InterPodAffinityArgs | None = None,
        handle: Handle | None = None,
    ):
        super().__init__(raw_args(args), handle)
        self.affinity_args = inter_pod_affinity_args(args)
        self.hard_pod_affinity_weight = self.affinity_args.hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = (
            self.affinity_args.ignore_preferred_terms_of_existing_pods
        )

    # --- namespaces ----------------------------------------------------------------------

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: a pod with pod affinity or anti-affinity is not signable;
        others sign with their labels (existing pods' terms may match them),
        unless ignorePreferredTermsOfExistingPods makes those irrelevant."""
        affinity = pod.pod.spec.affinity
        if affinity is not None and (
            affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
        ):
            return not_signable("pods with InterPodAffinity are not signable")
        if self.ignore_preferred_terms_of_existing_pods:
            return (), Status.success()
        return [(LABELS_SIGNER, pod.pod.metadata.labels)], Status.success()

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        """GetNamespaceLabelsSnapshot: an unknown namespace has no labels."""
        if self._handle is None:
            return {}
        found = self._handle.namespaces.get(namespace)
        return {} if found is None else dict(found.metadata.labels)

    def _merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """mergeAffinityTermNamespacesIfNotEmpty: the namespaces the namespaceSelector
        selects join `namespaces` (the selector becomes Nothing); an empty selector
        (all namespaces) stays."""
        if term.namespace_selector.empty() or term.namespace_selector.nothing:
            # All namespaces stay all; Nothing selects none to add (the term as it is).
            return term
        namespaces = {} if self._handle is None else self._handle.namespaces
        selected = [
            ns.metadata.name or name
            for name, ns in namespaces.items()
            if term.namespace_selector.matches(ns.metadata.labels)
        ]
        return term.with_namespaces(selected)

    def _merged(self, terms: PodAffinityTerms, *, preferred: bool) -> PodAffinityTerms:
        if not _any_namespace_selector(terms, preferred=preferred):
            return terms  # nothing to unroll: the shared parsed terms as they are
        if preferred:
            return replace(
                terms,
                preferred_affinity=tuple(
                    WeightedAffinityTerm(self._merge_namespaces(w.term), w.weight)
                    for w in terms.preferred_affinity
                ),
                preferred_anti_affinity=tuple(
                    WeightedAffinityTerm(self._merge_namespaces(w.term), w.weight)
                    for w in terms.preferred_anti_affinity
                ),
            )
        return replace(
            terms,
            required_affinity=tuple(self._merge_namespaces(t) for t in terms.required_affinity),
            required_anti_affinity=tuple(
                self._merge_namespaces(t) for t in terms.required_anti_affinity
            ),
        )

    # --- PreFilter -----------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        if not nodes.pod_index.affinity_sets and not _has_pod_affinity(pod):
            # No terms on either side: what follows would find nothing and skip.
            return None, Status.skip()
        # The parsed terms of placed pods with the same ones, else parsed now.
        parsed = nodes.pod_index.terms_of(pod)
        if parsed.errors:
            return None, Status.unresolvable(
                f"parsing pod: {parsed.error_message()}", plugin=self.name
            )
        terms = self._merged(parsed, preferred=False)
        namespace_labels = self._namespace_labels(pod.namespace)
        index = nodes.pod_index
        meta = pod.pod.metadata

        # Existing pods whose required anti-affinity terms match the incoming pod.
        # Each set of pods sharing their terms is matched once.
        existing = TopologyCounts()
        for shared in index.affinity_sets.values():
            for term in shared.terms.required_anti_affinity:
                if term.matches(meta.namespace, meta.labels, namespace_labels):
                    pod_rows, counts = shared.arrays()
                    existing.add_rows(nodes, term.topology_key, pod_rows, counts)

        # Existing pods matching the incoming pod's terms: all affinity terms at once,
        # each anti-affinity term on its own.
        affinity = TopologyCounts()
        if terms.required_affinity:
            rows, counts = sparse_counts(index.term_groups(terms.required_affinity))
            for term in terms.required_affinity:
                affinity.add_rows(nodes, term.topology_key, rows, counts)
        anti_affinity = TopologyCounts()
        for term in terms.required_anti_affinity:
            rows, counts = sparse_counts(index.term_groups((term,)))
            anti_affinity.add_rows(nodes, term.topology_key, rows, counts)

        if existing.is_empty() and not terms.required_affinity and not terms.required_anti_affinity:
            return None, Status.skip()
        state.write(
            PRE_FILTER_STATE_KEY,
            _PreFilterState(
                terms,
                namespace_labels,
                existing,
                affinity,
                anti_affinity,
                pod_matches_all_terms(terms.required_affinity, pod.pod),
            ),
        )
        return None, Status.success()

    # --- PreFilterExtensions -------------------------------------------------------------

    def update_with_pod(
        self,
        state: CycleState,
        pod: PodInfo,
        updated: PodInfo,
        nodes: NodeTable,
        row: int,
        delta: int,
    ) -> Status:
        """preFilterState.updateWithPod. The state is replaced, not changed in place:
        CycleState.clone() is shallow, and a clone must not see another's updates."""
        found = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(found, _PreFilterState):
            return Status.as_error(
                f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found',
                plugin=self.name,
            )
        if nodes.rows[row] is None:
            return Status.success()
        s = found.copy()
        incoming = s.terms
        updated_pod = updated.pod
        # The updated pod's anti-affinity against the incoming pod.
        meta = pod.pod.metadata
        for term in nodes.pod_index.terms_of(updated).required_anti_affinity:
            if term.matches(meta.namespace, meta.labels, s.namespace_labels):
                s.existing_anti_affinity.update(nodes, row, term.topology_key, delta)
        if pod_matches_all_terms(incoming.required_affinity, updated_pod):
            for term in incoming.required_affinity:
                s.affinity.update(nodes, row, term.topology_key, delta)
        for term in incoming.required_anti_affinity:
            if term.matches_pod(updated_pod):
                s.anti_affinity.update(nodes, row, term.topology_key, delta)
        state.write(PRE_FILTER_STATE_KEY, s)
        return Status.success()

    # --- Filter --------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        s = state.read(PRE_FILTER_STATE_KEY, _PreFilterState)
        n = len(rows)
        verdicts = NodeVerdicts.passing(n)

        # satisfyPodAffinity: every term's key on the node, and matching pods in each
        # domain, unless no pod matches anywhere and the pod matches its own terms.
        affinity_failed = np.zeros(n, dtype=np.bool_)
        if s.terms.required_affinity:
            missing_key = np.zeros(n, dtype=np.bool_)
            pods_exist = np.ones(n, dtype=np.bool_)
            for term in s.terms.required_affinity:
                codes, counts = s.affinity.at(nodes, rows, term.topology_key)
                missing_key |= codes < 0
                pods_exist &= ~((codes >= 0) & (counts <= 0))
            first_of_group = s.affinity.is_empty() and s.self_match
            affinity_failed = missing_key | (~pods_exist & (not first_of_group))
        verdicts.add(
            ERR_REASON_AFFINITY_RULES_NOT_MATCH,
            affinity_failed,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        )
        decided = affinity_failed

        # satisfyPodAntiAffinity: no pod the incoming pod repels in the node's domains.
        anti_failed = np.zeros(n, dtype=np.bool_)
        if not s.anti_affinity.is_empty():
            for term in s.terms.required_anti_affinity:
                codes, counts = s.anti_affinity.at(nodes, rows, term.topology_key)
                anti_failed |= (codes >= 0) & (counts > 0)
            anti_failed &= ~decided
        verdicts.add(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, anti_failed, Code.UNSCHEDULABLE)
        decided = decided | anti_failed

        # satisfyExistingPodsAntiAffinity: no existing pod repelling the incoming pod
        # in any of the node's domains.
        existing_failed = np.zeros(n, dtype=np.bool_)
        if not s.existing_anti_affinity.is_empty():
            for key in s.existing_anti_affinity.by_key:
                codes, counts = s.existing_anti_affinity.at(nodes, rows, key)
                existing_failed |= (codes >= 0) & (counts > 0)
            existing_failed &= ~decided
        verdicts.add(
            ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, existing_failed, Code.UNSCHEDULABLE
        )
        return verdicts

    # --- PreScore ------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        affinity = pod.pod.spec.affinity
        has_preferred_affinity = (
            affinity is not None
            and affinity.pod_affinity is not None
            and bool(affinity.pod_affinity.preferred_during_scheduling_ignored_during_execution)
        )
        has_preferred_anti_affinity = (
            affinity is not None
            and affinity.pod_anti_affinity is not None
            and bool(
                affinity.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
            )
        )
        has_constraints = has_preferred_affinity or has_preferred_anti_affinity
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        if not nodes.pod_index.affinity_sets and not _has_pod_affinity(pod):
            return Status.skip()  # nothing to score: what follows would touch nothing
        parsed = nodes.pod_index.terms_of(pod)
        if parsed.errors:
            return Status.as_error(
                f"failed to parse pod: {parsed.error_message()}", plugin=self.name
            )
        terms = self._merged(parsed, preferred=True)
        namespace_labels = self._namespace_labels(pod.namespace)
        index = nodes.pod_index
        meta = pod.pod.metadata
        score = TopologyCounts()
        touched = False

        # The incoming pod's preferred terms, matched by every existing pod.
        if has_constraints:
            for weighted, sign in (
                *((w, 1) for w in terms.preferred_affinity),
                *((w, -1) for w in terms.preferred_anti_affinity),
            ):
                pod_rows, counts = sparse_counts(index.term_groups((weighted.term,)))
                touched |= score.add_rows(
                    nodes, weighted.term.topology_key, pod_rows, counts * (sign * weighted.weight)
                )

        # The existing pods' terms, matched by the incoming pod: each set of pods
        # sharing their terms once.
        hard = self.hard_pod_affinity_weight
        for shared in index.affinity_sets.values():
            existing = shared.terms
            weighted_terms = [
                *(((t, hard) for t in existing.required_affinity) if hard > 0 else ()),
                *((w.term, w.weight) for w in existing.preferred_affinity),
                *((w.term, -w.weight) for w in existing.preferred_anti_affinity),
            ]
            for term, weight in weighted_terms:
                if term.matches(meta.namespace, meta.labels, namespace_labels):
                    pod_rows, counts = shared.arrays()
                    touched |= score.add_rows(nodes, term.topology_key, pod_rows, counts * weight)

        if not touched:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(score))
        return Status.success()

    # --- Score ---------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        """The sum of the scores of the node's domains: positive for affinity, negative
        for anti-affinity; NormalizeScore maps them onto 0..100."""
        s = state.read(PRE_SCORE_STATE_KEY, _PreScoreState)
        total = np.zeros(len(rows), dtype=np.int64)
        for key in s.topology_score.by_key:
            _, counts = s.topology_score.at(nodes, rows, key)
            total += counts
        return total

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        s = state.read(PRE_SCORE_STATE_KEY, _PreScoreState)
        if not s.topology_score.by_key or len(scores) == 0:
            return
        min_count = int(scores.min())
        diff = int(scores.max()) - min_count
        if diff > 0:
            fraction = (scores - min_count).astype(np.float64) / np.float64(diff)
            scores[:] = (np.float64(MAX_NODE_SCORE) * fraction).astype(np.int64)
        else:
            scores[:] = 0

    # --- queueing ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: object, new: object) -> bool:
        original, modified = as_pod(old), as_pod(new)
        if (old is not None and original is None) or (new is not None and modified is None):
            return True
        target = pod.pod
        if modified is not None and original is not None and same_pod(target, modified):
            return True  # the pod's own labels changed: others' anti-affinity may not apply
        if (modified is not None and _unassigned(modified)) or (
            original is not None and _unassigned(original)
        ):
            return False
        own = pod_affinity_terms(target)
        if own.errors:
            return True
        terms, anti_terms = own.required_affinity, own.required_anti_affinity
        if modified is not None and original is not None:
            if not pod_matches_all_terms(terms, original) and pod_matches_all_terms(
                terms, modified
            ):
                return True
            return pod_matches_all_terms(anti_terms, original) and not pod_matches_all_terms(
                anti_terms, modified
            )
        if modified is not None:
            return pod_matches_all_terms(terms, modified)
        if original is None:
            return True
        if pod_matches_all_terms(anti_terms, original):
            return True
        theirs = pod_affinity_terms(original)
        if theirs.errors:
            return True
        return pod_matches_all_terms(theirs.required_anti_affinity, target)

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> bool:
        original, modified = as_node(old), as_node(new)
        if (old is not None and original is None) or modified is None:
            return True
        own = pod_affinity_terms(pod.pod)
        if own.errors:
            return True
        after = modified.metadata.labels
        before = None if original is None else original.metadata.labels
        for term in own.required_affinity:
            key = term.topology_key
            if before is None:
                if key in after:
                    return True  # a node with the topology key joined
                continue
            if key in after and (key not in before or before[key] != after[key]):
                return True  # the node gained the key, or moved to another domain
        for term in own.required_anti_affinity:
            key = term.topology_key
            if before is None:
                return True  # any new node may be free of the pods this one repels
            if key in before and (key not in after or before[key] != after[key]):
                return True  # the node lost the key, or moved to another domain
        return False


def _unassigned(pod: Pod) -> bool:
    return not pod.spec.node_name and not pod.status.nominated_node_name


def _has_pod_affinity(pod: PodInfo) -> bool:
    """Whether the pod has pod affinity or anti-affinity (terms, or terms that fail
    to parse)."""
    affinity = pod.pod.spec.affinity
    return affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )
