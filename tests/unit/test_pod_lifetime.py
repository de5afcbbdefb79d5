"""In `kubesched run` nothing the scheduler keeps per pod outlives the pod: once a
pod is bound or deleted, the scheduler's and the queue's bookkeeping forget it."""

from __future__ import annotations

import asyncio

from kubesched.framework import interfaces as ifc
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.state import nominated
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod


@register
class WaitAtPermit(ifc.PermitPlugin):
    name = "test-WaitAtPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        return Status.wait(), 30.0


def _scheduler(cluster: InMemoryCluster, clock: SimClock, *plugins: str) -> Scheduler:
    refs = [PluginRef(n) for n in ("PrioritySort", "DefaultBinder", "NodeResourcesFit", *plugins)]
    profile = ProfileConfig("default-scheduler", {"multiPoint": PluginSet(refs)})
    sched = Scheduler([profile], cluster, clock=clock, seed=1)
    cluster.watch(sched)
    return sched


def _remembers(sched: Scheduler, key: str) -> list[str]:
    queue = sched.queue
    held = {
        "queue": key in queue,
        "in-flight mark": key in queue._in_flight_marks,
        "last failure": key in sched.last_failures,
        "nomination": sched.nominator.node_of(key) is not None,
        "waiting": sched.waiting_pods.get(key) is not None,
    }
    return [what for what, yes in held.items() if yes]


def test_a_pod_deleted_while_waiting_at_permit_is_forgotten() -> None:
    async def scenario() -> list[str]:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"n": make_node("n", cpu="2")})
        pod = make_pod("p", cpu="1")
        cluster.pods[pod.key] = pod
        sched = _scheduler(cluster, clock, "test-WaitAtPermit")
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
        await asyncio.sleep(0)
        assert sched.waiting_pods.get("default/p") is not None
        cluster.remove_pod("default/p")
        for _ in range(4):
            await asyncio.sleep(0)
        return _remembers(sched, "default/p")

    assert asyncio.run(scenario()) == []


def test_a_failed_pod_is_forgotten_once_bound_or_deleted() -> None:
    async def scenario() -> tuple[list[str], list[str], list[str]]:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"n": make_node("n", cpu="1")})
        for name in ("big", "gone"):
            pod = make_pod(name, cpu="2")
            cluster.pods[pod.key] = pod
        sched = _scheduler(cluster, clock)
        await run_until_quiet(sched, clock)
        failed = _remembers(sched, "default/big")
        cluster.remove_pod("default/gone")
        cluster.add_node(make_node("m", cpu="4"))
        await run_until_quiet(sched, clock)
        assert cluster.pods["default/big"].spec.node_name == "m"
        return failed, _remembers(sched, "default/big"), _remembers(sched, "default/gone")

    failed, bound, deleted = asyncio.run(scenario())
    assert failed == ["queue", "last failure"]
    assert bound == []
    assert deleted == []


def _per_pod_state(sched: Scheduler) -> dict[str, int]:
    """Everything the scheduler keeps per pod, by size."""
    queue = sched.queue
    fw = sched.frameworks["default-scheduler"]
    preemption = fw.instances["DefaultPreemption"]
    assert isinstance(preemption, DefaultPreemption)
    # What is kept per row (a node's pods in importance order, its nominated pods)
    # until the row is next looked at: bounded by the rows, not by the pods seen.
    per_row = {id(p) for kept in preemption.dry_run._victims_by_row.values() for p in kept.pods}
    memo = nominated._memos.get(fw.handle.nodes)
    for at_priority in memo.by_priority.values() if memo is not None else ():
        per_row |= {id(p) for pods in at_priority.by_row.values() for p in pods}
    return {
        "queue": len(queue.pending_pods()) + len(queue.in_flight),
        "in-flight marks": len(queue._in_flight_marks),
        "in-flight events": len(queue.in_flight_events),
        "last failures": len(sched.last_failures),
        "nominations": len(sched.nominator._node_of),
        "waiting": len(sched.waiting_pods._pods),
        "assumed": len(sched.cache.assumed),
        "placed": len(sched.cache.placed),
        "orphans": len(sched.cache._orphans),
        "binding tasks": len(sched.binding_tasks),
        # Pods kept for their rows are counted below, by rows.
        "pod amounts": sum(1 for p in fw.handle.nodes._amounts if id(p) not in per_row),
        "pool filing": len(queue.unschedulable._filed_as) + len(queue.unschedulable._order),
        "preemption victims": len(preemption.executor._last_victim),
    }


def test_nothing_per_pod_outlives_many_pods_scheduled_preempted_and_deleted() -> None:
    async def scenario() -> tuple[dict[str, int], int, int]:
        clock = SimClock()
        nodes = {f"n{i}": make_node(f"n{i}", cpu="2") for i in range(4)}
        cluster = InMemoryCluster(nodes=nodes)
        sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=1)
        cluster.watch(sched)
        for wave in range(6):
            # Each wave outranks the last and needs more than is free: preemption.
            for i in range(12):
                cluster.add_pod(make_pod(f"w{wave}-{i}", cpu="1", priority=wave * 10 + i % 3))
            await run_until_quiet(sched, clock)
            if wave % 2:
                # Deleted while some are still pending, some bound.
                for key in [k for k in cluster.pods if k.startswith(f"default/w{wave - 1}-")]:
                    cluster.remove_pod(key)
                await run_until_quiet(sched, clock)
        evicted = len(cluster.evicted)
        # A node goes before its pods do (they wait as orphans, then go too).
        cluster.delete_node("n0")
        for key in list(cluster.pods):
            cluster.remove_pod(key)
        await run_until_quiet(sched, clock)
        preemption = sched.frameworks["default-scheduler"].instances["DefaultPreemption"]
        assert isinstance(preemption, DefaultPreemption)
        return _per_pod_state(sched), evicted, len(preemption.dry_run._victims_by_row)

    state, evicted, rows_kept = asyncio.run(scenario())
    assert evicted > 0  # preemption ran
    assert state == dict.fromkeys(state, 0)
    assert rows_kept <= 4  # one list per node at most
