"""`kubesched explain`: verdicts and scores for known cases, each score checked against
the upstream formula computed here by hand, and the explained choice against what
`simulate` chose."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubesched.cli.main import main

MB = 1024 * 1024
GI = 1024 * MB
IMAGE_SIZE = 500 * MB

NODES = f"""
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {{name: n1, labels: {{disktype: ssd}}}}
  status:
    allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
    images: [{{names: ["registry.example/app:1.0"], sizeBytes: {IMAGE_SIZE}}}]
- apiVersion: v1
  kind: Node
  metadata: {{name: n2}}
  spec: {{taints: [{{key: flaky, value: "yes", effect: PreferNoSchedule}}]}}
  status: {{allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}}}
- apiVersion: v1
  kind: Node
  metadata: {{name: n3}}
  status: {{allocatable: {{cpu: "8", memory: 16Gi, pods: "110"}}}}
- apiVersion: v1
  kind: Node
  metadata: {{name: n4}}
  spec:
    unschedulable: true
    taints: [{{key: dedicated, value: db, effect: NoSchedule}}]
  status: {{allocatable: {{cpu: "8", memory: 16Gi, pods: "110"}}}}
- apiVersion: v1
  kind: Node
  metadata: {{name: n5}}
  status: {{allocatable: {{cpu: 500m, memory: 16Gi, pods: "110"}}}}
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: default}
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: disktype, operator: In, values: [ssd]}]}
  containers:
  - name: c
    image: registry.example/app:1.0
    resources: {requests: {cpu: "1", memory: 1Gi}}
