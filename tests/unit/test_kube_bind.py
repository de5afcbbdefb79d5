"""KubeCluster.bind: one request per bind, no status write on success (as
kube-scheduler: the Binding alone; the Scheduled event goes to the EventWriter),
and a PodScheduled=False write still queued for the pod is dropped."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from kubesched.api.objects import Pod
from kubesched.kube.cluster import KubeCluster
from kubesched.kube.writer import EventWriter, StatusWriter


class _Client:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    async def post(self, path: str, body: Any) -> bytes:
        self.requests.append(("POST", path))
        return b"{}"

    async def create(self, path: str, body: Any, message: str, before_send: Any = None) -> bytes:
        """KubeClient.create in JSON: a POST."""
        return await self.post(path, body)

    async def patch(self, path: str, body: Any, patch_type: str = "") -> bytes:
        self.requests.append(("PATCH", path))
        return b"{}"


def _pod() -> Pod:
    return msgspec.convert(
        {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"containers": []}},
        Pod,
    )


def test_a_bind_is_one_request_and_drops_the_pods_queued_status_write() -> None:
    client = _Client()
    statuses = StatusWriter(client)  # type: ignore[arg-type]
    cluster = KubeCluster(client, EventWriter(client), statuses)  # type: ignore[arg-type]
    pod = _pod()
    # An earlier attempt failed; its condition is not written yet.
    statuses.set_unschedulable(pod, "Unschedulable", "0/1 nodes are available", "")
    assert statuses.pending

    asyncio.run(cluster.bind(pod, "n1"))
    assert client.requests == [("POST", "/api/v1/namespaces/ns/pods/p/binding")]
    assert not statuses.pending
    assert cluster.bound == 1
