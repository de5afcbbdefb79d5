"""`kubesched plan --add-nodes` on in-memory clusters, against answers computed by hand."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.framework.profile import ProfileConfig
from kubesched.plan import NodePool, PlanResult, plan_add_nodes
from kubesched.simulation.simulator import World
from kubesched.testing import make_node, make_pod


def pool(
    name: str,
    *,
    price: str | None = None,
    max: int | None = None,
    taints: list[dict[str, str]] | None = None,
    extra: dict[str, str] | None = None,
    **allocatable: str,
) -> NodePool:
    resources = {"pods": "110", **allocatable, **(extra or {})}
    node = msgspec.convert(
        {"spec": {"taints": taints or []}, "status": {"allocatable": resources}}, Node
    )
    return NodePool(name, node, None if price is None else Decimal(price), max)


def run(
    pools: list[NodePool], pods: list[Pod], nodes: list[Node] | None = None, timeout: float = 5.0
) -> PlanResult:
    world = World(nodes or [], pods, [ProfileConfig.default()])
    return plan_add_nodes(world, pools, timeout=timeout, workers=1)


def per_pool(answer: Any) -> dict[str, int]:
    return {use.pool: use.nodes for use in answer.pools}


def test_cheapest_mix_of_gpu_and_cpu_nodes() -> None:
    """gpu: 16 cpu, 64Gi, 4 nvidia.com/gpu at 3; cpu: 8 cpu, 32Gi at 1.

    Five training pods ask 1 GPU, 2 cpu, 8Gi each; six web pods 3 cpu, 2Gi.
    The five GPUs need two gpu nodes (cost 6 at least: the lower bound). Those
    two have 32 - 10 = 22 cpu left, room for the six web pods if they split
    2 + 4 (node 1: 4 training pods, 8 + 6 cpu; node 2: 1 training pod, 2 + 12 cpu):
    the optimum is two gpu nodes, cost 6.

    cluster-autoscaler's loop takes the cheapest option per pod first: the cpu
    pool hosts the six web pods on three nodes (cost 3, 0.5 a pod), cheaper per
    pod than the gpu pool's two nodes for all eleven (6/11); then two gpu nodes
    for the training pods: cost 9, five nodes."""
    train = [
        make_pod(
            f"train-{i}",
            namespace="ml",
            requests={"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": 1},
        )
        for i in range(5)
    ]
    web = [make_pod(f"web-{i}", namespace="shop", cpu="3", memory="2Gi") for i in range(6)]
    pools = [
        pool("gpu", price="3", cpu="16", memory="64Gi", extra={"nvidia.com/gpu": "4"}),
        pool("cpu", price="1", cpu="8", memory="32Gi"),
    ]
    result = run(pools, [*train, *web])
    assert per_pool(result.solver) == {"gpu": 2}
    assert result.solver.total_cost == "6"
    assert result.solver_status == "optimal"
    assert result.lower_bound == "6"
    # The linear relaxation: 5/4 gpu nodes (3.75) have 20 - 10 = 10 cpu for 10/3 web
    # pods; the other 8/3 go 2 to a cpu node (8 // 3), 4/3 nodes: 5.08, 6 in whole units.
    assert result.pattern_bound == "6"
    assert per_pool(result.estimator) == {"gpu": 2, "cpu": 3}
    assert result.estimator.total_cost == "9"
    # Training pods only ever on gpu nodes.
    for node in result.solver.nodes:
        assert node.pool == "gpu"
    placed = sorted(p for node in result.solver.nodes for p in node.pods)
    assert placed == sorted(p.key for p in [*train, *web])
    assert result.verification.scheduled
    assert result.verification.rounds == 1
    assert [n.name for n in result.verified.nodes] == ["gpu-1", "gpu-2"]


def test_pod_no_pool_fits_has_the_filters_reasons() -> None:
    """32 cpu fits neither pool (8 and 16 cpu), and the gpu pool's taint is not
    tolerated: FailedScheduling's text over one fresh node of each pool."""
    pools = [
        pool("small", price="1", cpu="8", memory="32Gi"),
        pool(
            "gpu",
            price="3",
            cpu="16",
            memory="64Gi",
            taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
        ),
    ]
    huge = make_pod("huge", cpu="32", memory="1Gi")
    small = make_pod("small", cpu="1", memory="1Gi")
    result = run(pools, [huge, small])
    assert [u.pod for u in result.unplaceable] == ["default/huge"]
    unplaceable = result.unplaceable[0]
    assert unplaceable.message == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)."
    )
    assert unplaceable.reasons == {
        "small": ["Insufficient cpu"],
        "gpu": ["node(s) had untolerated taint(s)"],
    }
    # The other pod is planned as usual, and the unplaceable one is not "left out".
    assert per_pool(result.solver) == {"small": 1}
    assert result.solver.left_out == []
    assert result.verification.scheduled


