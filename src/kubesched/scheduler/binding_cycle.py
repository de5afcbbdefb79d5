"""The binding cycle (schedule_one.go upstream: bindingCycle, bind and
extendersBinding, and the goroutine ScheduleOne starts for them).

The binding cycle is an asyncio task, so the next pod is scheduled while the
previous one is bound: it waits at Permit, then runs PreBind, Bind and PostBind.
A failure anywhere in it goes to the FailureHandler (failure.py), as upstream's
handleBindingCycleError hands it to sched.FailureHandler.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

from kubesched.cache.cache import Cache
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extender import Extender, ExtenderError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.framework.waiting import WaitingPods
from kubesched.logs import V, kv
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.failure import FailureHandler
from kubesched.scheduler.listeners import SchedulingListeners

log = logging.getLogger("kubesched.scheduler")


class BindingCycle:
    """The binding cycles: `start` one per pod a cycle placed; TASKS holds those
    running (and preemption's API calls, Scheduler._spawn), which the simulator
    waits for and shutdown drains. LAST_FAILURES: the scheduler's record of pending
    pods' last failures, which a bound pod leaves."""

    def __init__(
        self,
        *,
        queue: SchedulingQueue,
        cache: Cache,
        waiting_pods: WaitingPods,
        cluster: ClusterClient,
        clock: Clock,
        listeners: SchedulingListeners,
        extenders: Sequence[Extender],
        last_failures: dict[str, tuple[str, str]],
        tasks: set[asyncio.Task[None]],
        failure: FailureHandler,
    ) -> None:
        self.queue = queue
        self.cache = cache
        self.waiting_pods = waiting_pods
        self.cluster = cluster
        self.clock = clock
        self.listeners = listeners
        self.extenders = extenders
        self.last_failures = last_failures
        self.tasks = tasks
        self.handle_failure = failure.handle_failure

    def start(
        self, fw: Framework, state: CycleState, qpi: QueuedPodInfo, node: str, started: float
    ) -> None:
        """The pod's binding cycle as a task (ScheduleOne's `go func()`): the next
        pod is scheduled meanwhile."""
        task = asyncio.get_event_loop().create_task(
            self.binding_cycle(fw, state, qpi, node, started)
        )
        tasks = self.tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def binding_cycle(
        self,
        fw: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        node: str,
        started: float | None = None,
    ) -> None:
        """Wait at Permit, PreBind, Bind, PostBind (bindingCycle in schedule_one.go).
        STARTED: when the scheduling cycle began (perf_counter), for the
        attempt-duration metric."""
        if started is None:
            started = time.perf_counter()
        pod = qpi.pod_info
        waiting = self.waiting_pods.get(pod.key)
        if waiting is not None:
            status = await waiting.wait()
            self.waiting_pods.remove(pod.key)
            if not status.is_success():
                self.handle_failure(
                    fw, qpi, status, started, state=state, node=node, point="Permit"
                )
                return
        # Past Permit: events from now on need not be kept for this pod (Done upstream).
        self.queue.scheduling_done(pod.key)
        status = await fw.run_pre_bind(state, pod, node)
        if status.is_success():
            status = await self.bind(fw, state, pod, node)
        if not status.is_success():
            self.handle_failure(fw, qpi, status, started, state=state, node=node, point="Binding")
            return
        self.cache.finish_binding(pod.key)
        self.queue.done(pod.key)
        # klog V(2), as kube-scheduler logs it: operators grep for this line.
        log.log(V(2), "Successfully bound pod to node", extra=kv(pod=pod.key, node=node))
        self.listeners.attempt("scheduled", fw.profile_name, started)
        self.last_failures.pop(pod.key, None)
        self.cluster.record_event(
            pod.pod, "Normal", "Scheduled", f"Successfully assigned {pod.key} to {node}"
        )
        first = qpi.initial_attempt_timestamp
        since = None if first is None else self.clock.now() - first
        self.listeners.pod_bound(pod.key, node, qpi.attempts, since)
        fw.run_post_bind(state, pod, node)

    async def bind(self, fw: Framework, state: CycleState, pod: PodInfo, node: str) -> Status:
        """The first interested extender that binds does, else the bind plugins (bind
        and extendersBinding in schedule_one.go). The extender's HTTP call runs in a
        thread, so the event loop goes on meanwhile."""
        for extender in self.extenders:
            if not extender.is_binder or not extender.is_interested(pod.pod):
                continue
            try:
                await asyncio.to_thread(extender.bind, pod.pod, node)
            except ExtenderError as exc:
                if extender.ignorable:
                    log.info(
                        "Skipping extender in bind as it returned error and has ignorable flag set",
                        extra=kv(extender=extender.name, err=str(exc)),
                    )
                    continue
                return Status.as_error(str(exc))
            return Status.success()
        return await fw.run_bind(state, pod, node)
