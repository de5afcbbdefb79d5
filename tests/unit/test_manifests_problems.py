"""Bad input in manifests: unknown kinds, syntax errors, invalid fields, duplicates
and bad workloads are problems or notes naming file, document, object and field,
and cost only their own document."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.cluster.manifests import ClusterState, load_documents, load_paths
from tests.unit.manifests_helpers import (
    DAEMONSET,
    DEPLOYMENT,
    JOB,
    NODES_AFTER,
    SUFFIX,
    daemon_nodes,
    load,
    names,
    only_problem,
    pod_doc,
    write,
)

# --- bad input ---------------------------------------------------------------------


def test_unknown_kind_is_a_note(tmp_path: Path) -> None:
    text = "apiVersion: apps/v1\nkind: Foo\nmetadata: {name: x}\n---\n" + pod_doc("a")
    state = load(tmp_path, text)
    assert state.notes == [f"skipped kind Foo (apps/v1) at {tmp_path / 'cluster.yaml'} document 1"]
    assert names(state.pods) == ["default/a"] and state.problems == []


def test_known_kind_from_another_api_group_is_skipped(tmp_path: Path) -> None:
    state = load(tmp_path, "apiVersion: example.com/v1\nkind: Node\nmetadata: {name: x}\n")
    assert state.nodes == []
    assert state.notes[0].startswith("skipped kind Node (example.com/v1)")


def test_yaml_syntax_error_mid_file_keeps_other_documents(tmp_path: Path) -> None:
    text = (
        pod_doc("one")
        + "---\n"
        + pod_doc("two")
        + "---\nkind: Pod\nmetadata:\n  name: [broken\n---\n"
        + pod_doc("four")
    )
    path = write(tmp_path, text)
    other = write(tmp_path, pod_doc("other"), "z.yaml")
    state = load_paths([path, other])
    assert names(state.pods) == ["default/one", "default/two", "default/four", "default/other"]
    message = str(only_problem(state))
    assert message.startswith(f"{path}: document 3: YAML syntax error at line ")
    assert "\n" not in message


def test_document_that_is_not_a_mapping(tmp_path: Path) -> None:
    text = "- just\n- a list\n---\n" + pod_doc("a")
    state = load(tmp_path, text)
    assert names(state.pods) == ["default/a"]
    assert str(only_problem(state)) == (
        f"{tmp_path / 'cluster.yaml'}: document 1: expected an object (a mapping), got array"
    )


def test_missing_kind(tmp_path: Path) -> None:
    problem = only_problem(load(tmp_path, "apiVersion: v1\nmetadata: {name: x}\n"))
    assert (problem.field, problem.message) == ("kind", "missing required field `kind`")


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        (
            "  priority: high\n",
            "spec.priority",
            "json: cannot unmarshal string into Go struct field PodSpec.spec.priority "
            "of type int32",
        ),
        (
            "  tolerations: [{key: 1}]\n",
            "spec.tolerations[0].key",
            "json: cannot unmarshal number into Go struct field Toleration.spec.tolerations.key "
            "of type string",
        ),
        (
            "  topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone}]\n",
            "spec.topologySpreadConstraints[0].whenUnsatisfiable",
            "Object missing required field `whenUnsatisfiable`",
        ),
        ("  overhead: {cpu: 1x}\n", "spec.overhead.cpu", "quantities must match"),
        ("  resources: {limits: {memory: -1Gi}}\n", "spec.resources.limits.memory", "must be"),
        (
            "  initContainers: [{name: i, resources: {requests: {memory: lots}}}]\n",
            "spec.initContainers[0].resources.requests.memory",
            "quantities must match",
        ),
        (
            "  initContainers: [{name: i, resources: {limits: {cpu: abc}}}]\n",
            "spec.initContainers[0].resources.limits.cpu",
            "quantities must match",
        ),
    ],
)
def test_bad_pod_fields_name_file_document_object_and_field(
    tmp_path: Path, extra: str, field: str, message: str
) -> None:
    text = pod_doc("good") + "---\n" + pod_doc("bad", extra) + "---\n" + pod_doc("after")
    state = load(tmp_path, text)
    assert names(state.pods) == ["default/good", "default/after"]
    problem = only_problem(state)
    assert (problem.document, problem.kind, problem.name, problem.field) == (
        2,
        "Pod",
        "default/bad",
        field,
    )
    assert problem.message.startswith(message)
    line = str(problem)
    assert line.startswith(f"{tmp_path / 'cluster.yaml'}: document 2 (Pod default/bad): ")
    assert f"field {field}: {message}" in line and "\n" not in line


def test_label_with_wrong_type_names_the_label(tmp_path: Path) -> None:
    problem = only_problem(
        load(tmp_path, pod_doc("a").replace("name: a", "name: a\n  labels: {x: y, n: 1}"))
    )
    assert (problem.field, problem.message) == (
        "metadata.labels[n]",
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type "
        "string",
    )


def test_bad_node_quantity_and_missing_name(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: Node
        metadata: {name: big}
        status: {capacity: {cpu: many}}
        ---
        apiVersion: v1
        kind: Node
        metadata: {labels: {a: b}}
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: fine}
        """
    )
    state = load(tmp_path, text)
    assert [n.name for n in state.nodes] == ["fine"]
    first, second = state.problems
    assert (first.document, first.name, first.field) == (1, "big", "status.capacity.cpu")
    assert (second.document, second.kind, second.field) == (2, "Node", "metadata.name")


