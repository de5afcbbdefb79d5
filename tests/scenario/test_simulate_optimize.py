"""`kubesched simulate --optimize`: greedy and the batch engine side by side."""

from __future__ import annotations

import textwrap
from pathlib import Path

from click.testing import CliRunner

from kubesched.cli.main import main
from tests.scenario.conftest import Simulate

TWO_NODES = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a, labels: {kubernetes.io/hostname: a}}
  status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: b, labels: {kubernetes.io/hostname: b}}
  status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"""


FRAGMENTING = [("s0", "1"), ("s1", "1"), ("s2", "1"), ("s3", "1"), ("big", "3")]


def pods(shapes: list[tuple[str, str]] = FRAGMENTING) -> str:
    """By default four 1-cpu pods that LeastAllocated spreads over both nodes, then a
    3-cpu pod."""
    out = []
    for name, cpu in shapes:
        out.append(
            f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - {{name: c, image: nginx, resources: {{requests: {{cpu: "{cpu}"}}}}}}
"""
        )
    return "".join(out)


def test_json_shows_greedy_and_optimized_side_by_side(simulate_yaml: Simulate) -> None:
    code, doc, _ = simulate_yaml(TWO_NODES, pods(), args=("--optimize",))
    assert code == 0
    assert doc["summary"]["scheduled"] == 4  # greedy's
    opt = doc["optimize"]
    assert opt["placed"] == {"greedy": 4, "optimized": 5}
    assert opt["placedByPriority"] == {"0": {"greedy": 4, "optimized": 5, "bound": 5}}
    assert opt["answer"] == "engine"
    assert opt["solverStatus"] == "optimal"
    assert sorted(opt["placements"]) == [f"default/{n}" for n in ("big", "s0", "s1", "s2", "s3")]
    # The big pod shares its node with one small pod, the other three are together.
    big_node = opt["placements"]["default/big"]
    assert list(opt["placements"].values()).count(big_node) == 2


def test_nodes_objective_packs(simulate_yaml: Simulate) -> None:
    two_small = pods([("s0", "1"), ("s1", "1")])  # both fit on one node
    code, doc, _ = simulate_yaml(
        TWO_NODES, two_small, args=("--optimize", "--optimize-objective", "nodes")
    )
    assert code == 0
    assert doc["optimize"]["nodesUsed"] == {"greedy": 2, "optimized": 1}


def test_text_report_and_a_bad_timeout(tmp_path: Path) -> None:
    nodes, pending = tmp_path / "nodes.yaml", tmp_path / "pods.yaml"
    nodes.write_text(textwrap.dedent(TWO_NODES))
    pending.write_text(pods())
    base = ["simulate", "-f", str(nodes), "-f", str(pending), "--seed", "1", "--optimize"]
    result = CliRunner().invoke(main, [*base, "--optimize-timeout", "2s"])
    assert result.exit_code == 0, result.output
    assert "Greedy and optimized" in result.stdout
    assert "answer: engine's placement" in result.stdout
    bad = CliRunner().invoke(main, [*base, "--optimize-timeout", "soon"])
    assert bad.exit_code == 2
    assert "'soon' is not a duration" in bad.output
