"""The API objects of a scenario as the harness creates them (Nodes, Pods with
their logical node names replaced, PriorityClasses, PDBs, PersistentVolumes and
claims), and what the pods of a scenario refer to (node names, node label keys,
images), which tells whether two nodes are interchangeable."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

from tests.differential.generator.vocabulary import DEFAULT_IMAGE, HOSTNAME_LABEL, PRIORITY_CLASSES
from tests.differential.generator.workloads import CONTROLLER_API_VERSIONS


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
    for resource_slice in (scenario.get("dra") or {}).get("slices", []):
        walk(resource_slice.get("nodeSelector"))
    for runtime_class in (scenario.get("workloads") or {}).get("runtimeClasses", []):
        # Merged into the pods naming the class by RuntimeClass admission.
        walk((runtime_class.get("scheduling") or {}).get("nodeSelector") and runtime_class)
    return keys


def referenced_images(scenario: Mapping[str, Any]) -> set[str]:
    return {
        c["image"]
        for pod in scenario["pods"]
        for c in [*pod["spec"]["containers"], *pod["spec"].get("initContainers", [])]
    }


def pod_manifest(
    pod: Mapping[str, Any],
    namespace: str,
    scheduler_name: str,
    node_names: Mapping[str, str],
    *,
    owners: Mapping[tuple[str, str], str] | None = None,
    runtime_classes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The Pod object. OWNERS: (kind, name) -> uid of the run's controllers (the
    `workloads` feature; without it, a placeholder uid); RUNTIME_CLASSES: logical
    -> real RuntimeClass names (default: unchanged)."""
    spec = rename_nodes(dict(pod["spec"]), node_names)
    spec["schedulerName"] = scheduler_name
    if runtime_classes and spec.get("runtimeClassName") in runtime_classes:
        spec["runtimeClassName"] = runtime_classes[spec["runtimeClassName"]]
    metadata: dict[str, Any] = {
        "name": pod["name"],
        "namespace": namespace,
        "labels": dict(pod["labels"]),
    }
    if pod.get("owner"):
        metadata["ownerReferences"] = [owner_reference(pod["owner"], owners or {})]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def owner_reference(
    owner: Mapping[str, str], uids: Mapping[tuple[str, str], str]
) -> dict[str, Any]:
    """A pod's controller reference to OWNER ({kind, name}), with its uid from UIDS
    (as the API server gave it), else a fixed placeholder (no cluster: the simulator)."""
    kind, name = owner["kind"], owner["name"]
    uid = uids.get((kind, name)) or str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{name}"))
    return {
        "apiVersion": CONTROLLER_API_VERSIONS[kind],
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
    }


def runtime_class_names(workloads: Mapping[str, Any] | None, prefix: str) -> dict[str, str]:
    """Logical -> real RuntimeClass names: cluster-scoped, so per scenario (PREFIX;
    none: the logical names)."""
    return {
        rc["name"]: f"{prefix}-{rc['name']}" if prefix else rc["name"]
        for rc in (workloads or {}).get("runtimeClasses", [])
    }


def runtime_class_manifests(
    workloads: Mapping[str, Any] | None, prefix: str
) -> list[dict[str, Any]]:
    """The scenario's RuntimeClasses (node.k8s.io/v1), named as runtime_class_names."""
    names = runtime_class_names(workloads, prefix)
    out = []
    for rc in (workloads or {}).get("runtimeClasses", []):
        manifest: dict[str, Any] = {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": names[rc["name"]]},
            "handler": rc["handler"],
            "overhead": {"podFixed": dict(rc["overhead"])},
        }
        if rc.get("scheduling"):
            manifest["scheduling"] = copy.deepcopy(rc["scheduling"])
        out.append(manifest)
    return out