"""


def run(tmp_path: Path, *documents: str, args: tuple[str, ...]) -> tuple[int, str]:
    paths: list[str] = []
    for i, text in enumerate(documents):
        path = tmp_path / f"{i:02d}.yaml"
        path.write_text(textwrap.dedent(text))
        paths += ["-f", str(path)]
    result = CliRunner().invoke(main, [*args, *paths])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


def explain_json(tmp_path: Path, *documents: str, pod: str, seed: str = "0") -> dict[str, Any]:
    code, out = run(tmp_path, *documents, args=("explain", pod, "-o", "json", "--seed", seed))
    assert code == 0, out
    found = json.loads(out)["pods"][0]
    assert isinstance(found, dict)
    return found


def simulate_placements(tmp_path: Path, *documents: str, seed: str = "0") -> dict[str, Any]:
    code, out = run(tmp_path, *documents, args=("simulate", "-o", "json", "--seed", seed))
    assert code == 0, out
    placements = json.loads(out)["placements"]
    assert isinstance(placements, dict)
    return placements


# --- the upstream formulas, by hand ----------------------------------------------------


def least_allocated(requested: dict[str, int], allocatable: dict[str, int]) -> int:
    """noderesources leastRequestedScore per resource, averaged over cpu and memory
    (weights 1): (allocatable - requested) * 100 / allocatable, integer division."""
    per = [(allocatable[r] - requested[r]) * 100 // allocatable[r] for r in ("cpu", "memory")]
    return sum(per) // len(per)


def balanced_allocation(requested: dict[str, int], allocatable: dict[str, int]) -> int:
    """v1.36.3's balancedResourceScorer on an empty node: the balance with the pod
    ((1 - std of the requested fractions) * 100, truncated; with two resources the std
    is half their difference) against the balance without it (an empty node: 100),
    as MaxNodeScore/2 + (MaxNodeScore/2 + with - without) / 2 (Go's truncating /)."""

    def balance(cpu: float, memory: float) -> int:
        return int((1 - abs(cpu - memory) / 2) * 100)

    with_pod = balance(
        requested["cpu"] / allocatable["cpu"], requested["memory"] / allocatable["memory"]
    )
    without_pod = balance(0.0, 0.0)
    return 50 + int((50 + with_pod - without_pod) / 2)


def image_locality(size: int, nodes_with_image: int, total_nodes: int) -> int:
    """imagelocality calculatePriority of scaledImageScore, one container."""
    scaled = int(size * nodes_with_image / total_nodes)
    low, high = 23 * MB, 1000 * MB
    clamped = min(max(scaled, low), high)
    return 100 * (clamped - low) // (high - low)


def scores_of(group: dict[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    return {
        s["plugin"]: (s["raw"], s["normalized"], s["weight"], s["weighted"])
        for s in group["scores"]
    }


def test_scores_follow_the_upstream_formulas(tmp_path: Path) -> None:
    found = explain_json(tmp_path, NODES, POD, pod="default/app")
    explanation = found["explanations"][0]
    by_node = {node: group for group in explanation["scored"] for node in group["nodes"]}
    assert sorted(by_node) == ["n1", "n2", "n3"]
    pod = {"cpu": 1000, "memory": 1 * GI}
    small = {"cpu": 4000, "memory": 8 * GI}
    big = {"cpu": 8000, "memory": 16 * GI}
    image = image_locality(IMAGE_SIZE, 1, 5)  # 5 nodes in the snapshot, 1 with the image
    assert image == 7
    expected = {
        # plugin: (raw, normalized, weight, weighted)
        "n1": {
            # no PreferNoSchedule taint: 0 intolerable, reversed by normalization to 100
            "TaintToleration": (0, 100, 3, 300),
            # the preferred term's weight (10), normalized to the highest (10) as 100
            "NodeAffinity": (10, 100, 2, 200),
            "NodeResourcesFit": (least_allocated(pod, small),) * 2
            + (1, least_allocated(pod, small)),
            "NodeResourcesBalancedAllocation": (balanced_allocation(pod, small),) * 2
            + (1, balanced_allocation(pod, small)),
            "ImageLocality": (image, image, 1, image),
        },
        "n2": {
            "TaintToleration": (1, 0, 3, 0),
            "NodeAffinity": (0, 0, 2, 0),
            "NodeResourcesFit": (least_allocated(pod, small),) * 2
            + (1, least_allocated(pod, small)),
            "NodeResourcesBalancedAllocation": (balanced_allocation(pod, small),) * 2
            + (1, balanced_allocation(pod, small)),
            "ImageLocality": (0, 0, 1, 0),
        },
        "n3": {
            "TaintToleration": (0, 100, 3, 300),
            "NodeAffinity": (0, 0, 2, 0),
            "NodeResourcesFit": (least_allocated(pod, big),) * 2 + (1, least_allocated(pod, big)),
            "NodeResourcesBalancedAllocation": (balanced_allocation(pod, big),) * 2
            + (1, balanced_allocation(pod, big)),
            "ImageLocality": (0, 0, 1, 0),
        },
    }
    # The hand figures themselves, so that a wrong formula above shows.
    assert least_allocated(pod, small) == 81 and least_allocated(pod, big) == 90
    assert balanced_allocation(pod, small) == 71 and balanced_allocation(pod, big) == 73
    for node, plugins in expected.items():
        got = scores_of(by_node[node])
        for plugin, figures in plugins.items():
            assert got[plugin] == figures, (node, plugin)
        assert by_node[node]["total"] == sum(f[3] for f in plugins.values())
    assert [g["total"] for g in explanation["scored"]] == [659, 463, 152]
    # Bare pods: no spread constraints, no affinity terms anywhere.
    assert set(explanation["scoreSkipped"]) >= {"PodTopologySpread", "InterPodAffinity"}
    assert explanation["node"] == "n1" and found["node"] == "n1"
    assert simulate_placements(tmp_path, NODES, POD)["default/app"] == "n1"


def test_every_rejected_node_has_its_first_plugin_and_the_others(tmp_path: Path) -> None:
    explanation = explain_json(tmp_path, NODES, POD, pod="app")["explanations"][0]
    rejected = {node: g for g in explanation["rejected"] for node in g["nodes"]}
    assert sorted(rejected) == ["n4", "n5"]
    n4 = rejected["n4"]
    assert n4["plugin"] == "NodeUnschedulable"
    assert n4["code"] == "UnschedulableAndUnresolvable"
    assert n4["reasons"] == ["node(s) were unschedulable"]
    # The filter loop stopped at NodeUnschedulable; the taint would have stopped it too.
    assert n4["alsoRejectedBy"] == {"TaintToleration": ["node(s) had untolerated taint(s)"]}
    n5 = rejected["n5"]
    # More than the node has at all: preemption cannot help (Fit's unresolvable code).
    assert (n5["plugin"], n5["code"], n5["reasons"]) == (
        "NodeResourcesFit",
        "UnschedulableAndUnresolvable",
        ["Insufficient cpu"],
    )
    assert explanation["numNodes"] == 5 and explanation["feasible"] == 3


TWO_NODES = """
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: a}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: b}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def bare_pod(name: str, cpu: str = "1", extra: str = "") -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  {extra}
  containers:
  - {{name: c, image: nginx, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}
"""


def test_explained_at_the_moment_of_scheduling_with_its_tie(tmp_path: Path) -> None:
    pods = bare_pod("first") + bare_pod("second")
    for seed in ("0", "1", "7"):
        first = explain_json(tmp_path, TWO_NODES, pods, pod="first", seed=seed)
        tie = first["explanations"][0]["tie"]
        assert sorted(tie["nodes"]) == ["a", "b"]
        placements = simulate_placements(tmp_path, TWO_NODES, pods, seed=seed)
        assert tie["chosen"] == placements["default/first"] == first["node"]
        second = explain_json(tmp_path, TWO_NODES, pods, pod="second", seed=seed)
        explanation = second["explanations"][0]
        # When `second` was scheduled, `first` was already on its node: that node
        # scores lower (in the final state the two nodes are alike).
        best, worse = explanation["scored"]
        assert best["nodes"] == [placements["default/second"]]
        assert worse["nodes"] == [placements["default/first"]]
        assert scores_of(worse)["NodeResourcesFit"][0] < scores_of(best)["NodeResourcesFit"][0]
        assert "tie" not in explanation


PRIORITY = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""


def test_preemption_outcome_and_victims(tmp_path: Path) -> None:
    one_node = """
apiVersion: v1
kind: Node
metadata: {name: only}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"""
    low = bare_pod("low", "2", extra="nodeName: only")  # already running there
    high = bare_pod("high", "2", extra="priorityClassName: high")
    documents = (one_node, PRIORITY, low, high)
    code, out = run(tmp_path, *documents, args=("explain", "high", "-o", "json", "--all-attempts"))
    assert code == 0, out
    found = json.loads(out)["pods"][0]
    assert found["attempts"] == 2 and found["node"] == "only"
    first, last = found["explanations"]
    assert first["result"] == "Unschedulable"
    assert first["rejected"][0]["reasons"] == ["Insufficient cpu"]
    assert first["postFilter"]["nominatedNode"] == "only"
    assert first["postFilter"]["victims"] == ["default/low"]
    # The retry tries the nominated node first (evaluateNominatedNode), and it fits.
    assert last["result"] == "Scheduled" and last["node"] == "only"
    assert last["nominatedNode"] == "only" and last["nominatedFits"] is True


def test_text_output_groups_nodes(tmp_path: Path) -> None:
    code, out = run(tmp_path, NODES, POD, args=("explain", "app"))
    assert code == 0
    assert "Result: scheduled on n1" in out
    assert "NodeUnschedulable" in out and "Insufficient cpu" in out
    assert "profile default-scheduler" in out


def test_a_pod_not_in_the_input_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "in.yaml").write_text(textwrap.dedent(NODES) + "---" + textwrap.dedent(POD))
    result = CliRunner().invoke(main, ["explain", "nope", "-f", str(tmp_path / "in.yaml")])
    assert result.exit_code == 2
    assert "no pending pod default/nope in the input" in result.output


def test_explaining_changes_no_placement() -> None:
    """Explaining every pod of the example cluster (the other filters run again over
    the rejected nodes, scores are copied) places every pod where a plain run does."""
    from kubesched.cli.options import SIMULATED_SCHEDULER_NAMES
    from kubesched.cluster.manifests import load_paths, pending_pods, running_pods
    from kubesched.framework.profile import ProfileConfig
    from kubesched.simulation.simulator import simulate

    state = load_paths([Path(__file__).resolve().parents[2] / "examples" / "cluster"])
    pods = [*running_pods(state), *pending_pods(state)]

    def run(explain: list[str]) -> Any:
        profiles = [ProfileConfig.default(n) for n in SIMULATED_SCHEDULER_NAMES]
        return simulate(
            state.nodes,
            pods,
            profiles,
            seed=3,
            pdbs=state.pdbs,
            namespaces=state.namespaces,
            storage=state.storage,
            dra=state.dra,
            explain=explain,
        )

    plain = run([])
    explained = run([p.key for p in pending_pods(state)])
    assert explained.placements == plain.placements
    assert explained.reasons == plain.reasons
    assert len(explained.explanations) == len(pending_pods(state))
    assert not plain.explanations


def test_many_nodes_stay_readable_and_the_layout_follows_the_width() -> None:
    """1,000 nodes of a few kinds: the text groups them (a screenful, not a line per
    node); a wide terminal gets a column per score plugin, a narrow one stacks them."""
    import io

    from rich.console import Console

    from bench.explain import cluster_documents
    from kubesched.cli.explain_report import print_explanation
    from kubesched.cluster.manifests import load_documents, pending_pods, running_pods
    from kubesched.framework.profile import ProfileConfig
    from kubesched.simulation.simulator import simulate

    state = load_documents(cluster_documents(1000, 3))
    pods = [*running_pods(state), *pending_pods(state)]
    targets = [pods[-2].key, pods[-1].key]  # one scheduled, one that fits nowhere
    result = simulate(
        state.nodes,
        pods,
        [ProfileConfig.default("default-scheduler")],
        seed=0,
        explain=targets,
        percentage_of_nodes_to_score=100,
    )

    def render(key: str, width: int) -> str:
        out = io.StringIO()
        explanation = result.explanations[key][-1]
        print_explanation(
            Console(file=out, width=width), explanation, final_node=None, total_attempts=1
        )
        return out.getvalue()

    scheduled, rejected = result.explanations[targets[0]][-1], result.explanations[targets[1]][-1]
    assert sum(len(g.nodes) for g in rejected.rejected) == 1000
    assert len(rejected.rejected) <= 6  # 1,000 nodes, a handful of verdicts
    assert sum(len(g.nodes) for g in scheduled.scored) == scheduled.feasible > 500
    wide = render(targets[0], 250)
    narrow = render(targets[0], 90)
    assert len(wide.splitlines()) < 60 and len(render(targets[1], 250).splitlines()) < 30
    # Wide: a column per plugin (its name in the header, bare figures in the cells).
    assert "TaintToleration ┃" in wide and "0→100 ×3 = 300" in wide
    assert "TaintToleration: 0→100" not in wide
    # Narrow: each group's scores stacked in one column, named.
    assert "TaintToleration: 0→100 ×3 = 300" in narrow
    assert "TaintToleration ┃" not in narrow
    assert "NodeUnschedulable (unresolvable)" in render(targets[1], 250)


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
"""


def test_a_workload_name_explains_its_first_pending_pod(tmp_path: Path) -> None:
    """`explain web` for a Deployment's generated pods (issue #31)."""
    (tmp_path / "in.yaml").write_text(textwrap.dedent(NODES) + "---" + textwrap.dedent(DEPLOYMENT))
    path = str(tmp_path / "in.yaml")
    result = CliRunner().invoke(main, ["explain", "web", "-f", path, "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["pods"][0]["pod"].startswith("default/web-")
    assert any(
        "is Deployment default/web: explaining its first pending pod" in n
        for n in document["notes"]
    )
    # A name that is neither: the pods meant are named.
    result = CliRunner().invoke(main, ["explain", "we", "-f", path])
    assert result.exit_code == 2
    assert "no pending pod default/we in the input; did you mean default/web-" in result.output
