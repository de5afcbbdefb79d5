"""Preemption end to end in the simulator: victims evicted, the preemptor nominated
and then bound, the events and messages kube-scheduler would give."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import Pod
from kubesched.cluster.manifests import load_documents, pending_pods, running_pods
from kubesched.framework.profile import DEFAULT_MULTI_POINT, PluginRef, PluginSet, ProfileConfig
from kubesched.simulation.simulator import SimulationResult, simulate
from kubesched.testing import make_node, make_pod

PREEMPTING = ProfileConfig.default()  # DefaultPreemption is in kube-scheduler's default profile
NOT_PREEMPTING = ProfileConfig(
    "default-scheduler",
    {"multiPoint": PluginSet(list(DEFAULT_MULTI_POINT), [PluginRef("DefaultPreemption")])},
)


def pod(name: str, cpu: str, priority: int, node: str = "", **spec: Any) -> Pod:
    made = make_pod(name, cpu=cpu, priority=priority, node_name=node, spec=spec)
    made.metadata.uid = f"uid-{name}"
    return made


def events(result: SimulationResult, reason: str) -> list[tuple[str, str]]:
    return [(e.pod, e.message) for e in result.events if e.reason == reason]


def test_high_priority_pod_preempts_and_is_bound() -> None:
    nodes = [make_node("n0", cpu="4"), make_node("n1", cpu="4")]
    pods = [
        pod("low0", "2", 0, "n0"),
        pod("low1", "2", 1, "n1"),
        pod("low2", "2", 2, "n0"),
        pod("low3", "2", 3, "n1"),
        pod("high", "3", 100),
    ]
    result = simulate(nodes, pods, [PREEMPTING], seed=1)
    # n0's highest victim (2) is lower than n1's (3): n0 is emptied.
    assert result.placements == {"default/low1": "n1", "default/low3": "n1", "default/high": "n0"}
    assert result.evicted == ["default/low2", "default/low0"]  # most important first
    assert events(result, "Preempted") == [
        ("default/low2", "Preempted by pod uid-high on node n0"),
        ("default/low0", "Preempted by pod uid-high on node n0"),
    ]
    assert events(result, "FailedScheduling") == [
        ("default/high", "0/2 nodes are available: 2 Insufficient cpu.")
    ]
    assert events(result, "Scheduled") == [
        ("default/high", "Successfully assigned default/high to n0")
    ]
    assert result.outcomes["default/high"].attempts == 2


def test_without_default_preemption_nothing_is_evicted() -> None:
    nodes = [make_node("n0", cpu="2")]
    pods = [pod("low", "2", 0, "n0"), pod("high", "2", 100)]
    result = simulate(nodes, pods, [NOT_PREEMPTING], seed=1)
    assert result.placements["default/high"] is None and result.evicted == []
    # DynamicResources' PostFilter still runs (it is in the default profile).
    assert result.reasons["default/high"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate"
    )


def test_messages_when_preemption_cannot_help() -> None:
    nodes = [make_node(f"n{i}", cpu="4") for i in range(4)]
    pods = [pod(f"big{i}", "3", 1000, f"n{i}") for i in range(4)]
    pods += [
        pod("high", "3", 100),
        pod("never", "3", 2000, preemptionPolicy="Never"),
        pod("huge", "8", 2000),
    ]
    result = simulate(nodes, pods, [PREEMPTING], seed=1)
    assert result.evicted == []
    assert result.reasons == {
        "default/high": "0/4 nodes are available: 4 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/4 nodes "
        "are available: 4 No preemption victims found for incoming pod.",
        "default/never": "0/4 nodes are available: 4 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
        "default/huge": "0/4 nodes are available: 4 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/4 nodes "
        "are available: 4 Preemption is not helpful for scheduling.",
    }


def test_room_made_for_a_nominated_pod_is_not_taken_by_a_lower_one() -> None:
    nodes = [make_node("n", cpu="4")]
    pods = [pod("low", "4", 0, "n"), pod("high", "3", 100), pod("mid", "1", 50)]
    result = simulate(nodes, pods, [PREEMPTING], seed=1)
    # mid, tried before low is gone, preempts low too (it fits beside the nominated
    # high once low is gone); its eviction finds low deleted already: no second event.
    assert result.evicted == ["default/low"]
    assert events(result, "Preempted") == [("default/low", "Preempted by pod uid-high on node n")]
    # mid fits beside high (3 + 1 of 4) once low is gone; it never takes high's room.
    assert result.placements == {"default/high": "n", "default/mid": "n"}
    assert [e.pod for e in result.events if e.reason == "Scheduled"] == [
        "default/high",
        "default/mid",
    ]


def test_mid_priority_pod_waits_behind_the_nominated_one() -> None:
    nodes = [make_node("n", cpu="4")]
    pods = [pod("low", "4", 0, "n"), pod("high", "3", 100), pod("mid", "2", 50)]
    result = simulate(nodes, pods, [PREEMPTING], seed=1)
    assert result.evicted == ["default/low"]
    assert result.placements == {"default/high": "n", "default/mid": None}
    # mid could only fit by preempting high: not a lower priority pod, no victims.
    assert result.reasons["default/mid"] == (
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )


PDB_MANIFESTS: list[dict[str, Any]] = (
    [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}"},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10"}},
        }
        for i in range(2)
    ]
    + [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "nodeName": node,
                "priority": priority,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
            },
        }
        for name, node, priority, labels in [
            ("db", "n0", 0, {"app": "db"}),
            ("web", "n1", 5, {"app": "web"}),
        ]
    ]
    + [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "urgent"},
            "spec": {
                "priority": 100,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}],
            },
        },
    ]
)


def test_pod_disruption_budgets_steer_preemption() -> None:
    state = load_documents([("test", i + 1, doc) for i, doc in enumerate(PDB_MANIFESTS)])
    assert not state.problems
    [budget] = state.pdbs
    assert budget.status is not None
    assert (budget.status.disruptions_allowed, budget.status.current_healthy) == (0, 1)
    pods = [*running_pods(state), *pending_pods(state)]
    result = simulate(state.nodes, pods, [PREEMPTING], seed=1, pdbs=state.pdbs)
    # Evicting db (priority 0) would violate its budget: web (priority 5) goes instead.
    assert result.evicted == ["default/web"]
    assert result.placements["default/urgent"] == "n1"
    # Without the budget the lower priority pod is the victim.
    result = simulate(state.nodes, pods, [PREEMPTING], seed=1)
    assert result.evicted == ["default/db"]
    assert result.placements["default/urgent"] == "n0"


def test_preemptor_waits_until_its_victims_are_deleted() -> None:
    """Async preemption (PreEnqueue of DefaultPreemption): the first victim's deletion
    does not let the preemptor in again while the second is still being deleted, so
    it is tried twice in all and preempts once."""
    nodes = [make_node("n", cpu="4")]
    pods = [pod("low0", "2", 0, "n"), pod("low1", "2", 1, "n"), pod("high", "4", 100)]
    result = simulate(nodes, pods, [PREEMPTING], seed=1)
    assert result.placements == {"default/high": "n"}
    assert sorted(result.evicted) == ["default/low0", "default/low1"]
    assert sorted(events(result, "Preempted")) == [
        ("default/low0", "Preempted by pod uid-high on node n"),
        ("default/low1", "Preempted by pod uid-high on node n"),
    ]
    assert result.outcomes["default/high"].attempts == 2


def test_pre_enqueue_holds_a_preemptor_until_its_last_victim_is_gone() -> None:
    from kubesched.framework.handle import Handle
    from kubesched.framework.state.node_table import NodeTable
    from kubesched.framework.types import PodInfo
    from kubesched.plugins.defaultpreemption.plugin import (
        WAITING_FOR_PREEMPTION,
        Candidate,
        DefaultPreemption,
    )

    table = NodeTable()
    row = table.upsert_node(make_node("n", cpu="4"))
    victims = [PodInfo(pod(f"low{i}", "2", i, "n")) for i in range(2)]
    for victim in victims:
        table.add_pod(victim, row)
    spawned: list[Any] = []
    plugin = DefaultPreemption(handle=Handle(table, spawn=spawned.append))
    high = PodInfo(pod("high", "4", 100))
    assert plugin.pre_enqueue(high).is_success()

    plugin.executor.prepare_candidate_async(Candidate("n", row, victims, 0), high)
    status = plugin.pre_enqueue(high)
    assert not status.is_success() and status.message() == WAITING_FOR_PREEMPTION
    table.remove_pod(victims[0], row)  # the first victim's deletion: still running
    assert not plugin.pre_enqueue(high).is_success()
    table.remove_pod(victims[1], row)  # the last one is gone: done, even before the
    assert plugin.pre_enqueue(high).is_success()  # deleting task has returned
    for coro in spawned:
        coro.close()
