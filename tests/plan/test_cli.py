"""`kubesched plan --add-nodes` end to end on the example's YAML files."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
POOLS = str(ROOT / "examples" / "plan" / "pools.yaml")
CLUSTER = str(ROOT / "examples" / "plan" / "cluster.yaml")


def test_text_report() -> None:
    """The example: two web pods fit on node-1; the six training pods need 12 GPUs,
    three gpu nodes (9), whose spare cpu takes the other six web pods; the
    estimator buys two cpu nodes for them first (9.8). data/huge fits no pool."""
    result = CliRunner().invoke(main, ["plan", "--add-nodes", POOLS, "-f", CLUSTER])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "15 pending pod(s): 2 fit on the existing nodes, 12 need new nodes, 1 fit no pool" in out
    assert "New nodes: solver optimal; lower bound 9 (node patterns 9)" in out
    assert "solver: 3 node(s), cost 9\n" in out
    assert "cluster-autoscaler's estimator (first-fit decreasing): 5 node(s), cost 9.8" in out
    assert "verified: every pod scheduled on the planned nodes (1 simulation(s))" in out
    assert "data/huge fits no pool: 0/2 nodes are available: 2 Insufficient cpu, 2" in out


def test_json_report() -> None:
    result = CliRunner().invoke(
        main, ["plan", "--add-nodes", POOLS, "-f", CLUSTER, "-o", "json", "--timeout", "2s"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["mode"] == "add-nodes"
    assert doc["solver"]["pools"] == [{"pool": "gpu", "nodes": 3, "price": "3", "cost": "9"}]
    assert doc["solver"]["totalCost"] == "9"
    assert doc["estimator"]["totalCost"] == "9.8"
    assert doc["lowerBound"] == "9"
    assert [n["name"] for n in doc["verified"]["nodes"]] == ["gpu-1", "gpu-2", "gpu-3"]
    assert doc["verification"]["scheduled"] is True
    pods = sorted(p for node in doc["solver"]["nodes"] for p in node["pods"])
    assert len(pods) == 12
    assert [u["pod"] for u in doc["unplaceable"]] == ["data/huge"]
    assert doc["unplaceable"][0]["reasons"]["cpu"] == ["Insufficient cpu", "Insufficient memory"]
    assert "tie-breaks seeded with 0" in doc["notes"]


def test_bad_pools_file_is_a_usage_error(tmp_path: Path) -> None:
    pools = tmp_path / "pools.yaml"
    pools.write_text(Path(POOLS).read_text().replace("price: 3.00", "price: -3"))
    result = CliRunner().invoke(main, ["plan", "--add-nodes", str(pools), "-f", CLUSTER])
    assert result.exit_code == 2
    assert f"Invalid value for --add-nodes: {pools}: pools[1].price: must be >= 0" in result.output


def test_add_nodes_is_required() -> None:
    result = CliRunner().invoke(main, ["plan", "-f", CLUSTER])
    assert result.exit_code == 2
    assert "--add-nodes POOLS" in result.output


def test_html_report(tmp_path: Path) -> None:
    page = tmp_path / "plan.html"
    result = CliRunner().invoke(
        main, ["plan", "--add-nodes", POOLS, "-f", CLUSTER, "--html", str(page), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "<title>kubesched plan --add-nodes</title>" in text
    assert "cluster-autoscaler&#39;s estimator" in text
    assert "<td>gpu-3</td>" in text
    assert "data/huge" in text
    assert "http://" not in text and "https://" not in text  # self-contained


DRAIN = str(ROOT / "examples" / "plan" / "drain-cluster.yaml")


def test_remove_nodes_text_report() -> None:
    """The example: node-1 (13.8% used) and gpu-a (25.6%) can go; every other node is
    blocked, each by one of cluster-autoscaler's reasons."""
    result = CliRunner().invoke(main, ["plan", "--remove-nodes", "-f", DRAIN])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "7 node(s): 2 can be removed, 5 blocked" in out
    assert "shop/web-1 -> node-5" in out
    assert "ml/train-1 -> gpu-b" in out
    assert "default/debug is not replicated" in out
    assert "│ node-3 │ LocalStorageRequested" in out
    assert "│ node-2 │ NotEnoughPdb" in out
    assert "verified: every pod of the 2 removed node(s) scheduled elsewhere" in out


