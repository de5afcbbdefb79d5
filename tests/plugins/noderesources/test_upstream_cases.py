"""NodeResourcesFit and NodeResourcesBalancedAllocation scores on the cases of the
v1.36.3 upstream tests (LeastAllocated, MostAllocated, RequestedToCapacityRatio with
bin packing on extended resources, BalancedAllocation), expected scores as upstream
states them.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.objects import Node, Pod
from kubesched.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.testing import make_pod
from tests.plugins.noderesources.test_noderesources import make_table, rtcr, run_score

Gi = 1024**3
Mi = 1024**2


# --- cases ported from the v1.36.3 upstream tests -----------------------------------------
#
# least_allocated_test.go, most_allocated_test.go, requested_to_capacity_ratio_test.go and
# balanced_allocation_test.go, with the expected scores as upstream states them. Upstream
# pods are built container by container (st.MakePod().Req(a).Req(b) has two containers;
# st.MakePod().Obj() has none). Node amounts are given in API form.

Reqs = dict[str, str]
NodeSpec = tuple[str, dict[str, str]]


def upstream_pod(name: str, containers: list[Reqs], node: str = "") -> Pod:
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "resources": {"requests": reqs}} for i, reqs in enumerate(containers)
        ]
    }
    return make_pod(name, node_name=node, spec=spec)


def upstream_node(name: str, capacity: dict[str, str]) -> Node:
    return msgspec.convert(
        {"metadata": {"name": name}, "status": {"capacity": capacity, "allocatable": capacity}},
        Node,
    )


def run_upstream_case(
    plugin: Any, pod: list[Reqs], nodes: list[NodeSpec], existing: list[tuple[str, list[Reqs]]]
) -> list[int]:
    table = make_table(
        [upstream_node(n, cap) for n, cap in nodes],
        [upstream_pod(f"e{i}", reqs, node) for i, (node, reqs) in enumerate(existing)],
    )
    return run_score(plugin, upstream_pod("p", pod), table, *(n for n, _ in nodes))


TWO = [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]
N4 = {"cpu": "4000", "memory": "10000"}
N6 = {"cpu": "6000", "memory": "10000"}
N10 = {"cpu": "10000", "memory": "20000"}
XYZ = "abc.com/xyz"
EXTENDED_SET = [{"name": "cpu"}, {"name": "memory"}, {"name": XYZ}]
XYZ_FIRST = [{"name": XYZ, "weight": 2}, {"name": "cpu"}, {"name": "memory"}]
MEM2_CPU1 = [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]
CPU_ONLY_PODS = [{"cpu": "3000", "memory": "0"}]

LEAST_CASES: list[tuple[str, Any, list[Reqs], list[NodeSpec], list[Any], list[int]]] = [
    ("nothing requested", None, [], [("node1", N4), ("node2", N4)], [], [100, 100]),
    ("differently sized nodes", None, TWO, [("node1", N4), ("node2", N6)], [], [37, 50]),
    (
        "no requests, empty pods scheduled",
        None,
        [],
        [("node1", N4), ("node2", N4)],
        [("node1", []), ("node1", []), ("node2", []), ("node2", [])],
        [100, 100],
    ),
    (
        "no requests, pods scheduled with resources",
        None,
        [],
        [("node1", N10), ("node2", N10)],
        [
            ("node1", CPU_ONLY_PODS),
            ("node1", CPU_ONLY_PODS),
            ("node2", CPU_ONLY_PODS),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        [70, 57],
    ),
    (
        "requests, pods scheduled with resources",
        None,
        TWO,
        [("node1", N10), ("node2", N10)],
        [("node1", CPU_ONLY_PODS), ("node2", [{"cpu": "3000", "memory": "5000"}])],
        [57, 45],
    ),
    (
        "requests, differently sized nodes with pods",
        None,
        TWO,
        [("node1", N10), ("node2", {"cpu": "10000", "memory": "50000"})],
        [("node1", CPU_ONLY_PODS), ("node2", [{"cpu": "3000", "memory": "5000"}])],
        [57, 60],
    ),
    (
        "requests exceed capacity",
        None,
        CPU_ONLY_PODS,
        [("node1", N4), ("node2", N4)],
        [("node1", CPU_ONLY_PODS), ("node2", [{"cpu": "3000", "memory": "5000"}])],
        [50, 25],
    ),
    (
        "zero node resources",
        None,
        [],
        [("node1", {}), ("node2", {})],
        [("node1", CPU_ONLY_PODS), ("node2", [{"cpu": "3000", "memory": "5000"}])],
        [0, 0],
    ),
    ("weights", MEM2_CPU1, TWO, [("node1", N4), ("node2", N6)], [], [41, 50]),
    (
        "bypass extended resource the pod does not request",
        EXTENDED_SET,
        TWO,
        [("node1", N6), ("node2", {**N6, XYZ: "4"})],
        [],
        [50, 50],
    ),
    (
        "honor extended resource the pod requests",
        EXTENDED_SET,
        [{"cpu": "3000", "memory": "5000", XYZ: "2"}],
        [("node1", {**N6, XYZ: "4"}), ("node2", {**N6, XYZ: "10"})],
        [],
        [50, 60],
    ),
    (
        "node without the resource",
        XYZ_FIRST,
        [{"cpu": "3000", "memory": "4000"}],
        [("node1", N6), ("node2", {**N6, XYZ: "4"})],
        [],
        [55, 55],
    ),
]


@pytest.mark.parametrize(
    ("resources", "pod", "nodes", "existing", "want"),
    [case[1:] for case in LEAST_CASES],
    ids=[case[0] for case in LEAST_CASES],
)
def test_upstream_least_allocated(
    resources: list[dict[str, Any]] | None,
    pod: list[Reqs],
    nodes: list[NodeSpec],
    existing: list[tuple[str, list[Reqs]]],
    want: list[int],
) -> None:
    strategy: dict[str, Any] = {"type": "LeastAllocated"}
    if resources:
        strategy["resources"] = resources
    fit = NodeResourcesFit({"scoringStrategy": strategy})
    assert run_upstream_case(fit, pod, nodes, existing) == want


MOST_CASES: list[tuple[str, Any, list[Reqs], list[NodeSpec], list[Any], list[int]]] = [
    ("nothing requested", None, [], [("node1", N4), ("node2", N4)], [], [0, 0]),
    ("differently sized nodes", None, TWO, [("node1", N4), ("node2", N6)], [], [62, 50]),
    (
        "no requests, pods scheduled with resources",
        None,
        [],
        [("node1", N10), ("node2", N10)],
        [
            ("node1", CPU_ONLY_PODS),
            ("node1", CPU_ONLY_PODS),
            ("node2", CPU_ONLY_PODS),
            ("node2", [{"cpu": "3000", "memory": "5000"}]),
        ],
        [30, 42],
    ),
    (
        "requests, pods scheduled with resources",
        None,
        TWO,
        [("node1", N10), ("node2", N10)],
        [("node1", CPU_ONLY_PODS), ("node2", [{"cpu": "3000", "memory": "5000"}])],
        [42, 55],
    ),
    (
        "requests equal node capacity",
        None,
        [{"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}],
        [
            ("node1", {"cpu": "5000", "memory": "10000"}),
            ("node2", {"cpu": "10000", "memory": "9000"}),
        ],
        [],
        [95, 75],
    ),
    ("weights", MEM2_CPU1, TWO, [("node1", N4), ("node2", N6)], [], [58, 50]),
    (
        "non-zero requests for empty containers",
        None,
        [{}],
        [
            ("node1", {"cpu": "250m", "memory": "1000Mi"}),
            ("node2", {"cpu": "250m", "memory": "1000Mi"}),
        ],
        [("node1", [{}]), ("node1", [{}])],
        [80, 30],
    ),
    (
        "bypass extended resource the pod does not request",
        EXTENDED_SET,
        TWO,
        [("node1", N6), ("node2", {**N6, XYZ: "4"})],
        [],
        [50, 50],
    ),
    (
        "honor extended resource the pod requests",
        EXTENDED_SET,
        [{"cpu": "3000", "memory": "5000", XYZ: "2"}],
        [("node1", {**N6, XYZ: "4"}), ("node2", {**N6, XYZ: "10"})],
        [],
        [50, 40],
    ),
    (
        "node without the resource",
        XYZ_FIRST,
        [{"cpu": "3000", "memory": "4000"}],
        [("node1", N6), ("node2", {**N6, XYZ: "4"})],
        [],
        [45, 45],
    ),
]


@pytest.mark.parametrize(
    ("resources", "pod", "nodes", "existing", "want"),
    [case[1:] for case in MOST_CASES],
    ids=[case[0] for case in MOST_CASES],
)
def test_upstream_most_allocated(
    resources: list[dict[str, Any]] | None,
    pod: list[Reqs],
    nodes: list[NodeSpec],
    existing: list[tuple[str, list[Reqs]]],
    want: list[int],
) -> None:
    strategy: dict[str, Any] = {"type": "MostAllocated"}
    if resources:
        strategy["resources"] = resources
    fit = NodeResourcesFit({"scoringStrategy": strategy})
    assert run_upstream_case(fit, pod, nodes, existing) == want


def test_upstream_requested_to_capacity_ratio() -> None:
    fit = rtcr([(0, 10), (100, 0)])
    empties: list[Any] = [("node1", []), ("node1", [])]
    assert run_upstream_case(fit, [], [("node1", N4), ("node2", N4)], empties) == [100, 100]
    assert run_upstream_case(fit, TWO, [("node1", N4), ("node2", N6)], empties) == [38, 50]
    both = [
        ("node1", [{"cpu": "3000", "memory": "5000"}]),
        ("node2", [{"cpu": "3000", "memory": "5000"}]),
    ]
    assert run_upstream_case(fit, [], [("node1", N4), ("node2", N6)], both) == [38, 50]


def bin_node(cpu_milli: int, memory: int, extended: dict[str, str]) -> dict[str, str]:
    return {"cpu": f"{cpu_milli}m", "memory": str(memory), **extended}


def test_upstream_bin_packing_single_extended() -> None:
    fit = rtcr([(0, 0), (100, 1)], [{"name": "intel.com/foo", "weight": 1}])
    nodes = [
        ("node1", bin_node(4000, 10000 * Mi, {"intel.com/foo": "8"})),
        ("node2", bin_node(4000, 10000 * Mi, {"intel.com/foo": "4"})),
    ]
    foo2, foo4 = [{"intel.com/foo": "2"}], [{"intel.com/foo": "4"}]
    assert run_upstream_case(fit, [], nodes, []) == [0, 0]
    assert run_upstream_case(fit, foo2, nodes, []) == [2, 5]
    assert run_upstream_case(fit, foo2, nodes, [("node2", foo2)]) == [2, 10]
    assert run_upstream_case(fit, foo4, nodes, []) == [5, 10]


def test_upstream_bin_packing_multiple_extended() -> None:
    fit = rtcr(
        [(0, 0), (100, 1)],
        [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
    )
    nodes = [
        ("node1", bin_node(4000, 10000 * Mi, {"intel.com/foo": "8", "intel.com/bar": "4"})),
        ("node2", bin_node(4000, 10000 * Mi, {"intel.com/foo": "4", "intel.com/bar": "8"})),
    ]
    pod1 = [{"intel.com/foo": "2", "intel.com/bar": "2"}]
    pod2 = [{"intel.com/foo": "4", "intel.com/bar": "2"}]
    assert run_upstream_case(fit, [], nodes, []) == [0, 0]
    assert run_upstream_case(fit, pod1, nodes, []) == [4, 3]
    assert run_upstream_case(fit, pod1, nodes, [("node2", pod2)]) == [4, 7]
    assert run_upstream_case(fit, pod2, nodes, []) == [5, 5]


def cpu_mem(cpu: str, memory: str) -> Reqs:
    return {"cpu": cpu, "memory": memory}


def test_upstream_balanced_allocation() -> None:
    ba = NodeResourcesBalancedAllocation()
    two = [cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")]
    cpu_two = [{"cpu": "1000m"}, {"cpu": "2000m"}]
    assert run_upstream_case(
        ba, two, [("node1", bin_node(4000, 10000, {})), ("node2", bin_node(6000, 10000, {}))], []
    ) == [68, 75]
    existing = [("node1", cpu_two), ("node2", two)]
    n10 = bin_node(10000, 20000, {})
    assert run_upstream_case(ba, two, [("node1", n10), ("node2", n10)], existing) == [73, 74]
    n10_50 = bin_node(10000, 50000, {})
    assert run_upstream_case(ba, two, [("node1", n10), ("node2", n10_50)], existing) == [73, 70]
    n3 = bin_node(3000, 5000, {})
    mem_two = [{"memory": "2000"}, {"memory": "3000"}]
    assert run_upstream_case(ba, mem_two, [("node1", n3), ("node2", n3)], [("node1", cpu_two)]) == [
        100,
        50,
    ]
    n6 = bin_node(6000, 10000, {})
    assert run_upstream_case(ba, cpu_two, [("node1", n6), ("node2", n6)], existing) == [62, 62]


def test_upstream_balanced_allocation_scalar_resources() -> None:
    ba = NodeResourcesBalancedAllocation(
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "nvidia.com/gpu"}]}
    )
    gpu8 = bin_node(3500, 40000, {"nvidia.com/gpu": "8"})
    existing = [
        ("node1", [cpu_mem("1000m", "2000"), {**cpu_mem("2000m", "3000"), "nvidia.com/gpu": "3"}]),
        ("node2", [cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")]),
    ]
    pod = [{**cpu_mem("0", "0"), "nvidia.com/gpu": "1"}]
    assert run_upstream_case(ba, pod, [("node1", gpu8), ("node2", gpu8)], existing) == [75, 76]
    two = [cpu_mem("1000m", "2000"), cpu_mem("2000m", "3000")]
    plain = bin_node(3500, 40000, {})
    assert run_upstream_case(ba, two, [("node1", gpu8), ("node2", plain)], []) == [56, 56]
