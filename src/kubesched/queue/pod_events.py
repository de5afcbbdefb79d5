"""Which cluster events a pod update amounts to (PodSchedulingPropertiesChange upstream)."""

from __future__ import annotations

from kubesched.api.objects import Pod
from kubesched.api.requests import pod_requests
from kubesched.framework.types import ActionType, ClusterEvent, Resource

_LABELS = {
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE: "Update",
}


def _scaled_down(new: Pod, old: Pod) -> bool:
    before, after = pod_requests(old), pod_requests(new)
    return any(after.get(name, 0) < amount for name, amount in before.items())


def pod_scheduling_properties_change(new: Pod, old: Pod) -> list[ClusterEvent]:
    """The specific update events of an assigned or unscheduled pod, in upstream's
    order; a plain Update when none applies (which only a plugin registered for
    every kind of Pod update would take)."""
    resource = Resource.ASSIGNED_POD if new.spec.node_name else Resource.UNSCHEDULED_POD
    prefix = "AssignedPod" if new.spec.node_name else "UnscheduledPod"
    actions: list[ActionType] = []
    if new.metadata.labels != old.metadata.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if not new.spec.scheduling_gates and old.spec.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.spec.tolerations) != len(old.spec.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    # extractPodGeneratedResourceClaimChange: the claims generated for the pod changed.
    if (
        new.status.resource_claim_statuses != old.status.resource_claim_statuses
        or new.status.extended_resource_claim_status != old.status.extended_resource_claim_status
    ):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE)
    return [ClusterEvent(resource, a, f"{prefix}{_LABELS[a]}") for a in actions]
