"""Scheduler: takes pods off the queue and runs them through the framework.

The Scheduler and its construction, as scheduler.go upstream (New): a framework
per profile over one Handle, the queue, the cache and the nominator. Its
methods live where upstream's do: the event handlers in eventhandlers.py, the
scheduling cycle in schedule_one.py, the binding cycle and failure handling in
binding_cycle.py. What drives it (Run upstream) is the caller's: `kubesched
run` pops pods for ever (kube/runner.py), `simulate` until nothing is left to
try (simulator.run_until_quiet); both call schedule_one per pod.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Collection, Coroutine, Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import ObjectMeta, Pod
from kubesched.cache.cache import Cache
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock, SimClock
from kubesched.framework.extender import EXTENDER_NAME, Extender
from kubesched.framework.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.interfaces import ClusterEventWithHint
from kubesched.framework.metrics_recorder import NO_METRICS
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import Framework
from kubesched.framework.types import (
    ActionType,
    ClusterEvent,
    PodInfo,
    QueuedPodInfo,
    Resource,
)
from kubesched.framework.waiting import WaitingPods
from kubesched.plugins.registry import default_registry
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import QueueProfile, SchedulingQueue
from kubesched.scheduler.batch_window import BatchObserver, BatchOptions, BatchWindow
from kubesched.scheduler.binding_cycle import set_nominated_node_name
from kubesched.scheduler.eventhandlers import EventHandlers
from kubesched.scheduler.listeners import (
    ExplainObserver,
    Observer,
    OutcomeObserver,
    SchedulingListeners,
)
from kubesched.scheduler.podgroup_cycle import PodGroupCycle


class Scheduler(EventHandlers, PodGroupCycle):
    """kube-scheduler's Scheduler: feed it cluster events (on_node_*, on_pod_*) and
    pods from its queue (schedule_one)."""

    def __init__(
        self,
        profiles: Sequence[ProfileConfig],
        cluster: ClusterClient,
        *,
        clock: Clock | None = None,
        seed: int | None = None,
        percentage_of_nodes_to_score: int = 0,
        pod_initial_backoff: float = 1.0,
        pod_max_backoff: float = 10.0,
        observer: Observer | None = None,
        outcome_observer: OutcomeObserver | None = None,
        listers: Listers | None = None,
        registry: Registry | None = None,
        waiting_pods: WaitingPods | None = None,
        explain_observer: ExplainObserver | None = None,
        gates: FeatureGates = DEFAULT_GATES,
        batch: BatchOptions | None = None,
        batch_observer: BatchObserver | None = None,
        extenders: Sequence[Extender] = (),
    ) -> None:
        # v1.36.3's defaults with the caller's overrides (--feature-gates).
        self.opportunistic_batching = gates.opportunistic_batching
        self.clock = clock or SimClock()
        self.cluster = cluster
        self.gates = gates
        self.cache = Cache()
        self.cache.pod_group_states.enabled = gates.generic_workload
        self.table = self.cache.table
        self.waiting_pods = WaitingPods(self.clock) if waiting_pods is None else waiting_pods
        self.rng = np.random.default_rng(seed)
        self.listers = Listers() if listers is None else listers
        self.extenders = tuple(extenders)
        self.extender_new_nodes = False
        # Built once, from the listers and the scheduler's own services; every
        # profile's framework takes a copy naming itself as the runner.
        self.handle = Handle(
            self.table,
            self.clock,
            cluster,
            self.waiting_pods,
            activate=self._activate,
            retry_after_error=self._retry_after_error,
            listers=self.listers,
            nominated=_QueuedNominations(self),
            clear_nominated_node=self._clear_nominations,
            rng=self.rng,
            spawn=self._spawn,
            metrics=NO_METRICS if observer is None else observer,
            pod_group_states=self.cache.pod_group_states,
            extenders=self.extenders,
        )
        registry = default_registry() if registry is None else registry
        self.frameworks = {}
        for profile in profiles:
            if profile.scheduler_name in self.frameworks:
                raise ValueError(f"duplicate profile for scheduler name {profile.scheduler_name!r}")
            self.frameworks[profile.scheduler_name] = Framework(profile, self.handle, registry)
        self.queue = SchedulingQueue(
            {
                name: QueueProfile(
                    # the plugin's own less: the heap calls it ~20 times a pop
                    fw.queue_sort[0].less,
                    fw.run_pre_enqueue,
                    self._events_to_register(fw),
                    fw.queue_sort[0].sort_rank(),
                )
                for name, fw in self.frameworks.items()
            },
            self.clock,
            initial_backoff=pod_initial_backoff,
            max_backoff=pod_max_backoff,
            generic_workload=gates.generic_workload,
        )
        self.nominator = Nominator()
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        # The share of filtered nodes that fitted lately, to size the first batch.
        self._feasible_share = 1.0
        self.binding_tasks = set()
        # The reason and message of each pending pod's last failed attempt, as its
        # PodScheduled condition shows them: clearing a nomination rewrites that
        # condition unchanged. Forgotten once the pod is bound or deleted.
        self.last_failures = {}
        self.listeners = SchedulingListeners(observer, outcome_observer, explain_observer)
        # `run --batch-window`: off (None) unless asked.
        self.batch = None if batch is None else BatchWindow(self, batch, batch_observer)

    def _events_to_register(self, fw: Framework) -> dict[str, list[ClusterEventWithHint]]:
        """The profile's plugins' events and, with extenders, any event at all for
        "Extender": extenders have no queueing hints, so a pod they rejected nodes
        for is retried on every cluster event (the defaultEnqueueExtension that
        NewFramework registers for ExtenderName)."""
        events = fw.events_to_register()
        if self.extenders:
            events[EXTENDER_NAME] = [
                ClusterEventWithHint(ClusterEvent(Resource.WILDCARD, ActionType.ALL))
            ]
        return events

    def _activate(self, keys: list[str]) -> None:
        self.queue.activate(keys)

    def _retry_after_error(self, keys: list[str]) -> None:
        self.queue.retry_after_error(keys)

    # --- preemption's requests -----------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a plugin's API calls (preemption's evictions) as a task that the
        simulator waits for and shutdown drains, like binding cycles."""
        task = asyncio.get_event_loop().create_task(coro)
        self.binding_tasks.add(task)
        task.add_done_callback(self.binding_tasks.discard)

    def _queued(self, key: str) -> QueuedPodInfo | None:
        queue = self.queue
        return (
            queue.active.get(key)
            or queue.backoff.get(key)
            or queue.unschedulable.get(key)
            or queue.in_flight.get(key)
        )

    def _clear_nominations(self, pods: list[PodInfo]) -> None:
        """clearNominatedNodeName: lower priority pods nominated to a node preemption
        picked lose the nomination (in memory and in their status)."""
        for info in pods:
            self.nominator.delete(info.key)
            qpi = self._queued(info.key)
            pod = qpi.pod if qpi is not None else info.pod
            if not pod.status.nominated_node_name:
                continue
            # The status write keeps the pod's PodScheduled=False condition as it is.
            reason, message = self.last_failures.get(info.key, ("Unschedulable", ""))
            self.cluster.set_unschedulable(pod, reason, message, "")
            if qpi is not None:
                set_nominated_node_name(qpi, "")


