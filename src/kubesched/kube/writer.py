"""Writes that tell users what happened, kept off the scheduling path.

Events and pod status updates go through bounded background queues with a rate
limit. Isomorphic events are aggregated into an events.k8s.io series (count and
lastObservedTime) instead of a new Event each time, and only the latest
PodScheduled condition of a pod is written.

"Isomorphic" is client-go's tools/events getKey (event_broadcaster.go), which
kube-scheduler's recorder uses: type, action, reason, reporting controller and
instance, and the regarding object reference, which carries the pod's
resourceVersion. The note is not part of the key: a later event with another
text for the same version of the pod only counts in the first one's series,
which keeps its note. A pod whose status was written since (a new
resourceVersion) gets a new Event.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec

from kubesched.api.objects import Pod
from kubesched.kube.client import ApiError, KubeClient

log = logging.getLogger("kubesched.writer")

SERIES_WINDOW = 6 * 60.0  # events.k8s.io: repeats within this window join a series
SERIES_FLUSH = 30.0  # how often a series' count is written back


def micro_time(ts: float | None = None) -> str:
    moment = datetime.fromtimestamp(time.time() if ts is None else ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(ts: float | None = None) -> str:
    moment = datetime.fromtimestamp(time.time() if ts is None else ts, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class TokenBucket:
    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.updated = time.monotonic()

    async def take(self) -> None:
        while True:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
            self.updated = now
            if self.tokens >= 1:
                self.tokens -= 1
                return
            await asyncio.sleep((1 - self.tokens) / self.rate)


# client-go tools/events (event_broadcaster.go): at most maxQueuedEvents wait to be
# written (the broadcaster drops the rest, DropIfChannelFull), and the series of an
# event is finished once it has not been seen for finishTime.
MAX_QUEUED_EVENTS = 1000
MAX_SERIES = 50_000
# Events written at once. One at a time, a POST of ~2 ms bounds the writer to ~500
# events/s, fewer than the binds of a busy scheduler (one Scheduled event each): the
# queue filled and events were dropped. client-go's broadcaster writes each event
# from a goroutine of its own; the client's in-flight limit bounds these as well.
EVENT_WRITERS = 16


@dataclass(slots=True)
class _Series:
    name: str
    namespace: str
    first_seen: float
    count: int = 1
    written_count: int = 1
    last_observed: float = 0.0


class Regarding(msgspec.Struct, frozen=True, array_like=True):
    """The event's `regarding` reference: only what the Event names of the pod. A
    queued event must not keep the whole Pod alive (the soak saw thousands of them)."""

    namespace: str
    name: str
    uid: str
    resource_version: str


class PendingEvent(msgspec.Struct, tag="event", array_like=True):
    """An event as queued, and as the scheduling process hands it to the API
    worker (kube/api_worker): a msgspec struct, so that it crosses the pipe as is."""

    regarding: Regarding
    event_type: str
    reason: str
    action: str
    message: str
    reporting_controller: str
    at: float


def pending_event(
    pod: Pod, event_type: str, reason: str, message: str, reporting_controller: str
) -> PendingEvent:
    """What record() queues of an event about POD: its note cut to the API's 1 KiB."""
    action = {"Scheduled": "Binding", "Preempted": "Preempting"}.get(reason, "Scheduling")
    meta = pod.metadata
    regarding = Regarding(meta.namespace, meta.name, meta.uid, meta.resource_version or "")
    return PendingEvent(
        regarding, event_type, reason, action, message[:1024], reporting_controller, time.time()
    )


def _isomorphic_key(event: PendingEvent) -> tuple[str, ...]:
    """client-go tools/events getKey: what makes two events one series. Not the note."""
    ref = event.regarding
    return (
        event.event_type,
        event.action,
        event.reason,
        event.reporting_controller,
        ref.namespace,
        ref.name,
        ref.uid,
        ref.resource_version,
    )


