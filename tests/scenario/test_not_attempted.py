"""Pods held at PreEnqueue are reported apart, as "not attempted", with the plugin
and its message: kube-scheduler never attempts them, so it writes no FailedScheduling
event and no PodScheduled condition, and their `reasons` entry is none."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.cli.main import main

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: ml}
spec:
  schedulingGates: [{name: example.com/quota}]
  containers: [{name: c}]
---
apiVersion: v1
kind: Pod
metadata: {name: claimless, namespace: ml}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: no-such-claim}]
  containers: [{name: c, resources: {claims: [{name: gpu}]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: too-big, namespace: ml}
spec:
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: fits, namespace: ml}
spec:
  containers: [{name: c}]
"""


def run(tmp_path: Path, *args: str) -> tuple[int, str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    result = CliRunner().invoke(main, [*args, "-f", str(path)])
    return result.exit_code, result.stdout


def test_json_has_not_attempted_beside_reasons(tmp_path: Path) -> None:
    code, out = run(tmp_path, "simulate", "-o", "json", "--seed", "1")
    assert code == 0, out
    doc = json.loads(out)
    assert doc["placements"]["ml/fits"] == "n1"
    assert set(doc["reasons"]) == {"ml/too-big"}
    assert doc["reasons"]["ml/too-big"].startswith("0/1 nodes are available: 1 Insufficient cpu")
    held = doc["notAttempted"]
    assert set(held) == {"ml/gated", "ml/claimless"}
    assert held["ml/gated"]["plugin"] == "SchedulingGates"
    assert "waiting for scheduling gates: [example.com/quota]" in held["ml/gated"]["message"]
    assert held["ml/claimless"]["plugin"] == "DynamicResources"
    assert 'could not find ResourceClaim "ml/no-such-claim"' in held["ml/claimless"]["message"]


def test_text_lists_them_in_a_table_of_their_own(tmp_path: Path) -> None:
    code, out = run(tmp_path, "simulate", "--seed", "1")
    assert code == 0, out
    unscheduled, _, held = out.partition("Not attempted (held at PreEnqueue)")
    assert held, out
    assert "SchedulingGates" in held and "DynamicResources" in held
    assert "ml/gated" not in unscheduled.split("Unscheduled pods")[-1]


def test_html_report_has_the_section(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    code, out = run(tmp_path, "simulate", "--seed", "1", "--html", str(page))
    assert code == 0, out
    html = page.read_text()
    assert 'id="not-attempted"' in html
    assert "SchedulingGates: waiting for scheduling gates" in html


def test_explain_says_not_attempted_and_why(tmp_path: Path) -> None:
    code, out = run(tmp_path, "explain", "ml/gated", "--seed", "1")
    assert code == 0, out
    assert "ml/gated: not attempted: held at PreEnqueue by SchedulingGates" in out
    code, out = run(tmp_path, "explain", "ml/claimless", "-o", "json", "--seed", "1")
    assert code == 0, out
    pod = json.loads(out)["pods"][0]
    assert pod["reason"] == "" and pod["attempts"] == 0
    assert pod["notAttempted"]["plugin"] == "DynamicResources"
