"""One variation: new nodes from the pools, the pending pods scaled, simulated, and
summed up in a row whose figures follow from the cluster."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import msgspec

from kubesched.api.objects import Node
from kubesched.cluster.manifests import load_paths
from kubesched.framework.features import DEFAULT_GATES
from kubesched.framework.profile import ProfileConfig
from kubesched.plan.pools import NodePool, load_pools
from kubesched.sweep.spec import Variation
from kubesched.sweep.task import (
    SweepBase,
    VariationSetup,
    added_nodes,
    run_variation,
    scaled_pods,
)
from kubesched.testing import make_pod
from tests.sweep.cluster import write_sweep


def _setup(nodes: dict[str, int], scale: float = 1.0) -> VariationSetup:
    variation = Variation(0, nodes, "default", scale, "", "variations[0]")
    return VariationSetup(variation, [ProfileConfig.default()], None, DEFAULT_GATES, 0, 1)


def _base(tmp_path: Path, nodes: int, pods: int) -> SweepBase:
    write_sweep(tmp_path, {"variations": [{}]}, nodes=nodes, pods=pods)
    state = load_paths([tmp_path / "cluster.yaml"])
    pools = {p.name: p for p in load_pools(tmp_path / "pools.yaml")}
    return SweepBase(state, pools)


def test_new_nodes_take_the_pending_pods_and_cost_their_price(tmp_path: Path) -> None:
    # 2 nodes of 4 cpu, 12 pods of 1 cpu: 8 placed, 4 pending for cpu.
    base = _base(tmp_path, nodes=2, pods=12)
    row = run_variation(base, _setup({}))
    assert (row.pods, row.placed, row.pending) == (12, 8, 4)
    assert row.pending_by_reason == {"Insufficient cpu": 4}
    assert (row.nodes, row.nodes_added, row.nodes_used, row.cost) == (2, 0, 2, None)
    assert row.cpu_utilisation == 1.0
    # One "small" node (4 cpu, price 1) places the rest.
    row = run_variation(base, _setup({"small": 1}))
    assert (row.placed, row.pending, row.pending_by_reason) == (12, 0, {})
    assert (row.nodes, row.nodes_added, row.cost) == (3, 1, 1.0)
    # Two "big" (16 cpu, 3 each) and a small: room to spare, used a little.
    row = run_variation(base, _setup({"big": 2, "small": 1}))
    assert (row.placed, row.nodes, row.cost) == (12, 5, 7.0)
    assert row.cpu_utilisation == round(12 / (8 + 32 + 4), 4)
    assert row.id == "nodes=big:2,small:1 config=default scale=1 gates="


def test_scale_copies_the_pending_pods_or_keeps_the_first(tmp_path: Path) -> None:
    base = _base(tmp_path, nodes=2, pods=12)
    row = run_variation(base, _setup({"big": 1}, scale=2.5))
    assert (row.pods, row.placed) == (30, 24)  # 8 + 16 cpu for 30 pods of 1
    row = run_variation(base, _setup({}, scale=0.5))
    assert (row.pods, row.placed, row.pending) == (6, 6, 0)


def test_copies_have_names_of_their_own_and_keep_their_spec() -> None:
    pods = [make_pod("a", cpu="1"), make_pod("a-1", cpu="1"), make_pod("b", cpu="1")]
    pods[0].spec.preemption_policy = "PreemptLowerPriority"
    scaled, note = scaled_pods(pods, 2)
    assert note == ""
    names = [p.metadata.name for p in scaled]
    # "a-1" is taken: a's first copy is a-2.
    assert names == ["a", "a-1", "b", "a-2", "a-1-1", "b-1"]
    assert len({p.metadata.uid for p in scaled[3:]}) == 3
    assert scaled[3].spec.preemption_policy == "PreemptLowerPriority"


def test_pods_with_claims_are_not_copied_and_said_so() -> None:
    claim = make_pod(
        "db",
        cpu="1",
        spec={"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
    )
    scaled, note = scaled_pods([claim, make_pod("web", cpu="1")], 2)
    assert [p.metadata.name for p in scaled] == ["db", "web", "web-1", "web-2"]
    assert note == "1 pending pods with claims or volumes were not copied (copies would share them)"


def test_added_nodes_skip_names_taken_and_add_up_prices() -> None:
    template = msgspec.convert({"status": {"allocatable": {"cpu": "1"}}}, Node)
    pools = {
        "a": NodePool("a", template, Decimal("0.1"), None),
        "b": NodePool("b", template, None, None),
    }
    nodes, cost = added_nodes(pools, {"a": 3, "b": 1}, {"a-2"})
    assert [n.metadata.name for n in nodes] == ["a-1", "a-3", "a-4", "b-1"]
    assert cost == 0.3  # Decimal arithmetic: 3 x 0.1 is 0.3, not 0.30000000000000004
    assert added_nodes(pools, {"b": 2}, set())[1] is None
