"""Reading manifests into a ClusterState: YAML and JSON documents, Lists, files and
folders, parsed objects; the defaults the API server would fill in; the order of
pods (creation timestamps) and which are pending or running."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kubesched.cluster.manifests import load_documents, load_paths, pending_pods, running_pods
from tests.unit.manifests_helpers import NODES, SUFFIX, load, names, only_problem, pod_doc, write

# --- documents, lists, files -----------------------------------------------------


def test_multi_document_yaml_skips_empty_documents(tmp_path: Path) -> None:
    text = "---\n" + pod_doc("a") + "---\n---\n# just a comment\n---\n" + NODES + "---\n"
    state = load(tmp_path, text)
    assert names(state.pods) == ["default/a"]
    assert [n.name for n in state.nodes] == ["n1", "n2", "n3"]
    assert state.problems == []


def test_document_numbers_count_empty_documents(tmp_path: Path) -> None:
    text = pod_doc("a") + "---\n---\n" + pod_doc("b", "  overhead: {cpu: lots}\n")
    problem = only_problem(load(tmp_path, text))
    assert problem.document == 3


def test_json_file_and_json_stream(tmp_path: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "j1"},
        "spec": {"containers": [{"name": "c"}]},
    }
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "jn"}}
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, node]}))
    stream = tmp_path / "stream.json"
    pod2 = {**pod, "metadata": {"name": "j2"}}
    stream.write_text(json.dumps(pod2) + "\n" + json.dumps({**pod, "metadata": {"name": "j3"}}))
    state = load_paths([one, stream])
    assert names(state.pods) == ["default/j1", "default/j2", "default/j3"]
    assert [n.name for n in state.nodes] == ["jn"]


def test_json_syntax_error_names_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "Pod",\n "metadata": {"name": "x"},,\n}')
    problem = only_problem(load_paths([bad]))
    assert str(problem).startswith(f"{bad}: document 1: JSON syntax error at line 2")


def test_list_expands_items_and_typed_lists_infer_kind(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: v1
        kind: List
        items:
        - {apiVersion: v1, kind: Node, metadata: {name: n1}}
        - {apiVersion: v1, kind: Pod, metadata: {name: p1}, spec: {containers: [{name: c}]}}
        ---
        apiVersion: v1
        kind: PodList
        items:
        - metadata: {name: p2, namespace: team}
          spec: {containers: [{name: c}]}
        - metadata: {name: p3}
          spec: {containers: [{name: c, resources: {limits: {memory: 1Qi}}}]}
        ---
        apiVersion: v1
        kind: NodeList
        items: []
        """,
    )
    assert names(state.pods) == ["default/p1", "team/p2"]
    assert [n.name for n in state.nodes] == ["n1"]
    problem = only_problem(state)
    assert (problem.document, problem.item) == (2, 2)
    assert str(problem).startswith(
        f"{tmp_path / 'cluster.yaml'}: document 2, item 2 (Pod default/p3): "
        "field spec.containers[0].resources.limits.memory: quantities must match"
    )


def test_folders_are_read_recursively_sorted_by_name(tmp_path: Path) -> None:
    write(tmp_path, pod_doc("b"), "b.yaml")
    write(tmp_path, pod_doc("a"), "a.yml")
    write(tmp_path, pod_doc("c"), "sub/c.yaml")
    (tmp_path / "sub" / "d.json").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "d"},
                "spec": {"containers": [{"name": "c"}]},
            }
        )
    )
    write(tmp_path, pod_doc("hidden"), ".git/x.yaml")
    write(tmp_path, pod_doc("readme"), "README.md")
    state = load_paths([tmp_path])
    assert names(state.pods) == ["default/a", "default/b", "default/c", "default/d"]


def test_missing_path_is_a_problem_and_others_still_load(tmp_path: Path) -> None:
    good = write(tmp_path, pod_doc("a"))
    state = load_paths([tmp_path / "nope.yaml", good])
    assert names(state.pods) == ["default/a"]
    assert str(only_problem(state)) == f"{tmp_path / 'nope.yaml'}: no such file or directory"


