"""Starting the API worker's process (supervisor.py talks to it).

Light on purpose (the standard library only): `kubesched run` starts its worker
before it imports the scheduler (cli/main.py), so that the worker's interpreter
starts and imports on another core meanwhile, most of its start-up; it then waits
for its first frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass
class SpawnedWorker:
    """A worker process and our end of its socket; it has been sent nothing yet."""

    proc: asyncio.subprocess.Process
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    taken: bool = False  # an ApiWorker talks to it now (its Start frame is sent)


async def spawn_worker() -> SpawnedWorker:
    """`python -m kubesched.kube.api_worker FD PARENT_PID` on one end of a socket pair."""
    parent, child = socket.socketpair()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kubesched.kube.api_worker",
            str(child.fileno()),
            str(os.getpid()),
            stdin=asyncio.subprocess.DEVNULL,
            pass_fds=(child.fileno(),),
        )
    except BaseException:
        parent.close()
        raise
    finally:
        child.close()
    reader, writer = await asyncio.open_connection(sock=parent)
    return SpawnedWorker(proc, reader, writer)


async def discard_worker(spawned: SpawnedWorker) -> None:
    """Kill a worker started ahead that no ApiWorker took (`run` failed first)."""
    if spawned.taken:
        return
    spawned.writer.close()
    if spawned.proc.returncode is None:
        spawned.proc.kill()
    await spawned.proc.wait()


@contextlib.contextmanager
def worker_started_ahead(loop: asyncio.Runner, wanted: bool) -> Iterator[SpawnedWorker | None]:
    """A worker started now on LOOP if WANTED (else None), for RunOptions; killed on
    the way out unless an ApiWorker took it."""
    spawned = loop.run(spawn_worker()) if wanted else None
    try:
        yield spawned
    finally:
        if spawned is not None:
            loop.run(discard_worker(spawned))
