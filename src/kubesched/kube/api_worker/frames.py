"""What crosses the socket between `kubesched run` and its API worker.

Each frame is a 4-byte big-endian length and a msgpack-encoded tagged struct.
Events and PodScheduled conditions travel as the writers queue them
(writer.PendingEvent, writer.StatusUpdate), so nothing is converted twice.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Literal, TypeVar

import msgspec

from kubesched.kube.writer import PendingEvent, StatusUpdate

HEADER = struct.Struct("!I")
# No frame comes near this: a longer length means the stream is corrupt.
MAX_FRAME = 16 * 1024 * 1024


class Start(msgspec.Struct, tag="start", array_like=True):
    """The first frame: how to reach the API server, and the writers' rate limits."""

    kubeconfig: str | None
    context: str | None
    events_qps: float
    events_burst: int
    statuses_qps: float
    statuses_burst: int
    log_format: str
    verbosity: int
    # Binds are allowed until this time.monotonic() (kube/fence.py).
    bind_until: float
    # clientConnection.contentType: the writes' wire format (JSON or protobuf).
    content_type: str = "application/json"


class Bind(msgspec.Struct, tag="bind", array_like=True):
    id: int
    namespace: str
    name: str
    uid: str
    node: str


class Lease(msgspec.Struct, tag="lease", array_like=True):
    """The fence moves: binds are allowed until UNTIL (time.monotonic())."""

    until: float


class Flush(msgspec.Struct, tag="flush", array_like=True):
    """Write what is queued, for at most TIMEOUT seconds, and answer Flushed."""

    timeout: float


ToWorker = Start | Bind | PendingEvent | StatusUpdate | Lease | Flush


class Ready(msgspec.Struct, tag="ready", array_like=True):
    """The worker has its connection and takes frames."""


BindOutcome = Literal["bound", "conflict", "fenced", "error"]


class Bound(msgspec.Struct, tag="bound", array_like=True):
    id: int
    outcome: BindOutcome
    message: str = ""
    # The worker's in-flight limit as it answered (kube/inflight.py): the
    # scheduling loop holds back while two rounds of binds are in the worker.
    limit: int = 0


class Flushed(msgspec.Struct, tag="flushed", array_like=True):
    events_left: int
    statuses_left: int


FromWorker = Ready | Bound | Flushed

T = TypeVar("T")


class FrameError(Exception):
    """The stream does not hold frames (a length past MAX_FRAME, or bad msgpack)."""


def encode(encoder: msgspec.msgpack.Encoder, message: object) -> bytes:
    body = encoder.encode(message)
    return HEADER.pack(len(body)) + body


async def read_frame(reader: asyncio.StreamReader, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
    """The next frame, or None once the other side has closed the stream."""
    try:
        header = await reader.readexactly(HEADER.size)
        (length,) = HEADER.unpack(header)
        if length > MAX_FRAME:
            raise FrameError(f"frame of {length} bytes (at most {MAX_FRAME})")
        body = await reader.readexactly(length)
    except (asyncio.IncompleteReadError, ConnectionError):
        # Closed, or reset (the other side died with bytes unread): the end.
        return None
    try:
        return decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise FrameError(str(exc)) from exc
