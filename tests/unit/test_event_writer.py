"""The event writer aggregates events as client-go's tools/events recorder that
kube-scheduler uses: isomorphic events (same type, action, reason, controller and
regarding reference, which carries the pod's resourceVersion; not the note) make
one Event with a series."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from kubesched.api.objects import Pod
from kubesched.kube.writer import EventWriter


class _Client:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []

    async def post(self, path: str, body: Any) -> bytes:
        self.posts.append(body)
        return b"{}"


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
    """The soak (docs/reliability.md) saw thousands of whole Pods kept alive by
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