def test_remove_nodes_json_report_with_prices() -> None:
    """With the pools' prices gpu-a (3) drains before node-1 (0.40): savings 3.4."""
    result = CliRunner().invoke(
        main, ["plan", "--remove-nodes", "--pools", POOLS, "-f", DRAIN, "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["mode"] == "remove-nodes"
    assert [(r["node"], r["pool"], r["price"]) for r in doc["removed"]] == [
        ("gpu-a", "gpu", "3"),
        ("node-1", "cpu", "0.4"),
    ]
    assert doc["removed"][0]["leaving"][0].startswith("monitoring/agent-")
    assert doc["savings"] == "3.4"
    blocked = {b["node"]: b.get("rule", b["reason"]) for b in doc["blocked"]}
    assert blocked == {
        "gpu-b": "NoPlaceToMovePods",
        "node-5": "ScaleDownDisabledAnnotation",
        "node-4": "NotReplicated",
        "node-2": "NotEnoughPdb",
        "node-3": "LocalStorageRequested",
    }
    check = doc["verification"]
    assert check["scheduled"] is True and check["verified"] == 2 and check["rounds"] == 1


def test_remove_nodes_html_report(tmp_path: Path) -> None:
    page = tmp_path / "remove.html"
    result = CliRunner().invoke(
        main, ["plan", "--remove-nodes", "-f", DRAIN, "--html", str(page), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    text = page.read_text()
    assert "<title>kubesched plan --remove-nodes</title>" in text
    assert "shop/web-1 &rarr; node-5" in text
    assert "LocalStorageRequested" in text
    assert "http://" not in text and "https://" not in text  # self-contained


def test_add_and_remove_nodes_are_exclusive() -> None:
    result = CliRunner().invoke(main, ["plan", "--add-nodes", POOLS, "--remove-nodes", "-f", DRAIN])
    assert result.exit_code == 2
    assert "--add-nodes and --remove-nodes are exclusive" in result.output
    result = CliRunner().invoke(
        main, ["plan", "--add-nodes", POOLS, "--pools", POOLS, "-f", CLUSTER]
    )
    assert result.exit_code == 2
    assert "--pools prices the nodes of --remove-nodes" in result.output


def test_daemon_sets_take_room_on_the_new_nodes(tmp_path: Path) -> None:
    """A DaemonSet asking 1 cpu of every node, and one for nodes labelled
    role=storage only. The 4-cpu pool's new nodes run the first (3 cpu left), not
    the second; four pods of 2 cpu then need four nodes, where two would do
    without it. The existing node has its pod of the first from the loader."""
    (tmp_path / "pools.yaml").write_text(
        """apiVersion: kubesched.io/v1alpha1
kind: NodePools
pools:
  - name: n
    node:
      status:
        allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
"""
    )

    def daemon(name: str, cpu: str, selector: str) -> str:
        return f"""---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: kube-system}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      nodeSelector: {selector}
      containers:
        - {{name: c, image: agent, resources: {{requests: {{cpu: "{cpu}"}}}}}}
"""

    pods = "".join(
        f"""---
apiVersion: v1
kind: Pod
metadata: {{name: web-{i}, namespace: default}}
spec:
  containers:
    - {{name: c, image: web, resources: {{requests: {{cpu: "2", memory: 1Gi}}}}}}
"""
        for i in range(4)
    )
    (tmp_path / "cluster.yaml").write_text(
        """apiVersion: v1
kind: Node
metadata: {name: full, labels: {kubernetes.io/hostname: full}}
spec: {unschedulable: true}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"""
        + daemon("agent", "1", "{}")
        + daemon("storage", "3", "{role: storage}")
        + pods
    )
    args = [
        "plan",
        "--add-nodes",
        str(tmp_path / "pools.yaml"),
        "-f",
        str(tmp_path / "cluster.yaml"),
    ]
    result = CliRunner().invoke(main, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["solver"]["totalNodes"] == 4
    assert document["verification"]["scheduled"] is True
    assert document["verified"]["totalNodes"] == 4
    assert any("the pods of 2 DaemonSet(s) go on the new nodes" in n for n in document["notes"])
