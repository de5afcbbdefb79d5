"""NodeResourcesFit's scoring strategies against the v1.36 rules: LeastAllocated,
MostAllocated and RequestedToCapacityRatio (and its broken-line shape). Expected
scores are worked out by hand from the upstream formulas in the comments (Go int64
arithmetic: division truncates).
"""

from __future__ import annotations

import numpy as np

from kubesched.framework.state.node_table import NodeTable
from kubesched.plugins.noderesources import NodeResourcesFit
from kubesched.plugins.noderesources.resource_allocation import ShapePoint, broken_linear, go_div
from kubesched.testing import make_node, make_pod
from tests.plugins.noderesources.test_noderesources import make_table, placed, rtcr, run_score

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
