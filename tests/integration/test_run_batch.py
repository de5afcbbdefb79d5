"""`kubesched run --batch-window` on a real control plane: the fragmentation case
that one-pod-at-a-time scheduling leaves pending is bound, through the normal
binding cycle; without the flag the same case stays pending, as with
kube-scheduler."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane
from tests.integration.kubesched_proc import KubeschedProcess
from tests.integration.test_run import run_kubesched, unique_prefix, wait_bound

pytestmark = pytest.mark.integration


def _fragment(api: AdminApi, namespace: str, pool: str, suffix: str) -> dict[str, str]:
    """Two 4-cpu nodes, four 1-cpu pods, then one 3-cpu pod, created at once.
    LeastAllocated spreads the small pods two per node, so one at a time the big
    one fits nowhere; jointly it fits (all four small on one node)."""
    selector = {"kubesched.test/pool": pool}
    for node in ("a", "b"):
        api.create_node(f"{pool}-{node}", cpu="4", memory="16Gi", labels=selector)
    for i in range(4):
        api.create_pod(namespace, f"small-{suffix}{i}", cpu="1", nodeSelector=selector)
    api.create_pod(namespace, f"big-{suffix}", cpu="3", nodeSelector=selector)
    return selector


def _condition(api: AdminApi, namespace: str, name: str) -> dict[str, str]:
    for c in api.get_pod(namespace, name)["status"].get("conditions", []):
        if c["type"] == "PodScheduled":
            return dict(c)
    return {}


def test_batch_mode_binds_what_one_pod_at_a_time_leaves_pending(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    tmp_path: Path,
) -> None:
    # Off (the default): the big pod stays pending, kube-scheduler's behaviour.
    off_pool = unique_prefix("batchoff")
    plain = run_kubesched(control_plane, tmp_path, kubesched, "--no-leader-elect", "--seed", "1")
    plain.wait_ready()
    _fragment(api, namespace, off_pool, "off")
    smalls = [f"small-off{i}" for i in range(4)]
    placed = wait_bound(api, namespace, smalls, timeout=30)
    assert sorted(placed.values()) == sorted([f"{off_pool}-a", f"{off_pool}-b"] * 2)
    api.wait_for(lambda: _condition(api, namespace, "big-off").get("status") == "False", timeout=30)
    assert "Insufficient cpu" in _condition(api, namespace, "big-off")["message"]
    assert api.node_of(namespace, "big-off") is None
    assert "Batch placement" not in plain.log()
    plain.stop()
    api.delete_pod(namespace, "big-off")

    # On: the same case, every pod bound, each by the binding cycle.
    on_pool = unique_prefix("batchon")
    batch = run_kubesched(
        control_plane,
        tmp_path,
        kubesched,
        "--no-leader-elect",
        "--seed",
        "1",
        "--batch-window",
        "3s",
        "--batch-timeout",
        "5s",
    )
    batch.wait_ready()
    _fragment(api, namespace, on_pool, "on")
    names = [f"small-on{i}" for i in range(4)] + ["big-on"]
    placed = wait_bound(api, namespace, names, timeout=60)
    big = placed["big-on"]
    assert big in (f"{on_pool}-a", f"{on_pool}-b")
    # Within capacity: the big pod and one small on one node, three small on the other.
    per_node = {n: 0 for n in (f"{on_pool}-a", f"{on_pool}-b")}
    for name, node in placed.items():
        per_node[node] += 3 if name == "big-on" else 1
    assert per_node[big] == 4 and sorted(per_node.values()) == [3, 4]
    log = batch.log()
    line = next(
        (ln for ln in log.splitlines() if "Batch placement" in ln and 'result="engine"' in ln), ""
    )
    assert line, log[-3000:]
    assert re.search(r"placedBeyondGreedy=1\b", line), line
    for name in names:  # the binding cycle logged each bind
        assert batch.bound()[f"{namespace}/{name}"] == 1
    metrics = batch.metrics().text
    assert re.search(r'^kubesched_batch_placements_total\{result="engine"\} [1-9]', metrics, re.M)
    assert re.search(r"^kubesched_batch_pods_beyond_greedy_total [1-9]", metrics, re.M)
