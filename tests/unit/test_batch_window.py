"""`run --batch-window` (scheduler/batch_window.py) on the in-memory cluster: the
window's holds and gathering, the hand-off of the engine's answer to the normal
cycles, and the fallbacks."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.api.objects import Node, Pod
from kubesched.batch.engine import PreparedBatch
from kubesched.cli.main import main
from kubesched.framework.clock import RealClock, SimClock
from kubesched.framework.profile import ProfileConfig
from kubesched.scheduler import Scheduler, batch_window
from kubesched.scheduler.batch_window import BATCH_PLUGIN, BatchOptions
from kubesched.server.metrics import SchedulerMetrics
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod


def _host(name: str, cpu: str = "4") -> Node:
    return make_node(name, cpu=cpu, labels={"kubernetes.io/hostname": name})


def _fragmenting() -> tuple[list[Node], list[Pod]]:
    # LeastAllocated spreads the four small pods two per node; then no node has 3 cpu
    # for the big one, created last. Jointly: four small on one node, big on the other.
    nodes = [_host("a"), _host("b")]
    pods = [make_pod(f"s{i}", cpu="1") for i in range(4)] + [make_pod("big", cpu="3")]
    for i, p in enumerate(pods):
        p.metadata.uid = f"uid-{p.metadata.name}"
        p.metadata.creation_timestamp = f"2026-01-01T00:00:0{i}Z"
    return nodes, pods


def _run(
    nodes: list[Node],
    pods: list[Pod],
    batch: BatchOptions | None,
    observe: Any = None,
) -> tuple[InMemoryCluster, Scheduler]:
    async def scenario() -> tuple[InMemoryCluster, Scheduler]:
        clock = SimClock()
        cluster = InMemoryCluster(
            nodes={n.metadata.name: n for n in nodes}, pods={p.key: p for p in pods}
        )
        sched = Scheduler(
            [ProfileConfig.default()],
            cluster,
            clock=clock,
            seed=1,
            batch=batch,
            batch_observer=observe,
        )
        cluster.watch(sched)
        await run_until_quiet(sched, clock)
        return cluster, sched

    return asyncio.run(scenario())


def _placed(cluster: InMemoryCluster) -> dict[str, str]:
    return {k: p.spec.node_name for k, p in cluster.pods.items()}


def test_off_by_default_greedy_leaves_the_big_pod_pending() -> None:
    nodes, pods = _fragmenting()
    cluster, sched = _run(nodes, pods, None)
    placed = _placed(cluster)
    assert sched.batch is None
    assert placed["default/big"] == ""
    assert sorted(placed[f"default/s{i}"] for i in range(4)) == ["a", "a", "b", "b"]
    assert [e.reason for e in cluster.events].count("FailedScheduling") == 1


def test_batch_mode_binds_what_greedy_leaves_pending_through_the_cycles() -> None:
    nodes, pods = _fragmenting()
    seen: list[tuple[str, int]] = []
    cluster, sched = _run(
        nodes, pods, BatchOptions(window=1.0, timeout=5.0), lambda r, n: seen.append((r, n))
    )
    placed = _placed(cluster)
    assert all(placed.values()), placed
    big = placed["default/big"]
    assert [placed[f"default/s{i}"] for i in range(4)].count(big) == 1
    assert seen == [("engine", 1)]
    assert sched.batch is not None
    (outcome,) = sched.batch.outcomes
    assert (outcome.held, outcome.gathered, outcome.result) == (4, 1, "engine")
    assert outcome.nominated == {"default/big": big}
    assert len(outcome.moved) == 1 and set(outcome.moved.values()) == {"b" if big == "a" else "a"}
    # The moved pod was rejected at Permit (its reservation undone), then bound by
    # a cycle of its own; every pod was bound by DefaultBinder, none around it.
    (moved,) = outcome.moved
    reasons = [(e.reason, e.message) for e in cluster.events if e.pod == moved]
    assert reasons[0] == (
        "FailedScheduling",
        f"the batch placement moves the pod to node {outcome.moved[moved]}",
    )
    assert reasons[-1][0] == "Scheduled"
    assert [e.reason for e in cluster.events].count("Scheduled") == 5
    assert len(sched.nominator) == 0 and not sched.cache.assumed
    assert len(sched.waiting_pods) == 0
    # The pods the engine placed were not held in a second window.
    assert sched.batch.windows_closed == 1


def test_in_run_the_solve_leaves_the_event_loop_free(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` (off_loop): the solver runs in a thread, so the loop goes on serving
    (here a ticker every 10 ms) while it solves; the answer still reaches the
    cycles. The solve is made to take 0.6 s more: on the loop, the ticker would
    stop for that long."""
    solve = PreparedBatch.solve

    def slow(self: PreparedBatch) -> Any:
        time.sleep(0.6)
        return solve(self)

    monkeypatch.setattr(PreparedBatch, "solve", slow)
    nodes, pods = _fragmenting()

    async def scenario() -> tuple[InMemoryCluster, Scheduler, float]:
        cluster = InMemoryCluster(
            nodes={n.metadata.name: n for n in nodes}, pods={p.key: p for p in pods}
        )
        sched = Scheduler(
            [ProfileConfig.default()],
            cluster,
            clock=RealClock(),
            seed=1,
            batch=BatchOptions(window=0.05, timeout=5.0, off_loop=True),
        )
        cluster.watch(sched)
        ticks: list[float] = []

        async def ticker() -> None:
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.01)

        async def schedule() -> None:
            while not all(p.spec.node_name for p in cluster.pods.values()):
                sched.queue.flush_backoff_completed()
                try:
                    qpi = await asyncio.wait_for(sched.queue.pop(), 0.05)
                except TimeoutError:
                    continue
                if qpi is not None:
                    sched.schedule_one(qpi)
                await asyncio.sleep(0)

        tick = asyncio.create_task(ticker())
        await asyncio.wait_for(schedule(), 20)
        tick.cancel()
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        return cluster, sched, max(gaps)

    cluster, sched, longest_gap = asyncio.run(scenario())
    placed = _placed(cluster)
    assert all(placed.values()), placed
    assert sched.batch is not None
    (outcome,) = sched.batch.outcomes
    assert outcome.result == "engine" and outcome.seconds >= 0.6
    assert longest_gap < 0.3, longest_gap