def test_pod_without_name_or_generate_name(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: Pod\nmetadata: {labels: {a: b}}\n"
    problem = only_problem(load(tmp_path, text))
    assert (problem.kind, problem.field) == ("Pod", "metadata.name")


def test_duplicates_are_problems_for_the_later_object(tmp_path: Path) -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
    text = "---\n".join([pod_doc("a"), node, pod_doc("a"), node])
    state = load(tmp_path, text)
    assert len(state.pods) == 1 and len(state.nodes) == 1
    assert [(p.document, p.field) for p in state.problems] == [
        (3, "metadata.name"),
        (4, "metadata.name"),
    ]
    assert "already loaded from" in state.problems[0].message


def test_bad_creation_timestamp(tmp_path: Path) -> None:
    text = pod_doc("a").replace("name: a", "name: a\n  creationTimestamp: yesterday")
    problem = only_problem(load(tmp_path, text))
    assert problem.field == "metadata.creationTimestamp"


def test_bad_workloads(tmp_path: Path) -> None:
    text = "---\n".join(
        [
            DEPLOYMENT.replace("IMAGE", "x").replace("replicas: 3", "replicas: '3'"),
            DEPLOYMENT.replace("IMAGE", "x").replace("replicas: 3", "replicas: -1"),
            DEPLOYMENT.replace("IMAGE", "x").replace("{app: web}}", "{app: other}}"),
            DEPLOYMENT.replace("IMAGE", "x").replace("250m", "lots"),
            JOB.replace("SPEC", "parallelism: 2"),
        ]
    )
    state = load(tmp_path, text)
    assert len(state.pods) == 2  # the Job's
    assert [(p.document, p.kind, p.name, p.field) for p in state.problems] == [
        (1, "Deployment", "shop/web", "spec.replicas"),
        (2, "Deployment", "shop/web", "spec.replicas"),
        (3, "Deployment", "shop/web", "spec.template.metadata.labels"),
        (4, "Deployment", "shop/web", "spec.template.spec.containers[0].resources.requests.cpu"),
    ]


def test_statefulset_and_daemonset_skip_pods_already_running(tmp_path: Path) -> None:
    sts = """
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db}
    spec:
      replicas: 3
      template: {spec: {containers: [{name: c}]}}
    ---
    apiVersion: v1
    kind: Pod
    metadata:
      name: db-1
      ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, controller: true}]
    spec: {nodeName: n1, containers: [{name: c}]}
    ---
    apiVersion: v1
    kind: Pod
    metadata:
      name: agent-abcde
      namespace: kube-system
      ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, controller: true}]
    spec: {nodeName: n3, containers: [{name: c}]}
    """
    text = textwrap.dedent(sts) + "---\n" + DAEMONSET.replace("EXTRA", "") + NODES_AFTER
    state = load(tmp_path, text)
    keys = names(state.pods)
    assert keys[:3] == ["default/db-0", "default/db-2", "default/db-1"]
    daemon = [p for p in state.pods if p.metadata.name != "agent-abcde" and "agent" in p.key]
    assert daemon_nodes(ClusterState(pods=daemon)) == ["n1"]


def test_workload_with_generate_name(tmp_path: Path) -> None:
    text = JOB.replace("name: crunch", "generateName: crunch-").replace("SPEC", "parallelism: 1")
    (pod,) = load(tmp_path, text).pods
    job_name = pod.metadata.labels["job-name"]
    assert re.fullmatch(f"crunch-{SUFFIX}", job_name)
    assert re.fullmatch(f"{job_name}-{SUFFIX}", pod.metadata.name)


def test_problems_are_listed_in_input_order(tmp_path: Path) -> None:
    first = write(tmp_path, pod_doc("a", "  priorityClassName: nope\n"), "1.yaml")
    second = write(tmp_path, pod_doc("b", "  overhead: {cpu: x}\n"), "2.yaml")
    state = load_paths([first, second])
    assert [p.source for p in state.problems] == [str(first), str(second)]


def test_an_unexpected_error_costs_only_its_document(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubesched.cluster import manifest_loader as manifests

    real = manifests._check_pod_spec

    def check(spec: Any, path: str) -> Any:
        if spec.node_name == "boom":
            raise RuntimeError("unexpected")
        return real(spec, path)

    monkeypatch.setattr(manifests, "_check_pod_spec", check)
    pod = {"apiVersion": "v1", "kind": "Pod"}
    state = load_documents(
        [
            ("m", 1, {**pod, "metadata": {"name": "bad"}, "spec": {"nodeName": "boom"}}),
            ("m", 2, {**pod, "metadata": {"name": "ok"}, "spec": {"containers": [{"name": "c"}]}}),
        ]
    )
    assert names(state.pods) == ["default/ok"]
    assert str(only_problem(state)) == "m: document 1: cannot read: RuntimeError: unexpected"
