"""plan/patterns.py: the node patterns' bound and answer, on demands written out by
hand and on random ones checked against an exhaustive search."""

from __future__ import annotations

import itertools
import random
from decimal import Decimal

from bench.plan import bench_add
from kubesched.plan.demand import HOSTNAME, Demand, Demands, Rule
from kubesched.plan.ffd import Fit, Packing
from kubesched.plan.patterns import generate, integer_answer

CPU, PODS = 0, 1


def demands(sizes: dict[int, int], rooms: list[int], rules: list[Rule] | None = None) -> Demands:
    """Classes of `count` pods asking `size` cpu each (sizes: size -> count), and
    one pool per room (cpu), every class allowed on every pool."""
    classes = [
        Demand(
            pods=[f"c{size}-{i}" for i in range(count)],
            profile="default-scheduler",
            requests={CPU: size, PODS: 1},
            pools=list(range(len(rooms))),
            host_ports=False,
        )
        for size, count in sizes.items()
    ]
    return Demands(
        classes=classes,
        columns={CPU: "cpu", PODS: "pods"},
        room=[{CPU: room, PODS: 110} for room in rooms],
        port_conflicts=[],
        rules=rules or [],
        labels=[{"zone": f"z{t}"} for t in range(len(rooms))],
    )


def cheapest(d: Demands, cost: list[int], most: int) -> int:
    """The least price that holds every pod, by trying every multiset of up to
    `most` nodes (each filled by an exhaustive first-fit over the pod orders is
    too slow; this checks capacity by a small exact bin assignment)."""
    pods = [size for cls in d.classes for size in [cls.requests[CPU]] * len(cls.pods)]
    best: int | None = None
    pools = range(len(d.room))
    for n in range(1, most + 1):
        for choice in itertools.combinations_with_replacement(pools, n):
            price = sum(cost[t] for t in choice)
            if best is not None and price >= best:
                continue
            if _assign(sorted(pods, reverse=True), [d.room[t][CPU] for t in choice]):
                best = price
    assert best is not None
    return best


def _assign(pods: list[int], free: list[int]) -> bool:
    if not pods:
        return True
    seen: set[int] = set()
    for i, room in enumerate(free):
        if room >= pods[0] and room not in seen:
            seen.add(room)
            free[i] -= pods[0]
            if _assign(pods[1:], free):
                free[i] += pods[0]
                return True
            free[i] += pods[0]
    return False


def test_the_bound_sees_what_one_node_can_hold() -> None:
    """Four pods of 3 cpu on 4-cpu nodes: the pods' cpu (12) would fit three nodes,
    but a node holds one of them, so four are needed, and the bound says so."""
    fit = Fit(demands({3: 4}, [4]))
    generated = generate(fit, [4], [1], 0, Packing(), seconds=5)
    assert generated.converged and generated.per_node
    assert generated.bound == 4
    answer = integer_answer(fit, generated.patterns, [4], [1], Packing(), seconds=5)
    assert answer is not None and len(answer.nodes) == 4 and not answer.left


def test_the_answer_mixes_pools_as_the_bound_does() -> None:
    """Pods of 5, 4, 3, 3, 3 and 2 cpu; nodes of 10 cpu for 5 or of 6 cpu for 4.
    Two big nodes (5 + 3 + 2, 4 + 3 + 3) cost 10; a big and a small one do not
    hold 20 cpu (16); so 10 is the least, and the bound proves it."""
    fit = Fit(demands({5: 1, 4: 1, 3: 3, 2: 1}, [10, 6]))
    generated = generate(fit, [3, 4], [5, 4], 0, Packing(), seconds=5)
    answer = integer_answer(fit, generated.patterns, [3, 4], [5, 4], Packing(), seconds=5)
    assert answer is not None
    assert sorted(n.pool for n in answer.nodes) == [0, 0]
    assert generated.bound == 10


def test_random_demands_bound_below_the_optimum_and_answer_fits() -> None:
    """The bound never passes the exhaustive optimum, even after one round of
    generation; the answer places every pod within each node's cpu."""
    rng = random.Random(11)
    for _ in range(12):
        sizes = {s: rng.randint(1, 3) for s in rng.sample(range(1, 7), rng.randint(1, 3))}
        rooms, cost = [6, 10], [2, 3]
        d = demands(sizes, rooms)
        fit = Fit(d)
        optimum = cheapest(d, cost, sum(sizes.values()))
        first = generate(fit, [8, 8], cost, 0, Packing(), seconds=0)
        full = generate(fit, [8, 8], cost, 0, Packing(), seconds=5)
        assert full.converged
        assert first.bound is not None and full.bound is not None
        assert first.bound <= full.bound <= optimum
        answer = integer_answer(fit, full.patterns, [8, 8], cost, Packing(), seconds=5)
        assert answer is not None and not answer.left
        assert sum(cost[n.pool] for n in answer.nodes) >= optimum
        for node in answer.nodes:
            assert rooms[node.pool] - node.free[CPU] == sum(
                d.classes[c].requests[CPU] * k for c, k in node.pods.items()
            )
            assert node.free[CPU] >= 0
        assert sum(k for n in answer.nodes for k in n.pods.values()) == sum(sizes.values())


def test_anti_affinity_per_node_is_in_the_patterns_and_a_zone_is_not() -> None:
    """A class that repels itself per hostname: one pod per node in every pattern.
    Per zone, the rule spans nodes: the patterns leave it out (the bound only
    weakens) and say they cannot give the answer alone."""
    per_node = Fit(demands({1: 3}, [8], [Rule(owner=0, topology_key=HOSTNAME, matched=[0])]))
    generated = generate(per_node, [3], [1], 0, Packing(), seconds=5)
    assert generated.per_node and generated.bound == 3
    assert all(k == 1 for p in generated.patterns for _, k in p.pods)
    zone = Fit(demands({1: 3}, [8], [Rule(owner=0, topology_key="zone", matched=[0])]))
    generated = generate(zone, [3], [1], 0, Packing(), seconds=5)
    assert not generated.per_node and generated.bound == 1


def test_the_bench_demand_within_two_percent_of_the_bound() -> None:
    """The benchmark's demand at 200 pods: the answer has no more nodes and costs
    no more than first-fit decreasing's, and is at most 2% over the proven bound."""
    row = bench_add(200, timeout=5.0, repeat=1, workers=1, quiet_wait=0)
    solver, estimator = Decimal(row["solver"]["cost"]), Decimal(row["estimator"]["cost"])
    assert solver <= estimator
    assert row["solver"]["nodes"] <= row["estimator"]["nodes"]
    assert row["gap_to_bound"] is not None and row["gap_to_bound"] <= 0.02
    assert row["verified"]["scheduled"] is True
