"""Nominated pods and the scheduler's side of preemption: the nominator, the status
writes, evaluateNominatedNode, the requeue when a nominated pod goes away."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from kubesched.api.objects import Pod, PodStatus
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import PostFilterPlugin, PostFilterResult
from kubesched.framework.profile import DEFAULT_MULTI_POINT, PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.framework.waiting import WaitingPods
from kubesched.kube.writer import StatusWriter
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.queue.nominator import Nominator
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet, simulate
from kubesched.testing import make_node, make_pod, make_table

PREEMPTING = ProfileConfig(
    "default-scheduler",
    {"multiPoint": PluginSet([*DEFAULT_MULTI_POINT, PluginRef("DefaultPreemption")])},
)


def nominated(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(
        pod, status=msgspec.structs.replace(pod.status, nominated_node_name=node)
    )


def pod(name: str, cpu: str, priority: int = 0, node: str = "") -> Pod:
    made = make_pod(name, cpu=cpu, priority=priority, node_name=node)
    made.metadata.uid = f"uid-{name}"
    return made


# --- the nominator -----------------------------------------------------------------------


def test_nominator_modes() -> None:
    nom = Nominator()
    a = make_pod("a")
    nom.add(a, None)  # ModeNoop without a nominatedNodeName: nothing
    assert len(nom) == 0
    nom.add(nominated(a, "n1"), None)  # ModeNoop: the pod's own field
    assert nom.node_of("default/a") == "n1" and nom.pods_for_node("n1") == ["default/a"]
    nom.add(a, "n2")  # override
    assert nom.node_of("default/a") == "n2" and list(nom.nodes()) == ["n2"]
    nom.add(a, "")  # override with "": cleared
    assert len(nom) == 0 and list(nom.nodes()) == []


def test_nominator_update_keeps_an_unwritten_nomination() -> None:
    nom = Nominator()
    a = make_pod("a")
    nom.add(a, "n1")  # the scheduler nominated; the status write has not come back yet
    nom.update(a, make_pod("a", labels={"x": "y"}))
    assert nom.node_of("default/a") == "n1"
    nom.update(a, nominated(a, "n2"))  # the field set: it wins
    assert nom.node_of("default/a") == "n2"
    nom.update(nominated(a, "n2"), a)  # the field cleared
    assert nom.node_of("default/a") is None


# --- the scheduler -----------------------------------------------------------------------


def test_preemptor_is_nominated_in_status_queue_and_nominator_then_bound() -> None:
    async def scenario() -> None:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"n": make_node("n", cpu="2")})
        for p in (pod("low", "2", 0, "n"), pod("high", "2", 100)):
            cluster.pods[p.key] = p
        sched = Scheduler([PREEMPTING], cluster, clock=clock, seed=1)
        cluster.watch(sched)
        qpi = sched.queue.pop_nowait()
        assert qpi is not None and qpi.pod_info.key == "default/high"
        sched.schedule_one(qpi)
        assert sched.nominator.node_of("default/high") == "n"
        assert cluster.pods["default/high"].status.nominated_node_name == "n"
        assert sched.queue.unschedulable["default/high"].pod.status.nominated_node_name == "n"
        assert "default/low" in cluster.pods  # evicted after the cycle, in a task
        await run_until_quiet(sched, clock)
        assert "default/low" not in cluster.pods
        assert cluster.pods["default/high"].spec.node_name == "n"
        assert len(sched.nominator) == 0
        assert [e.reason for e in cluster.events] == ["FailedScheduling", "Preempted", "Scheduled"]

    asyncio.run(scenario())


def test_a_nominated_node_that_fits_is_taken_without_scoring() -> None:
    # LeastAllocated would pick the empty node "a"; the nomination says "b".
    nodes = [make_node("a", cpu="8"), make_node("b", cpu="8")]
    busy = pod("busy", "4", 0, "b")
    result = simulate(nodes, [busy, nominated(pod("p", "1"), "b")], [PREEMPTING], seed=1)
    assert result.placements["default/p"] == "b"
    result = simulate(nodes, [busy, pod("p", "1")], [PREEMPTING], seed=1)
    assert result.placements["default/p"] == "a"


def test_failures_other_than_postfilter_clear_the_nomination() -> None:
    nodes = [make_node("a", cpu="1")]
    stale = nominated(pod("p", "2", 10), "a")

    async def scenario(profile: ProfileConfig, p: Pod) -> str:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"a": nodes[0]})
        cluster.pods[p.key] = p
        sched = Scheduler([profile], cluster, clock=clock, seed=1)
        cluster.watch(sched)
        await run_until_quiet(sched, clock)
        return cluster.pods[p.key].status.nominated_node_name

    never = msgspec.structs.replace(
        stale, spec=msgspec.structs.replace(stale.spec, preemption_policy="Never")
    )
    assert asyncio.run(scenario(ProfileConfig.default(), stale)) == ""
    assert asyncio.run(scenario(PREEMPTING, stale)) == ""  # no candidate: cleared
    # Not eligible (preemptionPolicy Never): PostFilter gives no result, which keeps it.
    assert asyncio.run(scenario(PREEMPTING, never)) == "a"


def test_deleting_a_nominated_pod_requeues_lower_or_equal_priority_pods() -> None:
    clock = SimClock()
    cluster = InMemoryCluster(nodes={"n": make_node("n", cpu="1")})
    for p in (pod("full", "1", 1000, "n"), pod("low", "1", 10), pod("high", "1", 500)):
        cluster.pods[p.key] = p
    sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=1)
    cluster.watch(sched)
    for _ in range(2):
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
    assert set(sched.queue.unschedulable) == {"default/low", "default/high"}
    gone = nominated(pod("gone", "1", 100), "n")
    sched.on_pod_delete(gone)
    assert set(sched.queue.unschedulable) == {"default/high"}


@register
class FailingPostFilter(PostFilterPlugin):
    name = "test-FailingPostFilter"

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Any
    ) -> tuple[PostFilterResult | None, Status]:
        return None, Status.as_error("the API is down")


def test_a_postfilter_error_stays_in_the_message() -> None:
    profile = ProfileConfig(
        "default-scheduler",
        {"multiPoint": PluginSet([*DEFAULT_MULTI_POINT, PluginRef("test-FailingPostFilter")])},
    )
    result = simulate([make_node("a", cpu="1")], [pod("p", "2")], [profile], seed=1)
    assert result.reasons["default/p"] == (
        "0/1 nodes are available: 1 Insufficient cpu. the API is down"
    )
    assert result.outcomes["default/p"].reason == "Unschedulable"


def test_a_victim_waiting_at_permit_is_preempted_in_memory() -> None:
    async def scenario() -> tuple[Status, list[tuple[str, str]], list[str]]:
        clock = SimClock()
        victim = pod("v", "1", 0, "n")
        cluster = InMemoryCluster(nodes={"n": make_node("n")}, pods={victim.key: victim})
        waiting_pods = WaitingPods(clock)
        waiting = waiting_pods.add("default/v", "n", {"SomePermit": 60.0})
        handle = Handle(make_table([make_node("n")], [victim]), cluster=cluster)
        handle.waiting_pods = waiting_pods
        plugin = DefaultPreemption(None, handle)
        await plugin.executor.preempt_pod("n", PodInfo(pod("p", "1", 10)), PodInfo(victim))
        status = await waiting.wait()
        return status, [(e.reason, e.message) for e in cluster.events], cluster.evicted

    status, events, evicted = asyncio.run(scenario())
    assert status.code.name == "ERROR" and status.message() == "preempted"
    assert status.plugin == "DefaultPreemption"
    assert events == [("Preempted", "Preempted by pod uid-p on node n (in kube-scheduler memory).")]
    assert evicted == []


# --- the status writer ---------------------------------------------------------------------


class _Recorder:
    def __init__(self) -> None:
        self.patches: list[tuple[str, Any]] = []

    async def patch(self, path: str, body: Any, patch_type: str = "") -> bytes:
        self.patches.append((path, body))
        return b"{}"


def _flush(writer: StatusWriter) -> None:
    async def run() -> None:
        while writer.pending:
            _, update = writer.pending.popitem(last=False)
            await writer._write(update)

    asyncio.run(run())


def test_status_writer_sets_and_clears_nominated_node_name() -> None:
    client = _Recorder()
    writer = StatusWriter(client)  # type: ignore[arg-type]
    plain = make_pod("p")
    writer.set_unschedulable(plain, "Unschedulable", "no", "n1")
    # The queue's copy already says n1 when the next failure comes, before any write.
    writer.set_unschedulable(nominated(plain, "n1"), "Unschedulable", "still no", "n1")
    _flush(writer)
    [(path, body)] = client.patches
    assert path == "/api/v1/namespaces/default/pods/p/status"
    assert body["status"]["nominatedNodeName"] == "n1"
    assert body["status"]["conditions"][0]["message"] == "still no"

    client.patches.clear()
    writer.set_unschedulable(nominated(plain, "n1"), "Unschedulable", "no", "")
    _flush(writer)
    assert client.patches[0][1]["status"]["nominatedNodeName"] is None  # cleared

    client.patches.clear()
    writer.set_unschedulable(nominated(plain, "n1"), "Unschedulable", "again", "n1")
    _flush(writer)
    assert "nominatedNodeName" not in client.patches[0][1]["status"]  # unchanged


def test_pod_status_start_time_is_read() -> None:
    status = msgspec.convert({"startTime": "2024-05-01T10:00:00Z"}, PodStatus)
    assert status.start_time == "2024-05-01T10:00:00Z"
