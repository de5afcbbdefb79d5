"""Gangs in `kubesched simulate`: scheduler-plugins PodGroups read from manifests, the
Coscheduling configuration scheduler-plugins documents, and the report's gangs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.cli.workloads import reason_groups
from tests.scenario.conftest import Simulate

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
"""


def nodes(*gpus: int) -> str:
    return "".join(
        f"""
---
apiVersion: v1
kind: Node
metadata: {{name: gpu-{i}}}
status:
  allocatable: {{cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "{count}"}}
"""
        for i, count in enumerate(gpus)
    )


def gang(name: str, size: int, min_member: int, priority: int = 0, extra: str = "") -> str:
    text = f"""
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: {name}, namespace: default}}
spec: {{minMember: {min_member}{extra}}}
"""
    for i in range(size):
        text += f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}-{i}
  labels: {{scheduling.x-k8s.io/pod-group: {name}}}
spec:
  priority: {priority}
  containers:
  - name: worker
    image: trainer
    resources: {{requests: {{cpu: "1", nvidia.com/gpu: "1"}}, limits: {{nvidia.com/gpu: "1"}}}}
"""
    return text


@pytest.fixture
def config(tmp_path: Path) -> tuple[str, ...]:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG)
    return ("--config", str(path))


def test_a_podgroup_of_eight_is_placed_whole(
    simulate_yaml: Simulate, config: tuple[str, ...]
) -> None:
    code, doc, _ = simulate_yaml(nodes(4, 4), gang("train", 8, 8), args=config)
    assert code == 0
    assert sum(1 for n in doc["placements"].values() if n) == 8
    train = doc["gangs"]["default/train"]
    assert (train["state"], train["scheduled"], train["minMember"]) == ("placed", 8, 8)
    # scheduler-plugins' controller: minMember pods exist, none Running (no kubelet).
    assert train["phase"] == "Scheduling"


def test_a_podgroup_of_eight_where_seven_fit_is_not_placed_at_all(
    simulate_yaml: Simulate, config: tuple[str, ...]
) -> None:
    code, doc, _ = simulate_yaml(nodes(4, 3), gang("train", 8, 8), args=config)
    assert code == 0
    assert all(n is None for n in doc["placements"].values())
    assert all(u["requested"].get("nvidia.com/gpu", 0) == 0 for u in doc["nodes"].values())
    train = doc["gangs"]["default/train"]
    assert train["state"] == "impossible"
    assert "podGroup default/train cannot be placed whole: only 7 of the 8" in train["reason"]


def test_competing_gangs_one_completes_the_other_holds_nothing(
    simulate_yaml: Simulate, config: tuple[str, ...]
) -> None:
    code, doc, _ = simulate_yaml(
        nodes(9, 9), gang("a", 10, 10, priority=5), gang("b", 10, 10, priority=5), args=config
    )
    assert code == 0
    gangs = doc["gangs"]
    assert sorted(g["scheduled"] for g in gangs.values()) == [0, 10]
    loser = next(g for g in gangs.values() if g["scheduled"] == 0)
    assert loser["state"] == "impossible"
    assert sum(u["requested"].get("nvidia.com/gpu", 0) for u in doc["nodes"].values()) == 10


def test_a_gang_short_of_pods_is_waiting(simulate_yaml: Simulate, config: tuple[str, ...]) -> None:
    code, doc, _ = simulate_yaml(nodes(8), gang("train", 3, 4), args=config)
    assert code == 0
    train = doc["gangs"]["default/train"]
    assert (train["state"], train["reason"]) == ("waiting", "3 of its minMember 4 pods exist")
    assert train["phase"] == "Pending"


def test_unknown_podgroup_fields_are_warned_about(
    simulate_yaml: Simulate, config: tuple[str, ...]
) -> None:
    code, doc, _ = simulate_yaml(
        nodes(8), gang("train", 2, 2, extra=", minTaskMember: {a: 1}"), args=config
    )
    assert code == 0
    assert any(
        "PodGroup default/train" in note and "spec.minTaskMember" in note for note in doc["notes"]
    )
    assert doc["gangs"]["default/train"]["state"] == "placed"


def test_an_invalid_podgroup_is_a_problem_naming_the_field(
    simulate_yaml: Simulate, config: tuple[str, ...]
) -> None:
    _, doc, _ = simulate_yaml(nodes(8), gang("train", 2, -1), args=config)
    assert any("spec.minMember" in p and "default/train" in p for p in doc["problems"])


def test_coscheduling_args_are_checked_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CONFIG.replace("permitWaitingTimeSeconds: 10", "podGroupBackoffSeconds: -1"))
    manifest = tmp_path / "m.yaml"
    manifest.write_text(nodes(1))
    result = CliRunner().invoke(main, ["simulate", "-f", str(manifest), "--config", str(path)])
    assert result.exit_code != 0
    assert "podGroupBackoffSeconds: Invalid value: -1: must be greater than 0" in result.output


def test_podgroups_without_coscheduling_are_noted(simulate_yaml: Simulate) -> None:
    code, doc, _ = simulate_yaml(nodes(4), gang("train", 2, 2))
    assert code == 0
    assert any("no profile enables Coscheduling" in note for note in doc["notes"])
    # No gang was placed as a gang: no gangs and no phase are shown (issue #31).
    assert "gangs" not in doc


def test_example_cluster_training_gang_is_placed_and_the_sweep_holds_nothing() -> None:
    """examples/cluster with examples/scheduler-config.yaml (what `make run` runs)."""
    root = Path(__file__).resolve().parents[2]
    out = CliRunner().invoke(
        main,
        [
            "simulate",
            "-f",
            str(root / "examples" / "cluster"),
            "--config",
            str(root / "examples" / "scheduler-config.yaml"),
            "-o",
            "json",
            "--seed",
            "1",
        ],
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    train, sweep = doc["gangs"]["ml/train"], doc["gangs"]["ml/sweep"]
    assert (train["state"], train["scheduled"]) == ("placed", 12)
    assert (sweep["state"], sweep["scheduled"]) == ("impossible", 0)
    assert "podGroup ml/sweep cannot be placed whole" in sweep["reason"]


def test_explain_shows_the_gang_placement(tmp_path: Path, config: tuple[str, ...]) -> None:
    manifest = tmp_path / "gang.yaml"
    manifest.write_text(nodes(4, 4) + gang("train", 8, 8))
    args = ["explain", "-f", str(manifest), *config, "default/train-3"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0, text.output
    assert "Gang default/train: placed, 8 of 8 pods scheduled (minMember 8" in text.output
    assert "gpu-0 ×4, gpu-1 ×4" in text.output
    doc = json.loads(CliRunner().invoke(main, [*args, "-o", "json"]).stdout)
    gang_doc = doc["pods"][0]["gang"]
    assert (gang_doc["group"], gang_doc["state"], gang_doc["scheduled"]) == (
        "default/train",
        "placed",
        8,
    )
    assert sorted(set(gang_doc["nodes"].values())) == ["gpu-0", "gpu-1"]


def test_explain_shows_why_a_gang_is_not_placed(tmp_path: Path, config: tuple[str, ...]) -> None:
    manifest = tmp_path / "gang.yaml"
    manifest.write_text(nodes(4, 3) + gang("train", 8, 8))
    out = CliRunner().invoke(
        main, ["explain", "-f", str(manifest), *config, "default/train-0", "-o", "json"]
    )
    gang_doc = json.loads(out.stdout)["pods"][0]["gang"]
    assert gang_doc["state"] == "impossible"
    assert "cannot be placed whole: only 7 of the 8" in gang_doc["reason"]


def member(name: str, group: str, priority: int, gpus: int = 1, node: str = "", **spec: str) -> str:
    labels = f"{{scheduling.x-k8s.io/pod-group: {group}}}" if group else "{}"
    extra = "".join(f"\n  {k}: {v}" for k, v in spec.items())
    bound = f"\n  nodeName: {node}" if node else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {labels}
spec:
  priority: {priority}{bound}{extra}
  containers:
  - name: worker
    image: trainer
    resources:
      requests: {{cpu: "1", nvidia.com/gpu: "{gpus}"}}
      limits: {{nvidia.com/gpu: "{gpus}"}}
"""