class _QueuedNominations:
    """The nominated pods as plugins see them (NominatedPodsForNode upstream): the
    queue's copy of each pod; a pod being scheduled right now is only a name."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        # The nominated pods in flight when `version` was last asked.
        self._in_flight: frozenset[str] = frozenset()

    def nominated_nodes(self) -> Collection[str]:
        return self.scheduler.nominator.nodes()

    def version(self) -> int:
        # A nominated pod in flight reads as its name only, and it goes into flight
        # and comes back without the nominator changing: count that as a change to
        # its node. (A PodInfo swapped in the queue comes with the nominator's update,
        # EventHandlers.on_pod_update; one coming back from flight with its
        # re-nomination, handle_scheduling_failure.)
        nominator = self.scheduler.nominator
        # Intersecting the key views walks the smaller side: the pods in flight are
        # thousands in process (binds queued), the nominated ones mostly none.
        in_flight = frozenset(nominator.pods() & self.scheduler.queue.in_flight.keys())
        if in_flight != self._in_flight:
            for key in in_flight ^ self._in_flight:
                node = nominator.node_of(key)
                if node:
                    nominator.touch(node)
            self._in_flight = in_flight
        return nominator.version

    def changed_since(self, version: int) -> Collection[str] | None:
        return self.scheduler.nominator.changed_since(version)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        queue = self.scheduler.queue
        found: list[PodInfo] = []
        for key in self.scheduler.nominator.pods_for_node(node_name):
            qpi = queue.active.get(key) or queue.unschedulable.get(key) or queue.backoff.get(key)
            if qpi is not None:
                found.append(qpi.pod_info)
            else:
                namespace, _, name = key.partition("/")
                found.append(PodInfo(Pod(metadata=ObjectMeta(name=name, namespace=namespace))))
        return found


# How many objects (nodes and pods) a cluster needs before freeze_after_sync pays:
# below it a full collection is cheap, and freezing buys nothing. A node is some
# hundred Python objects: in process, SchedulingBasic 5,000 (6,000 objects, not
# frozen at the 10,000 this was) spent ~9 % of its CPU in the collector, a third
# of a second of it in one full collection.
FREEZE_AFTER_SYNC_MIN_OBJECTS = 1_000


def freeze_after_sync(objects: int) -> bool:
    """After the initial sync (the cluster in the cache and the queue): collect once,
    then move every object alive into the permanent generation (gc.freeze), so that
    the collections the scheduling cycles set off no longer walk the nodes and pods
    that stay. In process this took the garbage collector's share of SchedulingPod-
    AntiAffinity 5,000 from ~0.3 s to ~0.04 s (gen-2 collections: 5 to 0). Only for
    clusters of `FREEZE_AFTER_SYNC_MIN_OBJECTS` or more; True if it froze."""
    if objects < FREEZE_AFTER_SYNC_MIN_OBJECTS:
        return False
    gc.collect()
    gc.freeze()
    return True
