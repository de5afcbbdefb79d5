"""The pods on nodes indexed by namespace and labels, for the inter-pod plugins.

PodTopologySpread and InterPodAffinity ask every cycle "how many pods matching
this selector does each node hold". kube-scheduler answers by walking every pod
of every node; here the answer comes from an index the NodeTable keeps current:

* pods are grouped by (namespace, labels, terminating). The replicas of a
  workload share their labels, so a cluster of 100,000 pods has a few hundred
  or thousand groups; a selector is matched once per group, not once per pod;
* each group knows how many of its pods every row holds (sparse, row -> count);
* an inverted index (namespace, label key, value) -> groups narrows the groups a
  selector with an `In`/`=`/`Exists` requirement can match, so a query touches
  only the groups that carry the label it asks for;
* the pods with inter-pod (anti-)affinity are grouped by their terms (the
  replicas of a workload share them), each set parsed once and knowing how many
  of its pods every row holds (NodeInfo.PodsWithAffinity upstream), so
  InterPodAffinity matches a set's terms once, not once per pod.

It also holds the label-selector and affinity-term types the plugins share
(labels.Selector and framework.AffinityTerm upstream).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.labels import (
    EQUALS,
    EXISTS,
    IN,
    NOT_IN,
    NOTHING,
    Requirement,
    Selector,
    SelectorError,
    label_selector_as_selector,
)
from kubesched.api.objects import (
    Pod,
    PodAffinity,
    PodAffinityTerm,
    WeightedPodAffinityTerm,
)
from kubesched.framework.types import PodInfo

IntArray = npt.NDArray[np.int64]
Rows = npt.NDArray[np.intp]

# --- framework.AffinityTerm --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed PodAffinityTerm: the pods it selects and the topology it spans."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> bool:
        """AffinityTerm.Matches: the namespace is listed or selected, and the labels match."""
        if namespace in self.namespaces or self.namespace_selector.matches(namespace_labels):
            return self.selector.matches(labels)
        return False

    def matches_pod(self, pod: Pod, namespace_labels: Mapping[str, str] | None = None) -> bool:
        return self.matches(pod.metadata.namespace, pod.metadata.labels, namespace_labels or {})

    def all_namespaces(self) -> bool:
        """Whether the term selects pods of every namespace (an empty namespaceSelector)."""
        return self.namespace_selector.empty()

    def with_namespaces(self, extra: Iterable[str]) -> AffinityTerm:
        """The term with its namespaceSelector unrolled into `namespaces` (then Nothing)."""
        return replace(
            self, namespaces=self.namespaces | frozenset(extra), namespace_selector=NOTHING
        )


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityTerms:
    """The (anti-)affinity terms of a pod, parsed once (upstream PodInfo's fields).

    `errors` names the categories that did not parse; those are left empty, as
    upstream leaves them nil.
    """

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    errors: tuple[str, ...] = ()

    def error_message(self) -> str:
        """utilerrors.NewAggregate(parseErrs).Error()."""
        if len(self.errors) == 1:
            return self.errors[0]
        return f"[{', '.join(self.errors)}]"


def affinity_term(pod: Pod, term: PodAffinityTerm) -> AffinityTerm:
    """newAffinityTerm, with matchLabelKeys / mismatchLabelKeys merged into the selector.

    The API server merges those keys at pod creation (MatchLabelKeysInPodAffinity,
    GA); pods read from manifests never went through it, so the merge is done
    here too. A pod that did go through it gets the same requirement twice,
    which selects the same pods.
    """
    selector = label_selector_as_selector(term.label_selector)
    if term.label_selector is not None and (term.match_label_keys or term.mismatch_label_keys):
        labels = pod.metadata.labels
        extra = [
            Requirement(k, IN, frozenset((labels[k],)))
            for k in term.match_label_keys
            if k in labels
        ]
        extra += [
            Requirement(k, NOT_IN, frozenset((labels[k],)))
            for k in term.mismatch_label_keys
            if k in labels
        ]
        if extra:
            selector = selector.add(*extra)
    if not term.namespaces and term.namespace_selector is None:
        namespaces = frozenset((pod.metadata.namespace,))
    else:
        namespaces = frozenset(term.namespaces)
    namespace_selector = label_selector_as_selector(term.namespace_selector)
    return AffinityTerm(namespaces, selector, term.topology_key, namespace_selector)


def _required(pod: Pod, terms: list[PodAffinityTerm]) -> tuple[AffinityTerm, ...]:
    return tuple(affinity_term(pod, t) for t in terms)


def _weighted(pod: Pod, terms: list[WeightedPodAffinityTerm]) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(
        WeightedAffinityTerm(affinity_term(pod, t.pod_affinity_term), t.weight) for t in terms
    )


def has_pod_affinity(pod: Pod) -> bool:
    """podWithAffinity: any pod affinity or anti-affinity (required or preferred)."""
    affinity = pod.spec.affinity
    return affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    )


def has_required_anti_affinity(pod: Pod) -> bool:
    affinity = pod.spec.affinity
    return (
        affinity is not None
        and affinity.pod_anti_affinity is not None
        and bool(affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution)
    )


def pod_affinity_terms(pod: Pod) -> PodAffinityTerms:
    """PodInfo.Update's term parsing: each category parsed on its own."""
    affinity = pod.spec.affinity
    if affinity is None or (affinity.pod_affinity is None and affinity.pod_anti_affinity is None):
        return PodAffinityTerms()
    errors: list[str] = []

    def required(name: str, source: PodAffinity | None) -> tuple[AffinityTerm, ...]:
        if source is None:
            return ()
        try:
            return _required(pod, source.required_during_scheduling_ignored_during_execution)
        except SelectorError as err:
            errors.append(f"{name}: {err}")
            return ()

    def weighted(name: str, source: PodAffinity | None) -> tuple[WeightedAffinityTerm, ...]:
        if source is None:
            return ()
        try:
            return _weighted(pod, source.preferred_during_scheduling_ignored_during_execution)
        except SelectorError as err:
            errors.append(f"{name}: {err}")
            return ()

    pa, paa = affinity.pod_affinity, affinity.pod_anti_affinity
    return PodAffinityTerms(
        required_affinity=required("requiredAffinityTerms", pa),
        required_anti_affinity=required("requiredAntiAffinityTerms", paa),
        preferred_affinity=weighted("preferredAffinityTerms", pa),
        preferred_anti_affinity=weighted("preferredAntiAffinityTerms", paa),
        errors=tuple(errors),
    )


# --- the index ---------------------------------------------------------------------------

GroupKey = tuple[str, bool, frozenset[tuple[str, str]]]
_K = TypeVar("_K")


class RowCounts:
    """How many of a group's pods each row holds (sparse, row -> count), with the
    same as arrays for the plugins.

    The arrays are kept in step with every bump (a row's slot is found through
    `_slot`; a row that empties takes the last slot's place), so reading them is
    one copy of the used part, not a walk over the dict: the inter-pod plugins
    read the groups they match every cycle, and each cycle's bind changes one.
    """

    __slots__ = ("_arrays", "_counts", "_rows", "_slot", "rows")

    def __init__(self) -> None:
        self.rows: dict[int, int] = {}
        self._slot: dict[int, int] = {}
        self._rows: Rows = np.zeros(4, dtype=np.intp)
        self._counts: IntArray = np.zeros(4, dtype=np.int64)
        self._arrays: tuple[Rows, IntArray] | None = None

    def bump(self, row: int, delta: int) -> None:
        count = self.rows.get(row, 0) + delta
        slot = self._slot.get(row)
        if count > 0:
            self.rows[row] = count
            if slot is None:
                slot = len(self._slot)
                if slot == len(self._rows):
                    self._rows = np.concatenate([self._rows, np.zeros(slot, dtype=np.intp)])
                    self._counts = np.concatenate([self._counts, np.zeros(slot, dtype=np.int64)])
                self._slot[row] = slot
                self._rows[slot] = row
            self._counts[slot] = count
        elif slot is not None:
            del self.rows[row]
            del self._slot[row]
            last = len(self._slot)
            if slot != last:
                moved = int(self._rows[last])
                self._rows[slot] = moved
                self._counts[slot] = self._counts[last]
                self._slot[moved] = slot
        self._arrays = None

    def arrays(self) -> tuple[Rows, IntArray]:
        """(rows, counts) as arrays, a snapshot that later bumps leave alone."""
        if self._arrays is None:
            n = len(self._slot)
            self._arrays = (self._rows[:n].copy(), self._counts[:n].copy())
        return self._arrays


class LabelGroup(RowCounts):
    """The pods of one namespace with the same labels (and terminating or not)."""

    __slots__ = ("key", "labels", "namespace", "terminating")

    def __init__(self, key: GroupKey, labels: Mapping[str, str]) -> None:
        super().__init__()
        self.key = key
        self.namespace = key[0]
        self.terminating = key[1]
        self.labels = labels  # the first pod's (pods are not changed in place)

    def __repr__(self) -> str:
        return f"LabelGroup({self.namespace}, {self.labels}, rows={self.rows})"


AffinityKey = tuple[str, bytes, tuple[tuple[str, str | None], ...]]

_encoder = msgspec.json.Encoder()


def affinity_key(pod: Pod) -> AffinityKey:
    """What a pod's parsed terms depend on: its namespace (the default of a term's
    namespaces), its pod (anti-)affinity, and the values of the labels the terms'
    matchLabelKeys / mismatchLabelKeys name. Replicas of a workload share it."""
    affinity = pod.spec.affinity
    assert affinity is not None
    label_keys: set[str] = set()
    for source in (affinity.pod_affinity, affinity.pod_anti_affinity):
        if source is None:
            continue
        for t in source.required_during_scheduling_ignored_during_execution:
            label_keys.update(t.match_label_keys, t.mismatch_label_keys)
        for w in source.preferred_during_scheduling_ignored_during_execution:
            label_keys.update(w.pod_affinity_term.match_label_keys)
            label_keys.update(w.pod_affinity_term.mismatch_label_keys)
    labels = pod.metadata.labels
    return (
        pod.metadata.namespace,
        _encoder.encode((affinity.pod_affinity, affinity.pod_anti_affinity)),
        tuple((k, labels.get(k)) for k in sorted(label_keys)),
    )


class AffinitySet(RowCounts):
    """The placed pods with one set of (anti-)affinity terms, parsed once, and how many
    of them each row holds (NodeInfo.PodsWithAffinity upstream, grouped)."""

    __slots__ = ("key", "terms")

    def __init__(self, key: AffinityKey, terms: PodAffinityTerms) -> None:
        super().__init__()
        self.key = key
        self.terms = terms


_EMPTY_GROUPS: dict[GroupKey, LabelGroup] = {}


def _discard(index: dict[_K, dict[GroupKey, LabelGroup]], index_key: _K, key: GroupKey) -> None:
    members = index.get(index_key)
    if members is not None:
        members.pop(key, None)
        if not members:
            del index[index_key]


@dataclass(slots=True)
class PodIndex:
    groups: dict[GroupKey, LabelGroup] = field(default_factory=dict)
    by_namespace: dict[str, dict[GroupKey, LabelGroup]] = field(default_factory=dict)
    by_label: dict[tuple[str, str, str], dict[GroupKey, LabelGroup]] = field(default_factory=dict)
    by_key: dict[tuple[str, str], dict[GroupKey, LabelGroup]] = field(default_factory=dict)
    # the placed pods with pod (anti-)affinity, by the terms they share
    affinity_sets: dict[AffinityKey, AffinitySet] = field(default_factory=dict)
    # row -> pod key -> its affinity set's key, for those pods
    with_affinity: dict[int, dict[str, AffinityKey]] = field(default_factory=dict)

    # --- upkeep (called by NodeTable) ------------------------------------------------

    def account(self, pod: PodInfo, row: int, sign: int) -> None:
        meta = pod.pod.metadata
        labels = meta.labels
        key: GroupKey = (
            meta.namespace,
            meta.deletion_timestamp is not None,
            frozenset(labels.items()),
        )
        group = self.groups.get(key)
        if sign > 0:
            if group is None:
                group = self._new_group(key, labels)
            group.bump(row, 1)
            if has_pod_affinity(pod.pod):
                self._add_affinity(pod, row)
            return
        if group is not None:
            group.bump(row, -1)
            if not group.rows:
                self._drop_group(group)
        on_row = self.with_affinity.get(row)
        if on_row is not None and pod.key in on_row:
            self._remove_affinity(on_row.pop(pod.key), row)
            if not on_row:
                del self.with_affinity[row]

    def _add_affinity(self, pod: PodInfo, row: int) -> None:
        akey = affinity_key(pod.pod)
        found = self.affinity_sets.get(akey)
        if found is None:
            found = self.affinity_sets[akey] = AffinitySet(akey, pod_affinity_terms(pod.pod))
        found.bump(row, 1)
        self.with_affinity.setdefault(row, {})[pod.key] = akey

    def _remove_affinity(self, akey: AffinityKey, row: int) -> None:
        found = self.affinity_sets[akey]
        found.bump(row, -1)
        if not found.rows:
            del self.affinity_sets[akey]

    def _new_group(self, key: GroupKey, labels: Mapping[str, str]) -> LabelGroup:
        group = LabelGroup(key, labels)
        namespace = key[0]
        self.groups[key] = group
        self.by_namespace.setdefault(namespace, {})[key] = group
        for k, v in labels.items():
            self.by_label.setdefault((namespace, k, v), {})[key] = group
            self.by_key.setdefault((namespace, k), {})[key] = group
        return group

    def _drop_group(self, group: LabelGroup) -> None:
        key, namespace = group.key, group.namespace
        del self.groups[key]
        _discard(self.by_namespace, namespace, key)
        for k, v in group.labels.items():
            _discard(self.by_label, (namespace, k, v), key)
            _discard(self.by_key, (namespace, k), key)

    # --- queries ---------------------------------------------------------------------

    def terms_of(self, pod: PodInfo) -> PodAffinityTerms:
        """A pod's parsed terms: shared with placed pods of the same terms, else parsed."""
        if not has_pod_affinity(pod.pod):
            return PodAffinityTerms()
        found = self.affinity_sets.get(affinity_key(pod.pod))
        return found.terms if found is not None else pod_affinity_terms(pod.pod)

    def _candidates(self, namespace: str, selector: Selector) -> Iterable[LabelGroup]:
        """The groups of `namespace` that may match: narrowed by the most selective
        In / = / Exists requirement, else all of the namespace's groups."""
        best: dict[GroupKey, LabelGroup] | None = None
        for req in selector.requirements:
            if req.operator in (IN, EQUALS):
                if len(req.values) == 1:
                    (value,) = req.values
                    found = self.by_label.get((namespace, req.key, value), _EMPTY_GROUPS)
                else:
                    found = {}
                    for value in req.values:
                        found.update(self.by_label.get((namespace, req.key, value), _EMPTY_GROUPS))
            elif req.operator == EXISTS:
                found = self.by_key.get((namespace, req.key), _EMPTY_GROUPS)
            else:
                continue
            if best is None or len(found) < len(best):
                best = found
                if not best:
                    break
        if best is None:
            best = self.by_namespace.get(namespace, _EMPTY_GROUPS)
        return best.values()

    def matching_groups(
        self, namespaces: Collection[str] | None, selector: Selector
    ) -> list[LabelGroup]:
        """The groups in `namespaces` (None: every namespace) whose labels match."""
        if selector.nothing:
            return []
        found: list[LabelGroup] = []
        for namespace in self.by_namespace if namespaces is None else namespaces:
            found.extend(
                g for g in self._candidates(namespace, selector) if selector.matches(g.labels)
            )
        return found

    def term_groups(self, terms: Iterable[AffinityTerm]) -> list[LabelGroup]:
        """The groups whose pods match every one of `terms` (of an incoming pod, whose
        namespaceSelector is unrolled: no namespace labels are needed)."""
        terms = tuple(terms)
        if not terms:
            return []
        first = terms[0]
        namespaces = None if first.all_namespaces() else first.namespaces
        return [
            g
            for g in self.matching_groups(namespaces, first.selector)
            if all(t.matches(g.namespace, g.labels, {}) for t in terms[1:])
        ]


def sparse_counts(
    groups: Iterable[LabelGroup], *, skip_terminating: bool = False
) -> tuple[Rows, IntArray]:
    """(rows, counts) of the pods of `groups`; a row may appear more than once."""
    parts = [g.arrays() for g in groups if not (skip_terminating and g.terminating)]
    if not parts:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0]
    return (
        np.concatenate([rows for rows, _ in parts]),
        np.concatenate([counts for _, counts in parts]),
    )