def test_without_prices_the_fewest_nodes() -> None:
    """Eight pods of 2 cpu (16 cpu): one 16-cpu node, or four 4-cpu ones. Without
    prices the answer is the fewest nodes, one big; priced 1 (small) and 5 (big),
    four small ones (4) beat one big (5)."""
    pods = [make_pod(f"p-{i}", cpu="2", memory="1Gi") for i in range(8)]
    unpriced = [pool("small", cpu="4", memory="16Gi"), pool("big", cpu="16", memory="64Gi")]
    result = run(unpriced, pods)
    assert per_pool(result.solver) == {"big": 1}
    assert result.solver.total_cost is None
    assert result.lower_bound == "1"
    priced = [
        pool("small", price="1", cpu="4", memory="16Gi"),
        pool("big", price="5", cpu="16", memory="64Gi"),
    ]
    result = run(priced, pods)
    assert per_pool(result.solver) == {"small": 4}
    assert result.solver.total_cost == "4"


def test_solver_beats_first_fit_decreasing() -> None:
    """Nodes of 10 cpu; pods of 5, 4, 3, 3, 3 and 2 cpu (20 in all). First-fit
    decreasing puts 5 + 4 on the first node, 3 + 3 + 3 on the second, and the 2
    fits neither (11 > 10): three nodes. Two suffice: 5 + 3 + 2 and 4 + 3 + 3,
    and two is the bound (20 cpu on 10-cpu nodes)."""
    sizes = [5, 4, 3, 3, 3, 2]
    pods = [make_pod(f"p-{i}", cpu=str(s), memory="1Gi") for i, s in enumerate(sizes)]
    result = run([pool("n", cpu="10", memory="64Gi")], pods)
    assert result.estimator.total_nodes == 3
    assert result.solver.total_nodes == 2
    assert result.lower_bound == "2"
    assert result.pattern_bound == "2"
    loads = sorted(
        sum(sizes[int(p.rsplit("-", 1)[1])] for p in node.pods) for node in result.solver.nodes
    )
    assert loads == [10, 10]


def test_never_worse_than_the_estimator_under_any_time_limit() -> None:
    """With a time limit too short to search, the estimator's answer is kept."""
    sizes = [7, 6, 5, 4, 4, 3, 3, 2, 2, 2, 1, 1] * 3
    pods = [make_pod(f"p-{i}", cpu=str(s), memory="1Gi") for i, s in enumerate(sizes)]
    pools = [
        pool("a", price="2", cpu="10", memory="64Gi"),
        pool("b", price="3", cpu="16", memory="64Gi"),
    ]
    for timeout in (0.001, 2.0):
        result = run(pools, pods, timeout=timeout)
        assert Decimal(result.solver.total_cost or 0) <= Decimal(result.estimator.total_cost or 0)
        assert not result.solver.left_out


def test_existing_nodes_first_and_pool_maximum() -> None:
    """The existing 4-cpu node takes two 2-cpu pods; the other four need 8 cpu. The
    pool (4 cpu) allows one node: two pods are left out, and the verification
    says they stay pending."""
    pods = [make_pod(f"p-{i}", cpu="2", memory="1Gi") for i in range(6)]
    existing = [make_node("old-1", cpu="4", labels={"kubernetes.io/hostname": "old-1"})]
    result = run([pool("n", cpu="4", memory="16Gi", max=1)], pods, nodes=existing)
    assert len(result.placed_on_existing) == 2
    assert result.solver.total_nodes == 1
    assert len(result.solver.left_out) == 2
    assert not result.verification.scheduled
    assert len(result.verification.pending) == 2


def test_required_anti_affinity_one_pod_per_node() -> None:
    """Three replicas that repel each other by hostname need three nodes, however
    small they are."""
    anti = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "db"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    }
    pods = [
        make_pod(f"db-{i}", cpu="100m", memory="1Gi", labels={"app": "db"}, spec=anti)
        for i in range(3)
    ]
    result = run([pool("n", cpu="8", memory="32Gi")], pods)
    assert result.solver.total_nodes == 3
    assert result.estimator.total_nodes == 3
    assert result.verification.scheduled


