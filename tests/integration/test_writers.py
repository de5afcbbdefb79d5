"""The event and status writers of `kubesched run` against a real kube-apiserver:
isomorphic events (client-go's key: the same pod version, reason, controller; not
the note) become one events.k8s.io Event with a series, and the latest
PodScheduled condition of a pod wins."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from kubesched.api.objects import Pod
from kubesched.kube.client import KubeClient
from kubesched.kube.config import load_connection
from kubesched.kube.writer import EventWriter, StatusWriter
from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane

pytestmark = pytest.mark.integration


async def _client(cp: ControlPlane) -> KubeClient:
    return KubeClient(await load_connection(str(cp.kubeconfig), None))


def _pod(created: dict[str, object]) -> Pod:
    return msgspec.convert(created, Pod)


def test_repeated_event_becomes_one_event_with_a_series(
    control_plane: ControlPlane, api: AdminApi, namespace: str
) -> None:
    pod = _pod(api.create_pod(namespace, "lonely", cpu="64"))
    newer = msgspec.structs.replace(
        pod, metadata=msgspec.structs.replace(pod.metadata, resource_version="999999999")
    )

    async def record() -> None:
        client = await _client(control_plane)
        writer = EventWriter(client)
        runner = asyncio.ensure_future(writer.run())
        try:
            for _ in range(3):
                writer.record(pod, "Warning", "FailedScheduling", "0/1 nodes fit.", "kubesched")
            # Another text for the same version of the pod joins the series too.
            writer.record(pod, "Warning", "FailedScheduling", "0/2 nodes fit.", "kubesched")
            # A new version of the pod (its status was written): a new Event.
            writer.record(newer, "Warning", "FailedScheduling", "0/3 nodes fit.", "kubesched")
            while writer.queue.qsize():
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)  # the last one is being written
            await writer.flush_series()
        finally:
            runner.cancel()
            await client.aclose()

    asyncio.run(record())
    events = api.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")["items"]
    by_note = {e["note"]: e for e in events}
    assert sorted(by_note) == ["0/1 nodes fit.", "0/3 nodes fit."]  # a new pod version only
    repeated = by_note["0/1 nodes fit."]
    assert repeated["series"]["count"] == 4
    assert repeated["regarding"]["name"] == "lonely"
    assert repeated["reportingController"] == "kubesched"
    assert repeated["action"] == "Scheduling"
    assert "series" not in by_note["0/3 nodes fit."]


def test_latest_unschedulable_status_wins_and_nomination_is_written(
    control_plane: ControlPlane, api: AdminApi, namespace: str
) -> None:
    pod = _pod(api.create_pod(namespace, "waiting", cpu="64"))

    async def write() -> int:
        client = await _client(control_plane)
        writer = StatusWriter(client)
        runner = asyncio.ensure_future(writer.run())
        try:
            writer.set_unschedulable(pod, "Unschedulable", "first", "")
            writer.set_unschedulable(pod, "Unschedulable", "second", "some-node")
            while writer.pending or writer.written == 0:
                await asyncio.sleep(0.05)
            return writer.written
        finally:
            runner.cancel()
            await client.aclose()

    assert asyncio.run(write()) == 1  # the first update never reached the API
    status = api.get_pod(namespace, "waiting")["status"]
    condition = next(c for c in status["conditions"] if c["type"] == "PodScheduled")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        "second",
    )
    assert status["nominatedNodeName"] == "some-node"
