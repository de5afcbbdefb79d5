"""`kubesched simulate` on small manifests: placements, messages, output formats."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.logs import V
from tests.scenario.conftest import Simulate

ROOT = Path(__file__).resolve().parents[2]

FOUR_NODES = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-1, labels: {pool: gpu}}
  spec:
    taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
  status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: cordoned, labels: {pool: general}}
  spec: {unschedulable: true}
  status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: small-1, labels: {pool: general}}
  status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: small-2, labels: {pool: general}}
  status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""


def pod(name: str, cpu: str, extra: str = "") -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - name: c
    image: nginx
    resources: {{requests: {{cpu: "{cpu}"}}}}
{extra}"""


def test_the_issue_example_message(simulate_yaml: Simulate) -> None:
    code, out, _ = simulate_yaml(FOUR_NODES, pod("big", "3"))
    assert code == 0
    assert out["placements"] == {"default/big": None}
    assert out["reasons"]["default/big"] == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), "
        "1 node(s) were unschedulable, 2 Insufficient cpu. "
        # DefaultPreemption is in the default profile: 3 cpu exceeds every
        # node's allocatable, which no eviction can change.
        "no new claims to deallocate, "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )


def test_requests_fill_nodes_in_order(simulate_yaml: Simulate) -> None:
    pods = "".join(pod(f"p{i}", "1500m") for i in range(3))
    _code, out, _ = simulate_yaml(FOUR_NODES, pods)
    placed = out["placements"]
    assert sorted(n for n in placed.values() if n) == ["small-1", "small-2"]
    assert placed["default/p2"] is None  # the third does not fit anywhere
    assert out["summary"] == {**out["summary"], "pods": 3, "scheduled": 2, "unscheduled": 1}


def test_already_running_pods_count(simulate_yaml: Simulate) -> None:
    running = pod("running", "1500m", "  nodeName: small-1\n")
    _code, out, _ = simulate_yaml(FOUR_NODES, running, pod("new", "1500m"))
    assert out["placements"] == {"default/running": "small-1", "default/new": "small-2"}


def test_priority_goes_first(simulate_yaml: Simulate) -> None:
    classes = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: urgent}
value: 1000
"""
    low = pod("low", "1500m")
    high = pod("high-1", "1500m", "  priorityClassName: urgent\n")
    high2 = pod("high-2", "1500m", "  priorityClassName: urgent\n")
    _code, out, _ = simulate_yaml(FOUR_NODES, low, high, high2, classes)
    assert out["placements"]["default/low"] is None
    assert out["placements"]["default/high-1"] and out["placements"]["default/high-2"]


def test_toleration_and_selector_reach_the_gpu_node(simulate_yaml: Simulate) -> None:
    extra = """  nodeSelector: {pool: gpu}
  tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]
"""
    _code, out, _ = simulate_yaml(FOUR_NODES, pod("trainer", "4", extra))
    assert out["placements"]["default/trainer"] == "gpu-1"


def test_deployment_statefulset_and_job_expand(simulate_yaml: Simulate) -> None:
    workloads = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: 100m}}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: postgres, resources: {requests: {cpu: 100m}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  parallelism: 4
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
"""
    _code, out, _ = simulate_yaml(FOUR_NODES, workloads)
    keys = list(out["placements"])
    assert len(keys) == 9
    assert {"default/db-0", "default/db-1"} <= set(keys)
    assert sum(k.startswith("default/web-") for k in keys) == 3
    assert sum(k.startswith("default/batch-") for k in keys) == 4
    assert all(out["placements"].values())


def test_host_ports_keep_replicas_apart(simulate_yaml: Simulate) -> None:
    extra = "    ports: [{containerPort: 80, hostPort: 80}]\n"
    pods = "".join(
        pod(f"web-{i}", "100m").replace("    resources:", extra + "    resources:")
        for i in range(3)
    )
    _code, out, _ = simulate_yaml(FOUR_NODES, pods)
    nodes = [n for n in out["placements"].values() if n]
    assert sorted(nodes) == ["small-1", "small-2"]
    reason = next(iter(out["reasons"].values()))
    assert "2 node(s) didn't have free ports for the requested pod ports" in reason


