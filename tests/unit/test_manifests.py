"""Reading manifests into a ClusterState: kinds, controllers, admission, bad input."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.cluster.manifests import (
    ClusterState,
    LoadProblem,
    load_documents,
    load_paths,
    pending_pods,
    running_pods,
)

ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUFFIX = f"[{ALPHABET}]{{5}}"
HASH = f"[{ALPHABET}]{{10}}"


def write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str, name: str = "cluster.yaml") -> ClusterState:
    return load_paths([write(tmp_path, text, name)])


def names(pods: list[Pod]) -> list[str]:
    return [p.key for p in pods]


def only_problem(state: ClusterState) -> LoadProblem:
    assert len(state.problems) == 1, [str(p) for p in state.problems]
    return state.problems[0]


NODES = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a, disk: ssd}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: 110}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {zone: b}}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status: {allocatable: {cpu: "8", memory: 16Gi}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {zone: a}}
spec:
  unschedulable: true
  taints:
  - {key: node.kubernetes.io/unschedulable, effect: NoSchedule}
  - {key: soft, effect: PreferNoSchedule}
status: {allocatable: {cpu: "2", memory: 4Gi}}
"""


def pod_doc(name: str, extra: str = "") -> str:
    return (
        textwrap.dedent(
            f"""\
        apiVersion: v1
        kind: Pod
        metadata:
          name: {name}
        spec:
          containers:
          - name: c
            resources: {{requests: {{cpu: 100m}}}}
        """
        )
        + extra
    )


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
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j1"}}
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
        - {apiVersion: v1, kind: Pod, metadata: {name: p1}}
        ---
        apiVersion: v1
        kind: PodList
        items:
        - metadata: {name: p2, namespace: team}
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
        json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "d"}})
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
            ("mem", 1, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}),
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
    ---
    apiVersion: v1
    kind: Pod
    metadata: {generateName: batch-}
    ---
    apiVersion: v1
    kind: Pod
    metadata: {name: plain}
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


# --- workloads -----------------------------------------------------------------------

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, creationTimestamp: "2024-03-01T10:00:00Z"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {note: hi}
    spec:
      containers: [{name: c, image: IMAGE, resources: {requests: {cpu: 250m}}}]
"""


def test_deployment_creates_replicaset_pods(tmp_path: Path) -> None:
    state = load(tmp_path, DEPLOYMENT.replace("IMAGE", "nginx:1"))
    assert len(state.pods) == 3
    rs_names = set()
    for pod in state.pods:
        meta = pod.metadata
        match = re.fullmatch(f"web-({HASH})-{SUFFIX}", meta.name)
        assert match, meta.name
        assert meta.namespace == "shop"
        assert meta.labels == {"app": "web", "pod-template-hash": match[1]}
        assert meta.annotations == {"note": "hi"}
        assert meta.creation_timestamp == "2024-03-01T10:00:00Z"
        (owner,) = meta.owner_references
        assert (owner.kind, owner.api_version, owner.controller) == ("ReplicaSet", "apps/v1", True)
        assert owner.name == f"web-{match[1]}"
        rs_names.add(owner.name)
        assert pod.spec.containers[0].resources.requests == {"cpu": "250m"}
    assert len(rs_names) == 1
    assert len({p.metadata.name for p in state.pods}) == 3
    # Deterministic, and the hash follows the template.
    assert names(load(tmp_path, DEPLOYMENT.replace("IMAGE", "nginx:1"), "b.yaml").pods) == names(
        state.pods
    )
    changed = load(tmp_path, DEPLOYMENT.replace("IMAGE", "nginx:2"), "c.yaml")
    assert changed.pods[0].metadata.owner_references[0].name not in rs_names


def test_workload_pods_get_their_own_pod_spec(tmp_path: Path) -> None:
    first, second, _ = load(tmp_path, DEPLOYMENT.replace("IMAGE", "x")).pods
    assert first.spec is not second.spec
    first.spec.node_name = "n1"
    assert second.spec.node_name == ""


def test_replicas_default_to_one_and_zero_means_none(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("  replicas: 3\n", "")
    assert len(load(tmp_path, text).pods) == 1
    assert load(tmp_path, DEPLOYMENT.replace("replicas: 3", "replicas: 0"), "z.yaml").pods == []


def test_replicaset_pods(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: apps/v1
        kind: ReplicaSet
        metadata: {name: front, uid: 1234}
        spec:
          replicas: 2
          selector: {matchLabels: {app: front}}
          template:
            metadata: {labels: {app: front}}
            spec: {containers: [{name: c}]}
        """.replace("uid: 1234", "uid: rs-uid"),
    )
    assert len(state.pods) == 2
    for pod in state.pods:
        assert re.fullmatch(f"front-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.labels == {"app": "front"}
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.uid, owner.controller) == (
            "ReplicaSet",
            "front",
            "rs-uid",
            True,
        )


