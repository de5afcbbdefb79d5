"""The pod group scheduling algorithm (schedule_one_podgroup.go v1.36.3:
podGroupSchedulingDefaultAlgorithm and podGroupPodSchedulingAlgorithm), an object
the pod group cycle (podgroup_cycle.py) holds.

Each pod of the group is tried in turn with the ordinary filters and scores; a pod
that fits is assumed in the cache and reserved, so that the next pods see it, and
its Permit is asked. Each pod goes through the single-pod cycle's schedulePod and
PostFilter (the SchedulingCycle's, schedule_one.py). Once some pod's Permit says
Success (GangScheduling: minCount of the group are scheduled), the group is
schedulable. At the end every assumed pod is forgotten again: the results go to
`submit_pod_group_result` (podgroup_cycle.py), which assumes the pods for real and
starts their binding cycles, or hands them all to the FailureHandler.

Upstream assumes the pods in its snapshot of the cache; kubesched's scheduling
cycle reads the cache's node table directly (nothing changes it during a cycle), so
the pods are assumed in the cache and forgotten again, with the same effect.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.runtime.errors import PluginError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.queue.nominator import Nominator
from kubesched.scheduler.listeners import SchedulingListeners
from kubesched.scheduler.schedule_one import FitError, NoNodesError, SchedulingCycle

# errPodGroupUnschedulable's text.
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
WAITING_ON_PREEMPTION = "pod group is waiting for preemption to complete"


@dataclass(slots=True)
class PodResult:
    """algorithmResult: one pod's outcome in the group's algorithm."""

    qpi: QueuedPodInfo
    state: CycleState
    started: float
    status: Status = field(default_factory=Status)
    node: str = ""  # SuggestedHost (the nominated node when preemption is required)
    # For the FailureHandler: the FitError's diagnosis, and the nomination (None:
    # keep the pod's own). The status says the reason: an Error is "SchedulerError".
    diagnosis: Diagnosis | None = None
    nominating: str | None = ""
    requires_preemption: bool = False
    # Set when the pod passed the algorithm (or needs preemption): Permit's verdict.
    permit: Status | None = None


@dataclass(slots=True)
class GroupResult:
    """podGroupAlgorithmResult."""

    pods: list[PodResult]
    status: Status
    waiting_on_preemption: bool = False


class PodGroupAlgorithm:
    """The pod group algorithm: each pod through CYCLE's schedulePod and PostFilter,
    assumed in CACHE (and its nomination taken from NOMINATOR) for the next pods'
    sake; LISTENERS observe each pod's algorithm latency."""

    def __init__(
        self,
        *,
        cycle: SchedulingCycle,
        cache: Cache,
        nominator: Nominator,
        listeners: SchedulingListeners,
    ) -> None:
        self.schedule_pod = cycle.schedule_pod
        self.post_filter = cycle._post_filter
        self.cache = cache
        self.table = cache.table
        self.nominator = nominator
        self.listeners = listeners

    def pod_group_algorithm(self, fw: Framework, queued: list[QueuedPodInfo]) -> GroupResult:
        """podGroupSchedulingDefaultAlgorithm (TopologyAwareWorkloadScheduling, which
        would run PlacementGenerate/PlacementScore around it, is not supported)."""
        result = GroupResult(
            [], Status(Code.UNSCHEDULABLE, [POD_GROUP_UNSCHEDULABLE]), waiting_on_preemption=False
        )
        reverts: list[Callable[[], None]] = []
        requires_preemption = False
        try:
            for qpi in queued:
                pod_result, revert = self._pod_algorithm(fw, qpi)
                result.pods.append(pod_result)
                if not pod_result.status.is_success() and not pod_result.requires_preemption:
                    if pod_result.status.is_rejected():
                        # The group may still be schedulable, if Permit can succeed.
                        continue
                    result.status = Status.as_error(
                        "failed to schedule other pod from a pod group: "
                        + pod_result.status.message()
                    )
                    result.waiting_on_preemption = False
                    break
                if revert is not None:
                    reverts.append(revert)
                requires_preemption = requires_preemption or pod_result.requires_preemption
                if pod_result.permit is not None and pod_result.permit.is_success():
                    if requires_preemption:
                        result.status = Status(
                            Code.UNSCHEDULABLE, [POD_GROUP_UNSCHEDULABLE, WAITING_ON_PREEMPTION]
                        )
                        result.waiting_on_preemption = True
                    else:
                        result.status = Status()
        finally:
            # The deferred revertFns: the pods go back to the queue or are assumed
            # again by submit; they were assumed only for the next pods' sake.
            for revert in reversed(reverts):
                revert()
        return result

    def _pod_algorithm(
        self, fw: Framework, qpi: QueuedPodInfo
    ) -> tuple[PodResult, Callable[[], None] | None]:
        """podGroupPodSchedulingAlgorithm: schedule one pod of the group (PostFilter,
        that is preemption, included), assume and reserve it, and ask Permit."""
        state = CycleState()
        state.pod_group_cycle = True
        state.record_plugin_metrics = self.listeners.sample_plugins()
        started = time.perf_counter()
        pod = qpi.pod_info
        result = PodResult(qpi, state, started)
        self.listeners.pod_attempted(pod.key, qpi.attempts)
        qpi.tried_at_generation = self.table.generation
        try:
            node = self.schedule_pod(fw, state, pod).node_name
        except FitError as fit:
            nominating = self.post_filter(fw, state, qpi, fit)
            qpi.tried_at_generation = self.table.generation
            result.diagnosis = fit.diagnosis
            result.status = Status(Code.UNSCHEDULABLE, [str(fit)])
            result.nominating = nominating
            if not nominating:
                self.listeners.algorithm(started)
                return result, None
            # Preemption is required: the next pods must see this one on its
            # nominated node, so it is assumed there as if it fitted.
            node = nominating
            result.requires_preemption = True
        except (NoNodesError, PluginError) as exc:
            self.listeners.algorithm(started)
            qpi.unschedulable_plugins = set()
            if isinstance(exc, PluginError):
                result.status = Status.as_error(exc)
            else:
                result.status = Status(Code.UNSCHEDULABLE, [str(exc)])
            return result, None
        self.listeners.algorithm(started)
        result.node = node
        nominated_before = pod.pod.status.nominated_node_name
        self.cache.assume_pod(pod, node)
        self.nominator.delete(pod.key)

        def revert() -> None:
            fw.run_unreserve(state, pod, node)
            self.cache.forget_pod(pod)
            if nominated_before:
                # Assuming took the nomination away; the revert gives it back.
                self.nominator.add(qpi.pod, nominated_before)

        status = fw.run_reserve(state, pod, node)
        if not status.is_success():
            revert()
            result.status, result.node, result.nominating = status, "", ""
            return result, None
        permit, _waits = fw.run_permit(state, pod, node)
        if permit.code not in (Code.SUCCESS, Code.WAIT):
            revert()
            result.status, result.node, result.nominating = permit, "", ""
            result.requires_preemption = False
            return result, None
        result.permit = permit
        return result, revert
