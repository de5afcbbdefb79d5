"""DefaultPreemption against kube-scheduler v1.36: the set-up the preemption tests share
(a whole framework over an in-memory cluster, a PreFilter plugin with per-cycle state,
pods, PDBs, the node table's fingerprint), and the args, eligibility and messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.objects import Pod, PodCondition, PodDisruptionBudget
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.interfaces import (
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption import ArgsError, DefaultPreemption, DefaultPreemptionArgs
from kubesched.plugins.registry import default_registry
from kubesched.simulation.memory import InMemoryCluster
from kubesched.testing import make_node, make_pod, make_table

# --- a PreFilter plugin with per-cycle state, to see PreFilterExtensions at work ----------

COUNT_KEY = "PreFilterTestCountBlockers"


@dataclass
class _Blockers:
    """Pods labelled block=true per row; changed in place, hence clone()."""

    per_row: dict[int, int] = field(default_factory=dict)

    def clone(self) -> _Blockers:
        return _Blockers(dict(self.per_row))


def _blocks(pod: PodInfo) -> bool:
    return pod.pod.metadata.labels.get("block") == "true"


@register
class CountBlockers(PreFilterPlugin, PreFilterExtensions, FilterPlugin):
    """A pod labelled wants-alone=true fits only where no block=true pod runs."""

    name = "test-CountBlockers"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        counts = _Blockers()
        for row in nodes.order():
            counts.per_row[int(row)] = sum(1 for p in nodes.pods_on(int(row)) if _blocks(p))
        state.write(COUNT_KEY, counts)
        return None, Status()

    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, nodes: NodeTable, row: int
    ) -> Status:
        if _blocks(to_add):
            state.read(COUNT_KEY, _Blockers).per_row[row] += 1
        return Status()

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, nodes: NodeTable, row: int
    ) -> Status:
        if _blocks(to_remove):
            state.read(COUNT_KEY, _Blockers).per_row[row] -= 1
        return Status()

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Any) -> NodeVerdicts:
        if pod.pod.metadata.labels.get("wants-alone") != "true":
            return NodeVerdicts.passing(len(rows))
        counts = state.read(COUNT_KEY, _Blockers)
        mask = np.array([counts.per_row[int(r)] > 0 for r in rows], dtype=np.bool_)
        return NodeVerdicts.failing(len(rows), [("node(s) had a blocker", mask)])


# --- set-up -------------------------------------------------------------------------------


class FakeNominations:
    def __init__(self, by_node: Mapping[str, list[PodInfo]] | None = None) -> None:
        self.by_node = dict(by_node or {})

    def nominated_nodes(self) -> list[str]:
        return list(self.by_node)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.by_node.get(node_name, []))

    def version(self) -> None:
        return None  # tests change by_node as they go

    def changed_since(self, version: int) -> None:
        return None


@dataclass
class Env:
    fw: Framework
    handle: Handle
    table: NodeTable
    cluster: InMemoryCluster
    plugin: DefaultPreemption
    spawned: list[Coroutine[Any, Any, None]]

    def diagnose(self, pod: PodInfo) -> tuple[CycleState, Diagnosis]:
        state = CycleState()
        _, status = self.fw.run_pre_filter(state, pod, self.table)
        assert status.is_success()
        feasible, diagnosis = self.fw.run_filters_with_nominated_pods(
            state, pod, self.table, self.table.order()
        )
        assert len(feasible) == 0, "the pod must fit nowhere for preemption to run"
        return state, diagnosis

    def post_filter(self, pod: Pod) -> tuple[str | None, Status]:
        info = PodInfo(pod)
        state, diagnosis = self.diagnose(info)
        result, status = self.fw.run_post_filter(state, info, diagnosis)
        return (None if result is None else result.nominated_node_name), status

    def evict(self) -> None:
        """Run the evictions preemption started."""
        for coro in self.spawned:
            asyncio.run(coro)
        self.spawned.clear()


_SPAWNED: list[list[Coroutine[Any, Any, None]]] = []


@pytest.fixture(autouse=True)
def _close_unrun_evictions() -> Iterator[None]:
    yield
    for spawned in _SPAWNED:
        for coro in spawned:
            coro.close()
    _SPAWNED.clear()


def setup(
    nodes: Sequence[Any],
    pods: Sequence[Pod] = (),
    *,
    pdbs: Sequence[PodDisruptionBudget] = (),
    args: Mapping[str, Any] | None = None,
    seed: int = 0,
    nominated: Mapping[str, list[PodInfo]] | None = None,
    extra_plugins: Sequence[str] = (),
) -> Env:
    table = make_table(nodes, pods)
    cluster = InMemoryCluster()
    for node in nodes:
        cluster.nodes[node.metadata.name] = node
    for pod in pods:
        cluster.pods[pod.key] = pod
    spawned: list[Coroutine[Any, Any, None]] = []
    _SPAWNED.append(spawned)
    handle = Handle(
        table,
        cluster=cluster,
        listers=Listers(pdbs=list(pdbs)),
        rng=np.random.default_rng(seed),
        nominated=FakeNominations(nominated),
        spawn=spawned.append,
    )
    names = ["PrioritySort", "NodeResourcesFit", "NodePorts", *extra_plugins]
    names += ["DefaultPreemption", "DefaultBinder"]
    profile = ProfileConfig(
        "default-scheduler",
        {"multiPoint": PluginSet([PluginRef(n) for n in names])},
        plugin_config={"DefaultPreemption": dict(args or {})},
    )
    fw = Framework(profile, handle, default_registry())
    plugin = fw.instances["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    # The framework lends its plugins its own copy of the handle.
    return Env(fw, fw.handle, table, cluster, plugin, spawned)


def pod(
    name: str,
    *,
    cpu: str = "1",
    priority: int = 0,
    node: str = "",
    started: str | None = None,
    labels: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
    uid: str = "",
) -> Pod:
    made = make_pod(name, cpu=cpu, priority=priority, node_name=node, labels=labels, spec=spec)
    made.metadata.uid = uid or f"uid-{name}"
    if started is not None:
        made.status.start_time = started
    return made


def pdb(
    name: str,
    match: Mapping[str, str] | None,
    allowed: int,
    *,
    namespace: str = "default",
    disrupted: Sequence[str] = (),
) -> PodDisruptionBudget:
    spec: dict[str, Any] = {"minAvailable": 1}
    if match is not None:
        spec["selector"] = {"matchLabels": dict(match)}
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
            "status": {
                "disruptionsAllowed": allowed,
                "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted},
            },
        },
        PodDisruptionBudget,
    )


def victims_on(env: Env, preemptor: Pod, node: str) -> tuple[list[str], int, Status]:
    info = PodInfo(preemptor)
    state, _ = env.diagnose(info)
    row = env.table.row_of(node)
    assert row is not None
    victims, violations, status = env.plugin.select_victims_on_node(
        state.clone(), info, env.table, row, env.handle.pdbs
    )
    return [v.name for v in victims], violations, status


def fingerprint(table: NodeTable) -> Any:
    """What a what-if run must leave exactly as it was: the table and the indexes kept on it."""
    rows = {}
    for name, row in table.index.items():
        node_row = table.rows[row]
        assert node_row is not None
        rows[name] = (
            [(key, id(info)) for key, info in node_row.pods.items()],
            list(node_row.host_ports.items()),
            list(node_row.images.items()),
        )
    # Indexes other plugins keep per pod: the same content (their own order aside).
    index = getattr(table, "pod_index", None)
    groups = {k: dict(g.rows) for k, g in index.groups.items()} if index is not None else None
    affinity = (
        {row: set(pods) for row, pods in index.with_affinity.items()} if index is not None else None
    )
    pvc_refs = {k: dict(v) for k, v in getattr(table, "pvc_refs", {}).items()}
    return (
        rows,
        [(key, list(users.items())) for key, users in table.ports.items()],
        groups,
        affinity,
        pvc_refs,
        list(table.resources),
        table.requested.tolist(),
        table.non_zero_requested.tolist(),
        table.allocatable.tolist(),
        list(table.index.items()),
    )


PREEMPTED = PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")
T0 = "2024-05-01T10:00:00Z"
T1 = "2024-05-01T11:00:00Z"
T2 = "2024-05-01T12:00:00Z"


# --- args ---------------------------------------------------------------------------------


def test_args_default_and_validation() -> None:
    assert DefaultPreemptionArgs.parse({}) == DefaultPreemptionArgs(10, 100)
    assert (
        DefaultPreemptionArgs.parse({"minCandidateNodesPercentage": 0}).min_candidate_nodes_absolute
        == 100
    )
    with pytest.raises(ArgsError) as err:
        DefaultPreemptionArgs.parse({"minCandidateNodesPercentage": 101})
    assert str(err.value) == (
        "minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"
    )
    with pytest.raises(ArgsError) as err:
        DefaultPreemptionArgs.parse({"minCandidateNodesAbsolute": -1})
    assert (
        str(err.value)
        == "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"
    )
    with pytest.raises(ArgsError) as err:
        DefaultPreemptionArgs.parse(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
        )
    assert str(err.value) == (
        "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
        "minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid value: 0: cannot be zero "
        "at the same time as minCandidateNodesPercentage]"
    )


@pytest.mark.parametrize(
    ("percentage", "absolute", "nodes", "expected"),
    [(10, 100, 50, 50), (10, 100, 5000, 500), (10, 100, 500, 100), (40, 3, 10, 4), (0, 3, 2, 2)],
)
def test_number_of_candidates(percentage: int, absolute: int, nodes: int, expected: int) -> None:
    env = setup(
        [make_node("n")],
        args={"minCandidateNodesPercentage": percentage, "minCandidateNodesAbsolute": absolute},
    )
    assert env.plugin.calculate_num_candidates(nodes) == expected


# --- eligibility --------------------------------------------------------------------------


def test_preemption_policy_never_is_not_eligible() -> None:
    env = setup([make_node("n", cpu="2")], [pod("low", cpu="2", node="n")])
    never = pod("p", cpu="2", priority=10, spec={"preemptionPolicy": "Never"})
    nominated, status = env.post_filter(never)
    assert nominated is None  # the nomination is left as it is
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    assert not env.spawned


def test_terminating_victim_on_nominated_node_blocks_more_preemption() -> None:
    victim = pod("low", cpu="2", node="n")
    victim.metadata.deletion_timestamp = T2
    victim.status.conditions = [PREEMPTED]
    env = setup(
        [make_node("n", cpu="2"), make_node("m", cpu="2")], [victim, pod("o", cpu="2", node="m")]
    )
    preemptor = pod("p", cpu="2", priority=10)
    preemptor.status.nominated_node_name = "n"
    nominated, status = env.post_filter(preemptor)
    assert nominated is None
    assert status.message() == (
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    # Deleted by someone else (no DisruptionTarget from a scheduler): preempting goes on.
    plain = msgspec.structs.replace(
        victim, status=msgspec.structs.replace(victim.status, conditions=[])
    )
    env = setup(
        [make_node("n", cpu="2"), make_node("m", cpu="2")], [plain, pod("o", cpu="2", node="m")]
    )
    nominated, status = env.post_filter(preemptor)
    assert status.is_success() and nominated in ("n", "m")


def test_unresolvable_nominated_node_allows_preempting_again() -> None:
    victim = pod("low", cpu="2", node="n")
    victim.metadata.deletion_timestamp = T2
    victim.status.conditions = [PREEMPTED]
    # n is too small for the pod at all: unresolvable, so the terminating pod does not count.
    env = setup(
        [make_node("n", cpu="1"), make_node("m", cpu="2")], [victim, pod("o", cpu="2", node="m")]
    )
    preemptor = pod("p", cpu="2", priority=10)
    preemptor.status.nominated_node_name = "n"
    nominated, status = env.post_filter(preemptor)
    assert status.is_success() and nominated == "m"


# --- messages --------------------------------------------------------------------------------


def test_no_victims_message_counts_every_node() -> None:
    nodes = [make_node(f"n{i}", cpu="4") for i in range(4)]
    env = setup(nodes, [pod(f"big{i}", cpu="3", priority=100, node=f"n{i}") for i in range(4)])
    nominated, status = env.post_filter(pod("p", cpu="3", priority=10))
    assert nominated == ""  # clears a nomination
    assert status.code == Code.UNSCHEDULABLE
    assert status.message() == (
        "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )


def test_unresolvable_nodes_are_not_helped_by_preemption() -> None:
    nodes = [make_node("small", cpu="1"), make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    pods = [
        pod("hi1", cpu="3", priority=100, node="n1"),
        pod("hi2", cpu="3", priority=100, node="n2"),
    ]
    env = setup(nodes, pods)
    _, status = env.post_filter(pod("p", cpu="2", priority=10))
    assert status.message() == (
        "preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod."
    )
    # Every node unresolvable: nothing to try.
    env = setup([make_node("small", cpu="1")])
    nominated, status = env.post_filter(pod("p", cpu="2", priority=10))
    assert nominated == ""
    assert status.message() == (
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )


def test_still_insufficient_after_evicting_everything() -> None:
    nodes = [make_node("n1", cpu="4"), make_node("n2", cpu="4")]
    pods = [
        pod("low1", cpu="1", node="n1"),
        pod("hi1", cpu="3", priority=100, node="n1"),
        pod("low2", cpu="1", node="n2"),
        pod("hi2", cpu="3", priority=100, node="n2"),
    ]
    env = setup(nodes, pods)
    _, status = env.post_filter(pod("p", cpu="2", priority=10))
    assert status.message() == "preemption: 0/2 nodes are available: 2 Insufficient cpu."
