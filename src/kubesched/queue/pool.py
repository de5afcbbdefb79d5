"""The unschedulable pool (unschedulablePods upstream), filed for the events that
can move its pods.

Upstream's MoveAllToActiveOrBackoffQueue asks every pod of the pool about every
event it may care for. In Go that is fast enough; here, with thousands of pods
waiting for their ResourceClaims, the claims' events made it quadratic: at 5,000
nodes the DRA workload's claim events (one per claim created, one per allocation)
each asked ~5,000 pods, and kubesched fell so far behind its watches that they
expired and had to list again. A registration may therefore say which pods its
hint can say Queue for (`HintIndex`); the pool files each pod under its keys, and
an event whose every registration has an index reaches only the pods filed under
its keys, in the pool's order, with the same verdicts as asking all of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence, ValuesView

from kubesched.framework.interfaces import ClusterEventWithHint, HintIndex
from kubesched.framework.types import ClusterEvent, QueuedPodInfo, Resource


class UnschedulablePool(Mapping[str, QueuedPodInfo]):
    """Key -> pod, read like the plain pool's dict, that keeps its pods filed by the
    registrations' HintIndexes as pods come and go. It wraps its dict rather than
    being one, so that no dict method can change the pods behind the filing's back:
    pods come in by `pool[key] = qpi` and go by `del pool[key]` or `pop`. A pod whose
    PodInfo is swapped while in the pool must be filed again (`refile`)."""

    def __init__(
        self, registrations_of: Callable[[QueuedPodInfo], Sequence[ClusterEventWithHint]]
    ) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._registrations_of = registrations_of
        # HintIndex -> key -> the pods filed under it.
        self._filed: dict[HintIndex, dict[str, set[str]]] = {}
        # pod -> (index, key) pairs it is filed under, to take it out again.
        self._filed_as: dict[str, list[tuple[HintIndex, str]]] = {}
        # Pods any event may move whatever the hints say: no rejecting plugin, or no
        # profile (isPodWorthRequeuing's early answers).
        self._any_event: set[str] = set()
        # The pool's order (the dict's insertion order), to visit pods in it.
        self._order: dict[str, int] = {}
        self._seq = itertools.count()

    # Reading: the dict's own methods, which the queue calls on every event.
    def __getitem__(self, key: str) -> QueuedPodInfo:
        return self._pods[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._pods)

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def get(self, key: str, default: QueuedPodInfo | None = None) -> QueuedPodInfo | None:  # type: ignore[override]
        return self._pods.get(key, default)

    def values(self) -> ValuesView[QueuedPodInfo]:
        return self._pods.values()

    # Changing: each keeps the filing in step.
    def __setitem__(self, key: str, qpi: QueuedPodInfo) -> None:
        if key not in self._pods:
            self._order[key] = next(self._seq)
        self._pods[key] = qpi
        self.refile(qpi)

    def __delitem__(self, key: str) -> None:
        del self._pods[key]
        self._unfile(key)
        del self._order[key]

    def pop(self, key: str, default: QueuedPodInfo | None = None) -> QueuedPodInfo | None:
        qpi = self._pods.pop(key, None)
        if qpi is None:
            return default
        self._unfile(key)
        del self._order[key]
        return qpi

    def refile(self, qpi: QueuedPodInfo) -> None:
        """File the pod (in the pool) under the keys its PodInfo gives now."""
        key = qpi.pod_info.key
        self._unfile(key)
        registrations = self._registrations_of(qpi)
        if not (qpi.unschedulable_plugins or qpi.pending_plugins) or not registrations:
            self._any_event.add(key)
        filed: list[tuple[HintIndex, str]] = []
        for registered in registrations:
            index = registered.index
            if index is None:
                continue
            by_key = self._filed.setdefault(index, {})
            for k in index.pod_keys(qpi.pod_info):
                by_key.setdefault(k, set()).add(key)
                filed.append((index, k))
        if filed:
            self._filed_as[key] = filed

    def _unfile(self, key: str) -> None:
        self._any_event.discard(key)
        for index, k in self._filed_as.pop(key, ()):
            pods = self._filed[index].get(k)
            if pods is not None:
                pods.discard(key)
                if not pods:
                    del self._filed[index][k]

    def concerned(
        self,
        event: ClusterEvent,
        indexes: list[HintIndex] | None,
        old: object,
        new: object,
    ) -> list[QueuedPodInfo] | None:
        """The pods EVENT can move, in the pool's order, when INDEXES (those of every
        registration that EVENT matches) narrow it down; None when they do not (a
        registration without one, an index that says any pod): ask them all."""
        if indexes is None or event.resource == Resource.WILDCARD:
            return None
        keys = set(self._any_event)
        for index in indexes:
            event_keys = index.event_keys(old, new)
            if event_keys is None:
                return None
            filed = self._filed.get(index)
            if filed is None:
                continue
            for k in event_keys:
                pods = filed.get(k)
                if pods:
                    keys |= pods
        order = self._order
        in_pool = self._pods
        return [in_pool[key] for key in sorted(keys, key=order.__getitem__)]


def matching_indexes(
    profiles: Mapping[str, Mapping[str, list[ClusterEventWithHint]]], event: ClusterEvent
) -> list[HintIndex] | None:
    """The HintIndexes of every registration (every profile's) that EVENT matches;
    None if one of them has none, or has no hint (it moves pods without asking)."""
    found: list[HintIndex] = []
    for registrations in profiles.values():
        for plugin_registrations in registrations.values():
            for registered in plugin_registrations:
                if not event.matches(registered.event):
                    continue
                if registered.index is None or registered.hint is None:
                    return None
                if registered.index not in found:
                    found.append(registered.index)
    return found
