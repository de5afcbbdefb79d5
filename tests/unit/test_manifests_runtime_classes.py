"""RuntimeClass admission while reading manifests (plugin/pkg/admission/runtimeclass):
overhead, node selector and tolerations from the pod's RuntimeClass, the pods it
forbids, and the RuntimeClasses' own validation."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kubesched.api.objects import Toleration
from kubesched.cluster.manifests import ClusterState, load_paths, pending_pods
from kubesched.cluster.runtime_classes import merge_tolerations
from kubesched.framework.profile import ProfileConfig
from kubesched.simulation.simulator import simulate
from tests.unit.manifests_helpers import load, only_problem, write

GVISOR = """
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
overhead: {podFixed: {cpu: 250m, memory: 64Mi}}
scheduling:
  nodeSelector: {sandbox: "true"}
  tolerations:
  - {key: sandbox, operator: Exists, effect: NoSchedule}
---
"""


def pod(name: str, extra: str = "") -> str:
    return (
        textwrap.dedent(
            f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: {name}}}
        spec:
          runtimeClassName: gvisor
          containers: [{{name: c, resources: {{requests: {{cpu: 500m}}}}}}]
        """
        )
        + extra
    )


def test_admission_sets_overhead_node_selector_and_tolerations(tmp_path: Path) -> None:
    state = load(tmp_path, GVISOR + pod("p", "  nodeSelector: {disk: ssd}\n"))
    spec = state.pods[0].spec
    assert spec.overhead == {"cpu": "250m", "memory": "64Mi"}
    assert spec.node_selector == {"disk": "ssd", "sandbox": "true"}
    assert spec.tolerations == [Toleration(key="sandbox", operator="Exists", effect="NoSchedule")]
    assert "gvisor" in state.runtime_classes


def test_the_class_is_read_after_its_pods_too(tmp_path: Path) -> None:
    state = load(tmp_path, pod("p") + "---\n" + GVISOR)
    assert state.pods[0].spec.overhead == {"cpu": "250m", "memory": "64Mi"}


def test_the_overhead_counts_in_scheduling(tmp_path: Path) -> None:
    """1 cpu: two pods of 500m fit without overhead, one with 250m of overhead each."""
    nodes = textwrap.dedent(
        """\
        apiVersion: v1
        kind: Node
        metadata: {name: n, labels: {sandbox: "true"}}
        status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
        ---
        """
    )
    state = load(tmp_path, nodes + GVISOR + pod("a") + "---\n" + pod("b"))
    result = run(state)
    assert sorted(v for v in result.placements.values() if v) == ["n"]
    plain = load(
        tmp_path,
        nodes
        + GVISOR.replace("overhead: {podFixed: {cpu: 250m, memory: 64Mi}}\n", "")
        + pod("a")
        + "---\n"
        + pod("b"),
    )
    assert sorted(v for v in run(plain).placements.values() if v) == ["n", "n"]


def run(state: ClusterState):  # type: ignore[no-untyped-def]
    assert not state.problems, [str(p) for p in state.problems]
    return simulate(state.nodes, pending_pods(state), [ProfileConfig.default()], seed=1)


def test_an_unknown_class_forbids_the_pod(tmp_path: Path) -> None:
    problem = only_problem(load(tmp_path, pod("p")))
    assert (problem.field, problem.message) == (
        "spec.runtimeClassName",
        'pod rejected: RuntimeClass "gvisor" not found',
    )


def test_a_dumped_pod_with_its_overhead_keeps_it_with_a_note(tmp_path: Path) -> None:
    state = load(tmp_path, pod("p", "  overhead: {cpu: 100m}\n"))
    assert not state.problems
    assert state.pods[0].spec.overhead == {"cpu": "100m"}
    assert any("kept spec.overhead of 1 pods" in n for n in state.notes)


def test_an_overhead_other_than_the_class_is_forbidden(tmp_path: Path) -> None:
    problem = only_problem(load(tmp_path, GVISOR + pod("p", "  overhead: {cpu: 100m}\n")))
    assert (problem.field, problem.message) == (
        "spec.overhead",
        "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
    )
    # The same amounts in another notation are equal (apiequality.Semantic).
    same = GVISOR + pod("q", "  overhead: {cpu: '0.25', memory: 65536Ki}\n")
    assert not load(tmp_path, same).problems


def test_an_overhead_without_a_class_is_forbidden(tmp_path: Path) -> None:
    text = pod("p", "  overhead: {cpu: 100m}\n").replace("  runtimeClassName: gvisor\n", "")
    problem = only_problem(load(tmp_path, text))
    assert problem.message == (
        "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
    )