def test_pods_are_held_at_permit_until_the_window_closes() -> None:
    async def scenario() -> None:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"a": _host("a")})
        p = make_pod("p", cpu="1")
        cluster.pods[p.key] = p
        sched = Scheduler(
            [ProfileConfig.default()], cluster, clock=clock, batch=BatchOptions(window=2.0)
        )
        cluster.watch(sched)
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
        waiting = sched.waiting_pods.get("default/p")
        assert waiting is not None and waiting.pending == {BATCH_PLUGIN}
        for _ in range(4):
            await asyncio.sleep(0)
        assert cluster.pods["default/p"].spec.node_name == ""  # not bound yet
        assert clock.next_timer() == 2.0  # the window's close
        await run_until_quiet(sched, clock)
        assert cluster.pods["default/p"].spec.node_name == "a"
        assert sched.batch is not None and sched.batch.outcomes == []  # nothing failed

    asyncio.run(scenario())


def test_a_pod_preemption_nominates_is_not_gathered() -> None:
    async def scenario() -> None:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"n": _host("n", cpu="2")})
        low = make_pod("low", cpu="2", priority=0, node_name="n")
        high = make_pod("high", cpu="2", priority=100)
        for p in (low, high):
            p.metadata.uid = f"uid-{p.metadata.name}"
            cluster.pods[p.key] = p
        sched = Scheduler(
            [ProfileConfig.default()], cluster, clock=clock, batch=BatchOptions(window=1.0)
        )
        cluster.watch(sched)
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
        assert sched.nominator.node_of("default/high") == "n"
        assert sched.batch is not None and sched.batch.gathered == {}

    asyncio.run(scenario())


