"""The Kubernetes API as the scheduler's ClusterClient: bind, evict, report."""

from __future__ import annotations

import msgspec

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.framework.client import BindConflict
from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.fence import Fence
from kubesched.kube.writer import EventWriter, StatusWriter, rfc3339

BINDING = "k8s.io.api.core.v1.Binding"


async def post_binding(
    client: KubeClient, namespace: str, name: str, uid: str, node_name: str, fence: Fence | None
) -> None:
    """The pods/binding request (DefaultBinder's Bind upstream), in the scheduling
    process or in its API worker. With a FENCE, checked once the request has its
    slot of the client's in-flight limit, right before it is sent."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
    # The client's AdaptiveLimiter bounds the binds in flight.
    try:
        if fence is None:
            await client.create(path, body, BINDING)
        else:
            await client.create(path, body, BINDING, before_send=fence.check)
    except ApiError as exc:
        # 404: the pod is gone; 409: already bound (or a new pod of that name).
        # Neither gets better by trying again.
        if exc.status in (404, 409):
            raise BindConflict(str(exc)) from exc
        raise


class PodWrites:
    """The writes whose callers wait for them (preemption, DynamicResources'
    PreBind): straight to the API through the scheduling process's own client."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

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


class KubeCluster(PodWrites):
    """Binds and user-facing reports from the scheduling process itself
    (`run --no-api-worker`)."""

    def __init__(
        self,
        client: KubeClient,
        events: EventWriter,
        statuses: StatusWriter,
        fence: Fence | None = None,
    ) -> None:
        super().__init__(client)
        self.events = events
        self.statuses = statuses
        self.fence = fence
        self.bound = 0

    async def bind(self, pod: Pod, node_name: str) -> None:
        meta = pod.metadata
        await post_binding(self.client, meta.namespace, meta.name, meta.uid, node_name, self.fence)
        self.bound += 1
        self.statuses.forget(meta.key)

    def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.events.record(pod, event_type, reason, message, pod.spec.scheduler_name)

    def set_unschedulable(self, pod: Pod, reason: str, message: str, nominated_node: str) -> None:
        self.statuses.set_unschedulable(pod, reason, message, nominated_node)
