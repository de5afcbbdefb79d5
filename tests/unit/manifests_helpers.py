"""What the manifest-reading tests share: files written into tmp_path and read back
into a ClusterState, the name patterns of generated pods, and the documents several
test modules load (three nodes, a pod, a Deployment, a Job and a DaemonSet, with
daemon_nodes to read where the DaemonSet's pods are pinned)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kubesched.api.objects import Pod
from kubesched.cluster.manifests import ClusterState, LoadProblem, load_paths

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


NODES_AFTER = "---\n" + NODES


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
