"""`kubesched simulate` (and `run`'s flags and config) against hostile files and CLI
mistakes (issue #12): each class of input that made it crash, hang or read input as
markup. The bad object is a problem (exit code 1) and the rest is still scheduled;
a CLI mistake is one line (click's exit code 2, or 1), never a traceback. The
cases that crashed the interpreter itself (a segfault in libyaml's composer) or
ran away run in a subprocess with a timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kubesched.cli.main import main

NODE = """
apiVersion: v1
kind: Node
metadata: {name: good-node}
status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: good-pod}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]}
"""
SRC = Path(__file__).resolve().parents[2] / "src"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def simulate(tmp_path: Path, bad: str, *args: str, name: str = "bad.yaml") -> Result:
    """simulate over a good node and pod plus `bad`, as JSON."""
    good = write(tmp_path, "good.yaml", NODE + "---" + POD)
    path = write(tmp_path, name, bad)
    return CliRunner().invoke(
        main, ["simulate", "-f", str(good), "-f", str(path), "-o", "json", *args]
    )


def assert_problem(result: Result, *needles: str) -> dict[str, Any]:
    """Exit code 1, no traceback, one problem saying each needle, good-pod bound."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    document: dict[str, Any] = json.loads(result.stdout)
    assert len(document["problems"]) == 1, document["problems"]
    for needle in needles:
        assert needle in document["problems"][0]
    assert document["placements"]["default/good-pod"] == "good-node"
    return document


def run_cli(
    args: list[str], stdin: str = "", timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """The CLI in its own interpreter: a segfault is a return code, not the test's death."""
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "kubesched.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def workload(kind: str, count_field: str, count: int) -> str:
    api = "batch/v1" if kind == "Job" else "apps/v1"
    selector = "" if kind == "Job" else "  selector: {matchLabels: {app: big}}\n"
    return (
        f"apiVersion: {api}\nkind: {kind}\nmetadata: {{name: big}}\nspec:\n"
        f"  {count_field}: {count}\n{selector}"
        "  template:\n    metadata: {labels: {app: big}}\n"
        "    spec: {restartPolicy: Never, containers: [{name: c, image: x}]}\n"
    )


# --- 1. huge counts, deep JSON, quantities past int64, markup ---------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("kind", "count_field"),
    [
        ("Deployment", "replicas"),
        ("ReplicaSet", "replicas"),
        ("StatefulSet", "replicas"),
        ("Job", "parallelism"),
    ],
)
def test_a_workload_past_max_pods_is_a_problem(tmp_path: Path, kind: str, count_field: str) -> None:
    result = simulate(tmp_path, workload(kind, count_field, 2_000_000_000))
    assert_problem(result, f"{kind} default/big", f"field spec.{count_field}", "--max-pods")


@pytest.mark.timeout(60)
def test_max_pods_raises_the_limit(tmp_path: Path) -> None:
    bad = workload("Deployment", "replicas", 3)
    assert_problem(simulate(tmp_path, bad, "--max-pods", "3"), "limit of 3 pods")
    result = simulate(tmp_path, bad, "--max-pods", "4")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["pods"] == 4


@pytest.mark.timeout(60)
@pytest.mark.parametrize("count_field", ["parallelism", "completions"])
def test_counts_past_int32_are_refused(tmp_path: Path, count_field: str) -> None:
    bad = workload("Job", count_field, 2**40)
    assert_problem(simulate(tmp_path, bad), f"field spec.{count_field}", "of type int32")


@pytest.mark.timeout(60)
def test_an_indexed_job_of_int32_completions_takes_only_what_it_runs(tmp_path: Path) -> None:
    bad = (
        workload("Job", "parallelism", 2) + "  completionMode: Indexed\n  completions: 2147483647\n"
    )
    result = simulate(tmp_path, bad)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["summary"]["pods"] == 3


@pytest.mark.timeout(60)
@pytest.mark.parametrize("depth", [990, 5000, 200_000])
def test_deeply_nested_json_is_a_problem(tmp_path: Path, depth: int) -> None:
    nested = "[" * depth + "]" * depth
    bad = f'{{"apiVersion": "v1", "kind": "Pod", "metadata": {{"name": "x", "labels": {nested}}}}}'
    result = simulate(tmp_path, bad, name="bad.json")
    assert_problem(result, "bad.json: document 1", "nested too deeply")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("resource", "quantity"),
    [
        ("cpu", "99999999999999999999999"),
        ("memory", "9223372036854775808"),
        ("memory", "1e30"),
        ("cpu", "9223372036854776"),  # fits int64, but not in millicores
        ("cpu", 10**30),
    ],
)
def test_node_quantities_past_int64_are_a_problem(
    tmp_path: Path, resource: str, quantity: object
) -> None:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110", resource: quantity}
    bad = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n2"},
            "status": {"capacity": capacity},
        }
    )
    result = simulate(tmp_path, bad, name="bad.json")
    assert_problem(result, "(Node n2)", f"field status.capacity.{resource}")


