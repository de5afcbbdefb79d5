"""The event writer aggregates events as client-go's tools/events recorder that
kube-scheduler uses: isomorphic events (same type, action, reason, controller and
regarding reference, which carries the pod's resourceVersion; not the note) make
one Event with a series."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec

from kubesched.api.objects import Pod
from kubesched.kube.writer import EventWriter, StatusWriter

T = TypeVar("T")


class _Client:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []

    async def post(self, path: str, body: Any) -> bytes:
        self.posts.append(body)
        return b"{}"

    async def create(self, path: str, body: Any, message: str, before_send: Any = None) -> bytes:
        """KubeClient.create in JSON: a POST."""
        return await self.post(path, body)


def _pod(resource_version: str) -> Pod:
    return msgspec.convert(
        {
            "metadata": {
                "name": "p07",
                "namespace": "ns",
                "uid": "u1",
                "resourceVersion": resource_version,
            },
            "spec": {"containers": []},
        },
        Pod,
    )


def _written(calls: list[tuple[Pod, str, str]]) -> tuple[EventWriter, list[dict[str, Any]]]:
    client = _Client()
    writer = EventWriter(client)  # type: ignore[arg-type]

    async def run() -> None:
        for pod, reason, note in calls:
            writer.record(pod, "Warning", reason, note, "differential")
        while not writer.queue.empty():
            await writer._write(writer.queue.get_nowait())

    asyncio.run(run())
    return writer, client.posts


def test_another_note_for_the_same_pod_version_joins_the_first_events_series() -> None:
    # seed3-032: kube-scheduler tried p07 again with the pod unchanged (the status
    # already said the same) and got another text; client-go counted it in the
    # series of the Event it had written for that version, whose note stays.
    pod = _pod("250")
    writer, posts = _written(
        [
            (pod, "FailedScheduling", "0/4 nodes: Insufficient cpu."),
            (pod, "FailedScheduling", "0/4 nodes: No preemption victims found."),
        ]
    )
    assert [p["note"] for p in posts] == ["0/4 nodes: Insufficient cpu."]
    assert posts[0]["regarding"]["resourceVersion"] == "250"
    [series] = writer.series.values()
    assert series.count == 2


def test_a_new_pod_version_or_another_reason_gets_its_own_event() -> None:
    _, posts = _written(
        [
            (_pod("250"), "FailedScheduling", "0/4 nodes: Insufficient cpu."),
            (_pod("251"), "FailedScheduling", "0/4 nodes: Insufficient cpu."),
            (_pod("251"), "Scheduled", "Successfully assigned ns/p07 to n1"),
        ]
    )
    assert [(p["reason"], p["regarding"]["resourceVersion"]) for p in posts] == [
        ("FailedScheduling", "250"),
        ("FailedScheduling", "251"),
        ("Scheduled", "251"),
    ]


def test_queued_events_hold_no_pod_and_the_queue_holds_upstreams_1000() -> None:
    """The soak (docs/develop/reliability.md) saw thousands of whole Pods kept alive by
    queued events: a queued event keeps only its `regarding` reference, and at most
    maxQueuedEvents (1,000, client-go's events broadcaster) wait; the rest are
    dropped, counted, rather than held."""
    import gc

    writer = EventWriter(_Client())  # type: ignore[arg-type]
    pods = [_pod(str(i)) for i in range(1_500)]
    for pod in pods:
        writer.record(pod, "Normal", "Scheduled", "bound", "kubesched")
    assert writer.queue.qsize() == 1_000 and writer.dropped == 500
    queued = writer.queue.get_nowait()
    assert not any(isinstance(r, Pod) for r in gc.get_referents(queued))
    assert (queued.regarding.name, queued.regarding.resource_version) == ("p07", "0")


class _SlowClient(_Client):
    """Each POST takes a while; records how many were in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0

    async def post(self, path: str, body: Any) -> bytes:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        return await super().post(path, body)


def _named(name: str, resource_version: str = "1") -> Pod:
    pod = _pod(resource_version)
    return msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, name=name))


