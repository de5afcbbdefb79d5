"""The API worker's supervision and fencing, with a real worker process.

The worker here has a kubeconfig whose server listens nowhere: no API is mocked,
and a bind that reaches the network fails with a connection error ("error"). So a
"fenced" answer proves the fence stopped the bind before it was sent. Binding
against a real kube-apiserver is tested in tests/integration/test_api_worker.py.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import socket
import sys
import time
from pathlib import Path

import msgspec
import pytest

from kubesched.framework.client import BindConflict
from kubesched.kube.api_worker import supervisor
from kubesched.kube.api_worker.frames import (
    MAX_FRAME,
    Bind,
    Bound,
    FrameError,
    FromWorker,
    Lease,
    Start,
    ToWorker,
    encode,
    read_frame,
)
from kubesched.kube.api_worker.spawn import spawn_worker, worker_started_ahead
from kubesched.kube.api_worker.supervisor import ApiWorker, WorkerDied
from kubesched.kube.cpu_budget import API_WORKER, SCHEDULING_CYCLE, THREAD_REST, CpuBudget
from kubesched.kube.fence import Fence, Fenced
from kubesched.kube.writer import PendingEvent, Regarding, StatusUpdate


def _unreachable_kubeconfig(tmp_path: Path) -> str:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\n"
        "users:\n- name: u\n  user:\n    token: t\n"
        "contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n"
    )
    return str(path)


def _start(kubeconfig: str, bind_until: float = math.inf) -> Start:
    return Start(kubeconfig, None, 10.0, 10, 10.0, 10, "text", 0, bind_until)


def test_frames_round_trip_every_kind() -> None:
    encoder = msgspec.msgpack.Encoder()
    sent: list[ToWorker] = [
        _start("/k", -math.inf),
        Bind(7, "ns", "p", "uid", "n1"),
        PendingEvent(
            Regarding("ns", "p", "u", "3"), "Normal", "Scheduled", "Binding", "m", "s", 1.5
        ),
        StatusUpdate("ns", "p", "Unschedulable", "0/3 nodes", "n2", "", True),
        Lease(12.5),
    ]

    async def read_all() -> list[ToWorker]:
        reader = asyncio.StreamReader()
        for message in sent:
            reader.feed_data(encode(encoder, message))
        reader.feed_eof()
        decoder = msgspec.msgpack.Decoder(ToWorker)
        out = []
        while (message := await read_frame(reader, decoder)) is not None:
            out.append(message)
        return out

    assert asyncio.run(read_all()) == sent


def test_a_frame_longer_than_the_limit_is_refused_not_read() -> None:
    async def read() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data((MAX_FRAME + 1).to_bytes(4, "big"))
        await read_frame(reader, msgspec.msgpack.Decoder(FromWorker))

    with pytest.raises(FrameError, match="at most"):
        asyncio.run(read())


def test_a_fence_allows_until_its_time_and_closes_at_once() -> None:
    fence = Fence(time.monotonic() + 60)
    fence.check()
    fence.close()
    assert not fence.allows()
    with pytest.raises(Fenced):
        fence.check()
    assert Fence().allows()  # without leader election: always


def test_binds_past_the_fence_are_not_sent_and_a_moved_fence_lets_them_go(
    tmp_path: Path,
) -> None:
    async def scenario() -> tuple[BaseException | None, BaseException | None]:
        worker = ApiWorker(_start(_unreachable_kubeconfig(tmp_path), -math.inf), _no_fatal)
        await worker.start()
        try:
            fenced = await _outcome(worker.bind("ns", "p", "u", "n1"))
            worker.fence(time.monotonic() + 60)
            sent = await _outcome(worker.bind("ns", "p", "u", "n1"))
        finally:
            await worker.stop()
        return fenced, sent

    fenced, sent = asyncio.run(scenario())
    assert isinstance(fenced, Fenced)
    # Sent: the connection to nowhere fails, which a fenced bind never gets to.
    assert isinstance(sent, RuntimeError) and "Connect" in str(sent)


def test_a_killed_worker_fails_its_binds_and_is_restarted(tmp_path: Path) -> None:
    async def scenario() -> tuple[BaseException | None, int, BaseException | None, int]:
        worker = ApiWorker(_start(_unreachable_kubeconfig(tmp_path)), _no_fatal)
        await worker.start()
        first_pid = worker.pid
        assert first_pid is not None
        try:
            pending = asyncio.ensure_future(worker.bind("ns", "p", "u", "n1"))
            await asyncio.sleep(0)  # sent
            os.kill(first_pid, signal.SIGKILL)
            died = await _outcome(pending)
            for _ in range(600):
                if worker.restarts:
                    break
                await asyncio.sleep(0.05)
            after = await _outcome(worker.bind("ns", "p", "u", "n1"))
            return died, worker.restarts, after, worker.pid or 0
        finally:
            await worker.stop()

    died, restarts, after, pid = asyncio.run(scenario())
    # WorkerDied, or the connection error if the worker answered before it died.
    assert isinstance(died, WorkerDied | RuntimeError)
    assert restarts == 1
    # The new worker answers (a connection error: it sent the bind).
    assert isinstance(after, RuntimeError)
    assert pid != 0


def test_a_worker_that_keeps_dying_stops_the_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(supervisor, "MAX_RESTARTS", 2)
    fatal: list[str] = []

    async def scenario() -> None:
        worker = ApiWorker(_start(_unreachable_kubeconfig(tmp_path)), fatal.append)
        await worker.start()
        try:
            for _ in range(3):
                pid = worker.pid
                assert pid is not None
                restarts = worker.restarts
                os.kill(pid, signal.SIGKILL)
                for _ in range(600):
                    if fatal or worker.restarts > restarts:
                        break
                    await asyncio.sleep(0.05)
        finally:
            await worker.stop()

    asyncio.run(scenario())
    assert len(fatal) == 1 and "died 3 times" in fatal[0]


def test_the_worker_dies_with_its_parent(tmp_path: Path) -> None:
    """A scheduler killed with -9 leaves no worker binding on its behalf."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import asyncio, math, os, sys\n"
        "from kubesched.kube.api_worker.frames import Start\n"
        "from kubesched.kube.api_worker.supervisor import ApiWorker\n"
        "async def main():\n"
        f"    w = ApiWorker(Start({_unreachable_kubeconfig(tmp_path)!r}, None, 1.0, 1, 1.0, 1,"
        " 'text', 0, math.inf), print)\n"
        "    await w.start()\n"
        "    print(w.pid, flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )

    async def scenario() -> int:
        parent = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            stdout=asyncio.subprocess.PIPE,
        )
        assert parent.stdout is not None
        line = await asyncio.wait_for(parent.stdout.readline(), 30)
        worker_pid = int(line)
        parent.kill()
        await parent.wait()
        for _ in range(100):
            if not _alive(worker_pid):
                return worker_pid
            await asyncio.sleep(0.05)
        raise AssertionError(f"worker {worker_pid} outlived its parent")

    asyncio.run(scenario())


