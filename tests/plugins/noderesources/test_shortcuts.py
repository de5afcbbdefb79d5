"""The cpu-and-memory shortcuts of the resource scorers and Fit's one-look filter
give exactly what the general code gives, and step aside where they must."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import CPU, MEMORY, NodeTable
from kubesched.framework.types import PodInfo
from kubesched.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.plugins.noderesources.args import DEFAULT_RESOURCES, ResourceSpec
from kubesched.plugins.noderesources.resource_allocation import (
    balanced_allocation,
    balanced_allocation_cpu_memory,
    least_allocated,
    least_allocated_cpu_memory,
    node_amounts,
)
from kubesched.testing import make_node, make_pod, make_table


def _random_table(rng: np.random.Generator, n: int) -> NodeTable:
    """A table whose amounts are written directly: every row has cpu and memory."""
    table = NodeTable()
    for i in range(n):
        table.upsert_node(make_node(f"n{i}", cpu=1, memory="1"))
    high = int(rng.choice([10**3, 10**6, 10**12]))
    alloc = rng.integers(1, high, size=(n, 2))
    scale = rng.choice([0.0, 0.5, 1.0, 1.5], size=(n, 1))
    used = (alloc * rng.random((n, 2)) * scale).astype(np.int64)
    rows = np.array([table.row_of(f"n{i}") for i in range(n)], dtype=np.intp)
    table.allocatable[rows, :2] = alloc
    table.requested[rows, :2] = used
    table.non_zero_requested[rows] = used + rng.integers(0, 3, size=(n, 2)) * 100
    return table


@pytest.mark.parametrize("seed", range(20))
def test_the_shortcuts_score_as_the_general_code(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    table = _random_table(rng, n)
    rows = rng.permutation(np.array(list(table.index.values()), dtype=np.intp))
    top = int(table.allocatable[rows, :2].max()) // 4 + 2
    request = [int(rng.integers(0, top)), int(rng.integers(0, top))]
    for weights in ((1, 1), (int(rng.integers(1, 101)), int(rng.integers(1, 101)))):
        specs = [ResourceSpec("cpu", weights[0]), ResourceSpec("memory", weights[1])]
        expected = least_allocated(node_amounts(table, rows, specs, request, False), specs)
        got = least_allocated_cpu_memory(CycleState(), table, rows, weights, request)
        assert got is not None
        np.testing.assert_array_equal(got, expected)
    expected = balanced_allocation(node_amounts(table, rows, DEFAULT_RESOURCES, request, True))
    got = balanced_allocation_cpu_memory(CycleState(), table, rows, request)
    assert got is not None
    np.testing.assert_array_equal(got, expected)


def test_the_shortcuts_step_aside_for_nodes_without_cpu_or_memory_and_negative_amounts() -> None:
    table = make_table([make_node("a"), make_node("b", memory="0")])
    assert table.num_without_cpu_or_memory == 1
    rows = np.array([table.row_of("a"), table.row_of("b")], dtype=np.intp)
    assert least_allocated_cpu_memory(CycleState(), table, rows, (1, 1), [100, 100]) is None
    assert balanced_allocation_cpu_memory(CycleState(), table, rows, [100, 100]) is None
    only_a = rows[:1]
    assert least_allocated_cpu_memory(CycleState(), table, only_a, (1, 1), [100, 100]) is not None
    assert least_allocated_cpu_memory(CycleState(), table, only_a, (1, 1), [-1, 100]) is None
    table.remove_node("b")
    assert table.num_without_cpu_or_memory == 0
    table.upsert_node(make_node("c", cpu="-1"))
    assert table.has_negative
    assert balanced_allocation_cpu_memory(CycleState(), table, only_a, [100, 100]) is None


def test_the_plugins_score_the_same_with_and_without_the_shortcut() -> None:
    nodes = [make_node(f"n{i}", cpu=str(2 + i), memory=f"{4 + 3 * i}Gi") for i in range(6)]
    placed = [
        make_pod(f"p{i}", cpu=f"{300 * i}m", memory=f"{i}Gi", node_name=f"n{i % 6}")
        for i in range(9)
    ]
    placed.append(make_pod("empty", node_name="n2"))  # counted as 100m / 200Mi by Fit
    table = make_table(nodes, placed)
    rows = np.array(sorted(table.index.values()), dtype=np.intp)
    pod = PodInfo(make_pod("incoming", cpu="700m", memory="3Gi"))
    for plugin in (NodeResourcesFit(), NodeResourcesBalancedAllocation()):
        state = CycleState()
        assert plugin.pre_score(state, pod, table, rows).is_success()
        fast = plugin.score(state, pod, table, rows)
        table.has_negative = True  # forces the general path
        slow = plugin.score(CycleState(), pod, table, rows)
        table.has_negative = False
        np.testing.assert_array_equal(fast, slow)


def test_fit_filter_looks_once_and_reports_as_before() -> None:
    nodes = [make_node("roomy"), make_node("full", pods=1), make_node("small", cpu="1")]
    table = make_table(nodes, [make_pod("p", node_name="full")])
    assert list(table.free[table.row_of("full"), [CPU, MEMORY]]) == [4000, 16 * 1024**3]
    plugin = NodeResourcesFit()
    pod = PodInfo(make_pod("incoming", cpu="2"))
    state = CycleState()
    plugin.pre_filter(state, pod, table)
    rows = np.array([table.row_of(n) for n in ("roomy", "full", "small")], dtype=np.intp)
    verdicts = plugin.filter(state, pod, table, rows)
    assert [r for r, mask in verdicts.reasons if mask[1]] == ["Too many pods"]
    assert [r for r, mask in verdicts.reasons if mask[2]] == ["Insufficient cpu"]
    assert not verdicts.codes[0]
    all_pass = plugin.filter(state, pod, table, rows[:1])
    assert not all_pass.codes.any() and not all_pass.reasons


def test_the_table_counts_what_lets_plugins_do_nothing() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    table = make_table([make_node("a"), make_node("b")])
    assert (table.num_tainted, table.num_unschedulable) == (0, 0)
    table.upsert_node(make_node("a", taints=[taint], unschedulable=True))
    assert (table.num_tainted, table.num_unschedulable) == (1, 1)
    table.upsert_node(make_node("c", taints=[taint]))
    assert table.num_tainted == 2
    table.remove_node("a")
    assert (table.num_tainted, table.num_unschedulable) == (1, 0)
    table.upsert_node(make_node("c"))
    assert table.num_tainted == 0


def test_a_binding_coming_back_swaps_the_pod_in_and_counts_it_once() -> None:
    cache = Cache(make_table([make_node("a")]))
    table = cache.table
    row = table.row_of("a")
    assert row is not None
    pod = PodInfo(make_pod("p", cpu="500m", labels={"app": "x"}))
    other = PodInfo(make_pod("q", cpu="100m", node_name="a"))
    cache.assume_pod(pod, "a")
    cache.add_pod(other)
    before = table.requested[row].copy(), table.generation
    bound = msgspec.structs.replace(
        pod.pod, spec=msgspec.structs.replace(pod.pod.spec, node_name="a")
    )
    info = PodInfo(bound, like=cache.pod_info(pod.key))
    assert info.requests is pod.requests
    cache.add_pod(info)
    assert not cache.is_assumed(pod.key)
    np.testing.assert_array_equal(table.requested[row], before[0])
    assert table.generation == before[1] + 2
    assert list(table.pods_on(row)) == [other, info]  # last, as remove + add leaves it
    assert list(cache.placed) == [other.key, pod.key]
    # A change the table counts (labels) goes the long way.
    relabeled = msgspec.structs.replace(
        bound, metadata=msgspec.structs.replace(bound.metadata, labels={"app": "y"})
    )
    assert not table.replace_pod(PodInfo(relabeled, like=info), row)