def test_a_timeout_releases_the_groups_reservations(tmp_path: Path) -> None:
    """As tests/integration/test_run_coscheduling.py's timeout case: the trial finds
    room for all three members, a higher-priority pod takes the last one's GPU, the
    group (podGroupRejectPercentage 50) waits at Permit until scheduleTimeoutSeconds
    runs out, and nothing of it is placed or held."""
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG + "      podGroupRejectPercentage: 50\n")
    never = {"preemptionPolicy": "Never"}
    manifest = tmp_path / "cluster.yaml"
    manifest.write_text(
        nodes(3)
        + gang("train", 0, 3, extra=", scheduleTimeoutSeconds: 3")
        + member("train-0", "train", 1000, **never)
        + member("train-1", "train", 1000, **never)
        + member("train-2", "train", 0, **never)
        + member("other", "", 500)
    )
    args = ["-f", str(manifest), "--config", str(config)]
    doc = json.loads(CliRunner().invoke(main, ["simulate", *args, "-o", "json"]).stdout)
    assert doc["placements"] == {
        "default/train-0": None,
        "default/train-1": None,
        "default/train-2": None,
        "default/other": "gpu-0",
    }
    assert doc["nodes"]["gpu-0"]["requested"]["nvidia.com/gpu"] == 1
    assert doc["gangs"]["default/train"]["state"] == "impossible"
    assert doc["summary"]["simulatedSeconds"] >= 3
    # The first attempt of a member reserved the node and waited at Permit in vain.
    out = CliRunner().invoke(main, ["explain", *args, "default/train-0", "--all-attempts"])
    assert "Result: Permit: rejected due to timeout after waiting 3s at plugin" in out.output


