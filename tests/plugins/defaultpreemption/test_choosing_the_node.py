"""DefaultPreemption's choice of node against kube-scheduler v1.36: upstream's
criteria in order, the nomination and the evictions that follow (with the
DisruptionTarget condition), the dry run's candidates and their PDB violations.
"""

from __future__ import annotations

import numpy as np

from kubesched.api.objects import Pod
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption import Candidate
from kubesched.plugins.defaultpreemption.candidates import pick_one_node_for_preemption
from kubesched.testing import make_node
from tests.plugins.defaultpreemption.test_defaultpreemption import (
    T0,
    T1,
    T2,
    _close_unrun_evictions,  # noqa: F401 (autouse: closes the evictions left unrun)
    pdb,
    pod,
    setup,
)

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
    potential = env.plugin.evaluator.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
    assert len(potential) == 6
    candidates, statuses = env.plugin.evaluator.dry_run_preemption(state, info, potential, [], 4, 2)
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
    potential = env.plugin.evaluator.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
    candidates, _ = env.plugin.evaluator.dry_run_preemption(
        state, info, potential, env.handle.pdbs, 0, 2
    )
    assert [(c.name, c.num_pdb_violations) for c in candidates] == [("b", 0), ("a", 1)]
    nominated, _ = env.post_filter(pod("p", priority=10))
    assert nominated == "b"  # fewer violations, despite the higher victim priority


def test_nodes_for_status_code_with_and_without_absent_nodes_of_that_code() -> None:
    """NodeToStatus.NodesForStatusCode: with absent nodes of the code, every node in
    the nodes' order but the explicit ones of another code; else the explicit ones
    of the code, in the diagnosis's order."""
    env = setup([make_node(f"n{i}", cpu="1") for i in range(6)], [])
    row = {env.table.names[r]: r for r in env.table.order().tolist()}
    unresolvable, unschedulable = int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), int(Code.UNSCHEDULABLE)
    diagnosis = Diagnosis(
        np.array([row["n4"], row["n1"], row["n2"]], dtype=np.intp),
        np.array([unschedulable, unresolvable, unschedulable], dtype=np.int8),
        ["NodeResourcesFit", "NodeAffinity", "NodeResourcesFit"],
    )

    def names(rows: list[int]) -> list[str]:
        return [env.table.names[r] for r in rows]

    evaluator = env.plugin.evaluator
    assert names(evaluator.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)) == ["n4", "n2"]
    diagnosis.absent_status = Status.unschedulable("x")
    diagnosis.absent_count = 3
    assert names(evaluator.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)) == [
        "n0",
        "n2",
        "n3",
        "n4",
        "n5",
    ]
    assert names(
        evaluator.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
    ) == ["n1"]
