"""Workloads in manifests expanded into their pods as their controllers would make
them: Deployments, ReplicaSets, StatefulSets, Jobs and DaemonSets, and pods of
workloads already in the input."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.cluster.manifests import load_paths, pending_pods, running_pods
from tests.unit.manifests_helpers import (
    DAEMONSET,
    DEPLOYMENT,
    HASH,
    JOB,
    NODES,
    NODES_AFTER,
    SUFFIX,
    daemon_nodes,
    load,
    names,
    pod_doc,
)

# --- workloads -----------------------------------------------------------------------


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