def test_statefulset_pods_labels_and_claims(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          replicas: 3
          serviceName: db
          selector: {matchLabels: {app: db}}
          template:
            metadata: {labels: {app: db}}
            spec:
              containers: [{name: c}]
              volumes:
              - {name: config, persistentVolumeClaim: {claimName: shared}}
              - {name: data, persistentVolumeClaim: {claimName: replaced}}
          volumeClaimTemplates:
          - metadata: {name: data}
            spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
        """,
    )
    assert names(state.pods) == ["default/db-0", "default/db-1", "default/db-2"]
    revisions = set()
    for ordinal, pod in enumerate(state.pods):
        labels = pod.metadata.labels
        assert labels["app"] == "db"
        assert labels["statefulset.kubernetes.io/pod-name"] == f"db-{ordinal}"
        assert labels["apps.kubernetes.io/pod-index"] == str(ordinal)
        assert re.fullmatch(f"db-{HASH}", labels["controller-revision-hash"])
        revisions.add(labels["controller-revision-hash"])
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.controller) == ("StatefulSet", "db", True)
        claims = {v.name: v.persistent_volume_claim for v in pod.spec.volumes}
        assert claims["data"] is not None and claims["data"].claim_name == f"data-db-{ordinal}"
        assert claims["config"] is not None and claims["config"].claim_name == "shared"
        assert len(pod.spec.volumes) == 2
    assert len(revisions) == 1


def test_statefulset_ordinals_start(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          replicas: 2
          ordinals: {start: 5}
          template: {spec: {containers: [{name: c}]}}
        """,
    )
    assert names(state.pods) == ["default/db-5", "default/db-6"]


JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: crunch, uid: job-uid}
spec:
  SPEC
  template:
    metadata: {labels: {team: data}}
    spec:
      restartPolicy: OnFailure
      containers: [{name: c}]
"""


@pytest.mark.parametrize(
    ("spec", "count"),
    [
        ("{}", 1),
        ("parallelism: 4", 4),
        ("parallelism: 4\n  completions: 2", 2),
        ("completions: 3", 1),
        ("parallelism: 0", 0),
        ("parallelism: 3\n  suspend: true", 0),
    ],
)
def test_job_pod_count(tmp_path: Path, spec: str, count: int) -> None:
    text = JOB.replace("SPEC", spec) if spec != "{}" else JOB.replace("  SPEC\n", "")
    assert len(load(tmp_path, text).pods) == count


def test_job_pods_names_labels_and_restart_policy(tmp_path: Path) -> None:
    state = load(tmp_path, JOB.replace("SPEC", "parallelism: 2"))
    for pod in state.pods:
        assert re.fullmatch(f"crunch-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.labels == {
            "team": "data",
            "batch.kubernetes.io/controller-uid": "job-uid",
            "batch.kubernetes.io/job-name": "crunch",
            "controller-uid": "job-uid",
            "job-name": "crunch",
        }
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.api_version, owner.name, owner.uid, owner.controller) == (
            "Job",
            "batch/v1",
            "crunch",
            "job-uid",
            True,
        )
        assert pod.spec.restart_policy == "OnFailure"


def test_indexed_job_pods(tmp_path: Path) -> None:
    spec = "parallelism: 2\n  completions: 5\n  completionMode: Indexed"
    state = load(tmp_path, JOB.replace("SPEC", spec))
    assert len(state.pods) == 2
    for index, pod in enumerate(state.pods):
        assert re.fullmatch(f"crunch-{index}-{SUFFIX}", pod.metadata.name)
        key = "batch.kubernetes.io/job-completion-index"
        assert pod.metadata.annotations[key] == str(index)


DAEMONSET = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 50m}}}]
      EXTRA
"""


def daemon_nodes(state: ClusterState) -> list[str]:
    out = []
    for pod in state.pods:
        affinity = pod.spec.affinity
        assert affinity is not None and affinity.node_affinity is not None
        required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
        assert required is not None
        (term,) = required.node_selector_terms
        (field,) = term.match_fields
        assert (field.key, field.operator) == ("metadata.name", "In")
        out.extend(field.values)
    return out


def test_daemonset_one_pod_per_eligible_node(tmp_path: Path) -> None:
    state = load(tmp_path, DAEMONSET.replace("EXTRA", "") + "---\n" + NODES)
    # n2's NoSchedule taint is not tolerated; n3 is unschedulable, which daemon pods
    # tolerate, and PreferNoSchedule does not count.
    assert daemon_nodes(state) == ["n1", "n3"]
    for pod in state.pods:
        assert pod.spec.node_name == ""  # it goes through the scheduler
        assert re.fullmatch(f"agent-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.namespace == "kube-system"
        assert pod.metadata.labels["app"] == "agent"
        assert re.fullmatch(HASH, pod.metadata.labels["controller-revision-hash"])
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.controller) == ("DaemonSet", "agent", True)
        added = {(t.key, t.operator, t.effect) for t in pod.spec.tolerations}
        assert added == {
            ("node.kubernetes.io/not-ready", "Exists", "NoExecute"),
            ("node.kubernetes.io/unreachable", "Exists", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "Exists", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "Exists", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "Exists", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "Exists", "NoSchedule"),
        }
    assert state.pods[0].spec is not state.pods[1].spec