def test_an_unschedulable_pod_alone_is_gathered_and_the_engine_keeps_greedy() -> None:
    # Nothing to rearrange: the engine cannot do better, the pod stays as the cycle left it.
    nodes = [_host("a", cpu="2")]
    pods = [make_pod("big", cpu="3")]
    seen: list[tuple[str, int]] = []
    cluster, sched = _run(nodes, pods, BatchOptions(window=1.0), lambda r, n: seen.append((r, n)))
    assert cluster.pods["default/big"].spec.node_name == ""
    assert cluster.pods["default/big"].status.nominated_node_name == ""
    assert seen == [("greedy", 0)]
    assert "default/big" in sched.queue.unschedulable
    assert sched.batch is not None and sched.batch.gathered == {}  # not gathered again


def test_an_engine_error_lets_the_held_pods_go_and_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(batch_window, "place_batch", broken)
    nodes, pods = _fragmenting()
    seen: list[tuple[str, int]] = []
    cluster, sched = _run(nodes, pods, BatchOptions(window=1.0), lambda r, n: seen.append((r, n)))
    placed = _placed(cluster)
    # Greedy's outcome: the small pods bound where the cycle put them, big pending.
    assert placed["default/big"] == ""
    assert sorted(placed[f"default/s{i}"] for i in range(4)) == ["a", "a", "b", "b"]
    assert seen == [("error", 0)]
    assert "Batch placement failed" in caplog.text
    assert len(sched.waiting_pods) == 0 and not sched.cache.assumed
    # The table was put back: the bound pods are accounted once.
    row = sched.table.row_of("a")
    assert row is not None and len(list(sched.table.pods_on(row))) == 2


def test_a_nominated_pod_that_fails_again_is_not_gathered_on_that_failure() -> None:
    async def scenario() -> None:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"a": _host("a", cpu="2")})
        p = make_pod("p", cpu="3")
        p.metadata.uid = "uid-p"
        cluster.pods[p.key] = p
        sched = Scheduler(
            [ProfileConfig.default()], cluster, clock=clock, batch=BatchOptions(window=1.0)
        )
        cluster.watch(sched)
        batch = sched.batch
        assert batch is not None
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
        assert batch.gathered == {"default/p": "default-scheduler"}
        batch.gathered.clear()
        batch._spent.add("default/p")  # as if the engine had nominated it
        sched.queue.activate(["default/p"])
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
        assert batch.gathered == {}
        sched.queue.activate(["default/p"])
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)  # woken again: gathered as any failure
        assert batch.gathered == {"default/p": "default-scheduler"}

    asyncio.run(scenario())


def test_the_metrics_count_batches_and_pods_beyond_greedy() -> None:
    metrics = SchedulerMetrics()
    metrics.observe_batch("engine", 2)
    metrics.observe_batch("greedy", 0)
    assert metrics.value("kubesched_batch_placements_total", {"result": "engine"}) == 1
    assert metrics.value("kubesched_batch_placements_total", {"result": "greedy"}) == 1
    assert metrics.value("kubesched_batch_pods_beyond_greedy_total") == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-window", "soon"], "Invalid value for --batch-window: 'soon' is not a duration"),
        (["--batch-window", "0s"], "Invalid value for --batch-window: '0s' must be more than 0s"),
        (["--batch-window", "1s", "--batch-timeout", "x"], "Invalid value for --batch-timeout"),
        (["--batch-timeout", "2s"], "Invalid value for --batch-timeout: needs --batch-window"),
    ],
)
def test_run_refuses_bad_batch_flags_naming_the_flag(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["run", *args])
    assert result.exit_code == 2
    assert message in result.output