def _record(writer: EventWriter, scheduled: int, failed: int = 0) -> None:
    """Scheduled events for pods p0, p1, ..., then FAILED isomorphic FailedScheduling
    events for the pod "again" (one Event and its series)."""
    for i in range(scheduled):
        writer.record(_named(f"p{i}"), "Normal", "Scheduled", f"bound p{i}", "kubesched")
    for _ in range(failed):
        writer.record(_named("again"), "Warning", "FailedScheduling", "0/1 fit", "kubesched")


def _while_running(writer: EventWriter | StatusWriter, body: Callable[[], Awaitable[T]]) -> T:
    """BODY's result, awaited while the writer's run() runs."""

    async def run() -> T:
        task = asyncio.ensure_future(writer.run())
        try:
            return await body()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    return asyncio.run(run())


def test_events_are_written_by_several_writers_and_isomorphic_ones_still_join_a_series() -> None:
    """One writer at a time bounded the events to one POST's latency each (the
    queue filled at a busy scheduler's bind rate and events were dropped): several
    write at once, and an event isomorphic to one being written still joins its
    series rather than making a second Event."""
    client = _SlowClient()
    writer = EventWriter(client, writers=8)  # type: ignore[arg-type]

    async def body() -> None:
        _record(writer, 40, 3)
        while writer.queue.qsize() or client.in_flight:
            await asyncio.sleep(0.01)

    _while_running(writer, body)
    assert client.most_in_flight > 1
    assert len(client.posts) == 41 and writer.dropped == 0
    assert sorted(p["regarding"]["name"] for p in client.posts) == sorted(
        [f"p{i}" for i in range(40)] + ["again"]
    )
    [series] = [s for s in writer.series.values() if s.name.startswith("again.")]
    assert series.count == 3


class _PatchingClient(_SlowClient):
    def __init__(self) -> None:
        super().__init__()
        self.patches: list[tuple[str, Any]] = []

    async def patch(self, path: str, body: Any, kind: str = "strategic") -> bytes:
        await asyncio.sleep(0.01)
        self.patches.append((path, body))
        return b"{}"


def test_flush_writes_the_queued_events_and_series_before_a_stop() -> None:
    """A stopping scheduler wrote its last binds' Scheduled events only if the
    writers happened to get to them first: flush writes what is queued, and the
    series counts, while run() still runs."""
    client = _PatchingClient()
    writer = EventWriter(client, writers=4)  # type: ignore[arg-type]

    async def body() -> int:
        _record(writer, 30, 2)
        return await writer.flush(5.0)

    assert _while_running(writer, body) == 0
    assert len(client.posts) == 31
    # the second "again" joined the first one's series: its count is written too
    assert [body["series"]["count"] for _, body in client.patches] == [2]


def test_flush_gives_up_at_its_timeout_and_says_how_many_are_left() -> None:
    client = _SlowClient()
    writer = EventWriter(client, writers=1)  # type: ignore[arg-type]

    async def body() -> int:
        _record(writer, 50)  # 10 ms each, one at a time: 0.5 s
        return await writer.flush(0.1)

    left = _while_running(writer, body)
    assert 0 < left < 50
    assert len(client.posts) + left + 1 >= 50  # at most one was being written


def test_the_status_writer_flushes_its_pending_conditions() -> None:
    client = _PatchingClient()
    writer = StatusWriter(client)  # type: ignore[arg-type]

    async def body() -> int:
        for i in range(5):
            writer.set_unschedulable(_named(f"p{i}"), "Unschedulable", "0/1 fit", "")
        return await writer.flush(5.0)

    assert _while_running(writer, body) == 0
    assert sorted(path for path, _ in client.patches) == [
        f"/api/v1/namespaces/ns/pods/p{i}/status" for i in range(5)
    ]
