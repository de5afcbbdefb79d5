"""`kubesched simulate --feature-gates` with a Workload API gang: the same results as
the in-process tests (tests/unit/test_gang_workload.py) through the command line."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kubesched.cli.main import main

GATES = "GenericWorkload=true,GangScheduling=true"


def gang_file(tmp_path: Path, nodes: int) -> Path:
    docs = [
        f"""apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}"""
        for i in range(nodes)
    ]
    docs.append("""apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: train}
spec: {schedulingPolicy: {gang: {minCount: 8}}}""")
    docs += [
        f"""apiVersion: v1
kind: Pod
metadata: {{name: w{i}}}
spec:
  schedulingGroup: {{podGroupName: train}}
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: "3"}}}}}}]"""
        for i in range(8)
    ]
    path = tmp_path / "gang.yaml"
    path.write_text("\n---\n".join(docs))
    return path


def simulate(path: Path, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(main, ["simulate", "-f", str(path), "-o", "json", *args])
    assert result.exit_code == 0, result.output
    document: dict[str, object] = json.loads(result.output)
    return document


def test_gang_of_8_all_or_nothing_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    whole = simulate(gang_file(tmp_path / "a", 8), "--feature-gates", GATES)
    placements = whole["placements"]
    assert isinstance(placements, dict) and all(placements.values())
    short = simulate(gang_file(tmp_path / "b", 7), "--feature-gates", GATES)
    placements = short["placements"]
    assert isinstance(placements, dict) and not any(placements.values())


def test_without_the_gates_pods_are_placed_one_by_one(tmp_path: Path) -> None:
    document = simulate(gang_file(tmp_path, 7))
    placements = document["placements"]
    assert isinstance(placements, dict)
    assert sum(1 for node in placements.values() if node) == 7
    # Never in silence: the PodGroup was read and not used.
    notes = document["notes"]
    assert isinstance(notes, list)
    assert any("the GenericWorkload gate is off" in str(note) for note in notes)


def test_a_gate_without_its_dependency_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["simulate", "-f", str(gang_file(tmp_path, 1)), "--feature-gates", "GangScheduling=true"],
    )
    assert result.exit_code == 2
    assert (
        "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]"
        in result.output
    )
