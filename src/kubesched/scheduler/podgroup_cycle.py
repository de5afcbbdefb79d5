"""The pod group scheduling cycle (schedule_one_podgroup.go v1.36.3: ScheduleOne's
pod group branch, scheduleOnePodGroup, podGroupInfoForPod, podGroupCycle,
submitPodGroupAlgorithmResult and updatePodGroupCondition), an object the
Scheduler's schedule_one is with GenericWorkload on: a pod of no group goes on to
the single-pod SchedulingCycle (schedule_one.py).

With GenericWorkload on, a pod popped from the queue that names a PodGroup
(spec.schedulingGroup.podGroupName) brings the group's other unscheduled pods out
of the queue with it, and the group is placed in one cycle: all of its pods go to
their binding cycles (where GangScheduling's Permit lets them through together), or
all go back to the queue (through the FailureHandler, failure.py), and the
PodGroup's PodGroupScheduled condition says which.

Coscheduling's groups (scheduler-plugins' PodGroups, by label) do not come here:
that plugin places a group whole by trial (framework/group_placement.py) while its
pods go through the single-pod cycle one by one. `schedule_pod_group` takes the
group's key and its popped pods, and `pod_group_members` is the one place that says
which queued pods form a group, so another source of groups could use this cycle.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from kubesched.api.scheduling import (
    POD_GROUP_REASON_SCHEDULED,
    POD_GROUP_REASON_SCHEDULER_ERROR,
    POD_GROUP_REASON_UNSCHEDULABLE,
    POD_GROUP_SCHEDULED,
    Condition,
    find_condition,
    pod_group_key,
)
from kubesched.cache.cache import Cache
from kubesched.framework.handle import Handle
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
from kubesched.framework.waiting import WaitingPods
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.binding_cycle import BindingCycle
from kubesched.scheduler.failure import FailureHandler
from kubesched.scheduler.listeners import SchedulingListeners
from kubesched.scheduler.podgroup_algorithm import (
    POD_GROUP_UNSCHEDULABLE,
    GroupResult,
    PodGroupAlgorithm,
    PodResult,
)

log = logging.getLogger("kubesched.scheduler")


@dataclass(slots=True)
class QueuedPodGroup:
    """QueuedPodGroupInfo: the group's key and its pods popped for this cycle."""

    key: str  # "namespace/name"
    pods: list[QueuedPodInfo]

    @property
    def namespace(self) -> str:
        return self.key.partition("/")[0]

    @property
    def name(self) -> str:
        return self.key.partition("/")[2]