def test_topology_spread_is_not_packed_but_verified() -> None:
    """A DoNotSchedule spread constraint is not modelled: the pod is listed as not
    packed, and the verification adds the node it needs."""
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "s"}},
            }
        ]
    }
    pods = [make_pod("s-0", cpu="1", memory="1Gi", labels={"app": "s"}, spec=spread)]
    result = run([pool("n", price="1", cpu="8", memory="32Gi")], pods)
    assert [p.pod for p in result.not_packed] == ["default/s-0"]
    assert result.solver.total_nodes == 0
    assert result.verification.scheduled
    assert result.verification.added == ["n-1"]
    assert result.verified.total_cost == "1"


def test_verification_adds_a_node_when_scoring_spreads_the_pods() -> None:
    """Nodes of 4 cpu; pods of 2, 2, 2, 3 and 3 cpu, queued in that order. The
    packing needs four nodes (2 + 2, 2, 3, 3: a 3 shares with nothing). The
    scheduler's LeastAllocated scoring spreads the three 2-cpu pods over three
    nodes; the first 3-cpu pod takes the fourth and the second fits nowhere. The
    verification adds a fifth node for it, and the next run places every pod."""
    sizes = [2, 2, 2, 3, 3]
    pods = [make_pod(f"p-{i}", cpu=str(s), memory="1Gi") for i, s in enumerate(sizes)]
    result = run([pool("n", cpu="4", memory="16Gi")], pods)
    assert result.solver.total_nodes == 4
    assert result.verification.scheduled
    assert result.verification.rounds == 2
    assert result.verification.added == ["n-5"]
    assert result.verified.total_nodes == 5
    assert sorted(len(node.pods) for node in result.verified.nodes) == [1, 1, 1, 1, 1]


def test_random_cases_solver_within_estimator_and_capacity() -> None:
    """Random pods on two priced pools: the solver's answer never costs more than
    the estimator's, places every pod, and fills no node past its cpu."""
    rng = random.Random(7)
    pools = [
        pool("a", price="2", cpu="6", memory="64Gi"),
        pool("b", price="3.5", cpu="10", memory="64Gi"),
    ]
    room = {"a": 6, "b": 10}
    for case in range(4):
        sizes = [rng.randint(1, 6) for _ in range(rng.randint(5, 14))]
        pods = [make_pod(f"p{case}-{i}", cpu=str(s), memory="1Gi") for i, s in enumerate(sizes)]
        result = run(pools, pods, timeout=1.0)
        solver, estimator = result.solver, result.estimator
        assert Decimal(solver.total_cost or 0) <= Decimal(estimator.total_cost or 0)
        assert not solver.left_out
        assert sum(len(n.pods) for n in solver.nodes) == len(pods)
        for node in solver.nodes:
            used = sum(sizes[int(p.rsplit("-", 1)[1])] for p in node.pods)
            assert used <= room[node.pool]
        if result.lower_bound is not None:
            assert Decimal(result.lower_bound) <= Decimal(solver.total_cost or 0)
        assert Decimal(result.pattern_bound or 0) <= Decimal(solver.total_cost or 0)


def test_the_estimators_plan_when_it_verifies_cheaper() -> None:
    """Pods of 4, 3, 3, 4, 3, 1 and 2 cpu (20); nodes of 8 cpu at 1 or 12 cpu at
    1.8. The solver's plan is one of each (2.8, exactly 20 cpu); the estimator's,
    three 8-cpu nodes (3, 4 cpu spare). Queued in that order, the pods are spread
    by LeastAllocated scoring so that the tight plan leaves a pod pending, and the
    node added for it brings its cost past 3; the estimator's three nodes hold every
    pod as they are. The verified answer is the cheaper: the estimator's."""
    sizes = [4, 3, 3, 4, 3, 1, 2]
    pods = [make_pod(f"p-{i}", cpu=str(s), memory="1Gi") for i, s in enumerate(sizes)]
    pools = [
        pool("a", price="1", cpu="8", memory="64Gi"),
        pool("b", price="1.8", cpu="12", memory="64Gi"),
    ]
    result = run(pools, pods)
    assert result.solver.total_cost == "2.8"
    assert result.estimator.total_cost == "3"
    assert result.verification.plan == "estimator"
    assert result.verification.scheduled and result.verification.rounds == 1
    assert result.verified.total_cost == "3" and per_pool(result.verified) == {"a": 3}