def test_a_worker_started_ahead_is_the_one_started(tmp_path: Path) -> None:
    """`run` starts its worker before its imports (cli/main.py): the first start()
    takes that process, and sends it its Start frame."""

    async def scenario() -> tuple[int, int | None]:
        spawned = await spawn_worker()
        worker = ApiWorker(_start(_unreachable_kubeconfig(tmp_path)), _no_fatal, spawned)
        await worker.start()
        try:
            sent = await _outcome(worker.bind("ns", "p", "u", "n1"))
            assert isinstance(sent, RuntimeError) and "Connect" in str(sent)
            return spawned.proc.pid, worker.pid
        finally:
            await worker.stop()

    spawned_pid, worker_pid = asyncio.run(scenario())
    assert worker_pid == spawned_pid


def test_a_worker_started_ahead_and_not_needed_is_killed_quietly(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """`run` failing before its runner takes the worker (a bad --config, say) kills
    it; a worker whose socket closes before its Start frame exits 0, saying nothing."""
    with asyncio.Runner() as loop:
        with worker_started_ahead(loop, False) as none:
            assert none is None
        with worker_started_ahead(loop, True) as killed:
            assert killed is not None
        assert killed.proc.returncode is not None  # gone, not left waiting

        async def closed_early() -> int:
            spawned = await spawn_worker()
            spawned.writer.close()
            return await spawned.proc.wait()

        assert loop.run(closed_early()) == 0
    assert capfd.readouterr().err == ""


def test_the_cpu_budget_splits_the_thread_and_counts_the_worker() -> None:
    budget = CpuBudget(lambda: os.getpid())
    started = time.thread_time()
    sum(i * i for i in range(200_000))
    budget.add(SCHEDULING_CYCLE, time.thread_time() - started)
    read = budget.read()
    assert read[SCHEDULING_CYCLE] > 0
    assert read[THREAD_REST] >= 0
    # The "worker" here is this process: at least what the thread spent.
    assert read[API_WORKER] >= read[SCHEDULING_CYCLE] - 0.02


def test_a_conflict_answer_raises_bind_conflict() -> None:
    async def scenario() -> BaseException | None:
        worker = ApiWorker(_start("/nowhere"), _no_fatal)
        future = asyncio.ensure_future(worker.bind("ns", "p", "u", "n1"))
        await asyncio.sleep(0)
        [(request_id, pending)] = worker.pending.items()
        pending.set_result(Bound(request_id, "conflict", "409 AlreadyExists", 64))
        return await _outcome(future)

    assert isinstance(asyncio.run(scenario()), BindConflict)


def _no_fatal(message: str) -> None:
    raise AssertionError(f"unexpected fatal: {message}")


async def _outcome(awaitable: object) -> BaseException | None:
    try:
        await awaitable  # type: ignore[misc]
    except Exception as exc:
        return exc
    return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
