"""The FailureHandler: the one place every failed attempt ends (schedule_one.go
upstream: sched.FailureHandler, that is handleSchedulingFailure, with the undo of
handleBindingCycleError before it).

The scheduling cycle (schedule_one.py), the binding cycle (binding_cycle.py) and
the pod group cycle (podgroup_cycle.py) return a failure here, whatever it is: no
node fits, a plugin or an extender failed, Reserve or Permit refused the pod, the
Permit wait, PreBind or Bind failed. `handle_failure` then undoes the assume
(Unreserve and forget, for a pod assumed on a node), requeues the pod, nominates
it, tells the user (event and condition), observes the attempt and has the
attempt's explanation say where it failed; in that order, each step only where
the failure calls for it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from kubesched.api.objects import same_pod
from kubesched.cache.cache import Cache
from kubesched.framework.client import BindConflict, ClusterClient
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.logs import V, kv
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.explain import explain_binding_failure
from kubesched.scheduler.listeners import SchedulingListeners

if TYPE_CHECKING:
    # batch_window.py imports set_nominated_node_name from here.
    from kubesched.scheduler.batch_window import BatchWindow

log = logging.getLogger("kubesched.scheduler")


class FailureHandler:
    """sched.FailureHandler: what becomes of a pod whose attempt failed.

    LAST_FAILURES is the scheduler's record of each pending pod's last failure (its
    PodScheduled condition's reason and message), which this handler writes; BATCH
    the `run --batch-window` window, or None."""

    def __init__(
        self,
        *,
        queue: SchedulingQueue,
        cache: Cache,
        nominator: Nominator,
        cluster: ClusterClient,
        listeners: SchedulingListeners,
        last_failures: dict[str, tuple[str, str]],
        batch: BatchWindow | None,
    ) -> None:
        self.queue = queue
        self.cache = cache
        self.nominator = nominator
        self.cluster = cluster
        self.listeners = listeners
        self.last_failures = last_failures
        self.batch = batch

    def handle_failure(
        self,
        fw: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        started: float | None = None,
        *,
        diagnosis: Diagnosis | None = None,
        nominated: str | None = "",
        state: CycleState | None = None,
        node: str = "",
        point: str = "",
    ) -> None:
        """The attempt of QPI failed with STATUS (an Error: "SchedulerError", else
        "Unschedulable"; its message is what the user reads).

        NODE: the pod was assumed there (Reserve or Permit refused it, or its binding
        cycle failed): Unreserve runs with STATE and the assume is forgotten first
        (handleBindingCycleError), and a pod gone or bound by someone else
        (BindConflict) is only done with. DIAGNOSIS: no node fit (a FitError), the
        source of the pod's rejecting plugins; without one, the plugin that refused
        an assumed pod is. NOMINATED: the pod's nominated node from now on, "" to
        clear it (every failure but PostFilter's), None to keep it. STARTED: when the
        attempt began (perf_counter), if this failure ends it in the attempt metric.
        POINT: where a pod assumed in a cycle with an explanation failed ("Reserve",
        "Permit", "Binding"), which the explanation then says."""
        if node:
            assert state is not None
            # handleBindingCycleError: undo Reserve and the assumed pod.
            fw.run_unreserve(state, qpi.pod_info, node)
            self.cache.forget_pod(qpi.pod_info)
        if node and isinstance(status.error, BindConflict):
            # The pod is gone or bound by someone else: nothing to retry.
            log.info("pod %s: binding gave up: %s", qpi.pod_info.key, status.message())
            self.queue.done(qpi.pod_info.key)
        else:
            error = status.code == Code.ERROR
            if diagnosis is None:
                # Only the plugin that refused an assumed pod is known to have
                # rejected it; for anything else the pod waits for no plugin's event.
                refused = node and not error and status.plugin
                qpi.unschedulable_plugins = {status.plugin} if refused else set()
            reason = "SchedulerError" if error else "Unschedulable"
            self._handle_scheduling_failure(qpi, reason, status.message(), diagnosis, nominated)
        if started is not None:
            result = "error" if status.code == Code.ERROR else "unschedulable"
            self.listeners.attempt(result, fw.profile_name, started)
        if point:
            assert state is not None
            explain_binding_failure(state, point, status)

    def _handle_scheduling_failure(
        self,
        qpi: QueuedPodInfo,
        reason: str,
        message: str,
        diagnosis: Diagnosis | None,
        nominated: str | None,
    ) -> None:
        """handleSchedulingFailure: requeue, nominate, then tell the user (event and
        condition)."""
        if diagnosis is not None:
            qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(diagnosis.pending_plugins)
        key = qpi.pod_info.key
        queue = self.queue
        batch = self.batch
        if batch is not None:
            nominated = batch.moved_to(key, nominated)
        queued = queue.find(key)
        if queued is not None and queued is not qpi and not same_pod(queued.pod, qpi.pod):
            # handleSchedulingFailure: "Pod was recreated while handling scheduling
            # failure. Skip requeueing and status updates." The new pod of that name
            # has its own place in the queue (and its own in-flight mark, if popped).
            log.log(V(2), "Pod was recreated while handling scheduling failure", extra=kv(pod=key))
            if key not in queue.in_flight:
                queue.scheduling_done(key)
            return
        requeued = key in queue.in_flight
        if requeued:
            queue.requeue_failed(qpi)
            # (A pod deleted meanwhile is no longer in flight: it is not nominated,
            # and nothing is remembered of it.)
            self.nominator.add(qpi.pod, nominated)
            self.last_failures[key] = (reason, message)
        else:
            # Deleted or bound by someone else meanwhile: nothing will requeue it, so
            # its in-flight tracking ends here, as handleSchedulingFailure calls Done
            # for a pod gone from the informer cache.
            queue.done(key)
        self.listeners.pod_failed(key, reason, message, diagnosis)
        pod = qpi.pod
        node = pod.status.nominated_node_name if nominated is None else nominated
        self.cluster.record_event(pod, "Warning", "FailedScheduling", message)
        self.cluster.set_unschedulable(pod, reason, message, node)
        if node != pod.status.nominated_node_name:
            set_nominated_node_name(qpi, node)
        if batch is not None:
            batch.failed(qpi, node, requeued and diagnosis is not None)


def set_nominated_node_name(qpi: QueuedPodInfo, node: str) -> None:
    """Give the queue's copy of the pod the nominatedNodeName just written."""
    pod = qpi.pod
    status = msgspec.structs.replace(pod.status, nominated_node_name=node)
    qpi.pod_info = PodInfo(msgspec.structs.replace(pod, status=status), like=qpi.pod_info)
