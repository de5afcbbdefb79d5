"""DefaultPreemption against kube-scheduler v1.36: eligibility, victims, reprieve order,
PDBs, the choice of node, the messages, and the node table left exactly as it was."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Pod, PodCondition, PodDisruptionBudget
from kubesched.cluster.memory import InMemoryCluster
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import (
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.node_table import NodeTable
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption import (
    ArgsError,
    Candidate,
    DefaultPreemption,
    DefaultPreemptionArgs,
)
from kubesched.plugins.defaultpreemption.candidates import (
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
    start_time,
)
from kubesched.plugins.registry import default_registry
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
        pdbs=list(pdbs),
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


# --- victims and the reprieve order --------------------------------------------------------


def test_lowest_priority_pods_are_the_victims() -> None:
    env = setup(
        [make_node("n", cpu="4")],
        [
            pod("p2", priority=2, node="n"),
            pod("p0", priority=0, node="n"),
            pod("p1", priority=1, node="n"),
            pod("top", priority=50, node="n"),  # higher than the preemptor: never a victim
        ],
    )
    names, violations, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert status.is_success() and violations == 0
    # Reprieved from the most important: p2 stays, p1 and p0 go (most important first).
    assert names == ["p1", "p0"]


def test_equal_priority_the_older_pod_is_reprieved_first() -> None:
    env = setup(
        [make_node("n", cpu="2")],
        [
            pod("young", node="n", started=T2),
            pod("old", node="n", started=T0),
            pod("unstarted", node="n"),  # not started: counts as started now
        ],
    )
    names, _, status = victims_on(env, pod("x", cpu="1", priority=10), "n")
    assert status.is_success()
    assert names == ["young", "unstarted"]  # "old" keeps its place
    assert (
        start_time(pod("u")) > start_time(pod("t", started=T2)) > start_time(pod("t", started=T0))
    )


def test_pdb_violating_victims_are_reprieved_first() -> None:
    guarded = {"app": "db"}
    env = setup(
        [make_node("n", cpu="3")],
        [
            pod("db-low", priority=0, node="n", labels=guarded),
            pod("web-high", priority=5, node="n"),
            pod("db-mid", priority=3, node="n", labels=guarded),
        ],
        pdbs=[pdb("db", guarded, allowed=1)],
    )
    # The budget allows one db pod to go: db-mid spends it, db-low would violate.
    # Violating pods are reprieved first (db-low keeps its place although it is the
    # least important); then db-mid, then web-high (no room left).
    names, violations, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert status.is_success()
    assert names == ["web-high", "db-mid"]  # sorted by importance again
    assert violations == 0


def test_violations_are_counted_when_the_violating_pod_must_go() -> None:
    guarded = {"app": "db"}
    env = setup(
        [make_node("n", cpu="2")],
        [pod("db", priority=0, node="n", labels=guarded), pod("web", priority=1, node="n")],
        pdbs=[pdb("db", guarded, allowed=0)],
    )
    names, violations, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert status.is_success()
    assert names == ["web", "db"] and violations == 1


def test_no_lower_priority_pods_means_no_victims() -> None:
    env = setup([make_node("n", cpu="2")], [pod("a", cpu="2", priority=10, node="n")])
    names, _, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert names == []
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ["No preemption victims found for incoming pod"]


def test_pod_still_not_fitting_gives_the_filter_verdict() -> None:
    env = setup(
        [make_node("n", cpu="4")],
        [pod("low", cpu="1", node="n"), pod("high", cpu="3", priority=20, node="n")],
    )
    names, _, status = victims_on(env, pod("x", cpu="2", priority=10), "n")
    assert names == [] and status.code == Code.UNSCHEDULABLE
    assert status.reasons == ["Insufficient cpu"] and status.plugin == "NodeResourcesFit"


def test_pdb_matching_rules() -> None:
    a = PodInfo(pod("a", labels={"app": "x"}))
    b = PodInfo(pod("b", labels={"app": "x"}))
    other_ns = PodInfo(make_pod("c", namespace="other", labels={"app": "x"}))
    bare = PodInfo(pod("d"))
    pdbs = [pdb("one", {"app": "x"}, allowed=1)]
    violating, ok = filter_pods_with_pdb_violation([a, b, other_ns, bare], pdbs)
    assert [p.name for p in violating] == ["b"] and [p.name for p in ok] == ["a", "c", "d"]
    # Already disrupted pods spend nothing; empty and missing selectors match nothing.
    disrupted = [pdb("one", {"app": "x"}, allowed=0, disrupted=["a"])]
    assert [p.name for p in filter_pods_with_pdb_violation([a, b], disrupted)[0]] == ["b"]
    assert filter_pods_with_pdb_violation([a, b], [pdb("e", {}, allowed=0)])[0] == []
    assert filter_pods_with_pdb_violation([a, b], [pdb("n", None, allowed=0)])[0] == []


# --- choosing the node ---------------------------------------------------------------------


def _candidate(name: str, *victims: Pod, violations: int = 0) -> Candidate:
    return Candidate(name, 0, [PodInfo(v) for v in victims], violations)


def test_pick_one_node_criteria_in_upstream_order() -> None:
    # 1. fewest PDB violations
    a = _candidate("a", pod("v", priority=1), violations=1)
    b = _candidate("b", pod("v", priority=9), violations=0)
    assert pick_one_node_for_preemption([a, b]).name == "b"
    # 2. lowest highest-victim priority
    a = _candidate("a", pod("v", priority=5), pod("w", priority=0))
    b = _candidate("b", pod("v", priority=4), pod("w", priority=4), pod("x", priority=4))
    assert pick_one_node_for_preemption([a, b]).name == "b"
    # 3. smallest sum of priorities (negative priorities counted from -2^31)
    a = _candidate("a", pod("v", priority=5), pod("w", priority=3))
    b = _candidate("b", pod("v", priority=5), pod("w", priority=1), pod("x", priority=1))
    assert pick_one_node_for_preemption([a, b]).name == "a"
    a = _candidate("a", pod("v", priority=-5), pod("w", priority=-5))
    b = _candidate("b", pod("v", priority=-5))
    assert pick_one_node_for_preemption([a, b]).name == "b"
    # 4. fewest victims
    a = _candidate("a", pod("v", priority=2), pod("w", priority=0), pod("x", priority=0))
    b = _candidate("b", pod("v", priority=2), pod("w", priority=-(2**31) + 2**31))
    assert pick_one_node_for_preemption([a, b]).name == "b"
    # 5. latest start among the highest priority victims
    a = _candidate("a", pod("v", priority=2, started=T0), pod("w", priority=0, started=T2))
    b = _candidate("b", pod("v", priority=2, started=T1), pod("w", priority=0, started=T0))
    assert pick_one_node_for_preemption([a, b]).name == "b"
    # 6. then the first
    a = _candidate("a", pod("v", priority=2, started=T1))
    b = _candidate("b", pod("v", priority=2, started=T1))
    assert pick_one_node_for_preemption([a, b]).name == "a"
    assert pick_one_node_for_preemption([b, a]).name == "b"


def test_post_filter_nominates_the_best_node_and_evicts_there() -> None:
    env = setup(
        [make_node("n1", cpu="2"), make_node("n2", cpu="2"), make_node("n3", cpu="2")],
        [
            pod("a", cpu="2", priority=3, node="n1"),
            pod("b", cpu="2", priority=1, node="n2"),
            pod("c", cpu="2", priority=2, node="n3"),
        ],
    )
    preemptor = pod("p", cpu="2", priority=10, uid="uid-p")
    nominated, status = env.post_filter(preemptor)
    assert status.is_success() and status.message() == ""
    assert nominated == "n2"
    assert set(env.cluster.pods) == {"default/a", "default/b", "default/c"}  # not yet
    env.evict()
    assert env.cluster.evicted == ["default/b"]
    [event] = env.cluster.events
    assert (event.pod, event.type, event.reason) == ("default/b", "Normal", "Preempted")
    assert event.message == "Preempted by pod uid-p on node n2"


def test_victims_get_the_disruption_target_condition_before_deletion() -> None:
    env = setup([make_node("n", cpu="2")], [pod("v", cpu="2", node="n")])
    seen: list[Pod] = []
    delete = env.cluster.delete_pod

    async def spy(victim: Pod, reason: str) -> None:
        seen.append(env.cluster.pods[victim.key])
        await delete(victim, reason)

    env.cluster.delete_pod = spy  # type: ignore[method-assign,assignment]
    _, status = env.post_filter(pod("p", cpu="2", priority=1))
    assert status.is_success()
    env.evict()
    [condition] = seen[0].status.conditions
    assert (condition.type, condition.status, condition.reason) == (
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
    )
    assert condition.message == (
        "default-scheduler: preempting to accommodate a higher priority pod"
    )


def test_lower_priority_nominated_pods_lose_their_nomination() -> None:
    lower = PodInfo(pod("lower", priority=1))
    env = setup(
        [make_node("n", cpu="2")],
        [pod("v", cpu="2", node="n")],
        nominated={"n": [lower]},
    )
    cleared: list[list[str]] = []
    env.handle.clear_nominated_node = lambda pods: cleared.append([p.name for p in pods])
    _, status = env.post_filter(pod("p", cpu="2", priority=5))
    assert status.is_success()
    env.evict()
    assert cleared == [["lower"]]


def test_dry_run_stops_once_it_has_enough_candidates() -> None:
    nodes = [make_node(f"n{i}", cpu="1") for i in range(6)]
    pods = [pod(f"v{i}", node=f"n{i}") for i in range(6)]
    env = setup(
        nodes, pods, args={"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2}
    )
    info = PodInfo(pod("p", priority=1))
    state, diagnosis = env.diagnose(info)
    potential = env.plugin.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
    assert len(potential) == 6
    candidates, statuses = env.plugin.dry_run_preemption(state, info, potential, [], 4, 2)
    names = [env.table.names[r] for r in potential]
    assert [c.name for c in candidates] == [names[4], names[5]]
    assert statuses == {}


def test_violating_candidates_come_after_the_others() -> None:
    guarded = {"app": "db"}
    env = setup(
        [make_node("a", cpu="1"), make_node("b", cpu="1")],
        [pod("db", node="a", labels=guarded), pod("web", priority=5, node="b")],
        pdbs=[pdb("db", guarded, allowed=0)],
    )
    info = PodInfo(pod("p", priority=10))
    state, diagnosis = env.diagnose(info)
    potential = env.plugin.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
    candidates, _ = env.plugin.dry_run_preemption(state, info, potential, env.handle.pdbs, 0, 2)
    assert [(c.name, c.num_pdb_violations) for c in candidates] == [("b", 0), ("a", 1)]
    nominated, _ = env.post_filter(pod("p", priority=10))
    assert nominated == "b"  # fewer violations, despite the higher victim priority


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


# --- nominated pods ----------------------------------------------------------------------------


def test_nominated_pods_of_higher_priority_hold_their_room() -> None:
    waiting = PodInfo(pod("waiting", cpu="2", priority=50))
    env = setup([make_node("n", cpu="3")], [], nominated={"n": [waiting]})
    state = CycleState()
    lower = PodInfo(pod("lower", cpu="2", priority=10))
    env.fw.run_pre_filter(state, lower, env.table)
    feasible, diagnosis = env.fw.run_filters_with_nominated_pods(
        state, lower, env.table, env.table.order()
    )
    assert len(feasible) == 0 and diagnosis.reasons_of(0) == ["Insufficient cpu"]
    # The nominated pod itself, and pods of higher priority, are not held back by it.
    for name, priority in (("waiting", 50), ("higher", 60)):
        other = PodInfo(pod(name, cpu="2", priority=priority))
        env.fw.run_pre_filter(state, other, env.table)
        feasible, _ = env.fw.run_filters_with_nominated_pods(
            state, other, env.table, env.table.order()
        )
        assert len(feasible) == 1


def test_nominated_pods_count_in_the_dry_run() -> None:
    waiting = PodInfo(pod("waiting", cpu="2", priority=50))
    env = setup(
        [make_node("n", cpu="3")], [pod("v", cpu="2", node="n")], nominated={"n": [waiting]}
    )
    nominated, status = env.post_filter(pod("p", cpu="2", priority=10))
    # Evicting v frees 2 cpu, which the nominated pod needs: p cannot fit there.
    assert nominated == "" and status.message() == (
        "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )


def test_prefilter_extensions_see_the_what_if_changes() -> None:
    env = setup(
        [make_node("n", cpu="4")],
        [pod("blocker", node="n", labels={"block": "true"}), pod("other", node="n")],
        extra_plugins=["test-CountBlockers"],
    )
    preemptor = pod("p", priority=10, labels={"wants-alone": "true"})
    names, _, status = victims_on(env, preemptor, "n")
    assert status.is_success() and names == ["blocker"]  # "other" was reprieved

    info = PodInfo(preemptor)
    state, diagnosis = env.diagnose(info)
    assert diagnosis.reasons_of(0) == ["node(s) had a blocker"]
    before = dict(state.read(COUNT_KEY, _Blockers).per_row)
    result, status = env.fw.run_post_filter(state, info, diagnosis)
    assert status.is_success() and result is not None and result.nominated_node_name == "n"
    assert state.read(COUNT_KEY, _Blockers).per_row == before  # dry runs work on clones
    env.evict()
    assert env.cluster.evicted == ["default/blocker"]


# --- the table is left exactly as it was --------------------------------------------------------


def fingerprint(table: NodeTable) -> Any:
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


_pods = st.lists(
    st.tuples(
        st.integers(0, 3),  # node
        st.integers(0, 4),  # priority
        st.sampled_from(["0", "500m", "1", "2"]),  # cpu
        st.sampled_from([0, 0, 80, 443]),  # host port
        st.booleans(),  # block=true
        st.sampled_from([None, T0, T1, T2]),
    ),
    max_size=14,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    node_cpus=st.lists(st.sampled_from(["1", "2", "4"]), min_size=1, max_size=4),
    placed=_pods,
    nominated=_pods,
    preemptor=st.tuples(
        st.integers(1, 5), st.sampled_from(["500m", "1", "2", "3"]), st.sampled_from([0, 80])
    ),
    wants_alone=st.booleans(),
    budget=st.integers(0, 2),
    seed=st.integers(0, 5),
)
def test_dry_runs_leave_the_table_exactly_as_it_was(
    node_cpus: list[str],
    placed: list[tuple[int, int, str, int, bool, str | None]],
    nominated: list[tuple[int, int, str, int, bool, str | None]],
    preemptor: tuple[int, str, int],
    wants_alone: bool,
    budget: int,
    seed: int,
) -> None:
    nodes = [make_node(f"n{i}", cpu=cpu, pods=6) for i, cpu in enumerate(node_cpus)]

    def build(
        prefix: str, i: int, spec: tuple[int, int, str, int, bool, str | None], bound: bool
    ) -> Pod:
        node, priority, cpu, port, block, started = spec
        extra: dict[str, Any] = {}
        if port:
            extra["containers"] = [
                {
                    "name": "c",
                    "resources": {"requests": {"cpu": cpu}},
                    "ports": [{"containerPort": port, "hostPort": port}],
                }
            ]
        return pod(
            f"{prefix}{i}",
            cpu=cpu,
            priority=priority,
            node=f"n{node % len(nodes)}" if bound else "",
            labels={"block": "true", "app": "x"} if block else {"app": "x"},
            started=started,
            spec=extra,
        )

    pods = [build("p", i, drawn, True) for i, drawn in enumerate(placed)]
    by_node: dict[str, list[PodInfo]] = {}
    for i, drawn in enumerate(nominated):
        by_node.setdefault(f"n{drawn[0] % len(nodes)}", []).append(
            PodInfo(build("nom", i, drawn, False))
        )
    env = setup(
        nodes,
        pods,
        pdbs=[pdb("budget", {"app": "x"}, allowed=budget)],
        nominated=by_node,
        seed=seed,
        extra_plugins=["test-CountBlockers"],
    )
    priority, cpu, port = preemptor
    incoming_spec: dict[str, Any] = {}
    if port:
        incoming_spec["containers"] = [
            {
                "name": "c",
                "resources": {"requests": {"cpu": cpu}},
                "ports": [{"containerPort": port, "hostPort": port}],
            }
        ]
    incoming = PodInfo(
        pod(
            "incoming",
            cpu=cpu,
            priority=priority,
            labels={"wants-alone": "true"} if wants_alone else {},
            spec=incoming_spec,
        )
    )
    before = fingerprint(env.table)
    generation = env.table.generation
    state = CycleState()
    env.fw.run_pre_filter(state, incoming, env.table)
    counts = state.read(COUNT_KEY, _Blockers).clone().per_row
    feasible, diagnosis = env.fw.run_filters_with_nominated_pods(
        state, incoming, env.table, env.table.order()
    )
    assert fingerprint(env.table) == before
    for row in env.table.order().tolist():
        victims, _, status = env.plugin.select_victims_on_node(
            state.clone(), incoming, env.table, row, env.handle.pdbs
        )
        assert fingerprint(env.table) == before
        event(f"dry run: {Code(status.code).name}")
        if status.is_success():
            # Without its victims the pod fits; with any one of them back, it does not.
            saved = env.table.save_row(row)
            for victim in victims:
                env.table.remove_pod(victim, row)
            trial = state.clone()
            for victim in victims:
                env.fw.run_pre_filter_extension_remove_pod(trial, incoming, victim, env.table, row)
            assert env.fw.filter_status_with_nominated_pods(
                trial, incoming, env.table, row
            ).is_success()
            for victim in victims:
                env.table.add_pod(victim, row)
                env.fw.run_pre_filter_extension_add_pod(trial, incoming, victim, env.table, row)
                assert not env.fw.filter_status_with_nominated_pods(
                    trial, incoming, env.table, row
                ).is_success()
                env.table.remove_pod(victim, row)
                env.fw.run_pre_filter_extension_remove_pod(trial, incoming, victim, env.table, row)
            env.table.restore_row(saved)
            assert fingerprint(env.table) == before
    if len(feasible) == 0:
        _, status = env.fw.run_post_filter(state, incoming, diagnosis)
        event(f"preemption: {'nominated' if status.is_success() else 'no'}")
        assert fingerprint(env.table) == before
    assert state.read(COUNT_KEY, _Blockers).per_row == counts
    assert env.table.generation >= generation