def test_requests_adding_up_past_int64_saturate(tmp_path: Path) -> None:
    big = "{memory: 4Ei, cpu: '4611686018427387'}"  # each half of int64 (cpu in milli)
    # The overhead comes from a RuntimeClass, as RuntimeClass admission sets it.
    runtime_class = f"""
    apiVersion: node.k8s.io/v1
    kind: RuntimeClass
    metadata: {{name: huge}}
    handler: huge
    overhead: {{podFixed: {big}}}
    ---"""
    pod = f"""
    apiVersion: v1
    kind: Pod
    metadata: {{name: {{NAME}}}}
    spec:
      NODE
      runtimeClassName: huge
      containers:
      - {{name: a, resources: {{requests: {big}}}}}
      - {{name: b, resources: {{requests: {big}}}}}
    """
    bound = pod.replace("{NAME}", "bound").replace("NODE", "nodeName: good-node")
    pending = pod.replace("{NAME}", "pending").replace("NODE", "priority: 0")
    result = simulate(tmp_path, runtime_class + bound + "---" + pending)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["nodes"]["good-node"]["requested"]["memory"] == 2**63 - 1
    assert document["placements"]["default/pending"] is None


@pytest.mark.timeout(60)
def test_the_text_report_reads_no_input_as_markup(tmp_path: Path) -> None:
    node = NODE.replace("good-node", '"[bold]node[/]"')
    pod = """
    apiVersion: v1
    kind: Pod
    metadata: {name: "pod[/]:smile:[red]"}
    spec: {nodeName: nw, containers: [{name: c, resources: {requests: {cpu: "[u]"}}}]}
    ---
    apiVersion: v1
    kind: "[link=x]Kind[/]"
    metadata: {name: y}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: "pending[/i]"}
    spec: {nodeSelector: {"[b]": "[/b]"}, containers: [{name: c, image: x}]}
    """
    good = write(tmp_path, "nodes.yaml", node)
    bad = write(tmp_path, "bad.yaml", pod)
    result = CliRunner().invoke(main, ["simulate", "-f", str(good), "-f", str(bad)])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    for literal in ("[bold]node[/]", "pod[/]:smile:[red]", "[link=x]Kind[/]", "pending[/i]"):
        assert literal in result.output.replace("\n", "")


# --- 2. what crashed the interpreter: deep YAML, alias expansion -----------------


