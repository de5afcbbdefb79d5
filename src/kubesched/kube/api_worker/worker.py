"""The API worker process: binds, events and PodScheduled conditions over HTTP.

`python -m kubesched.kube.api_worker FD PARENT_PID` talks frames (frames.py) on the
socket FD. It dies with its parent (PR_SET_PDEATHSIG on Linux, and the socket's
end in any case), so that a killed scheduler leaves no binder behind it.
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Coroutine
from typing import Any

import msgspec

from kubesched.framework.client import BindConflict
from kubesched.kube.api_worker.frames import (
    Bind,
    BindOutcome,
    Bound,
    Flush,
    Flushed,
    FrameError,
    Lease,
    Ready,
    Start,
    ToWorker,
    encode,
    read_frame,
)
from kubesched.kube.client import KubeClient
from kubesched.kube.cluster import post_binding
from kubesched.kube.config import load_connection
from kubesched.kube.fence import Fence, Fenced
from kubesched.kube.writer import EventWriter, PendingEvent, StatusUpdate, StatusWriter
from kubesched.logs import configure_logging

log = logging.getLogger("kubesched.api_worker")

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG, Linux). A parent that
    died before the call is caught by the pid check after it."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


class Worker:
    """What one worker does with the frames of one connection."""

    def __init__(self, start: Start, client: KubeClient, out: asyncio.StreamWriter) -> None:
        self.client = client
        self.out = out
        self.encoder = msgspec.msgpack.Encoder()
        self.fence = Fence(start.bind_until)
        self.events = EventWriter(client, qps=start.events_qps, burst=start.events_burst)
        self.statuses = StatusWriter(client, qps=start.statuses_qps, burst=start.statuses_burst)
        self.tasks: set[asyncio.Task[None]] = set()

    def send(self, message: object) -> None:
        self.out.write(encode(self.encoder, message))

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def handle(self, message: ToWorker) -> None:
        if isinstance(message, Bind):
            self.spawn(self.bind(message))
        elif isinstance(message, PendingEvent):
            self.events.enqueue(message)
        elif isinstance(message, StatusUpdate):
            self.statuses.submit(message)
        elif isinstance(message, Lease):
            self.fence.until = message.until
        elif isinstance(message, Flush):
            self.spawn(self.flush(message.timeout))
        else:
            log.error("unexpected frame %s", type(message).__name__)

    async def bind(self, request: Bind) -> None:
        try:
            await post_binding(
                self.client,
                request.namespace,
                request.name,
                request.uid,
                request.node,
                self.fence,
            )
        except BindConflict as exc:
            self.answer(request, "conflict", str(exc))
        except Fenced as exc:
            self.answer(request, "fenced", str(exc))
        except Exception as exc:  # the scheduler decides what a failed bind means
            self.answer(request, "error", f"{type(exc).__name__}: {exc}")
        else:
            self.statuses.forget(f"{request.namespace}/{request.name}")
            self.answer(request, "bound", "")

    def answer(self, request: Bind, outcome: BindOutcome, message: str) -> None:
        self.send(Bound(request.id, outcome, message, self.client.limiter.limit))

    async def flush(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        events_left = await self.events.flush(timeout)
        statuses_left = await self.statuses.flush(max(0.0, deadline - time.monotonic()))
        self.send(Flushed(events_left, statuses_left))
        await self.out.drain()


async def serve(fd: int) -> int:
    """Take frames on FD until the scheduler closes it."""
    reader, out = await asyncio.open_connection(sock=socket.socket(fileno=fd))
    decoder = msgspec.msgpack.Decoder(ToWorker)
    start = await read_frame(reader, decoder)
    if start is None:
        return 0  # started ahead, and the scheduler stopped before it needed a worker
    if not isinstance(start, Start):
        log.error("api worker: the first frame must be start, got %r", start)
        return 2
    configure_logging("json" if start.log_format == "json" else "text", start.verbosity)
    client = KubeClient(
        await load_connection(start.kubeconfig, start.context), content_type=start.content_type
    )
    worker = Worker(start, client, out)
    worker.spawn(worker.events.run())
    worker.spawn(worker.statuses.run())
    worker.send(Ready())
    try:
        while (message := await read_frame(reader, decoder)) is not None:
            worker.handle(message)
    except FrameError as exc:
        log.error("api worker: %s", exc)
        return 2
    finally:
        # The scheduler is gone or done: nothing more is sent on its behalf.
        worker.fence.close()
        for task in list(worker.tasks):
            task.cancel()
        await asyncio.gather(*worker.tasks, return_exceptions=True)
        await client.aclose()
    return 0


def main(argv: list[str]) -> int:
    fd, parent = int(argv[0]), int(argv[1])
    die_with_parent(parent)
    # SIGINT (a terminal's Ctrl-C) and SIGTERM (to a process group) are for the
    # scheduler: it stops the worker through the socket once its queued writes are
    # flushed, and the worker dies with it if it dies first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return asyncio.run(serve(fd))