def test_yaml_output_has_the_same_keys(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(FOUR_NODES + pod("p", "1"))
    result = CliRunner().invoke(main, ["simulate", "-f", str(path), "-o", "yaml", "--seed", "1"])
    doc = yaml.safe_load(result.stdout)
    assert set(doc) >= {"placements", "reasons"}
    assert doc["placements"]["default/p"] in {"small-1", "small-2"}


def test_text_report_lists_nodes_and_reasons(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(FOUR_NODES + pod("huge", "64"))
    result = CliRunner().invoke(main, ["simulate", "-f", str(path)])
    assert result.exit_code == 0
    assert "small-1" in result.stdout
    assert "0/4 nodes are available" in result.stdout
    assert "0/1 new pods scheduled, 1 unscheduled; 0 already running" in result.stdout


def test_same_seed_same_placements(tmp_path: Path) -> None:
    args = ["simulate", "-f", str(ROOT / "examples" / "cluster"), "-o", "json", "--seed", "5"]
    first = json.loads(CliRunner().invoke(main, args).stdout)["placements"]
    second = json.loads(CliRunner().invoke(main, args).stdout)["placements"]
    assert first == second


def test_example_cluster_through_the_installed_command() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubesched.cli.main",
            "simulate",
            "-f",
            str(ROOT / "examples" / "cluster"),
            "-o",
            "json",
            "--seed",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["nodes"]) == 54
    assert len(out["placements"]) >= 450
    assert out["summary"]["scheduled"] >= 400
    # every unscheduled pod has a reason, and only those
    unscheduled = {k for k, v in out["placements"].items() if v is None}
    assert unscheduled == set(out["reasons"])


PREEMPTION = """
apiVersion: v1
kind: List
items:
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: high}
  value: 1000
- apiVersion: v1
  kind: Node
  metadata: {name: only}
  status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: low, namespace: default, uid: uid-low}
  spec:
    nodeName: only
    containers: [{name: c, image: nginx, resources: {requests: {cpu: "2"}}}]
- apiVersion: v1
  kind: Pod
  metadata: {name: urgent, namespace: default, uid: uid-urgent}
  spec:
    priorityClassName: high
    containers: [{name: c, image: nginx, resources: {requests: {cpu: "2"}}}]
"""


def test_report_lists_pods_evicted_by_preemption(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(PREEMPTION)
    doc = json.loads(CliRunner().invoke(main, ["simulate", "-f", str(path), "-o", "json"]).stdout)
    assert doc["placements"] == {"default/urgent": "only"}
    assert doc["evicted"] == {"default/low": "Preempted by pod uid-urgent on node only"}
    assert doc["summary"]["evicted"] == 1

    text = CliRunner().invoke(main, ["simulate", "-f", str(path)]).stdout
    assert "Evicted by preemption" in text
    assert "default/low" in text
    # The running pod it preempted is gone: evicted, no longer running (the console
    # wraps the line at its width).
    summary = "1/1 new pods scheduled, 0 unscheduled, 1 evicted by preemption; 0 already running"
    assert summary in " ".join(text.split())


def test_h_is_help_on_every_command() -> None:
    """kubectl's and kube-scheduler's `-h` (issue #31: `simulate -h` said "No such
    option")."""
    for command in ([], ["simulate"], ["explain"], ["capacity"], ["run"], ["version"]):
        result = CliRunner().invoke(main, [*command, "-h"])
        assert result.exit_code == 0, result.output
        assert result.output.startswith("Usage: "), result.output


def test_empty_input_is_noted() -> None:
    """`-f - </dev/null` (issue #31): a report of no pods says why."""
    result = CliRunner().invoke(main, ["simulate", "-f", "-", "-o", "json"], input="")
    assert result.exit_code == 0, result.output
    assert "<stdin> holds no objects" in json.loads(result.stdout)["notes"]


def test_v_on_simulate_explain_and_capacity(tmp_path: Path) -> None:
    """`-v N` as on `run` (issue #31: `simulate -v 3` said "No such option")."""
    path = tmp_path / "c.yaml"
    path.write_text(FOUR_NODES)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        for command in (["simulate"], ["capacity", "--podspec", str(path)], ["explain", "x"]):
            result = CliRunner().invoke(main, [*command, "-f", str(path), "-v", "3"])
            assert "No such option" not in result.output, result.output
        assert root.level == V(3)
    finally:  # the handler writes to CliRunner's stderr, gone after the test
        root.handlers[:] = handlers
        root.setLevel(level)


def test_seed_is_n_or_random_everywhere() -> None:
    """`--seed` takes the same values on `run` as on `simulate` (issue #31)."""
    for command in (["run"], ["simulate", "-f", "-"]):
        result = CliRunner().invoke(main, [*command, "--seed", "nope"], input="")
        assert result.exit_code == 2, result.output
        assert "Invalid value for --seed: 'nope': an integer or 'random'" in result.output


def test_a_bad_object_is_one_line_on_stderr_in_text_mode_too(tmp_path: Path) -> None:
    """Issue #31: in text mode the error was on stdout, wrapped over 5 lines."""
    path = tmp_path / "c.yaml"
    path.write_text(
        FOUR_NODES + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: x}\n"
    )
    for output in ("text", "json"):
        result = CliRunner().invoke(main, ["simulate", "-f", str(path), "-o", output])
        assert result.exit_code == 1
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "(Pod default/p): field spec.priority" in errors[0]
        assert "error: " not in result.stdout
