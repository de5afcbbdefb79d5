"""PriorityQueue as kube-scheduler has it.

- activeQ: pods ready to be tried, ordered by the profile's QueueSort plugin;
- backoffQ: pods that failed and wait out their backoff (1 s doubling to 10 s);
- unschedulable pool: pods that no cluster event has yet given a reason to retry.
  A cluster event moves a pod out when one of the plugins that rejected it
  registered for that event; a pod stuck for 5 minutes is moved regardless.

Events that arrive while a pod is being tried (in flight) are kept, and when the
pod comes back rejected, the hints of the plugins that rejected it decide on
them as if they had come after (inFlightEvents upstream, SchedulerQueueingHints
being GA): a helpful one sends the pod to backoffQ, none leaves it in the pool.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Pod, same_pod
from kubesched.framework.clock import Clock
from kubesched.framework.interfaces import ClusterEventWithHint, HintIndex
from kubesched.framework.status import Status
from kubesched.framework.types import (
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_UPDATE,
    ClusterEvent,
    PodInfo,
    QueuedPodInfo,
    Resource,
)
from kubesched.queue.heap import KeyedHeap
from kubesched.queue.pod_events import pod_scheduling_properties_change
from kubesched.queue.pool import UnschedulablePool, matching_indexes

DEFAULT_INITIAL_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 10.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

# queueingStrategy upstream: what an event means for a pod in the unschedulable pool.
QUEUE_SKIP = 0
QUEUE_AFTER_BACKOFF = 1
QUEUE_IMMEDIATELY = 2


@dataclass(slots=True)
class QueueProfile:
    """What the queue needs of a profile: its sort order, PreEnqueue and event interests."""

    less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]
    pre_enqueue: Callable[[PodInfo], Status]
    events: dict[str, list[ClusterEventWithHint]]
    # The QueueSort's rank, if it has one (QueueSortPlugin.sort_rank): activeQ's
    # heap compares ranks then.
    rank: Callable[[QueuedPodInfo], Any] | None = None


def _key(qpi: QueuedPodInfo) -> str:
    return qpi.pod_info.key


# backoffQOrderingWindowDuration: backoff expiries are ordered per one-second window.
BACKOFF_WINDOW = 1.0


class SchedulingQueue:
    def __init__(
        self,
        profiles: dict[str, QueueProfile],
        clock: Clock,
        *,
        initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        generic_workload: bool = False,
    ) -> None:
        self.profiles = profiles
        # isGenericWorkloadEnabled: pod group members then retry on backoff alone.
        self.generic_workload = generic_workload
        self._interest: dict[ClusterEvent, bool] = {}
        self._wanting: dict[tuple[str, ClusterEvent], frozenset[str]] = {}
        self.clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        first = next(iter(profiles.values()))
        # kube-scheduler requires every profile to share one QueueSort; so do we.
        self.active_less = first.less
        self.active: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, first.less, first.rank)
        self.backoff: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, self._backoff_less)
        self._registrations: dict[str, list[ClusterEventWithHint]] = {}
        self._indexes: dict[ClusterEvent, list[HintIndex] | None] = {}
        self._gating: dict[tuple[str, str, ClusterEvent], bool] = {}
        self.unschedulable = UnschedulablePool(self._registrations_of)
        self.in_flight: dict[str, QueuedPodInfo] = {}
        # inFlightEvents upstream: the events seen while pods were in flight, each
        # with its sequence number; a pod's mark is the sequence number at its pop,
        # so its events are those after the mark. A pod whose scheduling cycle is
        # over (bound or binding) has no mark any more.
        self.in_flight_events: list[tuple[int, ClusterEvent, object, object]] = []
        self._in_flight_marks: dict[str, int] = {}
        self._event_seq = 0
        # The pods popped so far (schedulingCycle upstream): the batch of
        # opportunistic batching holds only from one cycle to the very next.
        self.scheduling_cycle = 0
        self._seq = itertools.count()
        self._ready = asyncio.Event()
        self._closed = False
        self.incoming: dict[tuple[str, str], int] = {}  # (queue, event) -> count, for metrics
        self.pop_from_backoff = True
        # The simulator's "nothing changed since this pod was last tried": such a pod
        # would fail the same way again, so it is not popped early.
        self.is_stale: Callable[[QueuedPodInfo], bool] | None = None

    # --- adding ----------------------------------------------------------------

    def _profile(self, pod: Pod) -> QueueProfile | None:
        return self.profiles.get(pod.spec.scheduler_name)

    def _new(self, pod_info: PodInfo) -> QueuedPodInfo:
        return QueuedPodInfo(pod_info, self.clock.now(), seq=next(self._seq))

    def add(self, pod_info: PodInfo) -> None:
        """A new pending pod: into activeQ, or held back if a PreEnqueue plugin says so."""
        qpi = self._new(pod_info)
        self._admit(qpi, "PodAdd")

    def _gate(self, qpi: QueuedPodInfo, event: str) -> bool:
        """runPreEnqueuePlugins on a pod about to enter activeQ or backoffQ: False
        (and the pod parked in the unschedulable pool, gated) if a plugin holds it
        back. The gating plugin joins the pod's rejectors, as upstream, so that an
        event its registration lets through is judged by every rejector's hint."""
        profile = self._profile(qpi.pod)
        status = profile.pre_enqueue(qpi.pod_info) if profile else Status()
        if status.is_success():
            qpi.gated = False
            qpi.gating_plugin = ""
            return True
        qpi.gated = True
        qpi.gating_plugin = status.plugin
        if status.plugin:
            qpi.unschedulable_plugins = qpi.unschedulable_plugins | {status.plugin}
        self.active.delete(qpi.pod_info.key)
        self.backoff.delete(qpi.pod_info.key)
        self.unschedulable[qpi.pod_info.key] = qpi
        self._count("unschedulable", event)
        return False

    def _admit(self, qpi: QueuedPodInfo, event: str) -> bool:
        if not self._gate(qpi, event):
            return False
        self.unschedulable.pop(qpi.pod_info.key, None)
        self.backoff.delete(qpi.pod_info.key)
        self._mark_initial_attempt(qpi)
        self.active.push(qpi)
        self._count("active", event)
        self._ready.set()
        return True

    def _mark_initial_attempt(self, qpi: QueuedPodInfo) -> None:
        """addToActiveQ / moveToActiveQ upstream: a pod's InitialAttemptTimestamp is
        set when it first enters activeQ (the pod group cycle orders a group's pods
        by it: the member whose arrival let the group in comes first)."""
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self.clock.now()
            qpi.initial_attempt_seq = next(self._seq)

    def _count(self, queue: str, event: str) -> None:
        self.incoming[(queue, event)] = self.incoming.get((queue, event), 0) + 1

    def update(self, pod_info: PodInfo, old: Pod | None = None) -> None:
        """A pending pod changed (Update upstream): refreshed where it is; in flight,
        its update events are kept for when it comes back; in the unschedulable
        pool, the rejecting plugins' hints decide whether the update helps (a
        gated pod is re-checked). `old` is the pod before the update, if known."""
        key = pod_info.key
        events = (
            pod_scheduling_properties_change(pod_info.pod, old)
            if old is not None
            else [EVENT_UNSCHEDULED_POD_UPDATE]
        )
        if key in self.in_flight:
            self.in_flight[key].pod_info = pod_info
            if key in self._in_flight_marks:
                for event in events:
                    self._record(event, old, pod_info.pod)
            return
        for heap in (self.active, self.backoff):
            qpi = heap.get(key)
            if qpi is not None:
                qpi.pod_info = pod_info
                heap.push(qpi)
                return
        qpi = self.unschedulable.get(key)
        if qpi is None:
            self.add(pod_info)
            return
        qpi.pod_info = pod_info
        self.unschedulable.refile(qpi)
        if qpi.gated:
            self._admit(qpi, "PodUpdate")
            return
        for event in events:
            strategy = self._worth_requeuing(qpi, event, old, pod_info.pod)
            if strategy != QUEUE_SKIP:
                self._requeue(qpi, event.label or "PodUpdate", strategy)
                return

    def refresh(self, pod_info: PodInfo) -> None:
        """Swap in a newer copy of a pending pod without moving it anywhere."""
        key = pod_info.key
        found = self.find(key)
        if found is not None:
            found.pod_info = pod_info
            if self.unschedulable.get(key) is found:
                self.unschedulable.refile(found)

    def find(self, key: str) -> QueuedPodInfo | None:
        """The pod of that key wherever it is in the queue (in flight included)."""
        return (
            self.in_flight.get(key)
            or self.active.get(key)
            or self.backoff.get(key)
            or self.unschedulable.get(key)
        )

    def delete(self, key: str) -> None:
        self.active.delete(key)
        self.backoff.delete(key)
        self.unschedulable.pop(key, None)
        self.in_flight.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return (
            key in self.active
            or key in self.backoff
            or key in self.unschedulable
            or key in self.in_flight
        )

    # --- popping ---------------------------------------------------------------

    def _early_from_backoff(self) -> QueuedPodInfo | None:
        """SchedulerPopFromBackoffQ (on by default since 1.33): with activeQ empty, a pod
        that a cluster event moved to backoffQ is tried at once instead of idling out its
        backoff. Pods that failed with an error keep their backoff (podErrorBackoffQ)."""
        if not self.pop_from_backoff or not self.backoff:
            return None
        candidates = [
            q
            for q in self.backoff
            if (q.unschedulable_plugins or q.pending_plugins)
            and (self.is_stale is None or not self.is_stale(q))
        ]
        if not candidates:
            return None
        head = candidates[0]
        for q in candidates[1:]:
            if self._backoff_less(q, head):
                head = q
        self.backoff.delete(head.pod_info.key)
        self._count("active", "PopFromBackoffQ")
        return head

    def pop_nowait(self) -> QueuedPodInfo | None:
        if self.active:
            qpi = self.active.pop()
        else:
            early = self._early_from_backoff()
            if early is None:
                self._ready.clear()
                return None
            qpi = early
        self.scheduling_cycle += 1
        qpi.attempts += 1
        self._mark_initial_attempt(qpi)  # popped early from backoffQ
        self.in_flight[qpi.pod_info.key] = qpi
        self._in_flight_marks[qpi.pod_info.key] = self._event_seq
        return qpi

    def pop_specific(self, key: str) -> QueuedPodInfo | None:
        """PopSpecificPod: activate the pod (PreEnqueue runs), then take it from
        activeQ into flight as a pop would; None if it is not there after that
        (gated, in flight already, or unknown). The pod group cycle pops its group's
        other pods with it."""
        self.activate([key])
        qpi = self.active.get(key)
        if qpi is None:
            return None
        self.active.delete(key)
        qpi.attempts += 1
        self.in_flight[key] = qpi
        self._in_flight_marks[key] = self._event_seq
        return qpi

    async def pop(self) -> QueuedPodInfo | None:
        """Wait for a pod; None once the queue is closed."""
        while not self._closed:
            qpi = self.pop_nowait()
            if qpi is not None:
                return qpi
            await self._ready.wait()
        return None

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    def done(self, key: str) -> None:
        """The pod's attempt is over (bound, or handed back through requeue)."""
        self.in_flight.pop(key, None)
        self.scheduling_done(key)

    def scheduling_done(self, key: str) -> None:
        """Done upstream: the events seen from now on no longer concern this pod
        (its scheduling cycle and Permit are over; it is being bound). It stays in
        flight until its binding ends, but a failure from here on retries after
        backoff whatever happened meanwhile."""
        if self._in_flight_marks.pop(key, None) is None:
            return
        if not self._in_flight_marks:
            self.in_flight_events.clear()
            return
        oldest = min(self._in_flight_marks.values())
        drop = 0
        while drop < len(self.in_flight_events) and self.in_flight_events[drop][0] <= oldest:
            drop += 1
        if drop:
            del self.in_flight_events[:drop]

    def _record(self, event: ClusterEvent, old: object, new: object) -> None:
        self._event_seq += 1
        self.in_flight_events.append((self._event_seq, event, old, new))

    def _events_while_in_flight(
        self, key: str
    ) -> list[tuple[int, ClusterEvent, object, object]] | None:
        mark = self._in_flight_marks.get(key)
        if mark is None:
            return None
        return [e for e in self.in_flight_events if e[0] > mark]

    # --- failures --------------------------------------------------------------

    def _backoff_count(self, qpi: QueuedPodInfo) -> int:
        """getBackoffTime's count: the run of consecutive errors after an error, else
        the rejections; 0 (no backoff at all) for a pod never rejected nor failed,
        or with backoff turned off (podMaxBackoff 0)."""
        if not self.max_backoff:
            return 0
        return qpi.consecutive_errors_count or qpi.unschedulable_count

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """calculateBackoffDuration: doubling from the initial backoff per count."""
        count = self._backoff_count(qpi)
        if count == 0:
            return 0.0
        duration = self.initial_backoff
        for _ in range(1, count):
            if duration > self.max_backoff - duration:
                return self.max_backoff
            duration += duration
        return duration

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """getBackoffTime. With SchedulerPopFromBackoffQ the expiry is truncated to
        its one-second ordering window: pods whose backoff ends in the same window
        leave backoffQ together, in activeQ's order (priority first)."""
        if self._backoff_count(qpi) == 0:
            return -math.inf  # never tried and failed: no backoff (zero time upstream)
        expiry = qpi.timestamp + self.backoff_duration(qpi)
        return (
            math.floor(expiry / BACKOFF_WINDOW) * BACKOFF_WINDOW
            if self.pop_from_backoff
            else expiry
        )

    def _backing_off(self, qpi: QueuedPodInfo) -> bool:
        """isPodBackingoff: a pod whose window is the current one still backs off."""
        now = self.clock.now()
        if not self.pop_from_backoff:
            return now < self.backoff_expiry(qpi)
        return self.backoff_expiry(qpi) >= math.floor(now / BACKOFF_WINDOW) * BACKOFF_WINDOW

    def _backoff_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """lessBackoffCompletedWithPriority: the earlier window, then activeQ's order."""
        ea, eb = self.backoff_expiry(a), self.backoff_expiry(b)
        if ea != eb:
            return ea < eb
        return self.active_less(a, b)

    def requeue_failed(self, qpi: QueuedPodInfo) -> None:
        """AddUnschedulableIfNotPresent: a pod whose attempt failed goes back.

        Pods rejected by plugins wait in the unschedulable pool for an event,
        unless an event that came while they were being tried is one their
        rejecting plugins' hints take (determineSchedulingHintForInFlightPod);
        pods that failed with an error wait out their backoff instead. Upstream
        also takes the pod's scheduling cycle; here the in-flight events alone
        decide, so none is passed.
        """
        key = qpi.pod_info.key
        strategy = self._in_flight_strategy(qpi)
        self.in_flight.pop(key, None)
        self.scheduling_done(key)
        if key in self.active or key in self.backoff or key in self.unschedulable:
            return
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            qpi.consecutive_errors_count += 1  # an unexpected error, e.g. the API's
        else:
            qpi.unschedulable_count += 1
            qpi.consecutive_errors_count = 0
        qpi.timestamp = self.clock.now()
        if strategy == QUEUE_SKIP:
            self.unschedulable[key] = qpi
            self._count("unschedulable", "ScheduleAttemptFailure")
            return
        self._requeue(qpi, "ScheduleAttemptFailure", strategy)

    def _in_flight_strategy(self, qpi: QueuedPodInfo) -> int:
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            return QUEUE_AFTER_BACKOFF  # an error: retry after backoff
        if self.generic_workload and qpi.pod_info.pod.spec.scheduling_group is not None:
            # determineSchedulingHintForInFlightPod: a pod group member's retry rests
            # on backoff alone, as upstream has no event-based requeueing at the pod
            # group level yet; so a gang that did not fit is tried again after its
            # backoff, whatever the events (seen in differential seed60-007 and -047).
            return QUEUE_AFTER_BACKOFF
        events = self._events_while_in_flight(qpi.pod_info.key)
        if events is None:
            return QUEUE_AFTER_BACKOFF  # not tracked (e.g. failed while binding)
        strategy = QUEUE_SKIP
        for _, event, old, new in events:
            found = self._worth_requeuing(qpi, event, old, new)
            if found == QUEUE_IMMEDIATELY:
                return found
            if found == QUEUE_AFTER_BACKOFF:
                strategy = found
                if not qpi.pending_plugins:
                    return strategy
        return strategy

    # --- moving on events ------------------------------------------------------

    def _interesting(self, event: ClusterEvent) -> bool:
        """isEventOfInterest: a wildcard event, or one some plugin registered for.
        The answer is kept per event (the registrations are fixed once the profiles
        are built; every assigned pod's add asks the same question)."""
        found = self._interest.get(event)
        if found is None:
            found = self._interest[event] = event.resource == Resource.WILDCARD or any(
                event.matches(registered.event)
                for profile in self.profiles.values()
                for registrations in profile.events.values()
                for registered in registrations
            )
        return found

    def _plugins_wanting(self, scheduler_name: str, event: ClusterEvent) -> frozenset[str] | None:
        """The plugins of a profile with a registration that EVENT matches (hints
        aside), kept per profile and event as `_interesting` keeps its answer; None
        for a scheduler name without a profile (its pods are requeued regardless)."""
        profile = self.profiles.get(scheduler_name)
        if profile is None:
            return None
        key = (scheduler_name, event)
        found = self._wanting.get(key)
        if found is None:
            found = self._wanting[key] = frozenset(
                plugin
                for plugin, registrations in profile.events.items()
                if any(event.matches(registered.event) for registered in registrations)
            )
        return found

    def _gating_plugin_wants(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        """Whether the plugin that holds the gated pod back registered for EVENT, kept
        per scheduler name, plugin and event as `_plugins_wanting` keeps its answer."""
        name = qpi.pod.spec.scheduler_name
        key = (name, qpi.gating_plugin, event)
        found = self._gating.get(key)
        if found is None:
            profile = self.profiles.get(name)
            found = self._gating[key] = profile is None or any(
                event.matches(registered.event)
                for registered in profile.events.get(qpi.gating_plugin, ())
            )
        return found

    def _registrations_of(self, qpi: QueuedPodInfo) -> list[ClusterEventWithHint]:
        """Every registration of the pod's profile (none without one), for the pool's
        HintIndexes."""
        name = qpi.pod.spec.scheduler_name
        found = self._registrations.get(name)
        if found is None:
            profile = self.profiles.get(name)
            found = self._registrations[name] = (
                [r for registrations in profile.events.values() for r in registrations]
                if profile is not None
                else []
            )
        return found

    def _hint_indexes(self, event: ClusterEvent) -> list[HintIndex] | None:
        """matching_indexes, kept per event (the registrations are fixed)."""
        if event not in self._indexes:
            self._indexes[event] = matching_indexes(
                {name: p.events for name, p in self.profiles.items()}, event
            )
        return self._indexes[event]

    def _worth_requeuing(
        self, qpi: QueuedPodInfo, event: ClusterEvent, old: object, new: object
    ) -> int:
        """isPodWorthRequeuing: QUEUE_SKIP, QUEUE_AFTER_BACKOFF, or QUEUE_IMMEDIATELY
        (a Pending plugin's hint said Queue)."""
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return QUEUE_AFTER_BACKOFF
        if event.resource == Resource.WILDCARD:
            if new is not None:
                target = new.pod if isinstance(new, PodInfo) else new
                if not isinstance(target, Pod) or not same_pod(target, qpi.pod):
                    return QUEUE_SKIP  # a wildcard event meant for another pod
            return QUEUE_AFTER_BACKOFF
        profile = self._profile(qpi.pod)
        if profile is None:
            return QUEUE_AFTER_BACKOFF
        strategy = QUEUE_SKIP
        for plugin in rejectors:
            for registered in profile.events.get(plugin, ()):
                if not event.matches(registered.event):
                    continue
                if registered.hint is not None and not registered.hint(qpi.pod_info, old, new):
                    continue
                if plugin in qpi.pending_plugins:
                    return QUEUE_IMMEDIATELY
                if not qpi.pending_plugins:
                    return QUEUE_AFTER_BACKOFF
                strategy = QUEUE_AFTER_BACKOFF
        return strategy

    def _requeue(self, qpi: QueuedPodInfo, event: str, strategy: int = QUEUE_AFTER_BACKOFF) -> None:
        """requeuePodWithQueueingStrategy for a pod leaving the unschedulable pool."""
        key = qpi.pod_info.key
        self.unschedulable.pop(key, None)
        if strategy == QUEUE_AFTER_BACKOFF and self._backing_off(qpi):
            # PreEnqueue runs on the way into backoffQ (SchedulerPopFromBackoffQ),
            # not again on the way out of it.
            if not self._gate(qpi, event):
                return
            self.backoff.push(qpi)
            self._count("backoff", event)
            self._ready.set()  # an idle scheduler may take it at once
        else:
            self._admit(qpi, event)

    def on_event(
        self,
        event: ClusterEvent,
        old: object = None,
        new: object = None,
        precheck: Callable[[Pod], bool] | None = None,
    ) -> int:
        """MoveAllToActiveOrBackoffQueue for one cluster event; returns how many moved.
        `precheck` (PreEnqueueCheck upstream) limits the pods considered. Pods in
        flight get the event when they come back (addEventIfAnyInFlight)."""
        if not self._interesting(event):
            return 0
        moved = 0
        # Per scheduler name, the plugins registered for this event: a pod none of
        # whose rejectors is among them is a QueueSkip in isPodWorthRequeuing, told
        # here without its loops (Unschedulable at 5,000 nodes spent 87% of its time
        # asking that of 1,000 pods for each of 10,000 binds).
        wanted: dict[str, frozenset[str] | None] = {}
        wildcard = event.resource == Resource.WILDCARD
        # Only the pods the event's hints can say Queue for, when they tell (HintIndex).
        concerned = self.unschedulable.concerned(event, self._hint_indexes(event), old, new)
        pods = list(self.unschedulable.values()) if concerned is None else concerned
        for qpi in pods:
            if precheck is not None and not precheck(qpi.pod):
                continue
            if qpi.gated:
                if not self._gating_plugin_wants(qpi, event):
                    continue  # only its gating plugin's events may let a gated pod in
            elif not wildcard and (qpi.unschedulable_plugins or qpi.pending_plugins):
                name = qpi.pod.spec.scheduler_name
                if name not in wanted:
                    wanted[name] = self._plugins_wanting(name, event)
                plugins = wanted[name]
                if (
                    plugins is not None
                    and qpi.unschedulable_plugins.isdisjoint(plugins)
                    and qpi.pending_plugins.isdisjoint(plugins)
                ):
                    continue
            strategy = self._worth_requeuing(qpi, event, old, new)
            if strategy != QUEUE_SKIP:
                self._requeue(qpi, event.label or str(event.resource), strategy)
                moved += 1
        if self._in_flight_marks:
            self._record(event, old, new)
        return moved

    def activate(self, keys: Iterable[str]) -> None:
        for key in keys:
            qpi = self.unschedulable.get(key) or self.backoff.get(key)
            if qpi is not None:
                self.unschedulable.pop(key, None)
                self.backoff.delete(key)
                self._admit(qpi, "ForceActivate")
            elif key in self._in_flight_marks:
                # Requeued when it comes back (upstream: addEventsIfPodInFlight).
                self._record(EVENT_FORCE_ACTIVATE, None, self.in_flight[key].pod)

    def retry_after_error(self, keys: Iterable[str]) -> None:
        """Activate for pods whose attempt's API calls failed after the attempt was
        handed back (async preemption: a victim's DELETE refused). Upstream's
        Activate sends them straight to activeQ, and v1.36.3 then preempts and fails
        again at API speed (measured: ~1,100 DELETEs in 20 s against an admission
        policy). Here the failure counts as what the synchronous path makes of it
        (PostFilter's Error status): an error of the attempt, so the pod leaves the
        unschedulable pool for the error backoff (podErrorBackoffQ: no rejector
        plugins, never popped early) and retries once its backoff, doubling with
        its rejections, is over."""
        for key in keys:
            qpi = self.unschedulable.get(key) or self.backoff.get(key)
            if qpi is not None:
                self.unschedulable.pop(key, None)
                self.backoff.delete(key)
                qpi.unschedulable_plugins = set()
                qpi.pending_plugins = set()
                self._requeue(qpi, EVENT_FORCE_ACTIVATE.label, QUEUE_AFTER_BACKOFF)
            elif key in self._in_flight_marks:
                self._record(EVENT_FORCE_ACTIVATE, None, self.in_flight[key].pod)

    def flush_backoff_completed(self) -> int:
        moved = 0
        while self.backoff:
            head = self.backoff.peek()
            assert head is not None
            if self._backing_off(head):
                break
            self.backoff.pop()
            self.active.push(head)
            self._count("active", "BackoffComplete")
            moved += 1
        if moved:
            self._ready.set()
        return moved

    def flush_unschedulable_left_over(self) -> int:
        now = self.clock.now()
        stale = [
            qpi
            for qpi in self.unschedulable.values()
            if now - qpi.timestamp > self.max_in_unschedulable
        ]
        moved = 0
        for qpi in stale:
            if qpi.gated:
                continue  # a gated pod waits for its gating plugin's event
            self._requeue(qpi, EVENT_UNSCHEDULABLE_TIMEOUT.label)
            moved += 1
        if stale and self._in_flight_marks:
            self._record(EVENT_UNSCHEDULABLE_TIMEOUT, None, None)
        return moved

    def next_backoff_expiry(self) -> float | None:
        head = self.backoff.peek()
        if head is None:
            return None
        # The first moment the pod is no longer backing off.
        expiry = self.backoff_expiry(head)
        return expiry + BACKOFF_WINDOW if self.pop_from_backoff else expiry

    # --- reading ---------------------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        gated = sum(1 for q in self.unschedulable.values() if q.gated)
        return {
            "active": len(self.active),
            "backoff": len(self.backoff),
            "unschedulable": len(self.unschedulable) - gated,
            "gated": gated,
        }

    def unschedulable_plugin_counts(self) -> dict[tuple[str, str], int]:
        """(plugin, profile) -> pods waiting in any queue that the plugin rejected (or
        gates): upstream's unschedulable_pods gauge, which AddUnschedulableIfNotPresent
        and runPreEnqueuePlugin raise for each rejector of a pod handed back, and a
        pop (or a deletion from the unschedulable pool) lowers again."""
        counts: dict[tuple[str, str], int] = {}
        for qpi in self.pending_pods():
            profile = qpi.pod.spec.scheduler_name
            for plugin in qpi.unschedulable_plugins | qpi.pending_plugins:
                counts[(plugin, profile)] = counts.get((plugin, profile), 0) + 1
        return counts

    def pending_pods(self) -> list[QueuedPodInfo]:
        return [*self.active, *self.backoff, *self.unschedulable.values()]
