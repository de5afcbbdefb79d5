"""The scheduling process's side of the API worker: send, supervise, restart.

ApiWorker starts the worker, sends it frames (batched: one write per turn of the
event loop), and resolves each bind's future with the worker's answer. If the
worker dies, every bind it held fails at once with WorkerDied (the binding cycle
then forgets the assumed pod and requeues it, as for any failed bind; a bind the
API server had taken meets 409 on its retry and is not repeated), and a new worker
is started with the frames sent meanwhile. A worker that keeps dying
(MAX_RESTARTS in RESTART_WINDOW seconds) stops the scheduler with a clear error.

WorkerCluster is the ClusterClient of `run` with a worker: binds, events and
PodScheduled conditions go to the worker; preemption's and DRA's rarer writes stay
on the scheduling process's own client, where their callers wait for them anyway.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import math
import time
from collections.abc import Callable

import msgspec

from kubesched.api.objects import Pod
from kubesched.framework.client import BindConflict
from kubesched.kube.api_worker.frames import (
    Bind,
    Bound,
    Flush,
    Flushed,
    FrameError,
    FromWorker,
    Lease,
    Ready,
    Start,
    encode,
    read_frame,
)
from kubesched.kube.api_worker.spawn import SpawnedWorker, spawn_worker
from kubesched.kube.client import KubeClient
from kubesched.kube.cluster import PodWrites
from kubesched.kube.fence import Fenced
from kubesched.kube.inflight import INITIAL_LIMIT, RoomWaiters
from kubesched.kube.writer import pending_event, status_update
from kubesched.logs import kv

log = logging.getLogger("kubesched.api_worker")

# A worker that dies this often within the window is not restarted again.
MAX_RESTARTS = 5
RESTART_WINDOW = 60.0
# How long a starting worker may take to load its connection and answer Ready.
START_TIMEOUT = 30.0


class WorkerDied(Exception):
    """The API worker died with this bind in flight: its outcome is unknown."""


class WorkerFailed(Exception):
    """The API worker could not be started, or died too often."""


class ApiWorker:
    def __init__(
        self,
        start: Start,
        on_fatal: Callable[[str], None],
        spawned: SpawnedWorker | None = None,
    ) -> None:
        """SPAWNED: a worker process started ahead (spawn.py), which the first
        start() takes rather than start one."""
        self.start_frame = start
        self.on_fatal = on_fatal
        self.spawned = spawned
        self.encoder = msgspec.msgpack.Encoder()
        self.decoder = msgspec.msgpack.Decoder(FromWorker)
        self.proc: asyncio.subprocess.Process | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.pending: dict[int, asyncio.Future[Bound]] = {}
        self.ids = itertools.count(1)
        # Frames not yet written: kept while the worker restarts, written at once
        # (one write per turn of the event loop) while it runs.
        self.buffer: list[bytes] = []
        self.flush_scheduled = False
        self.flushed: asyncio.Future[Flushed] | None = None
        self.deaths: collections.deque[float] = collections.deque()
        self.closing = False
        self.restarts = 0
        self.reader_task: asyncio.Task[None] | None = None
        self.restarting: asyncio.Future[None] | None = None
        # The worker's in-flight limit, as its last answer gave it.
        self.limit = INITIAL_LIMIT
        self.room = RoomWaiters(self.has_room)

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    async def start(self) -> None:
        """Start the worker (or take the one started ahead) and wait until it is
        ready; WorkerFailed if it is not."""
        spawned, self.spawned = self.spawned, None
        if spawned is None:
            spawned = await spawn_worker()
        spawned.taken = True
        self.proc, reader, self.writer = spawned.proc, spawned.reader, spawned.writer
        self.writer.write(encode(self.encoder, self.start_frame))
        try:
            ready = await asyncio.wait_for(read_frame(reader, self.decoder), START_TIMEOUT)
        except (TimeoutError, FrameError) as exc:
            ready = None
            log.error("api worker did not start: %s", exc or type(exc).__name__)
        if not isinstance(ready, Ready):
            self.proc.kill()
            code = await self.proc.wait()
            raise WorkerFailed(f"the API worker did not start (exit code {code})")
        log.info("API worker started", extra=kv(pid=self.proc.pid))
        self.reader_task = asyncio.ensure_future(self._read(reader, self.proc))
        self._schedule_flush()

    async def _read(self, reader: asyncio.StreamReader, proc: asyncio.subprocess.Process) -> None:
        try:
            while (message := await read_frame(reader, self.decoder)) is not None:
                if isinstance(message, Bound):
                    self.limit = message.limit or self.limit
                    future = self.pending.pop(message.id, None)
                    if future is not None and not future.done():
                        future.set_result(message)
                    self.room.wake()
                elif (
                    isinstance(message, Flushed)
                    and self.flushed is not None
                    and not self.flushed.done()
                ):
                    self.flushed.set_result(message)
        except FrameError as exc:
            log.error("api worker sent a bad frame: %s", exc)
            proc.kill()
        except Exception:  # whatever it is, the worker is done for: restart it
            log.exception("reading from the API worker failed")
            proc.kill()
        code = await proc.wait()
        self._died(code)

    def _died(self, code: int) -> None:
        self.writer = None
        lost = list(self.pending.values())
        self.pending.clear()
        for future in lost:
            if not future.done():
                future.set_exception(WorkerDied("the API worker died with this bind in flight"))
        self.room.wake()
        if self.flushed is not None and not self.flushed.done():
            self.flushed.set_result(Flushed(-1, -1))
        if self.closing:
            return
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        now = time.monotonic()
        self.deaths.append(now)
        while self.deaths and now - self.deaths[0] > RESTART_WINDOW:
            self.deaths.popleft()
        if len(self.deaths) > MAX_RESTARTS:
            self.on_fatal(
                f"the API worker died {len(self.deaths)} times in {RESTART_WINDOW:g}s "
                f"(last: {how}); stopping"
            )
            return
        log.error("the API worker died (%s) with %d binds in flight; restarting it", how, len(lost))
        self.restarting = asyncio.ensure_future(self._restart())

    async def _restart(self) -> None:
        try:
            await self.start()
            self.restarts += 1
        except WorkerFailed as exc:
            self.on_fatal(str(exc))

    def has_room(self) -> bool:
        """Fewer binds are in the worker than two rounds of its in-flight limit (as
        AdaptiveLimiter.has_room: one round in flight, the next one queued)."""
        return len(self.pending) < 2 * self.limit

    async def wait_for_room(self) -> None:
        """Until has_room(): the scheduling loop waits here rather than assume pods
        whose binds could only queue (AdaptiveLimiter.wait_for_room)."""
        await self.room.wait()

    def send(self, message: object) -> None:
        self.buffer.append(encode(self.encoder, message))
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self.flush_scheduled and self.writer is not None and self.buffer:
            self.flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self.flush_scheduled = False
        if self.writer is None or not self.buffer:
            return  # restarting: start() writes them
        data = b"".join(self.buffer)
        self.buffer.clear()
        self.writer.write(data)

    def fence(self, until: float) -> None:
        """Binds are allowed until UNTIL (time.monotonic()) from now on."""
        self.start_frame.bind_until = until
        self.send(Lease(until))

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """Bind through the worker: BindConflict, Fenced, WorkerDied or an error
        as it answered."""
        request_id = next(self.ids)
        future: asyncio.Future[Bound] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        self.send(Bind(request_id, namespace, name, uid, node))
        try:
            answer = await future
        finally:
            self.pending.pop(request_id, None)
        if answer.outcome == "bound":
            return
        if answer.outcome == "conflict":
            raise BindConflict(answer.message)
        if answer.outcome == "fenced":
            raise Fenced(answer.message)
        raise RuntimeError(answer.message)

    async def flush(self, timeout: float) -> tuple[int, int]:
        """The worker writes what it has queued, for at most TIMEOUT seconds: the
        events and conditions left unwritten (-1, -1 if it is gone)."""
        if self.writer is None:
            return (-1, -1)
        self.flushed = asyncio.get_running_loop().create_future()
        self.send(Flush(timeout))
        try:
            answer = await asyncio.wait_for(self.flushed, timeout + 1.0)
        except TimeoutError:
            return (-1, -1)
        return (answer.events_left, answer.statuses_left)

    def kill(self) -> None:
        """At once (the lease is lost): no request of the worker's goes out after this."""
        self.closing = True
        self.start_frame.bind_until = -math.inf
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()

    async def stop(self) -> None:
        """Close the socket: the worker cancels what it has left and exits."""
        self.closing = True
        if self.writer is not None:
            self._flush()
            self.writer.close()
        if self.proc is not None:
            try:
                await asyncio.wait_for(self.proc.wait(), 10.0)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self.reader_task is not None:
            await asyncio.gather(self.reader_task, return_exceptions=True)


class WorkerCluster(PodWrites):
    """The ClusterClient of `run` with an API worker (see the module's text)."""

    def __init__(self, worker: ApiWorker, client: KubeClient) -> None:
        super().__init__(client)
        self.worker = worker
        self.bound = 0

    async def bind(self, pod: Pod, node_name: str) -> None:
        meta = pod.metadata
        await self.worker.bind(meta.namespace, meta.name, meta.uid, node_name)
        self.bound += 1

    def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.worker.send(pending_event(pod, event_type, reason, message, pod.spec.scheduler_name))

    def set_unschedulable(self, pod: Pod, reason: str, message: str, nominated_node: str) -> None:
        self.worker.send(status_update(pod, reason, message, nominated_node))
