"""The batch engine on models too large to solve whole: the neighbourhood search
(kubesched.batch.neighbourhood) and the linear-relaxation bound (kubesched.batch.bound).

Properties on random small clusters (hypothesis), the neighbourhood search forced
on them (its threshold set to 0) with small rounds:
- every pod placed passes the profile's filters, and no priority gets fewer pods
  than greedy gave it;
- the bound at every priority is at least what the engine placed there, and the
  top priority's bound is at least CP-SAT's proven optimum;
- merging equivalent nodes into node classes gives the per-node relaxation's
  bound when the merged nodes are the same, and never a lower one when only
  their filters' verdicts are.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.batch import bound as bound_module
from kubesched.batch import engine, neighbourhood
from kubesched.batch.bound import relaxation_bounds
from kubesched.batch.engine import place_batch
from kubesched.batch.neighbourhood import improve, supported
from kubesched.batch.problem import Problem, build_problem
from kubesched.batch.repair import make_room
from kubesched.batch.solver import solve
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo
from kubesched.simulation.simulator import World, start_session
from kubesched.testing import make_node, make_pod
from tests.unit.batch_helpers import clusters, filter_failures, greedy_then_engine

GPU = "nvidia.com/gpu"


@contextmanager
def by_neighbourhoods(round_variables: int = 12) -> Iterator[None]:
    """Every model solved by neighbourhoods, of about `round_variables` variables."""
    with (
        mock.patch.object(engine, "WHOLE_MODEL_VARIABLES", 0),
        mock.patch.object(neighbourhood, "_ROUND_VARIABLES", round_variables),
    ):
        yield


def _anti(app: str, key: str = "kubernetes.io/hostname") -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    return {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    }


def _by_priority(pods: Sequence[Pod], placed: Sequence[str]) -> dict[int, int]:
    priority = {p.key: p.spec.priority or 0 for p in pods}
    counts = dict.fromkeys(priority.values(), 0)
    for key in placed:
        counts[priority[key]] += 1
    return counts


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(min_nodes=2, max_nodes=6, max_pods=14))
def test_by_neighbourhoods_every_pod_passes_the_filters_never_below_greedy_nor_the_bound(
    cluster: tuple[list[Node], list[Pod]],
) -> None:
    nodes, pods = cluster
    with by_neighbourhoods():
        greedy, comparison = greedy_then_engine(nodes, pods, timeout=0.3)
    batch = comparison.batch
    assert filter_failures(nodes, pods, batch.placements) == []
    by_greedy = _by_priority(pods, [k for k, n in greedy.placements.items() if n])
    by_engine = _by_priority(pods, list(batch.placements))
    for level, count in by_greedy.items():
        assert by_engine[level] >= count, (level, by_engine, by_greedy)
    # A bound at every priority, whichever way the model was solved.
    assert set(batch.bound) == set(by_engine)
    for level, count in by_engine.items():
        assert batch.bound[level] >= count, (level, batch.bound, by_engine)


def _problem(nodes: Sequence[Node], pods: Sequence[Pod]) -> tuple[Problem, NodeTable]:
    async def build() -> tuple[Problem, NodeTable]:
        session = start_session(World(nodes, [], [ProfileConfig.default()]), 1, 0)
        fw = session.scheduler.frameworks["default-scheduler"]
        table = session.scheduler.table
        return build_problem(fw, table, [PodInfo(p) for p in pods]), table

    return asyncio.run(build())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(min_nodes=2, max_nodes=6, max_pods=14))
def test_the_top_prioritys_bound_is_at_least_the_proven_optimum(
    cluster: tuple[list[Node], list[Pod]],
) -> None:
    nodes, pods = cluster
    problem, _ = _problem(nodes, pods)
    nothing: list[dict[int, int]] = [{} for _ in problem.classes]
    solution = solve(problem, nothing, timeout=5.0)
    assert solution is not None
    top = max(cls.priority for cls in problem.classes)
    optimum = sum(
        sum(counts.values())
        for cls, counts in zip(problem.classes, solution.counts, strict=True)
        if cls.priority == top
    )
    bounds = relaxation_bounds(problem, nothing, {})
    assert bounds[top] >= optimum
    if solution.status == "optimal":
        # CP-SAT's own bound is the optimum; the relaxation can only be looser.
        assert bounds[top] >= solution.bounds[top]


@st.composite
def alike_clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod]]:
    """Nodes of two or three shapes, several of each: what node classes merge."""
    shapes = draw(
        st.lists(st.tuples(st.integers(2, 8), st.integers(4, 32)), min_size=1, max_size=3)
    )
    nodes = []
    for s, (cpu, memory) in enumerate(shapes):
        for i in range(draw(st.integers(1, 5))):
            name = f"s{s}-{i}"
            nodes.append(
                make_node(
                    name,
                    cpu=str(cpu),
                    memory=f"{memory}Gi",
                    labels={"kubernetes.io/hostname": name},
                )
            )
    pods = [
        make_pod(
            f"p{i}",
            cpu=str(draw(st.integers(1, 6))),
            memory=f"{draw(st.integers(1, 16))}Gi",
            priority=draw(st.sampled_from([0, 100])),
        )
        for i in range(draw(st.integers(1, 30)))
    ]
    return nodes, pods


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(alike_clusters())
def test_node_classes_give_the_per_node_relaxations_bound(
    cluster: tuple[list[Node], list[Pod]],
) -> None:
    nodes, pods = cluster
    problem, _ = _problem(nodes, pods)
    nothing: list[dict[int, int]] = [{} for _ in problem.classes]
    per_node = relaxation_bounds(problem, nothing, {}, merge_nodes=False)
    merged = relaxation_bounds(problem, nothing, {})
    assert merged == per_node
    # Merged by the filters' verdicts alone (nodes of different sizes together):
    # looser, never tighter.
    with mock.patch.object(bound_module, "_MAX_NODE_CLASSES", 0):
        coarse = relaxation_bounds(problem, nothing, {})
    for priority, count in per_node.items():
        assert coarse[priority] >= count


def _fragmenting(nodes: int = 12) -> tuple[list[Node], list[Pod]]:
    """Small pods that LeastAllocated spreads over every node, then large ones."""
    cluster = [
        make_node(f"n{i}", cpu="8", memory="32Gi", labels={"kubernetes.io/hostname": f"n{i}"})
        for i in range(nodes)
    ]
    pods = [make_pod(f"small-{i}", cpu="1", memory="2Gi") for i in range(4 * nodes)]
    pods += [make_pod(f"big-{i}", cpu="6", memory="8Gi") for i in range(nodes)]
    return cluster, pods


def test_neighbourhoods_place_more_than_greedy_and_say_so() -> None:
    nodes, pods = _fragmenting()
    with by_neighbourhoods(round_variables=8):
        greedy, comparison = greedy_then_engine(nodes, pods, timeout=1.0)
    batch = comparison.batch
    assert batch.source == "engine"
    assert batch.total > greedy.scheduled
    assert "by neighbourhoods" in batch.note
    assert filter_failures(nodes, pods, batch.placements) == []
    assert sum(batch.bound.values()) >= batch.total


@pytest.mark.parametrize("quick_pass", [True, False])
def test_improve_never_lowers_a_priority_and_keeps_every_node_within_its_room(
    quick_pass: bool,
) -> None:
    """With the quick pass that moves pods (repair.py), and with the CP-SAT rounds alone."""
    nodes, pods = _fragmenting(nodes=6)
    pods += [make_pod(f"top-{i}", cpu="5", memory="4Gi", priority=1000) for i in range(3)]
    problem, _ = _problem(nodes, pods)
    # A start as greedy leaves it: the small pods spread, one per node in turn.
    start: list[dict[int, int]] = [{} for _ in problem.classes]
    small = next(
        c
        for c, cls in enumerate(problem.classes)
        if cls.representative.pod.metadata.name.startswith("small")
    )
    rows = problem.live_rows.tolist()
    for i in range(4 * len(rows)):
        row = rows[i % len(rows)]
        start[small][row] = start[small].get(row, 0) + 1
    with (
        mock.patch.object(neighbourhood, "_ROUND_VARIABLES", 6),
        mock.patch.object(neighbourhood, "make_room", make_room if quick_pass else _no_room),
    ):
        counts, gains = improve(problem, start, deadline=_in(0.5))
    placed = {cls.priority: 0 for cls in problem.classes}
    for cls, rows_of in zip(problem.classes, counts, strict=True):
        placed[cls.priority] += sum(rows_of.values())
        assert sum(rows_of.values()) <= len(cls.pods)
        assert set(rows_of) <= set(cls.rows.tolist())
    assert placed[0] >= 4 * len(rows)
    assert placed[1000] > 0 and gains > 0
    for row in rows:
        for col in range(problem.free.shape[1]):
            asked = sum(
                cls.requests.get(col, 0) * counts[c].get(row, 0)
                for c, cls in enumerate(problem.classes)
            )
            assert asked <= max(int(problem.free[row, col]), 0)


def _no_room(*args: object, **kwargs: object) -> int:
    return 0


def _in(seconds: float) -> float:
    return time.perf_counter() + seconds


def test_wider_anti_affinity_domains_are_solved_whole() -> None:
    nodes = [
        make_node(f"n{i}", cpu="4", labels={"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 2}"})
        for i in range(4)
    ]
    by_host = [make_pod(f"h{i}", cpu="1", labels={"app": "h"}, spec=_anti("h")) for i in range(3)]
    by_zone = [
        make_pod(f"z{i}", cpu="1", labels={"app": "z"}, spec=_anti("z", "zone")) for i in range(3)
    ]
    assert supported(_problem(nodes, by_host)[0])
    assert not supported(_problem(nodes, by_zone)[0])
    with by_neighbourhoods():
        _, comparison = greedy_then_engine(nodes, by_zone, timeout=1.0)
    assert "neighbourhoods" not in comparison.batch.note
    # Two zones: at most one pod of the three in each.
    assert comparison.batch.total == 2
    assert filter_failures(nodes, by_zone, comparison.batch.placements) == []


def test_place_batch_reports_a_bound_at_every_priority() -> None:
    nodes, pods = _fragmenting(nodes=4)
    pods += [make_pod("top", cpu="7", memory="1Gi", priority=1000)]

    async def run() -> None:
        session = start_session(World(nodes, [], [ProfileConfig.default()]), 1, 0)
        fw = session.scheduler.frameworks["default-scheduler"]
        table = session.scheduler.table
        batch = [PodInfo(p) for p in pods]
        result = place_batch(fw, table, batch, {}, timeout=1.0)
        assert result.placed == {1000: 1, 0: 17}
        # 4 nodes of 8 cpu, the top pod (7 cpu) placed: 25 cpu left for 16 pods of
        # 1 cpu and 4 of 6, so at most 16 + 1 of them (17.5 by volume).
        assert result.bound == {1000: 1, 0: 17}

    asyncio.run(run())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(min_nodes=2, max_nodes=6, max_pods=14))
def test_making_room_moves_pods_within_their_rows_and_room_and_drops_none(
    cluster: tuple[list[Node], list[Pod]],
) -> None:
    nodes, pods = cluster
    problem, _ = _problem(nodes, pods)
    columns = np.array(sorted({c for cls in problem.classes for c in cls.requests}), np.intp)
    asks = np.array(
        [[cls.requests.get(c, 0) for c in columns.tolist()] for cls in problem.classes], np.int64
    )
    # Start: each class's pods on its rows in turn, as far as the room goes.
    counts: list[dict[int, int]] = [{} for _ in problem.classes]
    used = np.zeros((problem.capacity, len(columns)), np.int64)
    for c, cls in enumerate(problem.classes):
        for i in range(len(cls.pods)):
            for row in np.roll(cls.rows, -i).tolist():
                if (used[row] + asks[c] <= problem.free[row, columns]).all():
                    counts[c][row] = counts[c].get(row, 0) + 1
                    used[row] += asks[c]
                    break
    before = [sum(rows.values()) for rows in counts]
    placed = make_room(problem, counts, used, asks, columns, deadline=_in(5.0))
    after = [sum(rows.values()) for rows in counts]
    assert sum(after) == sum(before) + placed
    for c, cls in enumerate(problem.classes):
        assert before[c] <= after[c] <= len(cls.pods)
        assert set(counts[c]) <= set(cls.rows.tolist())
        if cls.held or cls.representative.host_ports:
            assert after[c] == before[c]
    now = np.zeros_like(used)
    for c, rows in enumerate(counts):
        for row, n in rows.items():
            now[row] += asks[c] * n
    for row in problem.live_rows.tolist():
        assert (now[row] <= np.maximum(problem.free[row, columns], 0)).all()


def test_making_room_places_the_large_pods_greedy_left_pending() -> None:
    nodes, pods = _fragmenting(nodes=6)
    problem, _ = _problem(nodes, pods)
    columns = np.array(sorted({c for cls in problem.classes for c in cls.requests}), np.intp)
    asks = np.array(
        [[cls.requests.get(c, 0) for c in columns.tolist()] for cls in problem.classes], np.int64
    )
    small, big = (
        next(c for c, k in enumerate(problem.classes) if k.representative.key.endswith(name))
        for name in ("small-0", "big-0")
    )
    # As LeastAllocated leaves it: 4 small pods (1 cpu) on each node of 8 cpu.
    rows = problem.live_rows.tolist()
    counts: list[dict[int, int]] = [{} for _ in problem.classes]
    counts[small] = dict.fromkeys(rows, 4)
    used = np.zeros((problem.capacity, len(columns)), np.int64)
    for row in rows:
        used[row] = asks[small] * 4
    placed = make_room(problem, counts, used, asks, columns, deadline=_in(5.0))
    # 6 nodes × 8 cpu: 24 small (24 cpu) leave 24, which 4 big pods (6 cpu) fill
    # once the small ones share nodes: 4 nodes of 1 big + 2 small, 2 nodes of 8 small.
    assert placed == 4
    assert sum(counts[big].values()) == 4
    assert sum(counts[small].values()) == 24
