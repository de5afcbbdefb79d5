"""The Kubernetes API as the scheduler's ClusterClient: bind, evict, report."""

from __future__ import annotations

import msgspec

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.framework.client import BindConflict
from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.writer import EventWriter, StatusWriter, rfc3339


class KubeCluster:
    def __init__(self, client: KubeClient, events: EventWriter, statuses: StatusWriter) -> None:
        self.client = client
        self.events = events
        self.statuses = statuses
        self.bound = 0

    async def bind(self, pod: Pod, node_name: str) -> None:
        meta = pod.metadata
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        # The client's AdaptiveLimiter bounds the binds in flight.
        try:
            await self.client.post(
                f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/binding", body
            )
        except ApiError as exc:
            # 404: the pod is gone; 409: already bound (or a new pod of that name).
            # Neither gets better by trying again.
            if exc.status in (404, 409):
                raise BindConflict(str(exc)) from exc
            raise
        self.bound += 1
        self.statuses.forget(meta.key)

    async def delete_pod(self, pod: Pod, reason: str) -> None:
        meta = pod.metadata
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": meta.uid} if meta.uid else {},
        }
        try:
            await self.client.delete(f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}", body)
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def set_extended_resource_claim_status(
        self, pod: Pod, status: PodExtendedResourceClaimStatus
    ) -> None:
        """The strategic-merge patch schedutil.PatchPodStatus makes from the old and
        the new status: only the new field. Straight to the API (not through the
        StatusWriter's queue): PreBind waits for the result."""
        meta = pod.metadata
        await self.client.patch(
            f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/status",
            {"status": {"extendedResourceClaimStatus": msgspec.to_builtins(status)}},
        )

    async def set_disruption_target(self, pod: Pod, reason: str, message: str) -> bool:
        for condition in pod.status.conditions:
            if (
                condition.type == "DisruptionTarget"
                and condition.status == "True"
                and condition.reason == reason
                and condition.message == message
            ):
                return True  # UpdatePodCondition would change nothing: no patch
        meta = pod.metadata
        condition_patch = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": rfc3339(),
        }
        try:
            await self.client.patch(
                f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/status",
                {"status": {"conditions": [condition_patch]}},
            )
        except ApiError as exc:
            if exc.status != 404:
                raise
            return False
        return True

    def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.events.record(pod, event_type, reason, message, pod.spec.scheduler_name)

    def set_unschedulable(self, pod: Pod, reason: str, message: str, nominated_node: str) -> None:
        self.statuses.set_unschedulable(pod, reason, message, nominated_node)