def test_load_documents_takes_parsed_objects() -> None:
    state = load_documents(
        [
            (
                "mem",
                1,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": "x"},
                    "spec": {"containers": [{"name": "c"}]},
                },
            ),
            ("mem", 2, None),
            ("mem", 3, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}),
        ]
    )
    assert names(state.pods) == ["default/x"]
    assert [n.name for n in state.nodes] == ["n"]


# --- defaulting --------------------------------------------------------------------


def test_defaults_namespace_scheduler_phase_uid_and_generate_name(tmp_path: Path) -> None:
    text = """
    apiVersion: v1
    kind: Pod
    metadata: {generateName: batch-}
    spec: {containers: [{name: c}]}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {generateName: batch-}
    spec: {containers: [{name: c}]}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: plain}
    spec: {containers: [{name: c}]}
    """
    state = load(tmp_path, text)
    first, second, plain = state.pods
    assert re.fullmatch(f"batch-{SUFFIX}", first.metadata.name)
    assert re.fullmatch(f"batch-{SUFFIX}", second.metadata.name)
    assert first.metadata.name != second.metadata.name
    assert plain.metadata.namespace == "default"
    assert plain.spec.scheduler_name == "default-scheduler"
    assert plain.status.phase == "Pending"
    assert plain.metadata.uid and plain.metadata.uid != first.metadata.uid
    again = load(tmp_path, text, "again.yaml")
    assert names(again.pods) == names(state.pods)  # deterministic


def test_node_allocatable_defaults_to_capacity(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: v1
        kind: Node
        metadata: {name: n}
        status: {capacity: {cpu: "2", memory: 1Gi}}
        """,
    )
    assert state.nodes[0].status.allocatable == {"cpu": "2", "memory": "1Gi"}


def test_namespaces_get_name_label_and_implicit_ones_exist(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: v1
        kind: Namespace
        metadata: {name: team, labels: {tier: gold}}
        ---
        apiVersion: v1
        kind: Pod
        metadata: {name: p, namespace: other}
        spec: {containers: [{name: c}]}
        """,
    )
    assert state.namespaces["team"].metadata.labels == {
        "tier": "gold",
        "kubernetes.io/metadata.name": "team",
    }
    assert state.namespaces["other"].metadata.labels == {"kubernetes.io/metadata.name": "other"}
    assert {"default", "kube-system"} <= state.namespaces.keys()


def test_unquoted_timestamps_stay_strings(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        pod_doc("a").replace("name: a", "name: a\n  creationTimestamp: 2024-01-01T00:00:00Z"),
    )
    assert state.pods[0].metadata.creation_timestamp == "2024-01-01T00:00:00Z"


# --- ordering ----------------------------------------------------------------------


def test_creation_timestamps_order_pods_among_themselves(tmp_path: Path) -> None:
    def stamped(name: str, stamp: str) -> str:
        return pod_doc(name).replace(
            f"name: {name}", f"name: {name}\n  creationTimestamp: '{stamp}'"
        )

    text = "---\n".join(
        [
            stamped("late", "2024-01-01T00:00:30Z"),
            pod_doc("plain1"),
            stamped("early", "2024-01-01T00:00:10Z"),
            stamped("offset", "2024-01-01T01:00:20+01:00"),  # 00:00:20Z
            pod_doc("plain2"),
        ]
    )
    state = load(tmp_path, text)
    assert names(state.pods) == [
        "default/early",
        "default/plain1",
        "default/offset",
        "default/late",
        "default/plain2",
    ]
    assert names(pending_pods(state)) == names(state.pods)


def test_pending_and_running_pods(tmp_path: Path) -> None:
    text = "---\n".join(
        [
            pod_doc("bound", "  nodeName: n1\n"),
            pod_doc("waiting"),
            pod_doc("done", "  nodeName: n1\nstatus: {phase: Succeeded}\n"),
            pod_doc("failed", "status: {phase: Failed}\n"),
        ]
    )
    state = load(tmp_path, text)
    assert names(running_pods(state)) == ["default/bound"]
    assert names(pending_pods(state)) == ["default/waiting"]
    assert len(state.pods) == 4
