"""Scheduler: takes pods off the queue and runs them through the framework.

The Scheduler and its construction, as scheduler.go upstream (New): a framework
per profile over one Handle, the queue, the cache and the nominator, and the
objects that do the work, each given what it uses:

- SchedulingCycle (schedule_one.py): ScheduleOne for one pod, schedulingCycle,
  schedulePod, findNodesThatFitPod, prioritizeNodes, selectHost;
- BindingCycle (binding_cycle.py): bindingCycle, as a task per placed pod;
- FailureHandler (failure.py): sched.FailureHandler (handleSchedulingFailure, with
  handleBindingCycleError's undo), where every failed attempt ends;
- PodGroupAlgorithm and PodGroupCycle (podgroup_algorithm.py, podgroup_cycle.py):
  ScheduleOne's pod group branch (GenericWorkload);
- Explaining (explain.py): the attempts' explanations (kubesched's own);
- EventHandlers (eventhandlers.py): addAllEventHandlers' handlers;
- BatchWindow (batch_window.py): `run --batch-window` (kubesched's own).

The Scheduler is what callers hold: its schedule_one and on_* handlers are those
objects' methods, and its attributes the state they share. What drives it (Run
upstream) is the caller's: `kubesched run` pops pods for ever (kube/runner.py),
`simulate` until nothing is left to try (simulator.run_until_quiet); both call
schedule_one per pod.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Collection, Coroutine, Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import Node, ObjectMeta, Pod
from kubesched.api.scheduling import PodGroup
from kubesched.cache.cache import Cache
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock, SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extender import EXTENDER_NAME, Extender
from kubesched.framework.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.interfaces import ClusterEventWithHint
from kubesched.framework.metrics_recorder import NO_METRICS
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.registry import Registry
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.signature import PodSignature
from kubesched.framework.state.node_table import IntArray, Rows
from kubesched.framework.status import Status
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
from kubesched.scheduler.binding_cycle import BindingCycle
from kubesched.scheduler.eventhandlers import EventHandlers
from kubesched.scheduler.explain import Explaining
from kubesched.scheduler.failure import FailureHandler, set_nominated_node_name
from kubesched.scheduler.listeners import (
    ExplainObserver,
    Observer,
    OutcomeObserver,
    SchedulingListeners,
)
from kubesched.scheduler.podgroup_algorithm import PodGroupAlgorithm
from kubesched.scheduler.podgroup_cycle import PodGroupCycle
from kubesched.scheduler.schedule_one import FitError, SchedulingCycle


class Scheduler:
    """kube-scheduler's Scheduler: feed it cluster events (on_node_*, on_pod_*) and
    pods from its queue (schedule_one)."""

    # One scheduling cycle for the pod (ScheduleOne): the SchedulingCycle's own
    # method, or with GenericWorkload on the PodGroupCycle's, which takes a pod's
    # whole group. Bound in __init__, so a call costs no extra frame.
    schedule_one: Callable[[QueuedPodInfo], None]
    # The cluster event handlers (EventHandlers'), bound in __init__ likewise: the
    # informers call them for every object they see.
    on_node_add: Callable[[Node], None]
    on_node_update: Callable[[Node | None, Node], None]
    on_node_delete: Callable[[Node], None]
    on_pod_add: Callable[[Pod], None]
    on_pod_update: Callable[[Pod | None, Pod], None]
    on_pod_delete: Callable[[Pod], None]
    on_workload_pod_group_add: Callable[[PodGroup], None]
    on_workload_pod_group_update: Callable[[PodGroup], None]
    on_workload_pod_group_delete: Callable[[PodGroup], None]
    # responsibleForPod: one of our profiles schedules the pod.
    responsible_for: Callable[[Pod], bool]

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
        self.clock = clock = clock or SimClock()
        self.cluster = cluster
        # v1.36.3's defaults with the caller's overrides (--feature-gates).
        self.gates = gates
        self.cache = cache = Cache()
        cache.pod_group_states.enabled = gates.generic_workload
        self.table = cache.table
        self.waiting_pods = waiting_pods = (
            WaitingPods(clock) if waiting_pods is None else waiting_pods
        )
        self.rng = rng = np.random.default_rng(seed)
        self.listers = listers = Listers() if listers is None else listers
        self.extenders = extenders = tuple(extenders)
        self.nominator = nominator = Nominator()
        nominations = _QueuedNominations(nominator)
        # Built once, from the listers and the scheduler's own services; every
        # profile's framework takes a copy naming itself as the runner.
        self.handle = handle = Handle(
            self.table,
            clock,
            cluster,
            waiting_pods,
            activate=self._activate,
            retry_after_error=self._retry_after_error,
            listers=listers,
            nominated=nominations,
            clear_nominated_node=self._clear_nominations,
            rng=rng,
            spawn=self._spawn,
            metrics=NO_METRICS if observer is None else observer,
            pod_group_states=cache.pod_group_states,
            extenders=extenders,
        )
        registry = default_registry() if registry is None else registry
        self.frameworks: dict[str, Framework] = {}
        frameworks = self.frameworks
        for profile in profiles:
            if profile.scheduler_name in frameworks:
                raise ValueError(f"duplicate profile for scheduler name {profile.scheduler_name!r}")
            frameworks[profile.scheduler_name] = Framework(profile, handle, registry)
        self.queue = queue = SchedulingQueue(
            {
                name: QueueProfile(
                    # the plugin's own less: the heap calls it ~20 times a pop
                    fw.queue_sort[0].less,
                    fw.run_pre_enqueue,
                    self._events_to_register(fw),
                    fw.queue_sort[0].sort_rank(),
                )
                for name, fw in frameworks.items()
            },
            clock,
            initial_backoff=pod_initial_backoff,
            max_backoff=pod_max_backoff,
            generic_workload=gates.generic_workload,
        )
        nominations.queue = queue
        # Binding cycles and preemption's API calls, which the simulator waits for
        # and shutdown drains.
        self.binding_tasks: set[asyncio.Task[None]] = set()
        # The reason and message of each pending pod's last failed attempt, as its
        # PodScheduled condition shows them: clearing a nomination rewrites that
        # condition unchanged. Forgotten once the pod is bound or deleted.
        self.last_failures: dict[str, tuple[str, str]] = {}
        self.listeners = SchedulingListeners(observer, outcome_observer, explain_observer)
        # `run --batch-window`: off (None) unless asked.
        self.batch: BatchWindow | None = None
        if batch is not None:
            self.batch = BatchWindow(
                batch,
                batch_observer,
                clock=clock,
                queue=queue,
                cache=cache,
                waiting_pods=waiting_pods,
                listers=listers,
                frameworks=frameworks,
                nominator=nominator,
                cluster=cluster,
                last_failures=self.last_failures,
            )
        self._build_cycles(percentage_of_nodes_to_score)

    def _build_cycles(self, percentage_of_nodes_to_score: int) -> None:
        """The objects that do the work, each given what it uses (see the module's
        docstring), and this facade's methods bound to theirs."""
        listeners = self.listeners
        self.failure = failure = FailureHandler(
            queue=self.queue,
            cache=self.cache,
            nominator=self.nominator,
            cluster=self.cluster,
            listeners=listeners,
            last_failures=self.last_failures,
            batch=self.batch,
        )
        self.binding = binding = BindingCycle(
            queue=self.queue,
            cache=self.cache,
            waiting_pods=self.waiting_pods,
            cluster=self.cluster,
            clock=self.clock,
            listeners=listeners,
            extenders=self.extenders,
            last_failures=self.last_failures,
            tasks=self.binding_tasks,
            failure=failure,
        )
        self.cycle = cycle = SchedulingCycle(
            frameworks=self.frameworks,
            queue=self.queue,
            cache=self.cache,
            nominator=self.nominator,
            waiting_pods=self.waiting_pods,
            listeners=listeners,
            rng=self.rng,
            gates=self.gates,
            extenders=self.extenders,
            percentage_of_nodes_to_score=percentage_of_nodes_to_score,
            batch=self.batch,
            binding=binding,
            failure=failure,
            explaining=Explaining(self.table, listeners),
        )
        self.group_cycle = group_cycle = PodGroupCycle(
            schedule_one_pod=cycle.schedule_one,
            algorithm=PodGroupAlgorithm(
                cycle=cycle, cache=self.cache, nominator=self.nominator, listeners=listeners
            ),
            frameworks=self.frameworks,
            queue=self.queue,
            cache=self.cache,
            nominator=self.nominator,
            waiting_pods=self.waiting_pods,
            handle=self.handle,
            listeners=listeners,
            binding=binding,
            failure=failure,
        )
        self.events = events = EventHandlers(
            profiles=self.frameworks,
            cache=self.cache,
            queue=self.queue,
            nominator=self.nominator,
            listers=self.listers,
            waiting_pods=self.waiting_pods,
            listeners=listeners,
            last_failures=self.last_failures,
            extenders=self.extenders,
            gates=self.gates,
        )
        self.schedule_one = (
            group_cycle.schedule_one if self.gates.generic_workload else cycle.schedule_one
        )
        self.on_node_add = events.on_node_add
        self.on_node_update = events.on_node_update
        self.on_node_delete = events.on_node_delete
        self.on_pod_add = events.on_pod_add
        self.on_pod_update = events.on_pod_update
        self.on_pod_delete = events.on_pod_delete
        self.on_workload_pod_group_add = events.on_workload_pod_group_add
        self.on_workload_pod_group_update = events.on_workload_pod_group_update
        self.on_workload_pod_group_delete = events.on_workload_pod_group_delete
        self.responsible_for = events.responsible_for

    # --- the state the scheduling cycle owns ------------------------------------------

    @property
    def percentage_of_nodes_to_score(self) -> int:
        return self.cycle.percentage_of_nodes_to_score

    @percentage_of_nodes_to_score.setter
    def percentage_of_nodes_to_score(self, value: int) -> None:
        self.cycle.percentage_of_nodes_to_score = value

    @property
    def extender_new_nodes(self) -> bool:
        """The last find_nodes_that_fit's feasible nodes are new NodeInfos from an
        extender's Nodes answer (scored without their pods)."""
        return self.cycle.extender_new_nodes

    # --- pieces of the cycles, for the tests and the differential harness ----------

    def find_nodes_that_fit(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        signature: PodSignature | None = None,
        cycle: int = 0,
    ) -> tuple[Rows, Diagnosis, int, str]:
        return self.cycle.find_nodes_that_fit(fw, state, pod, signature, cycle)

    def num_feasible_nodes_to_find(self, fw: Framework, num_all_nodes: int) -> int:
        return self.cycle.num_feasible_nodes_to_find(fw, num_all_nodes)

    def extender_scores(self, state: CycleState, pod: PodInfo, feasible: Rows) -> IntArray:
        return self.cycle.extender_scores(state, pod, feasible)

    def _post_filter(
        self, fw: Framework, state: CycleState, qpi: QueuedPodInfo, fit: FitError
    ) -> str | None:
        return self.cycle._post_filter(fw, state, qpi, fit)

    def handle_binding_cycle_error(
        self, fw: Framework, state: CycleState, qpi: QueuedPodInfo, node: str, status: Status
    ) -> None:
        """handleBindingCycleError: undo Reserve and the assumed pod, then fail the
        attempt (the FailureHandler, neither observed nor explained)."""
        self.failure.handle_failure(fw, qpi, status, state=state, node=node)

    # --- construction -----------------------------------------------------------------

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

    # --- the scheduler's services to the plugins (the Handle's) ------------------------

    def _activate(self, keys: list[str]) -> None:
        self.queue.activate(keys)

    def _retry_after_error(self, keys: list[str]) -> None:
        self.queue.retry_after_error(keys)

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

    # Set once the queue is built: it needs the frameworks, which need the Handle
    # that this goes into.
    queue: SchedulingQueue

    def __init__(self, nominator: Nominator) -> None:
        self.nominator = nominator
        # The nominated pods in flight when `version` was last asked.
        self._in_flight: frozenset[str] = frozenset()

    def nominated_nodes(self) -> Collection[str]:
        return self.nominator.nodes()

    def version(self) -> int:
        # A nominated pod in flight reads as its name only, and it goes into flight
        # and comes back without the nominator changing: count that as a change to
        # its node. (A PodInfo swapped in the queue comes with the nominator's update,
        # EventHandlers.on_pod_update; one coming back from flight with its
        # re-nomination, FailureHandler.handle_failure.)
        nominator = self.nominator
        # Intersecting the key views walks the smaller side: the pods in flight are
        # thousands in process (binds queued), the nominated ones mostly none.
        in_flight = frozenset(nominator.pods() & self.queue.in_flight.keys())
        if in_flight != self._in_flight:
            for key in in_flight ^ self._in_flight:
                node = nominator.node_of(key)
                if node:
                    nominator.touch(node)
            self._in_flight = in_flight
        return nominator.version

    def changed_since(self, version: int) -> Collection[str] | None:
        return self.nominator.changed_since(version)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        queue = self.queue
        found: list[PodInfo] = []
        for key in self.nominator.pods_for_node(node_name):
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