class EventWriter:
    def __init__(
        self,
        client: KubeClient,
        *,
        qps: float = 25.0,
        burst: int = 50,
        max_pending: int = MAX_QUEUED_EVENTS,
        writers: int = EVENT_WRITERS,
    ) -> None:
        self.client = client
        self.instance = f"{socket.gethostname()}"
        self.bucket = TokenBucket(qps, burst)
        self.queue: asyncio.Queue[PendingEvent] = asyncio.Queue(max_pending)
        self.series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self.writers = writers
        self.dropped = 0
        self.written = 0

    def record(
        self, pod: Pod, event_type: str, reason: str, message: str, reporting_controller: str
    ) -> None:
        self.enqueue(pending_event(pod, event_type, reason, message, reporting_controller))

    def enqueue(self, pending: PendingEvent) -> None:
        try:
            self.queue.put_nowait(pending)
        except asyncio.QueueFull:
            self.dropped += 1  # better lose an event than slow scheduling down

    async def run(self) -> None:
        loop = asyncio.get_event_loop()
        tasks = [loop.create_task(self._flush_series_forever())]
        tasks += [loop.create_task(self._write_forever()) for _ in range(self.writers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _write_forever(self) -> None:
        while True:
            event = await self.queue.get()
            try:
                await self._write(event)
            except ApiError as exc:
                if exc.status not in (404, 409):
                    log.warning(
                        "event for %s/%s not written: %s",
                        event.regarding.namespace,
                        event.regarding.name,
                        exc,
                    )
            except Exception as exc:
                log.warning("event not written: %s: %s", type(exc).__name__, exc)
            finally:
                self.queue.task_done()

    async def flush(self, timeout: float) -> int:
        """On shutdown: write the events still queued and the series' counts, for
        at most TIMEOUT seconds (while run() is still running); how many events
        were left unwritten. client-go's broadcaster, which kube-scheduler shuts
        down on its way out, also still hands its queued events to the sink."""
        deadline = time.monotonic() + timeout
        try:
            await asyncio.wait_for(self.queue.join(), timeout)
            await asyncio.wait_for(self.flush_series(), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            pass
        return self.queue.qsize()

    async def _write(self, event: PendingEvent) -> None:
        meta = event.regarding
        key = _isomorphic_key(event)
        series = self.series.get(key)
        if series is not None and event.at - series.first_seen < SERIES_WINDOW:
            series.count += 1
            series.last_observed = event.at
            return
        name = f"{meta.name}.{uuid.uuid4().hex[:16]}"
        # The series exists from now on, so that an isomorphic event handled by
        # another writer while this one is being posted joins it (not a second Event).
        self.series[key] = _Series(name, meta.namespace, event.at, last_observed=event.at)
        self.series.move_to_end(key)
        while len(self.series) > MAX_SERIES:
            self.series.popitem(last=False)
        await self.bucket.take()
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": meta.namespace},
            "eventTime": micro_time(event.at),
            "reportingController": event.reporting_controller,
            "reportingInstance": f"{event.reporting_controller}-{self.instance}",
            "action": event.action,
            "reason": event.reason,
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": meta.namespace,
                "name": meta.name,
                "uid": meta.uid,
                **({"resourceVersion": meta.resource_version} if meta.resource_version else {}),
            },
            "note": event.message,
            "type": event.event_type,
        }
        try:
            await self.client.create(
                f"/apis/events.k8s.io/v1/namespaces/{meta.namespace}/events",
                body,
                "k8s.io.api.events.v1.Event",
            )
        except BaseException:
            if self.series.get(key) is not None and self.series[key].name == name:
                del self.series[key]  # never written: the next such event starts again
            raise
        self.written += 1

    async def _flush_series_forever(self) -> None:
        while True:
            await asyncio.sleep(SERIES_FLUSH)
            await self.flush_series()

    async def flush_series(self) -> None:
        now = time.time()
        for key, series in list(self.series.items()):
            if series.count > series.written_count:
                await self.bucket.take()
                patch = {
                    "series": {
                        "count": series.count,
                        "lastObservedTime": micro_time(series.last_observed),
                    }
                }
                try:
                    await self.client.patch(
                        f"/apis/events.k8s.io/v1/namespaces/{series.namespace}/events/{series.name}",
                        patch,
                        "merge-patch",
                    )
                    series.written_count = series.count
                except ApiError as exc:
                    log.debug("event series %s not updated: %s", series.name, exc)
            if now - series.first_seen > SERIES_WINDOW and self.series.get(key) is series:
                del self.series[key]


class StatusUpdate(msgspec.Struct, tag="unschedulable", array_like=True):
    """A PodScheduled=False condition to write, as queued and as the scheduling
    process hands it to the API worker."""

    namespace: str
    name: str
    reason: str
    message: str
    nominated_node: str
    # The nominatedNodeName the API has (as of the first update not yet written).
    known_nominated: str = ""
    # The pod's copy already says exactly this (written only if an update is queued).
    already_written: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def status_update(pod: Pod, reason: str, message: str, nominated_node: str) -> StatusUpdate:
    """The update StatusWriter.set_unschedulable queues for POD."""
    already = any(
        condition.type == "PodScheduled"
        and condition.status == "False"
        and condition.reason == reason
        and condition.message == message
        for condition in pod.status.conditions
    )
    meta = pod.metadata
    known = pod.status.nominated_node_name
    return StatusUpdate(
        meta.namespace,
        meta.name,
        reason,
        message,
        nominated_node,
        known,
        already and known == nominated_node,
    )


class StatusWriter:
    """PodScheduled=False conditions: the latest per pod wins, written in the background."""

    def __init__(self, client: KubeClient, *, qps: float = 25.0, burst: int = 50) -> None:
        self.client = client
        self.bucket = TokenBucket(qps, burst)
        self.pending: OrderedDict[str, StatusUpdate] = OrderedDict()
        self._wake = asyncio.Event()
        self._writing = False
        self.written = 0

    def set_unschedulable(self, pod: Pod, reason: str, message: str, nominated_node: str) -> None:
        self.submit(status_update(pod, reason, message, nominated_node))

    def submit(self, update: StatusUpdate) -> None:
        key = update.key
        previous = self.pending.get(key)
        if previous is None and update.already_written:
            return  # already says exactly this: no write (as upstream)
        if previous is not None:
            update.known_nominated = previous.known_nominated
        self.pending[key] = update
        self.pending.move_to_end(key)
        self._wake.set()

    def forget(self, key: str) -> None:
        self.pending.pop(key, None)

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.pending:
                _, update = self.pending.popitem(last=False)
                self._writing = True
                try:
                    await self.bucket.take()
                    await self._write(update)
                except ApiError as exc:
                    if exc.status != 404:
                        log.warning(
                            "status of %s/%s not updated: %s",
                            update.namespace,
                            update.name,
                            exc,
                        )
                except Exception as exc:
                    log.warning("status not updated: %s: %s", type(exc).__name__, exc)
                finally:
                    self._writing = False

    async def flush(self, timeout: float) -> int:
        """On shutdown: the conditions still pending written, for at most TIMEOUT
        seconds (while run() is still running); how many were left unwritten."""
        deadline = time.monotonic() + timeout
        while (self.pending or self._writing) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return len(self.pending)

    async def _write(self, update: StatusUpdate) -> None:
        meta = update
        status: dict[str, object] = {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": update.reason,
                    "message": update.message,
                    "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(),
                }
            ],
        }
        if update.nominated_node != update.known_nominated:
            # Set, or cleared (null deletes the field in a strategic merge patch).
            status["nominatedNodeName"] = update.nominated_node or None
        await self.client.patch(
            f"/api/v1/namespaces/{meta.namespace}/pods/{meta.name}/status", {"status": status}
        )
        self.written += 1
