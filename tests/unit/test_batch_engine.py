"""The batch placement engine (kubesched.batch) against greedy, on small clusters."""

from __future__ import annotations

import asyncio
from typing import Any

from kubesched.batch.engine import replay
from kubesched.batch.problem import HELD_ERROR, HELD_GANG, HELD_GATED, HELD_MATCHED, HELD_SPREAD
from kubesched.framework import interfaces as ifc
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.types import PodInfo
from kubesched.simulation.optimize import optimize
from kubesched.simulation.simulator import World, simulate, start_session
from kubesched.testing import make_node, make_pod
from tests.unit.batch_helpers import filter_failures, greedy_then_engine


def _host(name: str, **kw: Any) -> Any:
    return make_node(name, labels={"kubernetes.io/hostname": name}, **kw)


def _anti(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    return {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }


def test_fragmentation_engine_places_more_than_greedy_and_every_pod_passes_the_filters() -> None:
    # LeastAllocated spreads the small pods over both nodes; then no node has 3 cpu.
    nodes = [_host("a", cpu="4"), _host("b", cpu="4")]
    pods = [make_pod(f"s{i}", cpu="1") for i in range(4)] + [make_pod("big", cpu="3")]
    greedy, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    assert greedy.scheduled == 4
    assert batch.source == "engine"
    assert batch.total == 5
    assert batch.bound == {0: 5}
    assert batch.solver_status == "optimal"
    assert not batch.rejected
    assert filter_failures(nodes, pods, batch.placements) == []


def test_a_higher_priority_pod_is_never_dropped_for_lower_priority_ones() -> None:
    # Two 2-cpu pods would fit where the 4-cpu high-priority one is: 2 pods > 1 pod,
    # but the high-priority pod comes first.
    nodes = [_host("a", cpu="4")]
    pods = [
        make_pod("high", cpu="4", priority=1000),
        make_pod("low1", cpu="2", priority=0),
        make_pod("low2", cpu="2", priority=0),
    ]
    _, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    assert batch.placements == {"default/high": "a"}
    assert batch.placed == {1000: 1, 0: 0}
    assert batch.source == "greedy"  # greedy's was already the best by priority


def test_anti_affinity_within_the_batch_is_respected() -> None:
    nodes = [_host(n, cpu="4") for n in "abc"]
    pods = [make_pod(f"db{i}", cpu="1", labels={"app": "db"}, spec=_anti("db")) for i in range(4)]
    pods += [make_pod(f"fill{i}", cpu="3") for i in range(3)]
    _, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    db_nodes = [n for k, n in batch.placements.items() if k.startswith("default/db")]
    assert len(db_nodes) == len(set(db_nodes)) == 3
    assert filter_failures(nodes, pods, batch.placements) == []


def test_host_ports_never_share_a_node() -> None:
    port = {
        "containers": [
            {
                "name": "c",
                "ports": [{"containerPort": 80, "hostPort": 8080}],
                "resources": {"requests": {"cpu": "1"}},
            }
        ]
    }
    nodes = [_host("a", cpu="8"), _host("b", cpu="8")]
    pods = [make_pod(f"web{i}", spec=port) for i in range(3)]
    _, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    assert sorted(batch.placements.values()) == ["a", "b"]
    assert filter_failures(nodes, pods, batch.placements) == []


def test_extended_resources_are_counted_per_node() -> None:
    # CPU pods go to the roomier GPU node first (LeastAllocated) and leave the GPU
    # pod no cpu there.
    nodes = [_host("gpu", cpu="8", extra={"nvidia.com/gpu": 2}), _host("cpu", cpu="4")]
    pods = [make_pod(f"c{i}", cpu="2") for i in range(3)]
    pods.append(make_pod("train", cpu="6", requests={"nvidia.com/gpu": 2}))
    greedy, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    assert greedy.placements["default/train"] is None
    assert batch.placements["default/train"] == "gpu"
    assert batch.total == 4
    assert filter_failures(nodes, pods, batch.placements) == []


def test_pods_with_hard_spread_are_held_at_greedys_placement_and_said_so() -> None:
    constraint = {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "s"}},
    }
    nodes = [_host("a", cpu="4"), _host("b", cpu="4")]
    pods = [
        make_pod(
            f"s{i}", cpu="1", labels={"app": "s"}, spec={"topologySpreadConstraints": [constraint]}
        )
        for i in range(2)
    ]
    pods.append(make_pod("other", cpu="1", labels={"app": "s"}))
    greedy, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    assert batch.held == {
        "default/s0": HELD_SPREAD,
        "default/s1": HELD_SPREAD,
        "default/other": HELD_MATCHED,
    }
    for key in batch.held:
        assert batch.placements[key] == greedy.placements[key]


