"""Priority admission while reading manifests: PriorityClasses (defined before or
after their pods), global defaults and built-in classes, unknown classes."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.unit.manifests_helpers import DEPLOYMENT, load, names, only_problem, pod_doc

# --- priorities ------------------------------------------------------------------


def test_priority_class_resolves_even_when_defined_after_the_pod(tmp_path: Path) -> None:
    text = pod_doc("p", "  priorityClassName: high\n") + textwrap.dedent(
        """\
        ---
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: high}
        value: 1000
        preemptionPolicy: Never
        """
    )
    pod = load(tmp_path, text).pods[0]
    assert (pod.spec.priority, pod.spec.preemption_policy) == (1000, "Never")


def test_global_default_and_builtin_classes(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: normal}
        value: 50
        globalDefault: true
        ---
        """
    )
    text += (
        pod_doc("plain") + "---\n" + pod_doc("node", "  priorityClassName: system-node-critical\n")
    )
    text += "---\n" + pod_doc("cluster", "  priorityClassName: system-cluster-critical\n")
    state = load(tmp_path, text)
    plain, node, cluster = state.pods
    assert (plain.spec.priority, plain.spec.priority_class_name) == (50, "normal")
    assert plain.spec.preemption_policy == "PreemptLowerPriority"
    assert node.spec.priority == 2000001000
    assert cluster.spec.priority == 2000000000
    assert {"normal", "system-node-critical", "system-cluster-critical"} <= set(
        state.priority_classes
    )


def test_no_default_class_means_priority_zero(tmp_path: Path) -> None:
    pod = load(tmp_path, pod_doc("p")).pods[0]
    assert (pod.spec.priority, pod.spec.preemption_policy) == (0, "PreemptLowerPriority")


def test_unknown_priority_class_rejects_the_pod_only(tmp_path: Path) -> None:
    text = pod_doc("good") + "---\n" + pod_doc("bad", "  priorityClassName: gold\n")
    state = load(tmp_path, text)
    assert names(state.pods) == ["default/good"]
    assert str(only_problem(state)) == (
        f"{tmp_path / 'cluster.yaml'}: document 2 (Pod default/bad): "
        "field spec.priorityClassName: no PriorityClass with name gold was found"
    )


def test_unknown_priority_class_in_workload_is_one_problem(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("IMAGE", "x").replace(
        "      containers:", "      priorityClassName: gold\n      containers:"
    )
    state = load(tmp_path, text)
    assert state.pods == []
    problem = only_problem(state)
    assert (problem.kind, problem.name, problem.field) == (
        "Deployment",
        "shop/web",
        "spec.template.spec.priorityClassName",
    )


def test_admitted_pods_keep_their_priority(tmp_path: Path) -> None:
    text = pod_doc("dumped", "  priorityClassName: gold\n  priority: 700\n")
    state = load(tmp_path, text)
    assert state.pods[0].spec.priority == 700
    assert state.problems == []
    assert any("kept spec.priority" in note for note in state.notes)


def test_second_global_default_is_a_problem(tmp_path: Path) -> None:
    pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: NAME}\n"
    pc += "value: 10\nglobalDefault: true\n"
    text = pc.replace("NAME", "a") + "---\n" + pc.replace("NAME", "b")
    problem = only_problem(load(tmp_path, text))
    assert (problem.name, problem.field) == ("b", "globalDefault")
