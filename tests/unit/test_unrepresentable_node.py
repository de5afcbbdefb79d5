"""A node whose allocatable does not fit the int64 columns (cpu 2^63-1 cores, which
the apiserver accepts) is refused whole: one log line naming the node and the
field, nothing half-written, no pod goes there, and the scheduler carries on."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kubesched.framework.clock import SimClock
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod

HUGE = str(2**63 - 1)


def _scheduler(cluster: InMemoryCluster, clock: SimClock) -> Scheduler:
    refs = [PluginRef(n) for n in ("PrioritySort", "DefaultBinder", "NodeResourcesFit")]
    profile = ProfileConfig("default-scheduler", {"multiPoint": PluginSet(refs)})
    sched = Scheduler([profile], cluster, clock=clock, seed=1)
    cluster.watch(sched)
    return sched


def test_a_node_with_an_overflowing_allocatable_is_refused_and_scheduling_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> tuple[Scheduler, InMemoryCluster]:
        clock = SimClock()
        cluster = InMemoryCluster(
            nodes={"huge": make_node("huge", cpu=HUGE), "small": make_node("small", cpu="2")}
        )
        for i in range(3):
            pod = make_pod(f"p{i}", cpu="500m")
            cluster.pods[pod.key] = pod
        sched = _scheduler(cluster, clock)
        await run_until_quiet(sched, clock)
        return sched, cluster

    with caplog.at_level(logging.ERROR):
        sched, cluster = asyncio.run(scenario())
    assert sched.table.row_of("huge") is None
    assert sorted(sched.table.names[r] for r in sched.table.order()) == ["small"]
    assert {p.spec.node_name for p in cluster.pods.values()} == {"small"}
    refused = [r.getMessage() for r in caplog.records if "huge" in r.getMessage()]
    assert len(refused) == 1
    assert "status.allocatable[cpu]" in refused[0]


def test_an_update_that_overflows_takes_the_node_out_whole_and_a_fix_brings_it_back() -> None:
    async def scenario() -> tuple[bool, int, int]:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"n": make_node("n", cpu="4")})
        bound = make_pod("b", cpu="1", node_name="n")
        cluster.pods[bound.key] = bound
        sched = _scheduler(cluster, clock)
        cluster.add_node(make_node("n", cpu=HUGE, labels={"new": "label"}))
        gone = sched.table.row_of("n") is None
        pending = make_pod("p", cpu="1")
        cluster.add_pod(pending)
        await run_until_quiet(sched, clock)
        unbound = int(not cluster.pods["default/p"].spec.node_name)
        cluster.add_node(make_node("n", cpu="4"))
        await run_until_quiet(sched, clock)
        row = sched.table.row_of("n")
        assert row is not None
        cpu = sched.table.resource_index["cpu"]
        return gone, unbound, int(sched.table.requested[row, cpu])

    gone, unbound, requested = asyncio.run(scenario())
    assert gone
    assert unbound == 1
    assert requested == 2000  # the bound pod counted again, and the pending one bound
