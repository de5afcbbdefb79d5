"""Coscheduling: a group's pods are scheduled together, or none of them is.

It follows scheduler-plugins' Coscheduling at v0.35.4-devel (built against Kubernetes
v1.35.4; pkg/coscheduling/coscheduling.go and core/core.go): the PodGroup of a pod
(label scheduling.x-k8s.io/pod-group) names minMember, minResources and
scheduleTimeoutSeconds; QueueSort keeps a group's pods together; PreFilter refuses a
group that cannot reach minMember (or minResources); Permit holds each reserved pod
until minMember of them are reserved, then allows them all; PostFilter and Unreserve
reject the group's waiting pods.

One addition (not upstream's): before any pod of a group is reserved, PreFilter checks
that the minMember pods still needed fit together on the cluster as it is, by a trial
placement through the profile's own filters (framework.group_placement). A group that
does not fit whole is refused at once and reserves nothing, so two groups can no
longer each hold part of what both need until both time out. The trial's nodes are
then the only candidates of each of the group's pods (a PreFilterResult), so that the
real placement is the one the trial found; the trial runs again for each pod, keeping
the earlier plan where it still holds, so that a group which stopped fitting because
another group reserved meanwhile is refused, and its waiting pods released
(PostFilter), before it reserves more.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.pod_groups import PodGroup, pod_group_key
from kubesched.api.quantity import format_amount
from kubesched.api.requests import amounts
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.group_placement import place_group
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    PermitPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueueSortPlugin,
    ReservePlugin,
)
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, QueuedPodInfo, Resource
from kubesched.plugins.coscheduling.args import CoschedulingArgs, coscheduling_args
from kubesched.plugins.coscheduling.preemption import select_gang_victims, victim_units
from kubesched.plugins.helpers.args import raw_args

log = logging.getLogger("kubesched.coscheduling")

# Where PreFilter leaves, for PostFilter's gang preemption, a group it could not place.
_UNPLACED_KEY = "Coscheduling/unplaced"


@dataclass(frozen=True, slots=True)
class _Unplaced:
    pods: list[PodInfo]  # this pod first, then its pending siblings
    needed: int


# util.DefaultWaitTime: the wait at Permit when neither the group nor the args set one.
DEFAULT_WAIT_SECONDS = 60.0


class Coscheduling(
    QueueSortPlugin,
    PreFilterPlugin,
    PostFilterPlugin,
    ReservePlugin,
    PermitPlugin,
    EnqueueExtensions,
):
    name = "Coscheduling"
    args_decoder = staticmethod(coscheduling_args)

    def __init__(
        self,
        args: Mapping[str, Any] | CoschedulingArgs | None = None,
        handle: Handle | None = None,
    ):
        self.config = coscheduling_args(args)
        super().__init__(raw_args(args), handle)
        # assignedPodsByPG's Permit half: pods of each group that reached Permit and
        # were not unreserved since (bound pods are counted from the pod lister).
        self._permitted: dict[str, set[str]] = {}
        # Each group's trial placement (pod key -> node), while its pods are placed.
        self._plans: dict[str, dict[str, str]] = {}
        # GetCreationTimestamp's stand-ins: when the group was first sorted, and
        # lastFailedSchedulePG (a failed group sorts as if it came in then).
        self._group_time: dict[str, float] = {}
        self._failed_at: dict[str, float] = {}
        # backedOffPG: groups refused at PreFilter until then.
        self._backoff_until: dict[str, float] = {}
        self._in_trial = False
        # Groups whose gang preemption is evicting its victims.
        self._evicting: set[str] = set()
        if handle is not None:
            handle.pod_groups.on_change.append(self._forget_if_gone)

    def _forget_if_gone(self, key: str) -> None:
        """Nothing is kept about a group once it and all its pods are gone."""
        groups = self.handle.pod_groups
        if groups.get(key) is None and not groups.members(key):
            for kept in (self._permitted, self._plans, self._group_time):
                kept.pop(key, None)
            self._failed_at.pop(key, None)
            self._backoff_until.pop(key, None)

    # --- helpers ------------------------------------------------------------------

    def _group(self, pod: PodInfo) -> tuple[str, PodGroup | None]:
        """GetPodGroup: the group's "namespace/name" ("" for none) and object (None
        when it is not found)."""
        key = pod_group_key(pod.pod)
        if not key or self._handle is None:
            return key, None
        return key, self.handle.pod_groups.get(key)

    def _assigned(self, key: str) -> set[str]:
        """GetAssignedPodCount's set: pods of the group bound, or reserved and not
        unreserved since (deleted pods leave the lister, and so this set)."""
        members = self.handle.pod_groups.members(key)
        present = {p.key for p in members}
        bound = {p.key for p in members if p.spec.node_name}
        return bound | (self._permitted.get(key, set()) & present)

    def _now(self) -> float:
        return self.handle.clock.now()

    def _mark_failure(self, key: str) -> None:
        self._failed_at[key] = self._now()
        self._plans.pop(key, None)

    def _waiting_siblings(self, key: str) -> list[str]:
        members = {p.key for p in self.handle.pod_groups.members(key)}
        waiting = self.handle.waiting_pods
        if waiting is None:
            return []
        return [w.key for w in waiting if w.key in members]

    def _reject_waiting(self, key: str, message: str) -> None:
        waiting = self.handle.waiting_pods
        if waiting is None:
            return
        for pod_key in self._waiting_siblings(key):
            entry = waiting.get(pod_key)
            if entry is not None:
                entry.reject(self.name, message)

    # --- QueueSort ----------------------------------------------------------------

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Less: priority, then the group's time (or the pod's first attempt), then the
        pods' "namespace/name"."""
        p1, p2 = a.pod_info.priority, b.pod_info.priority
        if p1 != p2:
            return p1 > p2
        t1, t2 = self._sort_time(a), self._sort_time(b)
        if t1 == t2:
            return a.pod_info.key < b.pod_info.key
        return t1 < t2

    def _sort_time(self, qpi: QueuedPodInfo) -> float:
        own = qpi.initial_attempt_timestamp
        own = qpi.timestamp if own is None else own
        key = pod_group_key(qpi.pod)
        if not key:
            return own
        failed = self._failed_at.get(key)
        if failed is not None:
            return failed
        # Upstream takes the PodGroup's creationTimestamp; here the group comes in with
        # the first of its pods the queue orders, on the scheduler's own clock.
        return self._group_time.setdefault(key, own)

    # --- PreFilter ----------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        key, group = self._group(pod)
        if group is None or self._in_trial:
            return None, Status.success()
        # If PreFilter fails, UnschedulableAndUnresolvable: no preemption attempt.
        until = self._backoff_until.get(key)
        if until is not None and self._now() < until:
            return None, self._refuse(f"podGroup {key} failed recently")
        members = self.handle.pod_groups.members(key)
        minimum = group.spec.min_member
        gap = minimum - len(members)
        if gap > 0:
            return None, self._refuse(
                f"pre-filter pod {pod.pod.metadata.name} cannot find enough sibling pods, "
                f"current pods number: {len(members)}, minMember of group: {minimum}"
            )
        for member in members:
            if member.spec.scheduling_gates:
                gap += 1
            if gap > 0:
                return None, self._refuse(
                    f"pre-filter pod {pod.pod.metadata.name} cannot proceed due to gated "
                    "pods in the same PodGroup"
                )
        if group.spec.min_resources:
            gap_text = self._resource_gap(key, group, nodes)
            if gap_text:
                return None, self._refuse(gap_text)
        return self._place_whole_group(state, key, group, pod, nodes)

    def _refuse(self, message: str) -> Status:
        return Status.unresolvable(message, plugin=self.name)

    def _resource_gap(self, key: str, group: PodGroup, nodes: NodeTable) -> str:
        """CheckClusterResource: minResources (and minMember pods) against what the
        nodes have left, the group's own placed pods not counted; the gap's text."""
        wanted = amounts(group.spec.min_resources or {})
        wanted["pods"] = group.spec.min_member
        left: dict[str, int] = {}
        own = {p.key for p in self.handle.pod_groups.members(key)}
        for row in nodes.order():
            row = int(row)
            node_pods = list(nodes.pods_on(row))
            mine = [p for p in node_pods if p.key in own]
            for name in wanted:
                column = nodes.resource_index.get(name)
                if name == "pods":
                    free = int(nodes.allocatable[row, 3]) - (len(node_pods) - len(mine))
                elif column is None:
                    continue
                else:
                    free = int(nodes.allocatable[row, column] - nodes.requested[row, column])
                    free += sum(p.requests.get(name, 0) for p in mine)
                left[name] = left.get(name, 0) + free
        short = {n: q - left.get(n, 0) for n, q in wanted.items() if q - left.get(n, 0) > 0}
        if not short:
            return ""
        shown = " ".join(f"{n}:{format_amount(n, q)}" for n, q in sorted(short.items()))
        return f"resource gap: map[{shown}]"

    def _place_whole_group(
        self, state: CycleState, key: str, group: PodGroup, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        """The trial placement of the pods the group still needs, this pod first."""
        needed = group.spec.min_member - len(self._assigned(key) - {pod.key})
        if needed <= 0:
            return None, Status.success()
        # The trial runs again for each pod (the cluster may have changed since the
        # last one: other groups' pods reserved), keeping the last plan where it holds.
        plan = self._plans.get(key)
        runner = self.handle.framework
        if runner is None:
            return None, Status.success()
        assigned = self._assigned(key)
        candidates = [pod] + [
            PodInfo(m)
            for m in self.handle.pod_groups.members(key)
            if m.key != pod.key
            and m.key not in assigned
            and not m.spec.node_name
            and not m.spec.scheduling_gates
            and m.metadata.deletion_timestamp is None
            and m.spec.scheduler_name == pod.pod.spec.scheduler_name
        ]
        self._in_trial = True
        try:
            placement = place_group(runner, candidates, needed, nodes, plan)
        finally:
            self._in_trial = False
        if not placement.feasible:
            self._plans.pop(key, None)
            # For gang preemption, in PostFilter: the pods to place and how many.
            state.write(_UNPLACED_KEY, _Unplaced(candidates, needed))
            return None, self._refuse(
                f"podGroup {key} cannot be placed whole: {placement.reason()}"
            )
        self._plans[key] = placement.placed
        node = placement.placed.get(pod.key)
        if node is None:  # the others make minMember: this pod is one more
            return None, Status.success()
        return PreFilterResult({node}, [self.name]), Status.success()

    # --- PostFilter ---------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Any
    ) -> tuple[PostFilterResult | None, Status]:
        """Reject the group's waiting pods when this pod fits nowhere, unless the group
        already has minMember assigned or the gap is within podGroupRejectPercentage."""
        key, group = self._group(pod)
        if group is None:
            return PostFilterResult(), Status.unschedulable(
                "can not find pod group", plugin=self.name
            )
        unplaced = state.get(_UNPLACED_KEY)
        if isinstance(unplaced, _Unplaced):
            preempted = self._preempt_for_group(key, pod, unplaced)
            if preempted is not None:
                return preempted
        assigned = len(self._assigned(key))
        minimum = group.spec.min_member
        if assigned >= minimum:
            return PostFilterResult(), Status.unschedulable(plugin=self.name)
        if (minimum - assigned) / minimum <= self.config.pod_group_reject_percentage / 100:
            return PostFilterResult(), Status.unschedulable(plugin=self.name)
        self._reject_waiting(key, "optimistic rejection in PostFilter")
        backoff = self.config.pod_group_backoff_seconds
        if backoff > 0 and len(self.handle.pod_groups.members(key)) >= minimum:
            self._backoff_until[key] = self._now() + backoff
        self._mark_failure(key)
        return PostFilterResult(), Status.unschedulable(
            f"PodGroup {key} gets rejected due to Pod {pod.pod.metadata.name} is "
            "unschedulable even after PostFilter",
            plugin=self.name,
        )

    def _preempt_for_group(
        self, key: str, pod: PodInfo, unplaced: _Unplaced
    ) -> tuple[PostFilterResult, Status] | None:
        """Gang preemption (preemption.py): evict the fewest lower-priority units that
        let the whole group fit, and nominate this pod to its node in that placement;
        None when no eviction makes the group fit."""
        runner = self.handle.framework
        if runner is None or pod.pod.spec.preemption_policy == "Never":
            return None
        if key in self._evicting:
            # Another pod of the group preempted already: its victims are going.
            return PostFilterResult(), Status.unschedulable(
                f"waiting for the pods preempted for PodGroup {key} to go", plugin=self.name
            )
        units = victim_units(self.handle.nodes, self.handle.pod_groups, pod.priority, key)
        if not units:
            return None
        self._in_trial = True
        try:
            chosen = select_gang_victims(
                runner, self.handle.nodes, units, unplaced.pods, unplaced.needed
            )
        finally:
            self._in_trial = False
        if chosen is None:
            return None
        victims, placement = chosen
        self._plans[key] = placement.placed
        pods = [victim for unit in victims for victim, _ in unit.pods]
        self._evicting.add(key)
        self.handle.spawn(self._evict(key, pods, pod))
        # No nomination: the group's pods follow the plan once the victims are gone
        # (a nominated pod would count against its own siblings' filters).
        return PostFilterResult(), Status.success()

    async def _evict(self, key: str, victims: list[PodInfo], preemptor: PodInfo) -> None:
        """As DefaultPreemption's PreemptPod: a victim waiting at Permit is told so, any
        other gets DisruptionTarget=True and is deleted, each with a Preempted event."""
        cluster = self.handle.cluster
        if cluster is None:
            self._evicting.discard(key)
            return
        waiting_pods = self.handle.waiting_pods
        message = (
            f"Preempted by pod {preemptor.pod.metadata.uid} for its PodGroup "
            f"{pod_group_key(preemptor.pod)}"
        )
        try:
            for victim in victims:
                waiting = None if waiting_pods is None else waiting_pods.get(victim.key)
                if waiting is not None and waiting.preempt(self.name, "preempted"):
                    cluster.record_event(victim.pod, "Normal", "Preempted", message)
                    continue
                found = await cluster.set_disruption_target(
                    victim.pod,
                    "PreemptionByScheduler",
                    f"{preemptor.pod.spec.scheduler_name}: preempting to accommodate a "
                    "higher priority pod group",
                )
                if found:
                    await cluster.delete_pod(victim.pod, "Preempted")
                    cluster.record_event(victim.pod, "Normal", "Preempted", message)
        except Exception:
            log.exception("gang preemption for pod %s failed", preemptor.key)
            self.handle.retry_after_error([preemptor.key])
        finally:
            self._evicting.discard(key)

    # --- Reserve / Unreserve ------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status.success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """A reserved pod of the group failed (timeout, rejection, bind error): every
        other waiting pod of the group is rejected, so no part of it stays reserved."""
        key, group = self._group(pod)
        if group is None:
            return
        permitted = self._permitted.get(key)
        if permitted is not None:
            permitted.discard(pod.key)
            if not permitted:
                del self._permitted[key]
        self._reject_waiting(key, "rejection in Unreserve")
        self._mark_failure(key)

    # --- Permit -------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        key, group = self._group(pod)
        if not key:
            return Status.success(), 0.0
        if group is None:
            return Status.unschedulable("PodGroup not found", plugin=self.name), 0.0
        self._permitted.setdefault(key, set()).add(pod.key)
        assigned = self._assigned(key)
        if len(assigned) >= group.spec.min_member:
            self._failed_at.pop(key, None)
            self._plans.pop(key, None)
            waiting = self.handle.waiting_pods
            for pod_key in self._waiting_siblings(key):
                entry = None if waiting is None else waiting.get(pod_key)
                if entry is not None:
                    entry.allow(self.name)
            return Status.success(), 0.0
        if len(assigned) == 1:
            # ActivateSiblings: the group's other pending pods go to activeQ now.
            self.handle.activate(
                [
                    m.key
                    for m in self.handle.pod_groups.members(key)
                    if m.key != pod.key and not m.spec.node_name
                ]
            )
        return Status.wait(self.name), self._wait_seconds(group)

    def _wait_seconds(self, group: PodGroup) -> float:
        """GetWaitTimeDuration: the group's scheduleTimeoutSeconds, else the args',
        else 60s."""
        seconds = group.spec.schedule_timeout_seconds
        if seconds:
            return float(seconds)
        if self.config.permit_waiting_time_seconds:
            return float(self.config.permit_waiting_time_seconds)
        return DEFAULT_WAIT_SECONDS

    # --- queueing -----------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD_GROUP, ActionType.ADD | ActionType.UPDATE)
            ),
            # Not upstream's: a group refused by the trial placement may fit once
            # room is freed or added.
            ClusterEventWithHint(ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]