@pytest.mark.timeout(120)
def test_deeply_nested_yaml_flow_collections_are_a_problem(tmp_path: Path) -> None:
    good = write(tmp_path, "good.yaml", NODE + "---" + POD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(POD + "---\na: " + "[" * 100_000 + "]" * 100_000 + "\n")
    done = run_cli(["simulate", "-f", str(good), "-f", str(bad), "-o", "json"])
    assert done.returncode == 1, done.stderr[-2000:]
    assert "bad.yaml: document 2: YAML nested more than 1000 levels deep" in done.stderr
    assert json.loads(done.stdout)["placements"]["default/good-pod"] == "good-node"


BILLION_LAUGHS = "".join(
    f"    x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 12)
)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["spec.template.spec", "spec.template.metadata"])
def test_alias_expansion_in_a_pod_template_is_a_problem(tmp_path: Path, where: str) -> None:
    field = "x" if where.endswith("spec") else "annotations"
    bad = textwrap.dedent(
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: lol}
        spec:
          selector: {matchLabels: {a: b}}
          template:
            metadata:
              labels: {a: b}
        """
    )
    laughs = "    x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BILLION_LAUGHS
    if field == "annotations":
        bad += "      annotations:\n" + textwrap.indent(laughs, "    ")
        bad += "    spec: {containers: [{name: c, image: x}]}\n"
    else:
        bad += "    spec:\n      containers: [{name: c, image: x}]\n" + textwrap.indent(
            laughs, "  "
        )
    good = write(tmp_path, "good.yaml", NODE + "---" + POD)
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    done = run_cli(["simulate", "-f", str(good), "-f", str(path), "-o", "json"], timeout=90)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "excessive aliasing" in done.stderr
    assert json.loads(done.stdout)["placements"]["default/good-pod"] == "good-node"


def test_an_alias_inside_its_own_anchor_is_a_problem(tmp_path: Path) -> None:
    bad = POD.replace("good-pod", "self").replace("spec:", "x: &me [1, *me]\nspec:")
    result = simulate(tmp_path, bad)
    assert_problem(result, "contains itself")


# --- 3. quantities that hung --------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("quantity", ["1e999999999", "1e-999999999", "1E+2147483647"])
def test_quantities_with_huge_exponents_are_parsed_in_bounded_time(
    tmp_path: Path, quantity: str
) -> None:
    bad = NODE.replace("good-node", "n2").replace(
        'cpu: "4"', f'cpu: "4", example.com/x: "{quantity}"'
    )
    result = simulate(tmp_path, bad)
    if quantity == "1e-999999999":
        # Rounds up to 1n, as ParseQuantity does, which an extended resource may not
        # be on a node (ValidateNode: "must be an integer").
        assert_problem(result, "status.capacity[example.com/x]", "must be an integer")
    else:
        assert_problem(result, "field status.capacity.example.com/x", "too large")


# --- 4. CLI and config mistakes -----------------------------------------------------


@pytest.mark.parametrize(
    ("enable", "needle"),
    [
        ("NoSuchPlugin", "unknown plugin 'NoSuchPlugin'"),
        ("NodeResourcesFit:heavy", "the weight must be an integer"),
        ("NodeResourcesFit:-3", "the weight must be an integer"),
        ("NodeResourcesFit:1.5", "the weight must be an integer"),
    ],
)
def test_enable_mistakes_are_usage_errors(tmp_path: Path, enable: str, needle: str) -> None:
    good = write(tmp_path, "good.yaml", NODE)
    result = CliRunner().invoke(main, ["simulate", "-f", str(good), "--enable", enable])
    assert result.exit_code == 2, result.output
    assert needle in result.output
    assert "Traceback" not in result.output


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (
            "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: NoSuchPlugin}]\n",
            "plugins.multiPoint: plugin 'NoSuchPlugin' does not exist",
        ),
        (
            "extenders:\n- {urlPrefix: 'http://127.0.0.1:1', prioritizeVerb: prioritize}\n",
            "extenders[0].weight: Invalid value: 0: must have a positive weight",
        ),
    ],
)
def test_run_refuses_a_bad_config_in_one_line(tmp_path: Path, extra: str, needle: str) -> None:
    config = write(tmp_path, "config.yaml", CONFIG + extra)
    kubeconfig = write(tmp_path, "kubeconfig", KUBECONFIG)
    result = CliRunner().invoke(
        main,
        ["run", "--config", str(config), "--kubeconfig", str(kubeconfig), "--health-port", "0"],
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1, result.output
    assert str(config) in error[0]
    assert needle in error[0]


@pytest.mark.timeout(120)
def test_run_refuses_a_deeply_nested_config(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG + "profiles: " + "[" * 100_000 + "]" * 100_000 + "\n")
    done = run_cli(["run", "--config", str(config)])
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"Error: {config}: YAML nested more than 1000 levels deep" in done.stderr


@pytest.mark.parametrize("command", ["simulate --from-cluster", "run"])
def test_a_missing_kubeconfig_is_a_usage_error(tmp_path: Path, command: str) -> None:
    missing = str(tmp_path / "nope")
    result = CliRunner().invoke(main, [*command.split(), "--kubeconfig", missing])
    assert result.exit_code == 2, result.output
    assert "'--kubeconfig'" in result.output
    assert "does not exist" in result.output


@pytest.mark.parametrize("flag", ["-v=4", "--v=4", "-v4", "--v", "-v"])
def test_verbosity_is_given_as_kube_scheduler_takes_it(tmp_path: Path, flag: str) -> None:
    args = [flag] if "4" in flag else [flag, "4"]
    missing = str(tmp_path / "nope.yaml")
    result = CliRunner().invoke(main, ["run", *args, "--config", missing])
    # The flag parsed: what is refused is the missing --config file.
    assert result.exit_code == 2, result.output
    assert "'--config'" in result.output


# --- 5. stdin -----------------------------------------------------------------------


def test_dash_reads_manifests_from_stdin() -> None:
    result = CliRunner().invoke(
        main, ["simulate", "-f", "-", "-o", "json"], input=textwrap.dedent(NODE + "---" + POD)
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["placements"] == {"default/good-pod": "good-node"}
