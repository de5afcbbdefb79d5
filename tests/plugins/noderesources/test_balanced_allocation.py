"""NodeResourcesBalancedAllocation's score against the v1.36 rules: plain requests,
capped fractions, more than two resources, best-effort pods skipped. Expected scores
are worked out by hand from the upstream formula in the comments.
"""

from __future__ import annotations

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.noderesources import NodeResourcesBalancedAllocation
from kubesched.testing import make_node, make_pod
from tests.plugins.noderesources.test_noderesources import (
    make_table,
    placed,
    rows_of,
    run_score,
)

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
