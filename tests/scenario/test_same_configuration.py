"""simulate, explain and capacity take the same scheduler configuration (--config with
profiles chosen by schedulerName, --disable), say which profile and plugins ran, and
give the same placements on the same input unless asked for randomness."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.cli.options import scheduler_setup

NODES = "".join(
    f"""
---
apiVersion: v1
kind: Node
metadata: {{name: n{i}, labels: {{kubernetes.io/hostname: n{i}}}}}
status: {{allocatable: {{cpu: "8", memory: 16Gi, pods: "110"}}}}
"""
    for i in range(12)
)


def pods(count: int, scheduler: str = "default-scheduler") -> str:
    return "".join(
        f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}, namespace: default}}
spec:
  schedulerName: {scheduler}
  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: "1", memory: 1Gi}}}}}}]
"""
        for i in range(count)
    )


CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: packer
  plugins:
    multiPoint:
      disabled: [{name: NodeResourcesBalancedAllocation}, {name: ImageLocality}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
"""


def invoke(tmp_path: Path, *documents: str, args: tuple[str, ...]) -> tuple[int, str, str]:
    files: list[str] = []
    for i, text in enumerate(documents):
        path = tmp_path / f"in{i}.yaml"
        path.write_text(textwrap.dedent(text))
        files += ["-f", str(path)]
    result = CliRunner().invoke(main, [*args, *files])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.output


def simulate_json(tmp_path: Path, *documents: str, args: tuple[str, ...] = ()) -> Any:
    code, out, output = invoke(tmp_path, *documents, args=("simulate", "-o", "json", *args))
    assert code == 0, output
    return json.loads(out)


def test_config_profiles_by_scheduler_name(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    found = simulate_json(
        tmp_path,
        NODES,
        pods(4, "packer"),
        pods(1, "default-scheduler").replace("p0", "other"),
        args=("--config", str(config)),
    )
    placements = found["placements"]
    # MostAllocated packs: every packer pod on one node.
    packed = {placements[f"default/p{i}"] for i in range(4)}
    assert len(packed) == 1
    # Only the file's profiles run: default-scheduler has none here.
    assert found["reasons"]["default/other"] == 'no profile for schedulerName "default-scheduler"'
    (profile,) = found["profiles"]
    assert profile["profile"] == "packer"
    assert "NodeResourcesBalancedAllocation" not in profile["score"]
    assert "ImageLocality" not in profile["score"]
    assert profile["score"]["NodeResourcesFit"] == 1
    # explain runs the same profile: MostAllocated's score, by hand, for the first pod
    # on an empty 8-cpu/16Gi node: (1000 * 100 / 8000 + 1Gi * 100 / 16Gi) / 2 = (12 + 6) / 2 = 9.
    code, out, output = invoke(
        tmp_path,
        NODES,
        pods(4, "packer"),
        args=("explain", "p0", "-o", "json", "--config", str(config)),
    )
    assert code == 0, output
    explanation = json.loads(out)["pods"][0]["explanations"][0]
    assert explanation["plugins"]["profile"] == "packer"
    fit = [s for s in explanation["scored"][0]["scores"] if s["plugin"] == "NodeResourcesFit"]
    assert fit[0]["raw"] == (1000 * 100 // 8000 + 100 // 16) // 2


def test_disable_a_plugin_everywhere(tmp_path: Path) -> None:
    tainted = """
apiVersion: v1
kind: Node
metadata: {name: only}
spec: {taints: [{key: dedicated, value: db, effect: NoSchedule}]}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
"""
    assert simulate_json(tmp_path, tainted, pods(1))["placements"]["default/p0"] is None
    found = simulate_json(tmp_path, tainted, pods(1), args=("--disable", "TaintToleration"))
    assert found["placements"]["default/p0"] == "only"
    assert all("TaintToleration" not in p["filter"] for p in found["profiles"])
    code, _, output = invoke(tmp_path, tainted, pods(1), args=("simulate", "--disable", "Nope"))
    assert code == 2 and "unknown plugin 'Nope'" in output
    # Issue #31: a typo is answered with the name meant and the known ones.
    code, _, output = invoke(
        tmp_path, tainted, pods(1), args=("simulate", "--disable", "ImageLocalty")
    )
    assert code == 2 and "did you mean 'ImageLocality'?" in output and "(known: " in output
    code, _, output = invoke(
        tmp_path, tainted, pods(1), args=("simulate", "--disable", "DefaultBinder")
    )
    assert code == 2 and "at least one bind plugin is needed" in output
    assert "Invalid value for --disable" in output
    # The option that broke the profile is the one named (it said --disable).
    code, _, output = invoke(
        tmp_path, tainted, pods(1), args=("simulate", "--enable", "Coscheduling")
    )
    assert code == 2 and "exactly one queueSort plugin" in output
    assert "Invalid value for --enable:" in output


def test_reproducible_by_default(tmp_path: Path) -> None:
    # Twelve equal nodes, twelve equal pods: every placement is a tie-break.
    first = simulate_json(tmp_path, NODES, pods(12))
    second = simulate_json(tmp_path, NODES, pods(12))
    assert first["placements"] == second["placements"]
    assert first["summary"]["seed"] == 0
    assert "tie-breaks seeded with 0" in first["notes"]


def test_random_seed_is_reported_and_repeats(tmp_path: Path) -> None:
    found = simulate_json(tmp_path, NODES, pods(12), args=("--seed", "random"))
    seed = found["summary"]["seed"]
    assert f"tie-breaks seeded at random with {seed}: repeat with --seed {seed}" in found["notes"]
    again = simulate_json(tmp_path, NODES, pods(12), args=("--seed", str(seed)))
    assert again["placements"] == found["placements"]


def test_a_config_naming_a_plugin_that_does_not_exist(tmp_path: Path) -> None:
    """The file's name, the profile and the name meant (issue #31)."""
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "  plugins: {score: {enabled: [{name: NodeResourceFit}]}}\n"
    )
    code, _, output = invoke(tmp_path, NODES, pods(1), args=("simulate", "--config", str(config)))
    assert code == 2
    assert f"{config}: profile 'default-scheduler': 'NodeResourceFit' does not exist" in output
    assert "did you mean 'NodeResourcesFit'" in output


def test_a_weight_on_a_plugin_without_score_is_noted() -> None:
    """kube-scheduler ignores it (getValidScoreWeights skips it); kubesched says so."""
    setup = scheduler_setup(None, (), ("NodeName:3", "ImageLocality:2"), (), "0", None)
    assert setup.notes == ["--enable NodeName:3: NodeName has no Score, its weight is ignored"]
