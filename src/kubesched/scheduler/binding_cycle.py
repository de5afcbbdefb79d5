"""The binding cycle and failure handling (schedule_one.go upstream: bindingCycle,
handleBindingCycleError, handleSchedulingFailure).

The binding cycle is an asyncio task, so the next pod is scheduled while the
previous one is bound: it waits at Permit, then runs PreBind, Bind and PostBind.
A failure anywhere, in the scheduling cycle or here, ends in
handle_scheduling_failure: requeue, nominate, tell the user.
"""

from __future__ import annotations

import asyncio
import logging
import time

import msgspec

from kubesched.api.objects import same_pod
from kubesched.framework.client import BindConflict
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extender import ExtenderError
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.logs import V, kv
from kubesched.scheduler.base import SchedulerBase
from kubesched.scheduler.explain import explain_binding_failure

log = logging.getLogger("kubesched.scheduler")


class BindingCycle(SchedulerBase):
    """The Scheduler's binding cycle and failure handling."""

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
                self.fail_assumed(fw, state, qpi, node, status, started, "Permit")
                return
        # Past Permit: events from now on need not be kept for this pod (Done upstream).
        self.queue.scheduling_done(pod.key)
        status = await fw.run_pre_bind(state, pod, node)
        if status.is_success():
            status = await self.bind(fw, state, pod, node)
        if not status.is_success():
            self.fail_assumed(fw, state, qpi, node, status, started, "Binding")
            return
        self.cache.finish_binding(pod.key)
        self.queue.done(pod.key)
        # klog V(2), as kube-scheduler logs it: operators grep for this line.
        log.log(V(2), "Successfully bound pod to node", extra=kv(pod=pod.key, node=node))
        self._observe("scheduled", fw, started)
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

    def fail_assumed(
        self,
        fw: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        node: str,
        status: Status,
        started: float,
        point: str,
    ) -> None:
        """The one failure path of an attempt whose pod was assumed on NODE: Reserve
        or Permit refused it in the scheduling cycle, or the binding cycle failed
        (handleBindingCycleError upstream). Undo Reserve and the assume, fail the
        attempt (handle_scheduling_failure), observe it, and let its explanation say
        at which POINT it failed."""
        self.handle_binding_cycle_error(fw, state, qpi, node, status)
        self._observe_failure(fw, status, started)
        explain_binding_failure(state, point, status)

    def handle_binding_cycle_error(
        self,
        fw: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        node: str,
        status: Status,
    ) -> None:
        """handleBindingCycleError in schedule_one.go: undo Reserve and the assumed
        pod, then fail the attempt as the scheduling cycle would."""
        fw.run_unreserve(state, qpi.pod_info, node)
        self.cache.forget_pod(qpi.pod_info)
        if isinstance(status.error, BindConflict):
            # The pod is gone or bound by someone else: nothing to retry.
            log.info("pod %s: binding gave up: %s", qpi.pod_info.key, status.message())
            self.queue.done(qpi.pod_info.key)
            return
        self._handle_status_failure(fw, qpi, status)

    # --- failures ------------------------------------------------------------------

    def _handle_status_failure(self, fw: Framework, qpi: QueuedPodInfo, status: Status) -> None:
        """A plugin's failed status as the attempt's failure: an error, or
        unschedulable because of the plugin that said so."""
        if status.code == Code.ERROR:
            qpi.unschedulable_plugins = set()
            self.handle_scheduling_failure(fw, qpi, "SchedulerError", status.message(), None)
            return
        qpi.unschedulable_plugins = {status.plugin} if status.plugin else set()
        self.handle_scheduling_failure(fw, qpi, "Unschedulable", status.message(), None)

    def handle_scheduling_failure(
        self,
        fw: Framework,
        qpi: QueuedPodInfo,
        reason: str,
        message: str,
        diagnosis: Diagnosis | None,
        nominated: str | None = "",
    ) -> None:
        """handleSchedulingFailure: requeue, nominate, then tell the user (event and
        condition). `nominated`: the pod's nominated node from now on, "" to clear it
        (every failure but PostFilter's), None to keep it."""
        if diagnosis is not None:
            qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(diagnosis.pending_plugins)
        key = qpi.pod_info.key
        if self.batch is not None:
            nominated = self.batch.moved_to(key, nominated)
        queued = self.queue.find(key)
        if queued is not None and queued is not qpi and not same_pod(queued.pod, qpi.pod):
            # handleSchedulingFailure: "Pod was recreated while handling scheduling
            # failure. Skip requeueing and status updates." The new pod of that name
            # has its own place in the queue (and its own in-flight mark, if popped).
            log.log(V(2), "Pod was recreated while handling scheduling failure", extra=kv(pod=key))
            if key not in self.queue.in_flight:
                self.queue.scheduling_done(key)
            return
        requeued = key in self.queue.in_flight
        if requeued:
            self.queue.requeue_failed(qpi)
            # (A pod deleted meanwhile is no longer in flight: it is not nominated,
            # and nothing is remembered of it.)
            self.nominator.add(qpi.pod, nominated)
            self.last_failures[key] = (reason, message)
        else:
            # Deleted or bound by someone else meanwhile: nothing will requeue it, so
            # its in-flight tracking ends here, as handleSchedulingFailure calls Done
            # for a pod gone from the informer cache.
            self.queue.done(key)
        self.listeners.pod_failed(key, reason, message, diagnosis)
        pod = qpi.pod
        node = pod.status.nominated_node_name if nominated is None else nominated
        self.cluster.record_event(pod, "Warning", "FailedScheduling", message)
        self.cluster.set_unschedulable(pod, reason, message, node)
        if node != pod.status.nominated_node_name:
            set_nominated_node_name(qpi, node)
        if self.batch is not None:
            self.batch.failed(qpi, node, requeued and diagnosis is not None)


def set_nominated_node_name(qpi: QueuedPodInfo, node: str) -> None:
    """Give the queue's copy of the pod the nominatedNodeName just written."""
    pod = qpi.pod
    status = msgspec.structs.replace(pod.status, nominated_node_name=node)
    qpi.pod_info = PodInfo(msgspec.structs.replace(pod, status=status), like=qpi.pod_info)
