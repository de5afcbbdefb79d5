"""NodeResourcesFit and NodeResourcesBalancedAllocation against the v1.36 rules.

Expected numbers are worked out by hand from the upstream formulas in the
comments (Go int64 arithmetic: division truncates).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.objects import Node, Pod, PodStatus
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import NodeVerdicts
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.noderesources import (
    ArgsError,
    NodeResourcesBalancedAllocation,
    NodeResourcesFit,
)
from kubesched.plugins.noderesources.resource_allocation import (
    ShapePoint,
    broken_linear,
    go_div,
)
from kubesched.plugins.noderesources.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
)
from kubesched.testing import make_node, make_pod

Gi = 1024**3
Mi = 1024**2


def rows_of(table: NodeTable, *names: str) -> np.ndarray[Any, np.dtype[np.intp]]:
    return np.array([table.row_of(n) for n in names], dtype=np.intp)


def run_filter(
    plugin: NodeResourcesFit, pod: Pod, table: NodeTable, *names: str
) -> tuple[NodeVerdicts, dict[str, tuple[int, list[str]]]]:
    """Filter the named nodes; per node: (code, reasons in order)."""
    state = CycleState()
    info = PodInfo(pod)
    result, status = plugin.pre_filter(state, info, table)
    assert result is None and status.is_success()
    verdicts = plugin.filter(state, info, table, rows_of(table, *names))
    per_node = {
        name: (int(verdicts.codes[i]), [r for r, mask in verdicts.reasons if mask[i]])
        for i, name in enumerate(names)
    }
    return verdicts, per_node


def run_score(plugin: Any, pod: Pod, table: NodeTable, *names: str) -> list[int]:
    state = CycleState()
    info = PodInfo(pod)
    rows = rows_of(table, *names)
    status = plugin.pre_score(state, info, table, rows)
    assert status.is_success()
    return [int(s) for s in plugin.score(state, info, table, rows)]


def placed(name: str, node: str, **kwargs: Any) -> Pod:
    return make_pod(name, node_name=node, **kwargs)


def make_table(nodes: list[Node], pods: list[Pod] | tuple[Pod, ...] = ()) -> NodeTable:
    """testing.make_table, with the extended-resource columns made up front:
    NodeTable cannot yet take a resource it has not seen while writing a row
    (it indexes the array that resource_column() is about to replace)."""
    table = NodeTable()
    for node in nodes:
        for name in node.status.allocatable:
            table.resource_column(name)
    for pod in pods:
        for name in PodInfo(pod).requests:
            table.resource_column(name)
    for node in nodes:
        table.upsert_node(node)
    for pod in pods:
        row = table.row_of(pod.spec.node_name)
        if row is not None:
            table.add_pod(PodInfo(pod), row)
    return table


# --- resource names --------------------------------------------------------------------


def test_resource_name_classes() -> None:
    assert is_extended_resource_name("nvidia.com/gpu")
    assert is_extended_resource_name("example.com/foo")
    assert not is_extended_resource_name("cpu")
    assert not is_extended_resource_name("kubernetes.io/something")
    assert not is_extended_resource_name("hugepages-2Mi")
    assert not is_extended_resource_name("requests.example.com/foo")
    assert not is_extended_resource_name("Bad_Domain/x")
    assert is_scalar_resource_name("hugepages-2Mi")
    assert is_scalar_resource_name("attachable-volumes-aws-ebs")
    assert is_scalar_resource_name("kubernetes.io/something")
    assert is_scalar_resource_name("nvidia.com/gpu")
    assert not is_scalar_resource_name("pods")
    assert not is_scalar_resource_name("foo")


# --- Filter ------------------------------------------------------------------------------


def test_cpu_and_memory_both_short_give_two_reasons() -> None:
    # n1: 2 cpu / 4Gi with 1500m / 3Gi taken; the pod asks 1 cpu / 2Gi.
    # cpu: 1000 > 2000 - 1500 = 500; memory: 2Gi > 4Gi - 3Gi = 1Gi. Neither
    # request exceeds the node's allocatable, so preemption could help.
    table = make_table(
        [make_node("n1", cpu="2", memory="4Gi"), make_node("n2", cpu="2", memory="4Gi")],
        [placed("old", "n1", cpu="1500m", memory="3Gi")],
    )
    verdicts, per_node = run_filter(
        NodeResourcesFit(), make_pod("p", cpu="1", memory="2Gi"), table, "n1", "n2"
    )
    assert per_node["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu", "Insufficient memory"])
    assert per_node["n2"] == (Code.SUCCESS, [])
    assert verdicts.passed().tolist() == [False, True]


def test_request_over_node_allocatable_is_unresolvable() -> None:
    # 8 cpu > 4 allocatable: even an empty n1 cannot take it. Memory 20Gi is short
    # (16Gi - 1Gi used) yet within allocatable: the node code is still unresolvable.
    table = make_table([make_node("n1", cpu="4", memory="16Gi")], [placed("o", "n1", memory="1Gi")])
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", cpu="8"), table, "n1")
    assert per_node["n1"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["Insufficient cpu"])

    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", cpu="8", memory="16Gi"), table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient cpu", "Insufficient memory"],
    )


def test_too_many_pods_comes_first_and_is_not_unresolvable() -> None:
    # n1 allows 2 pods and runs 2: 2 + 1 > 2. The pod also wants more cpu than is left.
    table = make_table(
        [make_node("n1", cpu="2", pods=2)],
        [placed("a", "n1", cpu="1"), placed("b", "n1", cpu="500m")],
    )
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", cpu="1"), table, "n1")
    assert per_node["n1"] == (Code.UNSCHEDULABLE, ["Too many pods", "Insufficient cpu"])


def test_pod_without_requests_fits_a_full_node_but_not_a_node_out_of_pods() -> None:
    # full: all 1000m cpu and 1Gi memory taken; an empty pod requests nothing, so
    # only the pod count matters. crowded: 1 pod allowed, 1 running.
    table = make_table(
        [make_node("full", cpu="1", memory="1Gi"), make_node("crowded", pods=1)],
        [placed("a", "full", cpu="1", memory="1Gi"), placed("b", "crowded")],
    )
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p"), table, "full", "crowded")
    assert per_node["full"] == (Code.SUCCESS, [])
    assert per_node["crowded"] == (Code.UNSCHEDULABLE, ["Too many pods"])


def test_ephemeral_storage() -> None:
    table = make_table([make_node("n1", extra={"ephemeral-storage": "10Gi"}), make_node("n2")])
    pod = make_pod("p", requests={"ephemeral-storage": "5Gi"})
    _, per_node = run_filter(NodeResourcesFit(), pod, table, "n1", "n2")
    assert per_node["n1"] == (Code.SUCCESS, [])
    # n2 reports no ephemeral-storage: allocatable 0 < 5Gi.
    assert per_node["n2"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient ephemeral-storage"],
    )


def test_extended_resources() -> None:
    # gpu-free: 2 gpus, none used; gpu-busy: 2 gpus, 2 used; plain: no gpu at all.
    table = make_table(
        [
            make_node("gpu-free", extra={"nvidia.com/gpu": 2}),
            make_node("gpu-busy", extra={"nvidia.com/gpu": 2}),
            make_node("plain"),
        ],
        [placed("user", "gpu-busy", requests={"nvidia.com/gpu": 2})],
    )
    pod = make_pod("p", cpu="1", requests={"nvidia.com/gpu": 1})
    _, per_node = run_filter(NodeResourcesFit(), pod, table, "gpu-free", "gpu-busy", "plain")
    assert per_node["gpu-free"] == (Code.SUCCESS, [])
    # 1 > 2 - 2 but 1 <= 2: preemption could free a gpu.
    assert per_node["gpu-busy"] == (Code.UNSCHEDULABLE, ["Insufficient nvidia.com/gpu"])
    # 1 > 0 allocatable.
    assert per_node["plain"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient nvidia.com/gpu"],
    )


def test_resource_no_node_has_and_scalar_reason_order() -> None:
    # example.com/foo exists nowhere (no table column): short everywhere, for good.
    # Scalar reasons follow cpu/memory/ephemeral-storage, by name.
    table = make_table([make_node("n1", cpu="1")])
    pod = make_pod(
        "p", cpu="2", requests={"example.com/foo": 1, "acme.io/bar": 1, "hugepages-2Mi": "4Mi"}
    )
    _, per_node = run_filter(NodeResourcesFit(), pod, table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [
            "Insufficient cpu",
            "Insufficient acme.io/bar",
            "Insufficient example.com/foo",
            "Insufficient hugepages-2Mi",
        ],
    )


def test_resources_the_scheduler_does_not_track_are_not_checked() -> None:
    # "foo" has no domain: it is neither base nor scalar, so Filter never looks at it.
    table = make_table([make_node("n1")])
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", requests={"foo": 3}), table, "n1")
    assert per_node["n1"] == (Code.SUCCESS, [])


def test_ignored_resources_and_groups() -> None:
    table = make_table([make_node("n1", cpu="4")])
    pod = make_pod(
        "p", requests={"nvidia.com/gpu": 1, "example.com/foo": 1, "hugepages-2Mi": "2Mi"}
    )
    plugin = NodeResourcesFit(
        {"ignoredResources": ["nvidia.com/gpu", "hugepages-2Mi"], "ignoredResourceGroups": []}
    )
    _, per_node = run_filter(plugin, pod, table, "n1")
    # hugepages are not extended resources, so ignoring them has no effect.
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient example.com/foo", "Insufficient hugepages-2Mi"],
    )

    plugin = NodeResourcesFit({"ignoredResourceGroups": ["example.com", "nvidia.com"]})
    _, per_node = run_filter(plugin, pod, table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient hugepages-2Mi"],
    )


def test_kubernetes_io_resources_cannot_be_ignored() -> None:
    # From upstream fit_test.go: kubernetes.io/ names are scalar but not extended, so
    # neither ignoredResources nor ignoredResourceGroups skip them.
    table = make_table([make_node("n1", cpu="10")])
    pod = make_pod("p", cpu="1", requests={"example.com/bbb": 1, "kubernetes.io/something": 1})
    plugin = NodeResourcesFit(
        {
            "ignoredResources": ["kubernetes.io/something"],
            "ignoredResourceGroups": ["example.com", "kubernetes.io"],
        }
    )
    _, per_node = run_filter(plugin, pod, table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient kubernetes.io/something"],
    )


def test_init_containers_sidecars_and_overhead() -> None:
    # n1: 4 cpu with 2 taken, so 2000m left.
    table = make_table([make_node("n1", cpu="4")], [placed("o", "n1", cpu="2")])
    fit = NodeResourcesFit()

    def init(cpu: str, sidecar: bool = False) -> dict[str, Any]:
        c: dict[str, Any] = {"name": f"i{cpu}", "resources": {"requests": {"cpu": cpu}}}
        if sidecar:
            c["restartPolicy"] = "Always"
        return c

    # A regular init container runs alone: max(1000 app, 3000 init) = 3000 > 2000.
    pod = make_pod("a", cpu="1", spec={"initContainers": [init("3")]})
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu"])
    # A sidecar runs beside the app: 1000 + 1000 = 2000 <= 2000.
    pod = make_pod("b", cpu="1", spec={"initContainers": [init("1", sidecar=True)]})
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.SUCCESS, [])
    # An init container after a sidecar runs beside it: max(1000 + 1000, 1000 + 1500) = 2500.
    pod = make_pod("c", cpu="1", spec={"initContainers": [init("1", sidecar=True), init("1500m")]})
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu"])
    # Overhead is added: 1000 + 1000 + 500 = 2500 > 2000.
    pod = make_pod(
        "d",
        cpu="1",
        spec={"initContainers": [init("1", sidecar=True)], "overhead": {"cpu": "500m"}},
    )
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu"])


def test_filter_without_pre_filter_is_an_error() -> None:
    table = make_table([make_node("n1")])
    with pytest.raises(RuntimeError, match="PreFilterNodeResourcesFit"):
        NodeResourcesFit().filter(CycleState(), PodInfo(make_pod("p")), table, rows_of(table, "n1"))


# --- args --------------------------------------------------------------------------------


def test_args_defaults_and_validation() -> None:
    fit = NodeResourcesFit()
    assert fit.strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 1), ("memory", 1)]
    fit = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated"}})
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 1), ("memory", 1)]
    fit = NodeResourcesFit(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}
    )
    assert [(r.name, r.weight) for r in fit.resources] == [("cpu", 1)]
    with pytest.raises(ArgsError, match='Unsupported value: "Bogus"'):
        NodeResourcesFit({"scoringStrategy": {"type": "Bogus"}})
    with pytest.raises(ArgsError, match=r"not in valid range \(0, 100\]"):
        NodeResourcesFit(
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            }
        )
    with pytest.raises(ArgsError, match="must be specified when type is RequestedToCapacityRatio"):
        NodeResourcesFit({"scoringStrategy": {"type": "RequestedToCapacityRatio"}})
    with pytest.raises(ArgsError, match="sorted in increasing order"):
        NodeResourcesFit(
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]
                    },
                }
            }
        )
    with pytest.raises(ArgsError, match="can't contain '/'"):
        NodeResourcesFit({"ignoredResourceGroups": ["example.com/x"]})
    with pytest.raises(ArgsError, match="must be 1"):
        NodeResourcesBalancedAllocation({"resources": [{"name": "cpu", "weight": 2}]})
    with pytest.raises(ArgsError, match="Duplicate value"):
        NodeResourcesBalancedAllocation({"resources": [{"name": "cpu"}, {"name": "cpu"}]})


# --- LeastAllocated ----------------------------------------------------------------------


def score_table() -> NodeTable:
    # n1: 4 cpu / 8Gi, holding 1 cpu / 2Gi; n2: 4 cpu / 8Gi, empty;
    # n3: 3 cpu / 5Gi, holding 700m / 1Gi.
    return make_table(
        [
            make_node("n1", cpu="4", memory="8Gi"),
            make_node("n2", cpu="4", memory="8Gi"),
            make_node("n3", cpu="3", memory="5Gi"),
        ],
        [placed("a", "n1", cpu="1", memory="2Gi"), placed("b", "n3", cpu="700m", memory="1Gi")],
    )


def test_least_allocated() -> None:
    pod = make_pod("p", cpu="1", memory="2Gi")
    # n1: cpu (4000 - 2000) * 100 / 4000 = 50, memory (8Gi - 4Gi) * 100 / 8Gi = 50 -> 50
    # n2: cpu (4000 - 1000) * 100 / 4000 = 75, memory (8 - 2) * 100 / 8 = 75 -> 75
    # n3: cpu (3000 - 1700) * 100 / 3000 = 130000 / 3000 = 43,
    #     memory (5Gi - 3Gi) * 100 / 5Gi = 40 -> (43 + 40) / 2 = 41
    assert run_score(NodeResourcesFit(), pod, score_table(), "n1", "n2", "n3") == [50, 75, 41]


def test_least_allocated_weights() -> None:
    fit = NodeResourcesFit(
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}],
            }
        }
    )
    # n3: (43 * 3 + 40 * 1) / 4 = 169 / 4 = 42
    assert run_score(fit, make_pod("p", cpu="1", memory="2Gi"), score_table(), "n3") == [42]


def test_least_allocated_counts_empty_pods_as_100m_200mi() -> None:
    # An empty pod scores as if it asked 100m cpu and 200Mi memory, and so does the
    # empty pod already on "busy" (the node's non-zero requested amounts).
    table = make_table(
        [make_node("idle", cpu="1", memory="1000Mi"), make_node("busy", cpu="1", memory="1000Mi")],
        [placed("e", "busy")],
    )
    # idle: cpu (1000 - 100) * 100 / 1000 = 90, memory (1000Mi - 200Mi) * 100 / 1000Mi = 80 -> 85
    # busy: cpu (1000 - 200) * 100 / 1000 = 80, memory (1000Mi - 400Mi) * 100 / 1000Mi = 60 -> 70
    assert run_score(NodeResourcesFit(), make_pod("p"), table, "idle", "busy") == [85, 70]
    # With only memory stated, cpu still defaults to 100m: cpu 90, memory (1000 - 500) / 10 = 50
    assert run_score(NodeResourcesFit(), make_pod("q", memory="500Mi"), table, "idle") == [70]


def test_least_allocated_over_capacity_scores_zero() -> None:
    table = make_table([make_node("n1", cpu="1", memory="8Gi")])
    # cpu 2000 > 1000 -> 0; memory (8Gi - 2Gi) * 100 / 8Gi = 75 -> (0 + 75) / 2 = 37
    assert run_score(NodeResourcesFit(), make_pod("p", cpu="2", memory="2Gi"), table, "n1") == [37]


def test_extended_resource_scoring() -> None:
    fit = NodeResourcesFit(
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [
                    {"name": "cpu", "weight": 1},
                    {"name": "memory", "weight": 1},
                    {"name": "nvidia.com/gpu", "weight": 2},
                ],
            }
        }
    )
    table = make_table(
        [
            make_node("g1", cpu="4", memory="8Gi", extra={"nvidia.com/gpu": 4}),
            make_node("g0", cpu="4", memory="8Gi"),
        ],
        [placed("user", "g1", requests={"nvidia.com/gpu": 2})],
    )
    gpu_pod = make_pod("p", cpu="1", memory="2Gi", requests={"nvidia.com/gpu": 1})
    # g1: cpu non-zero requested 100 + 1000 = 1100 -> 2900 * 100 / 4000 = 72
    #     memory 200Mi + 2048Mi = 2248Mi -> (8192 - 2248) * 100 / 8192 = 72
    #     gpu 2 + 1 = 3 of 4 -> 25, weight 2 -> (72 + 72 + 50) / 4 = 48
    # g0: no gpu allocatable, left out: cpu 75, memory 75 -> 75
    assert run_score(fit, gpu_pod, table, "g1", "g0") == [48, 75]
    # A pod that does not ask for gpus is not scored on them: g1 -> (72 + 72) / 2 = 72
    assert run_score(fit, make_pod("q", cpu="1", memory="2Gi"), table, "g1") == [72]


# --- MostAllocated -----------------------------------------------------------------------


def test_most_allocated() -> None:
    fit = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated"}})
    pod = make_pod("p", cpu="1", memory="2Gi")
    # n1: cpu 2000 * 100 / 4000 = 50, memory 4Gi * 100 / 8Gi = 50 -> 50
    # n2: 25, 25 -> 25
    # n3: cpu 1700 * 100 / 3000 = 56, memory 3Gi * 100 / 5Gi = 60 -> 58
    assert run_score(fit, pod, score_table(), "n1", "n2", "n3") == [50, 25, 58]
    table = make_table([make_node("small", cpu="1", memory="1000Mi")])
    # Over capacity counts as full: cpu min(2000, 1000) -> 100; memory 500Mi -> 50 -> 75
    assert run_score(fit, make_pod("q", cpu="2", memory="500Mi"), table, "small") == [75]
    # Empty pod: cpu 100 * 100 / 1000 = 10, memory 200Mi * 100 / 1000Mi = 20 -> 15
    assert run_score(fit, make_pod("e"), table, "small") == [15]


# --- RequestedToCapacityRatio ------------------------------------------------------------


def rtcr(
    shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None
) -> NodeResourcesFit:
    strategy: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }
    if resources is not None:
        strategy["resources"] = resources
    return NodeResourcesFit({"scoringStrategy": strategy})


def test_requested_to_capacity_ratio_bin_packing() -> None:
    # Shape (0, 0) (100, 10) is stretched to (0, 0) (100, 100): score = utilization.
    pod = make_pod("p", cpu="1", memory="2Gi")
    # n3: cpu 1700 * 100 / 3000 = 56, memory 60 -> round(116 / 2) = 58
    assert run_score(rtcr([(0, 0), (100, 10)]), pod, score_table(), "n3") == [58]
    # Memory weighted 2: (56 + 120) / 3 = 58.67, rounded (not truncated) to 59
    weighted = rtcr(
        [(0, 0), (100, 10)],
        [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 2}],
    )
    assert run_score(weighted, pod, score_table(), "n3") == [59]


def test_requested_to_capacity_ratio_broken_line() -> None:
    # (0, 10) (50, 2) (100, 8) -> (0, 100) (50, 20) (100, 80)
    fit = rtcr([(0, 10), (50, 2), (100, 8)])
    table = make_table([make_node("n1", cpu="3", memory="8Gi")])
    # cpu 1000 * 100 / 3000 = 33 -> 100 + (20 - 100) * 33 / 50 = 100 + (-2640 / 50)
    #   = 100 - 52 = 48 (Go truncates -52.8 toward zero)
    # memory 2Gi * 100 / 8Gi = 25 -> 100 + (-80 * 25) / 50 = 60 -> round(108 / 2) = 54
    assert run_score(fit, make_pod("p", cpu="1", memory="2Gi"), table, "n1") == [54]
    # n3 of score_table: cpu 56 -> 20 + 60 * 6 / 50 = 27; memory 60 -> 20 + 60 * 10 / 50 = 32
    #   -> round(59 / 2) = round(29.5) = 30
    assert run_score(fit, make_pod("p", cpu="1", memory="2Gi"), score_table(), "n3") == [30]
    # Over capacity: utilization counts as 100 -> 80 for cpu; memory 25 -> 60 -> 70
    assert run_score(fit, make_pod("q", cpu="4", memory="2Gi"), table, "n1") == [70]


def test_requested_to_capacity_ratio_drops_zero_scores() -> None:
    # ephemeral-storage: the pod asks none and none is used, utilization 0 scores 0
    # and leaves the weighted mean: cpu 33, memory 25 -> round(58 / 2) = 29.
    fit = rtcr(
        [(0, 0), (100, 10)],
        [{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}],
    )
    table = make_table(
        [make_node("n1", cpu="3", memory="8Gi", extra={"ephemeral-storage": "100Gi"})]
    )
    assert run_score(fit, make_pod("p", cpu="1", memory="2Gi"), table, "n1") == [29]


def test_broken_linear_function() -> None:
    shape = [ShapePoint(10, 30), ShapePoint(60, 80), ShapePoint(90, 0)]
    p = np.array([0, 10, 35, 60, 75, 89, 90, 100], dtype=np.int64)
    # below the first point: 30; 35 -> 30 + 50 * 25 / 50 = 55; 75 -> 80 + (-80 * 15) / 30 = 40;
    # 89 -> 80 + (-80 * 29) / 30 = 80 - 77 (-77.3 truncated) = 3; past the last point: 0
    assert broken_linear(shape, p).tolist() == [30, 30, 55, 80, 40, 3, 0, 0]
    a = np.array([7, -7, 7, -7], dtype=np.int64)
    assert go_div(a, np.array([2, 2, -2, -2], dtype=np.int64)).tolist() == [3, -3, -3, 3]


# --- BalancedAllocation ------------------------------------------------------------------


def test_balanced_allocation() -> None:
    # Plain requests (no non-zero defaults). n1: 4 cpu / 8Gi holding 1 cpu / 1Gi.
    table = make_table(
        [make_node("n1", cpu="4", memory="8Gi"), make_node("n2", cpu="4", memory="8Gi")],
        [placed("a", "n1", cpu="1", memory="1Gi")],
    )
    pod = make_pod("p", cpu="1", memory="3Gi")
    # n1 without the pod: 0.25 and 0.125 -> std 0.0625 -> int(93.75) = 93
    #    with it: 0.5 and 0.5 -> std 0 -> 100
    #    -> 50 + (50 + 100 - 93) / 2 = 50 + 28 = 78
    # n2 without: 0 and 0 -> 100; with: 0.25 and 0.375 -> std 0.0625 -> 93
    #    -> 50 + (50 + 93 - 100) / 2 = 50 + 21 = 71
    assert run_score(NodeResourcesBalancedAllocation(), pod, table, "n1", "n2") == [78, 71]


def test_balanced_allocation_uses_plain_requests_and_caps_fractions() -> None:
    table = make_table(
        [make_node("n1", cpu="4", memory="8Gi"), make_node("n2", cpu="1", memory="4Gi")]
    )
    ba = NodeResourcesBalancedAllocation()
    # cpu only: 0.25 and 0 (no 200Mi default) -> std 0.125 -> 87; without 100
    #   -> 50 + (50 + 87 - 100) / 2 = 50 + 18 = 68
    assert run_score(ba, make_pod("p", cpu="1"), table, "n1") == [68]
    # n2: cpu 2 of 1 caps at 1, memory 0.25 -> std 0.375 -> 62 -> 50 + (50 + 62 - 100) / 2 = 56
    assert run_score(ba, make_pod("q", cpu="2", memory="1Gi"), table, "n2") == [56]


def test_balanced_allocation_three_resources() -> None:
    ba = NodeResourcesBalancedAllocation(
        {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "nvidia.com/gpu"}]}
    )
    table = make_table([make_node("n1", cpu="4", memory="8Gi", extra={"nvidia.com/gpu": 4})])
    pod = make_pod("p", cpu="1", memory="2Gi", requests={"nvidia.com/gpu": 2})
    # with: 0.25, 0.25, 0.5 -> mean 1/3, squares 2 * (1/12)^2 + (1/6)^2 = 1/24,
    #   std = sqrt(1/72) = 0.11785 -> int(88.21) = 88; without: all 0 -> 100
    #   -> 50 + (50 + 88 - 100) / 2 = 69
    assert run_score(ba, pod, table, "n1") == [69]


def test_balanced_allocation_skips_best_effort_pods() -> None:
    table = make_table([make_node("n1")])
    ba = NodeResourcesBalancedAllocation()
    state = CycleState()
    info = PodInfo(make_pod("p", requests={"ephemeral-storage": "1Gi"}))
    rows = rows_of(table, "n1")
    # Neither cpu nor memory is requested: PreScore says Skip.
    assert ba.pre_score(state, info, table, rows).code == Code.SKIP
    assert ba.score(state, info, table, rows).tolist() == [0]


# --- queueing hints ----------------------------------------------------------------------


def test_events_to_register() -> None:
    events = NodeResourcesFit().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ]
    assert all(e.hint is not None for e in events)


def test_pod_event_hints() -> None:
    fit = NodeResourcesFit()
    target = PodInfo(make_pod("t", cpu="1"))
    assert fit.is_schedulable_after_pod_event(target, placed("x", "n1"), None)
    assert not fit.is_schedulable_after_pod_event(target, make_pod("x"), None)
    nominated = msgspec.structs.replace(make_pod("x"), status=PodStatus(nominated_node_name="n1"))
    assert fit.is_schedulable_after_pod_event(target, nominated, None)
    # A placed pod shrinking its cpu helps a pod that wants cpu...
    before, after = placed("x", "n1", cpu="2"), placed("x", "n1", cpu="1")
    assert fit.is_schedulable_after_pod_event(target, before, after)
    # ...but shrinking memory does not.
    before, after = placed("x", "n1", memory="2Gi"), placed("x", "n1", memory="1Gi")
    assert not fit.is_schedulable_after_pod_event(target, before, after)
    # An unplaced pod shrinking frees nothing; the target itself shrinking always counts.
    assert not fit.is_schedulable_after_pod_event(
        target, make_pod("x", cpu="2"), make_pod("x", cpu="1")
    )
    assert fit.is_schedulable_after_pod_event(
        target, make_pod("t", cpu="2"), make_pod("t", cpu="1")
    )


def test_node_event_hints() -> None:
    fit = NodeResourcesFit()
    pod = PodInfo(make_pod("t", cpu="2", requests={"nvidia.com/gpu": 1}))
    small = make_node("n", cpu="1", extra={"nvidia.com/gpu": 1})
    big = make_node("n", cpu="4", extra={"nvidia.com/gpu": 1})
    bigger = make_node("n", cpu="8", extra={"nvidia.com/gpu": 1})
    no_gpu = make_node("n", cpu="8")
    assert fit.is_schedulable_after_node_change(pod, None, big)
    assert not fit.is_schedulable_after_node_change(pod, None, small)
    assert not fit.is_schedulable_after_node_change(pod, None, no_gpu)
    assert fit.is_schedulable_after_node_change(pod, small, big)
    assert fit.is_schedulable_after_node_change(pod, big, bigger)
    # Fits, but nothing the pod wants grew (only memory did).
    more_memory = make_node("n", cpu="4", memory="32Gi", extra={"nvidia.com/gpu": 1})
    assert not fit.is_schedulable_after_node_change(pod, big, more_memory)
    # More pods allowed counts, even for a pod that requests nothing.
    empty = PodInfo(make_pod("e"))
    assert fit.is_schedulable_after_node_change(
        empty, make_node("n", pods=1), make_node("n", pods=2)
    )
    assert not fit.is_schedulable_after_node_change(empty, None, make_node("n", pods=0))
    assert isinstance(big, Node)


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