class PodGroupCycle:
    """ScheduleOne with the pod group branch: a pod of no group goes to SCHEDULE_ONE_POD
    (the single-pod cycle's schedule_one); a group is placed by ALGORITHM over the
    profile's framework (FRAMEWORKS), its pods then bound (BINDING) or failed
    (FAILURE), and its PodGroup's condition written through HANDLE's lister."""

    def __init__(
        self,
        *,
        schedule_one_pod: Callable[[QueuedPodInfo], None],
        algorithm: PodGroupAlgorithm,
        frameworks: dict[str, Framework],
        queue: SchedulingQueue,
        cache: Cache,
        nominator: Nominator,
        waiting_pods: WaitingPods,
        handle: Handle,
        listeners: SchedulingListeners,
        binding: BindingCycle,
        failure: FailureHandler,
    ) -> None:
        self.schedule_one_pod = schedule_one_pod
        self.algorithm = algorithm
        self.frameworks = frameworks
        self.queue = queue
        self.cache = cache
        self.table = cache.table
        self.nominator = nominator
        self.waiting_pods = waiting_pods
        self.handle = handle
        self.listeners = listeners
        self.start_binding = binding.start
        self.handle_failure = failure.handle_failure

    def schedule_one(self, qpi: QueuedPodInfo) -> None:
        """ScheduleOne with GenericWorkload on: the pod's group, or the pod alone."""
        group = pod_group_key(qpi.pod)
        if group is None:
            self.schedule_one_pod(qpi)
            return
        self.schedule_pod_group(QueuedPodGroup(group, self.pod_group_members(group, qpi)))

    def pod_group_members(self, group: str, first: QueuedPodInfo) -> list[QueuedPodInfo]:
        """podGroupInfoForPod: the popped pod and every other unscheduled pod of its
        group the queue can give (PopSpecificPod), by priority, then first attempt."""
        members = [first]
        state = self.cache.pod_group_states.get(group)
        unscheduled = [] if state is None else sorted(state.unscheduled_pods())
        for key in unscheduled:
            if key == first.pod_info.key:
                continue
            popped = self.queue.pop_specific(key)
            if popped is not None:
                members.append(popped)
        members.sort(
            key=lambda q: (
                -q.pod_info.priority,
                q.initial_attempt_timestamp or 0.0,
                q.initial_attempt_seq,
            )
        )
        return members

    def schedule_pod_group(self, group: QueuedPodGroup) -> None:
        """scheduleOnePodGroup: the group's profile, the pods still to place, then
        podGroupCycle."""
        names = {q.pod.spec.scheduler_name for q in group.pods}
        fw = self.frameworks.get(group.pods[0].pod.spec.scheduler_name)
        if len(names) > 1 or fw is None:
            first, *rest = sorted(names)
            message = (
                "all pods in a single pod group should have the same .spec.schedulerName "
                f'set, got: "{rest[0]}" and "{first}"'
                if rest
                else f'profile not found for scheduler name "{first}"'
            )
            status = Status(Code.ERROR, [message])
            for qpi in group.pods:
                pod_fw = self.frameworks.get(qpi.pod.spec.scheduler_name)
                if pod_fw is None:
                    self.queue.done(qpi.pod_info.key)
                    continue
                self.handle_failure(pod_fw, qpi, status)
            return
        # skipPodGroupPodSchedule: pods being deleted, or assumed already.
        kept = []
        for qpi in group.pods:
            key = qpi.pod_info.key
            if qpi.pod.metadata.deletion_timestamp is not None or self.cache.is_assumed(key):
                self.queue.done(key)
                continue
            kept.append(qpi)
        group.pods = kept
        if not kept:
            return
        log.debug("Attempting to schedule pod group %s", group.key)
        started = time.perf_counter()
        result = self.algorithm.pod_group_algorithm(fw, group.pods)
        self.listeners.pod_group_algorithm(time.perf_counter() - started)
        # The algorithm assumed pods and forgot them again: the table is as it was,
        # and this is the state every pod of the group was tried on.
        for qpi in group.pods:
            qpi.tried_at_generation = self.table.generation
        self.submit_pod_group_result(fw, group, result, started)

    def submit_pod_group_result(
        self, fw: Framework, group: QueuedPodGroup, result: GroupResult, started: float
    ) -> None:
        """submitPodGroupAlgorithmResult: each pod to its binding cycle or back to the
        queue, then the PodGroupScheduled condition and the metrics."""
        group_status = result.status
        for index, qpi in enumerate(group.pods):
            pod_result = result.pods[index] if index < len(result.pods) else None
            if pod_result is None:
                # A group-wide failure before this pod was tried.
                self._fail(fw, qpi, group_status, "")
                continue
            if group_status.code == Code.ERROR:
                status = pod_result.status if pod_result.status.code == Code.ERROR else group_status
                self._fail(fw, qpi, status, "")
                continue
            if pod_result.status.is_success():
                if group_status.is_success():
                    self._bind(fw, pod_result)
                elif result.waiting_on_preemption:
                    self._fail(fw, qpi, group_status, pod_result.node)
                else:
                    self._fail(fw, qpi, _rejected_by_group(pod_result), "")
            elif pod_result.requires_preemption and not result.waiting_on_preemption:
                self._fail(fw, qpi, _rejected_by_group(pod_result), "")
            else:
                self.handle_failure(
                    fw,
                    qpi,
                    pod_result.status,
                    pod_result.started,
                    diagnosis=pod_result.diagnosis,
                    nominated=pod_result.nominating,
                )
        seconds = time.perf_counter() - started
        if group_status.is_success():
            condition = Condition(
                type=POD_GROUP_SCHEDULED,
                status="True",
                reason=POD_GROUP_REASON_SCHEDULED,
                message=group_status.message(),
            )
            outcome = "scheduled"
        elif group_status.code == Code.ERROR:
            condition = Condition(
                type=POD_GROUP_SCHEDULED,
                status="False",
                reason=POD_GROUP_REASON_SCHEDULER_ERROR,
                message=group_status.message(),
            )
            outcome = "error"
        else:
            condition = Condition(
                type=POD_GROUP_SCHEDULED,
                status="False",
                reason=POD_GROUP_REASON_UNSCHEDULABLE,
                message=group_status.message(),
            )
            outcome = "waiting_on_preemption" if result.waiting_on_preemption else "unschedulable"
        log.info("pod group %s: %s", group.key, outcome)
        self.listeners.pod_group_attempt(outcome, fw.profile_name, seconds)
        self.update_pod_group_condition(group, condition)

    def _bind(self, fw: Framework, pod_result: PodResult) -> None:
        """prepareForBindingCycle, then the binding cycle as a task: the pod is
        assumed again, reserved, and asked Permit (GangScheduling's last pod of the
        quorum allows the waiting others)."""
        qpi, state, node = pod_result.qpi, pod_result.state, pod_result.node
        state.pod_group_cycle = False
        pod = qpi.pod_info
        self.cache.assume_pod(pod, node)
        self.nominator.delete(pod.key)
        status = fw.run_reserve(state, pod, node)
        if status.is_success():
            status, waits = fw.run_permit(state, pod, node)
            if status.code == Code.WAIT:
                self.waiting_pods.add(pod.key, node, waits)
                status = Status()
        else:
            waits = {}
        if not status.is_success():
            self.handle_failure(fw, qpi, status, pod_result.started, state=state, node=node)
            return
        self.start_binding(fw, state, qpi, node, pod_result.started)

    def _fail(self, fw: Framework, qpi: QueuedPodInfo, status: Status, nominated: str) -> None:
        """A pod of a group that cannot be placed (or failed as a whole): the group's
        status, so no plugin rejected the pod itself."""
        self.handle_failure(fw, qpi, status, nominated=nominated)

    def update_pod_group_condition(self, group: QueuedPodGroup, condition: Condition) -> None:
        """updatePodGroupCondition: never back from True to False (a later cycle for
        extra pods of a scheduled group), observedGeneration from the object."""
        lister = self.handle.workload_pod_groups
        pod_group = lister.get(group.namespace, group.name)
        if pod_group is None:
            log.error("Failed to get PodGroup %s for status update", group.key)
            return
        existing = find_condition(pod_group.status.conditions, condition.type)
        if existing is not None and existing.status == "True" and condition.status != "True":
            return
        condition.observed_generation = pod_group.metadata.generation
        if lister.writer is not None:
            lister.writer.set_condition(pod_group, condition)


def _rejected_by_group(pod_result: PodResult) -> Status:
    """A pod that fitted, in a group that cannot be placed: Unschedulable with its
    Permit message, behind errPodGroupUnschedulable."""
    permit = pod_result.permit.message() if pod_result.permit is not None else ""
    return Status(Code.UNSCHEDULABLE, [POD_GROUP_UNSCHEDULABLE, permit])
