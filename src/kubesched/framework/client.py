"""What the scheduler asks of a cluster: bind, evict, and tell users what happened."""

from __future__ import annotations

from typing import Protocol

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus


class BindConflict(Exception):
    """The pod is gone or already bound elsewhere: binding it again would not help."""


class ClusterClient(Protocol):
    async def bind(self, pod: Pod, node_name: str) -> None:
        """Bind the pod to the node (the pods/binding subresource); raises on failure."""
        ...

    async def delete_pod(self, pod: Pod, reason: str) -> None: ...

    async def set_disruption_target(self, pod: Pod, reason: str, message: str) -> bool:
        """The DisruptionTarget=True condition, written on a victim before preemption
        deletes it (a status patch). False if the pod is gone already."""
        ...

    async def set_extended_resource_claim_status(
        self, pod: Pod, status: PodExtendedResourceClaimStatus
    ) -> None:
        """status.extendedResourceClaimStatus, written by DynamicResources' PreBind once
        it created the claim for the pod's DRA-backed extended resources (a status
        patch, patchPodExtendedResourceClaimStatus); raises on failure."""
        ...

    def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        """A Kubernetes Event about the pod; must not block."""
        ...

    def set_unschedulable(self, pod: Pod, reason: str, message: str, nominated_node: str) -> None:
        """The PodScheduled=False condition (and nominatedNodeName); must not block."""
        ...
