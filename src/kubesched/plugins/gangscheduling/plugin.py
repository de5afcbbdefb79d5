"""GangScheduling (gangscheduling.go, v1.36.3): PreEnqueue holds a gang's pods back
until their PodGroup exists and at least minCount of its pods are known; Permit
makes each pod wait until minCount of the group are scheduled (assumed or bound),
then allows them all.
"""

from __future__ import annotations

from kubesched.api.scheduling import PodGroup
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    PermitPlugin,
    PreEnqueuePlugin,
)
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_pod

# permitTimeoutDuration: how long gang pods wait at Permit for their quorum.
PERMIT_TIMEOUT = 5 * 60.0

WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to be scheduled"


class GangScheduling(PreEnqueuePlugin, PermitPlugin, EnqueueExtensions):
    name = "GangScheduling"

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A pod added may complete a gang; a PodGroup added may let its pods in.
        # Both the group reference and PodGroups are immutable: no Update events.
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.ADD), self.is_schedulable_after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.WORKLOAD_POD_GROUP, ActionType.ADD),
                self.is_schedulable_after_pod_group_added,
            ),
        ]

    def is_schedulable_after_pod_added(self, pod: PodInfo, old: object, new: object) -> bool:
        """helper.MatchingSchedulingGroup: the added pod is of the same group."""
        added = as_pod(new)
        if added is None:
            return True
        mine, theirs = pod.pod.spec.scheduling_group, added.spec.scheduling_group
        if mine is None or theirs is None:
            return False
        return (
            pod.pod.metadata.namespace == added.metadata.namespace
            and mine.pod_group_name == theirs.pod_group_name
        )

    def is_schedulable_after_pod_group_added(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(new, PodGroup):
            return True
        group = pod.pod.spec.scheduling_group
        return (
            group is not None
            and pod.pod.metadata.namespace == new.metadata.namespace
            and group.pod_group_name == new.metadata.name
        )

    def pre_enqueue(self, pod: PodInfo) -> Status:
        group = pod.pod.spec.scheduling_group
        if group is None or group.pod_group_name is None:
            return Status.success()
        namespace, name = pod.pod.metadata.namespace, group.pod_group_name
        pod_group = self.handle.workload_pod_groups.get(namespace, name)
        if pod_group is None:
            # (sic) upstream's text.
            return Status.unresolvable(
                f"waiting for pods's pod group {_quote(name)} to appear in scheduling queue",
                plugin=self.name,
            )
        gang = pod_group.spec.scheduling_policy.gang
        if gang is None:
            return Status.success()
        state = self.handle.pod_group_states.get_or_empty(f"{namespace}/{name}")
        if state.all_pods_count() < gang.min_count:
            return Status.unresolvable(
                "waiting for minCount pods from a gang to appear in scheduling queue",
                plugin=self.name,
            )
        return Status.success()

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        group = pod.pod.spec.scheduling_group
        if group is None or group.pod_group_name is None:
            return Status.success(), 0.0
        namespace, name = pod.pod.metadata.namespace, group.pod_group_name
        pod_group = self.handle.workload_pod_groups.get(namespace, name)
        if pod_group is None:
            # The group went away: an error, retried when it is added again.
            return Status.as_error(
                f'failed to get podGroup {namespace}/{name}: podgroup.scheduling.k8s.io "{name}" '
                "not found",
                self.name,
            ), 0.0
        gang = pod_group.spec.scheduling_policy.gang
        if gang is None:
            return Status.success(), 0.0
        # kubesched's pod group cycle assumes its pods in the cache itself, so the
        # cache's state is what upstream reads from the snapshot in that cycle.
        group_state = self.handle.pod_group_states.get_or_empty(f"{namespace}/{name}")
        if group_state.scheduled_pods_count() < gang.min_count:
            # Activate the group's unscheduled pods: they may wait for this one.
            self.handle.activate(sorted(group_state.unscheduled_pods()))
            return Status(Code.WAIT, [WAITING_FOR_QUORUM], self.name), PERMIT_TIMEOUT
        waiting_pods = self.handle.waiting_pods
        if waiting_pods is not None:
            for key in sorted(group_state.assumed_pods()):
                waiting = waiting_pods.get(key)
                if waiting is not None:
                    waiting.allow(self.name)
        return Status.success(), 0.0


def _quote(text: str) -> str:
    """Go's %q for the names this plugin quotes (DNS subdomains: nothing to escape)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