def test_daemonset_tolerations_node_selector_and_affinity(tmp_path: Path) -> None:
    tolerating = "tolerations: [{key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}]"
    state = load(tmp_path, DAEMONSET.replace("EXTRA", tolerating) + "---\n" + NODES)
    assert daemon_nodes(state) == ["n1", "n2", "n3"]
    state = load(
        tmp_path, DAEMONSET.replace("EXTRA", "nodeSelector: {zone: a}") + NODES_AFTER, "s.yaml"
    )
    assert daemon_nodes(state) == ["n1", "n3"]
    affinity = textwrap.indent(
        textwrap.dedent(
            """\
            affinity:
              nodeAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                  nodeSelectorTerms:
                  - matchExpressions: [{key: disk, operator: In, values: [ssd]}]
                preferredDuringSchedulingIgnoredDuringExecution:
                - weight: 1
                  preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}
            """
        ),
        "      ",
    ).lstrip()
    state = load(tmp_path, DAEMONSET.replace("EXTRA", affinity) + NODES_AFTER, "a.yaml")
    assert daemon_nodes(state) == ["n1"]
    node_affinity = state.pods[0].spec.affinity.node_affinity  # type: ignore[union-attr]
    assert node_affinity is not None
    assert len(node_affinity.preferred_during_scheduling_ignored_during_execution) == 1


NODES_AFTER = "---\n" + NODES


def test_daemonset_pods_keep_their_place_in_pod_order(tmp_path: Path) -> None:
    text = pod_doc("first") + "---\n" + DAEMONSET.replace("EXTRA", "") + "---\n"
    text += pod_doc("last") + "---\n" + NODES
    state = load(tmp_path, text)
    keys = names(state.pods)
    assert keys[0] == "default/first" and keys[-1] == "default/last"
    assert len(keys) == 4 and all(k.startswith("kube-system/agent-") for k in keys[1:3])


def test_existing_pods_of_workloads_count_as_replicas(tmp_path: Path) -> None:
    base = load(tmp_path, DEPLOYMENT.replace("IMAGE", "x"))
    running = base.pods[0]
    running.spec.node_name = "n1"
    dump = {"apiVersion": "v1", "kind": "List", "items": [_pod_dict(running)]}
    (tmp_path / "dump.json").write_text(json.dumps(dump))
    state = load_paths([tmp_path / "cluster.yaml", tmp_path / "dump.json"])
    assert len(state.pods) == 3
    assert len(running_pods(state)) == 1 and len(pending_pods(state)) == 2
    assert any("already belong to workloads" in note for note in state.notes)


def _pod_dict(pod: Pod) -> dict[str, Any]:
    import msgspec

    # to_builtins leaves out fields at their defaults, kind and apiVersion among them.
    return {"apiVersion": "v1", "kind": "Pod", **msgspec.to_builtins(pod)}


def test_deployment_with_its_replicasets_in_input_defers_to_them(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("IMAGE", "x") + textwrap.dedent(
        """\
        ---
        apiVersion: apps/v1
        kind: ReplicaSet
        metadata:
          name: web-abc
          namespace: shop
          ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, controller: true}]
        spec:
          replicas: 1
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: c}]}
        """
    )
    state = load(tmp_path, text)
    assert len(state.pods) == 1
    assert state.pods[0].metadata.owner_references[0].name == "web-abc"


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
        ("  priority: high\n", "spec.priority", "Expected `int | null`, got `str`"),
        ("  tolerations: [{key: 1}]\n", "spec.tolerations[0].key", "Expected `str`, got `int`"),
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
            "  containers: [{name: c, resources: {limits: {cpu: abc}}}]\n",
            "spec.containers[0].resources.limits.cpu",
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
    assert (problem.field, problem.message) == ("metadata.labels.n", "Expected `str`, got `int`")


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
    spec: {nodeName: n1}
    ---
    apiVersion: v1
    kind: Pod
    metadata:
      name: agent-abcde
      namespace: kube-system
      ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, controller: true}]
    spec: {nodeName: n3}
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
            ("m", 2, {**pod, "metadata": {"name": "ok"}}),
        ]
    )
    assert names(state.pods) == ["default/ok"]
    assert str(only_problem(state)) == "m: document 1: cannot read: RuntimeError: unexpected"
