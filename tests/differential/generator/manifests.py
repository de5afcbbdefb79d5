"""The API objects of a scenario as the harness creates them (Nodes, Pods with
their logical node names replaced, PriorityClasses, PDBs, PersistentVolumes and
claims), and what the pods of a scenario refer to (node names, node label keys,
images), which tells whether two nodes are interchangeable."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tests.differential.generator.vocabulary import HOSTNAME_LABEL, PRIORITY_CLASSES


# --------------------------------------------------------------------- manifests
def node_manifest(node: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The Node object (status as a kubelet would report it) named NAME."""
    allocatable = dict(node["allocatable"])
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name, **node["labels"]}},
        "spec": {},
        "status": {
            "capacity": allocatable,
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }
    if node.get("taints"):
        manifest["spec"]["taints"] = copy.deepcopy(node["taints"])
    if node.get("unschedulable"):
        manifest["spec"]["unschedulable"] = True
    if node.get("images"):
        manifest["status"]["images"] = copy.deepcopy(node["images"])
    return manifest


def rename_nodes(spec: dict[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """A copy of the pod SPEC with logical node names replaced (node affinity on
    metadata.name or kubernetes.io/hostname, nodeSelector on hostname)."""
    spec = copy.deepcopy(spec)

    def fix(values: list[str]) -> list[str]:
        return [names.get(v, v) for v in values]

    selector = spec.get("nodeSelector") or {}
    if HOSTNAME_LABEL in selector:
        selector[HOSTNAME_LABEL] = names.get(selector[HOSTNAME_LABEL], selector[HOSTNAME_LABEL])
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = list(
        (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
            "nodeSelectorTerms", []
        )
    )
    terms += [
        p["preference"]
        for p in node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    ]
    for term in terms:
        for field in term.get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("values"):
                field["values"] = fix(field["values"])
        for expr in term.get("matchExpressions") or []:
            if expr.get("key") == HOSTNAME_LABEL and expr.get("values"):
                expr["values"] = fix(expr["values"])
    return spec


def referenced_nodes(scenario: Mapping[str, Any]) -> set[str]:
    """Logical node names that some pod names (such nodes are never interchangeable)."""
    probe = {n["name"]: f"\0{n['name']}" for n in scenario["nodes"]}
    found: set[str] = set()
    for pod in scenario["pods"]:
        text = repr(rename_nodes(pod["spec"], probe))
        found.update(name for name, marker in probe.items() if f"'{marker}'" in text)
    return found


def referenced_label_keys(scenario: Mapping[str, Any]) -> set[str]:
    """Node label keys some pod (or volume) looks at: the others cannot tell nodes apart."""
    keys: set[str] = set()

    def walk(obj: Any, parent: str = "") -> None:
        if isinstance(obj, Mapping):
            for k, v in obj.items():
                if k == "nodeSelector" and isinstance(v, Mapping):
                    keys.update(v)
                elif isinstance(v, str) and (
                    k == "topologyKey" or (k == "key" and parent == "matchExpressions")
                ):
                    keys.add(v)
                walk(v, k if isinstance(v, list) else parent)
        elif isinstance(obj, list):
            for item in obj:
                walk(item, parent)

    for pod in scenario["pods"]:
        walk(pod["spec"].get("nodeSelector") and {"nodeSelector": pod["spec"]["nodeSelector"]})
        affinity = pod["spec"].get("affinity") or {}
        walk(affinity.get("nodeAffinity"))
        walk({k: v for k, v in affinity.items() if k != "nodeAffinity"})
        walk(pod["spec"].get("topologySpreadConstraints"))
    for pv in (scenario.get("volumes") or {}).get("persistentVolumes", []):
        walk(pv.get("nodeAffinity"))
    return keys


def referenced_images(scenario: Mapping[str, Any]) -> set[str]:
    return {
        c["image"]
        for pod in scenario["pods"]
        for c in [*pod["spec"]["containers"], *pod["spec"].get("initContainers", [])]
    }


def pod_manifest(
    pod: Mapping[str, Any], namespace: str, scheduler_name: str, node_names: Mapping[str, str]
) -> dict[str, Any]:
    spec = rename_nodes(dict(pod["spec"]), node_names)
    spec["schedulerName"] = scheduler_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod["name"], "namespace": namespace, "labels": dict(pod["labels"])},
        "spec": spec,
    }


def priority_class_manifests() -> list[dict[str, Any]]:
    out = []
    for pc in PRIORITY_CLASSES:
        manifest = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc["name"]},
            "value": pc["value"],
        }
        if "preemptionPolicy" in pc:
            manifest["preemptionPolicy"] = pc["preemptionPolicy"]
        out.append(manifest)
    return out


def pdb_manifest(pdb: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": copy.deepcopy(pdb["selector"])}
    for key in ("minAvailable", "maxUnavailable"):
        if key in pdb:
            spec[key] = pdb[key]
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": pdb["name"], "namespace": namespace},
        "spec": spec,
    }


def volume_manifests(
    volumes: Mapping[str, Any], namespace: str, prefix: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(PersistentVolumes, PersistentVolumeClaims) for one run: volume names get
    PREFIX (they are cluster-scoped), claims are pre-bound to them."""
    pvs = []
    for pv in volumes.get("persistentVolumes", []):
        spec: dict[str, Any] = {
            "capacity": {"storage": pv["capacity"]},
            "accessModes": list(pv["accessModes"]),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "hostPath": {"path": f"/tmp/{prefix}-{pv['name']}"},
            "claimRef": {"namespace": namespace, "name": pv["claim"]},
        }
        if pv.get("nodeAffinity"):
            spec["nodeAffinity"] = copy.deepcopy(pv["nodeAffinity"])
        pvs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"{prefix}-{pv['name']}", "labels": dict(pv["labels"])},
                "spec": spec,
            }
        )
    pvcs = []
    for pvc in volumes.get("persistentVolumeClaims", []):
        pvcs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": pvc["name"], "namespace": namespace},
                "spec": {
                    "accessModes": list(pvc["accessModes"]),
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "",
                    "volumeName": f"{prefix}-{pvc['volume']}",
                },
            }
        )
    return pvs, pvcs