def test_a_node_selector_conflict_is_forbidden_once_per_workload(tmp_path: Path) -> None:
    deployment = textwrap.dedent(
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          replicas: 3
          selector: {matchLabels: {app: d}}
          template:
            metadata: {labels: {app: d}}
            spec:
              runtimeClassName: gvisor
              nodeSelector: {sandbox: "false"}
              containers: [{name: c}]
        """
    )
    problem = only_problem(load(tmp_path, GVISOR + deployment))
    assert (problem.kind, problem.field) == ("Deployment", "spec.template.spec.nodeSelector")
    assert problem.message == (
        "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; "
        "pod.spec.nodeSelector[sandbox] = false"
    )


def test_workload_pods_do_not_share_what_admission_changes(tmp_path: Path) -> None:
    """The replicas share their template's lists; admission replaces, never edits."""
    deployment = textwrap.dedent(
        """\
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          replicas: 2
          selector: {matchLabels: {app: d}}
          template:
            metadata: {labels: {app: d}}
            spec:
              runtimeClassName: gvisor
              tolerations: [{key: a, operator: Exists}]
              containers: [{name: c}]
        """
    )
    state = load(tmp_path, GVISOR + deployment)
    first, second = state.pods
    assert [t.key for t in first.spec.tolerations] == ["a", "sandbox"]
    assert first.spec.tolerations is not second.spec.tolerations or len(first.spec.tolerations) == 2


def test_runtime_class_validation(tmp_path: Path) -> None:
    no_handler = only_problem(
        load(tmp_path, "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: r}\n")
    )
    assert (no_handler.kind, no_handler.field, no_handler.message) == (
        "RuntimeClass",
        "handler",
        "Required value",
    )
    negative = GVISOR.replace("cpu: 250m", "cpu: -1").rstrip("-\n")
    problem = only_problem(load(tmp_path, negative))
    assert problem.field == "overhead.limits[cpu]"
    twice = GVISOR.rstrip("-\n") + "\n  - {key: sandbox, operator: Exists, effect: NoSchedule}\n"
    problem = only_problem(load(tmp_path, twice))
    assert (problem.field, problem.message.split(":")[0]) == (
        "scheduling.tolerations[1]",
        "Duplicate value",
    )


def t(
    key: str = "", op: str = "Equal", value: str = "", effect: str = "", secs: int | None = None
) -> Toleration:
    return Toleration(key=key, operator=op, value=value, effect=effect, toleration_seconds=secs)


def test_merge_tolerations_keeps_only_supersets() -> None:
    """Cases of pkg/util/tolerations' TestMergeTolerations."""
    # An Exists toleration with no key covers everything.
    assert merge_tolerations([t("a", value="x")], [t(op="Exists")]) == [t(op="Exists")]
    # Without an effect it covers each effect of the same key and value.
    assert merge_tolerations([t("a", value="x", effect="NoSchedule")], [t("a", value="x")]) == [
        t("a", value="x")
    ]
    # A shorter NoExecute toleration is covered by a longer one, not the reverse.
    long, short = (
        t("a", "Exists", effect="NoExecute", secs=60),
        t("a", "Exists", effect="NoExecute", secs=30),
    )
    assert merge_tolerations([short], [long]) == [long]
    # Equal ones: the first stays; unrelated ones both stay, first list first.
    assert merge_tolerations([t("a", value="x")], [t("a", value="x")]) == [t("a", value="x")]
    assert merge_tolerations([t("a", value="x")], [t("b", value="y")]) == [
        t("a", value="x"),
        t("b", value="y"),
    ]


def test_a_live_clusters_pods_are_not_admitted_again(tmp_path: Path) -> None:
    """--from-cluster: a RuntimeClass whose overhead changed after its pods were made
    must not refuse them (admission ran when they were created)."""
    live_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "live", "namespace": "default"},
        "spec": {
            "runtimeClassName": "gvisor",
            "overhead": {"cpu": "100m"},
            "containers": [{"name": "c"}],
        },
    }
    live_class = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "gvisor"},
        "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m"}},
    }
    before = [
        (
            "cluster https://x",
            1,
            {"kind": "List", "apiVersion": "v1", "items": [live_class, live_pod]},
        )
    ]
    state = load_paths([write(tmp_path, pod("new"))], before=before)
    assert not state.problems, [str(p) for p in state.problems]
    by_key = {p.key: p for p in state.pods}
    assert by_key["default/live"].spec.overhead == {"cpu": "100m"}  # as the cluster has it
    assert by_key["default/new"].spec.overhead == {"cpu": "250m"}  # admitted now
