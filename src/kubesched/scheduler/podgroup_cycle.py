"""The pod group scheduling cycle (schedule_one_podgroup.go v1.36.3: ScheduleOne's
pod group branch, scheduleOnePodGroup, podGroupInfoForPod, podGroupCycle,
submitPodGroupAlgorithmResult and updatePodGroupCondition).

With GenericWorkload on, a pod popped from the queue that names a PodGroup
(spec.schedulingGroup.podGroupName) brings the group's other unscheduled pods out
of the queue with it, and the group is placed in one cycle: all of its pods go to
their binding cycles (where GangScheduling's Permit lets them through together), or
all go back to the queue, and the PodGroup's PodGroupScheduled condition says which.

Coscheduling's groups (scheduler-plugins' PodGroups, by label) do not come here:
that plugin places a group whole by trial (framework/group_placement.py) while its
pods go through the single-pod cycle one by one. `schedule_pod_group` takes the
group's key and its popped pods, and `pod_group_members` is the one place that says
which queued pods form a group, so another source of groups could use this cycle.
"""

from __future__ import annotations

import asyncio
import logging
import time
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
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import QueuedPodInfo
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


class PodGroupCycle(PodGroupAlgorithm):
    """ScheduleOne with the pod group branch."""

    def schedule_one(self, qpi: QueuedPodInfo) -> None:
        group = pod_group_key(qpi.pod) if self.gates.generic_workload else None
        if group is None:
            super().schedule_one(qpi)
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
            for qpi in group.pods:
                pod_fw = self.frameworks.get(qpi.pod.spec.scheduler_name)
                if pod_fw is None:
                    self.queue.done(qpi.pod_info.key)
                    continue
                qpi.unschedulable_plugins = set()
                self.handle_scheduling_failure(pod_fw, qpi, "SchedulerError", message, None)
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
        result = self.pod_group_algorithm(fw, group.pods)
        self._observe_group_algorithm(time.perf_counter() - started)
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
                if pod_result.diagnosis is None:
                    qpi.unschedulable_plugins = set()
                self.handle_scheduling_failure(
                    fw,
                    qpi,
                    pod_result.reason,
                    pod_result.status.message(),
                    pod_result.diagnosis,
                    pod_result.nominating,
                )
                self._observe_failure(fw, pod_result.status, pod_result.started)
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
        self._observe_group_attempt(outcome, fw.profile_name, seconds)
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
            fw.run_unreserve(state, pod, node)
            self.cache.forget_pod(pod)
            self._handle_status_failure(fw, qpi, status)
            self._observe_failure(fw, status, pod_result.started)
            return
        task = asyncio.get_event_loop().create_task(
            self.binding_cycle(fw, state, qpi, node, pod_result.started)
        )
        self.binding_tasks.add(task)
        task.add_done_callback(self.binding_tasks.discard)

    def _fail(self, fw: Framework, qpi: QueuedPodInfo, status: Status, nominated: str) -> None:
        reason = "SchedulerError" if status.code == Code.ERROR else "Unschedulable"
        qpi.unschedulable_plugins = set()
        self.handle_scheduling_failure(fw, qpi, reason, status.message(), None, nominated)

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

    # --- metrics -------------------------------------------------------------------

    def _observe_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        self.listeners.pod_group_attempt(result, profile, seconds)

    def _observe_group_algorithm(self, seconds: float) -> None:
        self.listeners.pod_group_algorithm(seconds)


def _rejected_by_group(pod_result: PodResult) -> Status:
    """A pod that fitted, in a group that cannot be placed: Unschedulable with its
    Permit message, behind errPodGroupUnschedulable."""
    permit = pod_result.permit.message() if pod_result.permit is not None else ""
    return Status(Code.UNSCHEDULABLE, [POD_GROUP_UNSCHEDULABLE, permit])