def test_gang_members_are_held_at_greedys_placement_and_said_so() -> None:
    # Moving one member of a PodGroup could split the gang (Coscheduling's rule is not
    # a per-pod filter), so the engine leaves members where greedy put them.
    nodes = [_host("a", cpu="4"), _host("b", cpu="4")]
    label = {"scheduling.x-k8s.io/pod-group": "train"}
    pods = [make_pod(f"g{i}", cpu="1", labels=label) for i in range(2)]
    pods.append(make_pod("single", cpu="1"))
    greedy, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    assert batch.held == {"default/g0": HELD_GANG, "default/g1": HELD_GANG}
    for key in batch.held:
        assert batch.placements[key] == greedy.placements[key]


def test_objective_nodes_packs_what_greedy_spreads() -> None:
    nodes = [_host(n, cpu="4") for n in "abcd"]
    pods = [make_pod(f"p{i}", cpu="1") for i in range(4)]
    _, comparison = greedy_then_engine(nodes, pods, objective="nodes")
    batch = comparison.batch
    assert batch.greedy_nodes_used == 4
    assert batch.nodes_used == 1
    assert batch.nodes_bound == 1
    assert batch.source == "engine"
    assert filter_failures(nodes, pods, batch.placements) == []


def test_objective_score_keeps_every_pod_and_passes_the_filters() -> None:
    nodes = [_host("a", cpu="4"), _host("b", cpu="8")]
    pods = [make_pod(f"p{i}", cpu="1") for i in range(5)]
    greedy, comparison = greedy_then_engine(nodes, pods, objective="score")
    assert comparison.batch.total == greedy.scheduled == 5
    assert filter_failures(nodes, pods, comparison.batch.placements) == []


def test_replay_refuses_what_the_filters_refuse_and_puts_the_table_back() -> None:
    nodes = [_host("a", cpu="2")]
    pods = [PodInfo(make_pod(f"p{i}", cpu="1")) for i in range(3)]

    async def run() -> None:
        session = start_session(World(nodes, [], [ProfileConfig.default()]), 1, 0)
        fw = session.scheduler.frameworks["default-scheduler"]
        table = session.scheduler.table
        before = table.requested.copy()
        accepted, refused = replay(fw, table, pods, {p.key: "a" for p in pods})
        assert len(accepted) == 2
        assert list(refused.values()) == ["Insufficient cpu"]
        assert (table.requested == before).all()

    asyncio.run(run())


@register
class _BatchBoom(ifc.FilterPlugin):
    """Fails on pods labelled boom, passes the others."""

    name = "test-BatchBoom"

    def filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> ifc.NodeVerdicts:
        if pod.pod.metadata.labels.get("boom"):
            raise ValueError("kaboom")
        return ifc.NodeVerdicts.passing(len(rows))


def test_a_plugin_failing_on_a_pod_holds_it_and_the_engine_goes_on() -> None:
    refs = [PluginRef("PrioritySort"), PluginRef("DefaultBinder")]
    refs += [PluginRef("NodeResourcesFit"), PluginRef("test-BatchBoom")]
    profiles = [ProfileConfig("default-scheduler", {"multiPoint": PluginSet(refs)})]
    nodes = [_host("a", cpu="4")]
    pods = [make_pod("bad", cpu="1", labels={"boom": "1"}), make_pod("good", cpu="1")]
    greedy = simulate(nodes, pods, profiles, seed=1)
    comparison = optimize(World(nodes, pods, profiles), greedy, timeout=2.0)
    assert comparison is not None
    batch = comparison.batch
    assert batch.held["default/bad"].startswith(HELD_ERROR)
    assert "kaboom" in batch.held["default/bad"]
    assert batch.placements == {"default/good": "a"}


def test_gated_pods_stay_pending() -> None:
    nodes = [_host("a", cpu="4")]
    pods = [
        make_pod("gated", cpu="1", spec={"schedulingGates": [{"name": "example.com/wait"}]}),
        make_pod("free", cpu="1"),
    ]
    greedy, comparison = greedy_then_engine(nodes, pods)
    batch = comparison.batch
    assert greedy.placements["default/gated"] is None
    assert "default/gated" not in batch.placements
    assert batch.held["default/gated"].startswith(HELD_GATED)
    assert batch.placements == {"default/free": "a"}
