"""`kubesched simulate --from-cluster --optimize` on a real control plane: greedy's
placement and the batch engine's, from the live cluster's snapshot, writing nothing."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane
from tests.integration.kubesched_proc import simulate_live
from tests.integration.test_run import unique_prefix

pytestmark = pytest.mark.integration


def test_optimize_from_a_live_cluster_places_what_greedy_leaves_pending(
    control_plane: ControlPlane, api: AdminApi, namespace: str
) -> None:
    pool = unique_prefix("opt")
    nodes = [f"{pool}-a", f"{pool}-b"]
    for name in nodes:
        api.create_node(name, cpu="4", memory="16Gi", labels={"kubesched.test/pool": pool})
    selector = {"kubesched.test/pool": pool}
    # Four small pods first: LeastAllocated spreads them, two per node; the big pod,
    # created last, then fits nowhere one pod at a time.
    for i in range(4):
        api.create_pod(namespace, f"small-{i}", cpu="1", nodeSelector=selector)
    time.sleep(1.1)  # a later creationTimestamp: the queue takes it last
    api.create_pod(namespace, "big", cpu="3", nodeSelector=selector)

    done = simulate_live(
        control_plane, "--seed", "1", "--optimize", "--optimize-timeout", "5s", timeout=180
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    mine = {f"{namespace}/small-{i}" for i in range(4)} | {f"{namespace}/big"}
    greedy = {k: v for k, v in document["placements"].items() if k in mine}
    assert greedy[f"{namespace}/big"] is None
    assert sum(1 for v in greedy.values() if v) == 4
    optimized = {k: v for k, v in document["optimize"]["placements"].items() if k in mine}
    assert set(optimized) == mine
    assert set(optimized.values()) <= set(nodes)
    assert list(optimized.values()).count(optimized[f"{namespace}/big"]) == 2
    # simulate wrote nothing
    assert all(api.node_of(namespace, k.split("/")[1]) is None for k in mine)