def workload_manifests(workloads: Mapping[str, Any] | None, namespace: str) -> list[dict[str, Any]]:
    """The Services, then the controllers (ReplicationControllers, ReplicaSets,
    StatefulSets) of one run, in NAMESPACE. Services are headless (no cluster IP to
    allocate); controllers have the replicas their pods make up and a template their
    selector selects (what validation asks for: no controller acts on them here)."""
    out: list[dict[str, Any]] = []
    for svc in (workloads or {}).get("services", []):
        spec: dict[str, Any] = {
            "clusterIP": "None",
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        }
        if svc.get("selector") is not None:
            spec["selector"] = dict(svc["selector"])
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": svc["name"], "namespace": namespace},
                "spec": spec,
            }
        )
    for ctl in (workloads or {}).get("controllers", []):
        template = {
            "metadata": {"labels": dict(ctl["labels"])},
            "spec": {"containers": [{"name": "c0", "image": DEFAULT_IMAGE}]},
        }
        spec = {
            "replicas": ctl.get("replicas", 0),
            "selector": copy.deepcopy(ctl["selector"]),
            "template": template,
        }
        if ctl["kind"] == "StatefulSet":
            spec["serviceName"] = ctl["name"]
        out.append(
            {
                "apiVersion": CONTROLLER_API_VERSIONS[ctl["kind"]],
                "kind": ctl["kind"],
                "metadata": {"name": ctl["name"], "namespace": namespace},
                "spec": spec,
            }
        )
    return out


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


def dra_class_names(dra: Mapping[str, Any], prefix: str) -> dict[str, str]:
    """Logical -> real DeviceClass names: cluster-scoped, so per scenario (PREFIX);
    a class the scenario does not define (a missing class) keeps its name."""
    return {c["name"]: f"{prefix}-{c['name']}" for c in dra.get("classes", [])}


def _rename_classes(spec: Any, classes: Mapping[str, str]) -> Any:
    spec = copy.deepcopy(spec)
    for request in spec.get("devices", {}).get("requests", []):
        for part in [request.get("exactly") or {}, *request.get("firstAvailable", [])]:
            if "deviceClassName" in part:
                part["deviceClassName"] = classes.get(
                    part["deviceClassName"], part["deviceClassName"]
                )
    return spec


def dra_cluster_manifests(
    dra: Mapping[str, Any], prefix: str, node_names: Mapping[str, str]
) -> list[dict[str, Any]]:
    """DeviceClasses and ResourceSlices of a scenario, in creation order. Slices of a
    node are in the pool named after the (real) node; slices of nodes the scenario no
    longer has (shrinking drops nodes) are left out. Both runs share them: allocated
    devices are recorded only in claims, which are per run."""
    api = "resource.k8s.io/v1"
    classes = dra_class_names(dra, prefix)
    out: list[dict[str, Any]] = [
        {
            "apiVersion": api,
            "kind": "DeviceClass",
            "metadata": {"name": classes[c["name"]]},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in c["selectors"]]},
        }
        for c in dra.get("classes", [])
    ]
    slices = [s for s in dra.get("slices", []) if "node" not in s or s["node"] in node_names]
    pools: dict[tuple[str, str], int] = {}
    for s in slices:
        key = (s["driver"], s.get("pool") or s["node"])
        pools[key] = pools.get(key, 0) + 1
    for s in slices:
        pool = s.get("pool") or s["node"]
        spec: dict[str, Any] = {
            "driver": s["driver"],
            "pool": {
                "name": node_names[s["node"]] if "node" in s else f"{prefix}-{pool}",
                "generation": 1,
                "resourceSliceCount": pools[(s["driver"], pool)],
            },
        }
        if "node" in s:
            spec["nodeName"] = node_names[s["node"]]
        elif s.get("allNodes"):
            spec["allNodes"] = True
        else:
            spec["nodeSelector"] = copy.deepcopy(s["nodeSelector"])
        for key in ("devices", "sharedCounters"):
            if key in s:
                spec[key] = copy.deepcopy(s[key])
        name = (
            f"{node_names[s['node']]}-{s['name'].split('-', 1)[1]}"
            if "node" in s
            else f"{prefix}-{s['name']}"
        )
        out.append(
            {"apiVersion": api, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}
        )
    return out


def dra_namespace_manifests(
    dra: Mapping[str, Any], namespace: str, prefix: str
) -> list[dict[str, Any]]:
    """The ResourceClaims and ResourceClaimTemplates of one run (in NAMESPACE)."""
    api = "resource.k8s.io/v1"
    classes = dra_class_names(dra, prefix)
    out: list[dict[str, Any]] = []
    for claim in dra.get("claims", []):
        out.append(
            {
                "apiVersion": api,
                "kind": "ResourceClaim",
                "metadata": {"name": claim["name"], "namespace": namespace},
                "spec": _rename_classes(claim["spec"], classes),
            }
        )
    for template in dra.get("templates", []):
        out.append(
            {
                "apiVersion": api,
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": template["name"], "namespace": namespace},
                "spec": {"spec": _rename_classes(template["spec"], classes)},
            }
        )
    return out