def test_a_gang_preempts_lower_priority_pods_whole_or_not_at_all(
    simulate_yaml: Simulate, config: tuple[str, ...]
) -> None:
    """As the integration test's gang preemption: the two single pods are the fewest
    victims; the running low-priority gang is taken whole or not at all, so it stays."""
    running = "".join(member(f"low-{i}", "low", 0, node="gpu-0") for i in range(4))
    running += "".join(member(f"single-{i}", "", 0, node="gpu-1") for i in range(2))
    code, doc, _ = simulate_yaml(
        nodes(4, 4), gang("low", 0, 4), running, gang("high", 4, 4, priority=1000), args=config
    )
    assert code == 0
    assert {k for k, n in doc["placements"].items() if k.startswith("default/high")} == {
        f"default/high-{i}" for i in range(4)
    }
    assert all(doc["placements"][f"default/high-{i}"] == "gpu-1" for i in range(4))
    assert sorted(doc["evicted"]) == ["default/single-0", "default/single-1"]
    assert doc["gangs"]["default/high"]["state"] == "placed"


def test_a_gang_that_does_not_fit_is_one_row_of_the_text_report(
    tmp_path: Path, config: tuple[str, ...]
) -> None:
    """Issue #31: each member's text names the member, so each got a row of its own."""
    (tmp_path / "in.yaml").write_text(textwrap.dedent(nodes(4, 3) + gang("train", 8, 8)))
    result = CliRunner().invoke(
        main, ["simulate", "-f", str(tmp_path / "in.yaml"), "--seed", "1", *config]
    )
    assert result.exit_code == 0, result.output
    table = result.stdout[result.stdout.index("Unscheduled pods") :]
    # Seven members share one text (it names the member that failed first), the one
    # that failed first names another: two rows, not eight.
    assert table.count("… 4 more") == 1, table


def test_reason_groups_count_a_text_naming_its_own_pod_once() -> None:
    reasons = {
        f"ml/w-{i}": f'pod "ml/w-{i}" rejected: gang ml/train of 16 cannot be placed whole'
        for i in range(16)
    } | {"ml/x": "0/2 nodes are available: 2 Insufficient cpu."}
    groups = reason_groups(reasons)
    assert [len(keys) for _, keys in groups] == [16, 1]
    assert groups[0][0] == 'pod "ml/w-0" rejected: gang ml/train of 16 cannot be placed whole'
