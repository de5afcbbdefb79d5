"""What PodTopologySpread's default constraints read in `simulate`: the selectors
of Services, ReplicationControllers, ReplicaSets and StatefulSets (those of the
input, and those of the ReplicaSets the Deployments' controller would make), as
kube-scheduler reads them through its listers (helper.DefaultSelector)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from kubesched.cluster.manifests import ClusterState, pending_pods, running_pods
from kubesched.framework.profile import ProfileConfig
from kubesched.simulation.simulator import simulate
from tests.unit.manifests_helpers import load, only_problem

# Two nodes: `crowded` runs six app=web pods, `busy` one large pod of another app
# (tests/integration/test_run_default_spreading.py runs the same on the real
# kube-scheduler: with the Service, the new pod goes to `busy`).
CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: crowded, labels: {kubernetes.io/hostname: crowded, topology.kubernetes.io/zone: z}}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: busy, labels: {kubernetes.io/hostname: busy, topology.kubernetes.io/zone: z}}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: other, labels: {app: db}}
spec:
  nodeName: busy
  containers: [{name: c, resources: {requests: {cpu: "2", memory: 8Gi}}}]
"""
WEB = "".join(
    f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: web-{i}, labels: {{app: web}}}}
spec:
  nodeName: crowded
  containers: [{{name: c}}]
"""
    for i in range(6)
)
NEW = """
---
apiVersion: v1
kind: Pod
metadata: {name: new, labels: {app: web}}
spec:
  containers: [{name: c}]
"""
SERVICE = """
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"""


def placement(state: ClusterState, key: str) -> str | None:
    assert not state.problems, [str(p) for p in state.problems]
    result = simulate(
        state.nodes,
        [*running_pods(state), *pending_pods(state)],
        [ProfileConfig.default()],
        seed=1,
        pdbs=state.pdbs,
        namespaces=state.namespaces,
        workload_selectors=state.workload_selectors,
    )
    return result.placements[key]


def test_a_service_spreads_the_pods_it_selects(tmp_path: Path) -> None:
    """Without the Service the pod has no default constraint and LeastAllocated
    prefers `crowded`; with it, spreading by hostname sends it to `busy`."""
    without = load(tmp_path, CLUSTER + WEB + NEW)
    assert placement(without, "default/new") == "crowded"
    state = load(tmp_path, CLUSTER + WEB + NEW + SERVICE)
    assert state.workload_selectors[("default", "Service", "web")].match_labels == {"app": "web"}
    assert placement(state, "default/new") == "busy"
    assert not [n for n in state.notes if "Service" in n]


def test_a_service_in_another_namespace_or_without_selector_selects_nothing(
    tmp_path: Path,
) -> None:
    others = SERVICE.replace("metadata: {name: web}", "metadata: {name: web, namespace: prod}")
    headless = SERVICE.replace("name: web}", "name: bare}").replace("  selector: {app: web}\n", "")
    state = load(tmp_path, CLUSTER + WEB + NEW + others + headless)
    assert ("default", "Service", "bare") not in state.workload_selectors
    assert placement(state, "default/new") == "crowded"


def test_deployments_replica_sets_get_the_template_hash_in_their_selector(
    tmp_path: Path,
) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: api}
        spec:
          replicas: 2
          selector: {matchLabels: {app: api}}
          template:
            metadata: {labels: {app: api}}
            spec: {containers: [{name: c}]}
        """,
    )
    owner = state.pods[0].metadata.owner_references[0]
    template_hash = state.pods[0].metadata.labels["pod-template-hash"]
    selector = state.workload_selectors[("default", "ReplicaSet", owner.name)]
    assert selector.match_labels == {"app": "api", "pod-template-hash": template_hash}


def test_stateful_sets_and_replica_sets_of_the_input(tmp_path: Path) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: db}
        spec:
          replicas: 1
          selector: {matchExpressions: [{key: app, operator: In, values: [db]}]}
          template:
            metadata: {labels: {app: db}}
            spec: {containers: [{name: c}]}
        ---
        apiVersion: apps/v1
        kind: ReplicaSet
        metadata: {name: cache}
        spec:
          replicas: 1
          selector: {matchLabels: {app: cache}}
          template:
            metadata: {labels: {app: cache}}
            spec: {containers: [{name: c}]}
        """,
    )
    db = state.workload_selectors[("default", "StatefulSet", "db")]
    assert db.match_expressions[0].values == ["db"]
    assert state.workload_selectors[("default", "ReplicaSet", "cache")].match_labels == {
        "app": "cache"
    }


def test_a_controller_missing_from_the_input_is_stood_in_for_with_a_note(
    tmp_path: Path,
) -> None:
    state = load(
        tmp_path,
        """
        apiVersion: v1
        kind: Pod
        metadata:
          name: w-abcde
          labels: {app: w, controller-revision-hash: "123"}
          ownerReferences:
          - {apiVersion: apps/v1, kind: StatefulSet, name: w, uid: u1, controller: true}
        spec: {containers: [{name: c}]}
        """,
    )
    assert state.workload_selectors[("default", "StatefulSet", "w")].match_labels == {"app": "w"}
    assert any("1 controllers of pods are not in the input" in n for n in state.notes)


# --- ReplicationControllers ----------------------------------------------------------

RC = """
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
"""


def test_a_replication_controller_makes_its_pods_and_defaults_its_selector(
    tmp_path: Path,
) -> None:
    state = load(tmp_path, RC)
    assert len(state.pods) == 3
    for pod in state.pods:
        assert pod.metadata.name.startswith("legacy-")
        (ref,) = pod.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name, ref.controller) == (
            "v1",
            "ReplicationController",
            "legacy",
            True,
        )
    # SetDefaults_ReplicationController: the template's labels.
    selector = state.workload_selectors[("default", "ReplicationController", "legacy")]
    assert selector.match_labels == {"app": "legacy"}


def test_a_replication_controller_without_template_or_with_a_foreign_selector(
    tmp_path: Path,
) -> None:
    problem = only_problem(
        load(tmp_path, "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: x}\n")
    )
    assert (problem.field, problem.message) == ("spec.template", "Required value")
    foreign = textwrap.dedent(RC).replace(
        "spec:\n  replicas: 3", "spec:\n  replicas: 3\n  selector: {app: other}"
    )
    problem = only_problem(load(tmp_path, foreign))
    assert problem.field == "spec.template.metadata.labels"
    assert "`selector` does not match template `labels`" in problem.message


def test_a_service_name_must_be_a_dns_1035_label(tmp_path: Path) -> None:
    problem = only_problem(load(tmp_path, SERVICE.replace("name: web}", "name: 1web}")))
    assert (problem.kind, problem.field) == ("Service", "metadata.name")
    assert "a DNS-1035 label must consist of lower case alphanumeric characters" in (
        problem.message
    )
