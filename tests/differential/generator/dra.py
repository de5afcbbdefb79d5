"""The `dra` feature: DeviceClasses with CEL selectors, ResourceSlices (per node, one
partitionable pool with its counters in a slice of their own, and network-attached
devices), ResourceClaims and ResourceClaimTemplates, and the pods' spec.resourceClaims.

Everything stays within what a v1.36.3 kube-apiserver accepts with its default
feature gates (DRAPrioritizedList GA, DRAPartitionableDevices beta and on): a slice
holds either sharedCounters or devices, never both, and every slice of a pool counts
in resourceSliceCount. Names in the scenario are logical: nodes ``n0``..., classes
``gpu``...; ``manifests.dra_manifests`` gives the API objects of one run.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from typing import Any

from tests.differential.generator.vocabulary import ZONE_LABEL, ZONES

GPU_DRIVER = "gpu.example.com"
NIC_DRIVER = "nic.example.com"
# A class no scenario creates: a claim naming it cannot be allocated anywhere.
MISSING_CLASS = "missing-class"
# Pod claim names (spec.resourceClaims[].name); the controller's generated claim
# names start with "<pod>-<this>-".
POD_CLAIM_NAMES = ("gpu", "nic", "dev")

_GPU = f'device.driver == "{GPU_DRIVER}"'
_ATTR = f'device.attributes["{GPU_DRIVER}"]'
_CAP = f'device.capacity["{GPU_DRIVER}"]'

# Logical class name -> its CEL selectors. "gpu" is in every scenario (the others
# refer to it); the others are drawn per scenario.
CLASSES: dict[str, tuple[str, ...]] = {
    "gpu": (_GPU,),
    "gpu-large": (_GPU, f'{_CAP}.memory.compareTo(quantity("40Gi")) >= 0'),
    "gpu-h100": (_GPU, f'{_ATTR}.model == "h100"'),
    "gpu-new-driver": (_GPU, f'{_ATTR}.driverVersion.isGreaterThan(semver("1.5.0"))'),
    "gpu-ecc": (_GPU, f"{_ATTR}.ecc"),
    "nic": (f'device.driver == "{NIC_DRIVER}"',),
}

_MODELS = (("t4", "16Gi"), ("a100", "40Gi"), ("h100", "80Gi"))
_VERSIONS = ("1.2.0", "1.5.0", "2.0.1")
# Request-level selectors (on top of the class's).
_REQUEST_SELECTORS = (
    f"{_ATTR}.index < 2",
    f'{_ATTR}.model != "t4"',
    f'{_CAP}.memory.compareTo(quantity("16Gi")) > 0',
)
# A selector no generated device meets: the claim is unsatisfiable.
_IMPOSSIBLE = f'{_CAP}.memory.compareTo(quantity("1000Gi")) >= 0'


def _gpu_device(rng: random.Random, name: str, index: int) -> dict[str, Any]:
    model, memory = rng.choice(_MODELS)
    return {
        "name": name,
        "attributes": {
            "model": {"string": model},
            "index": {"int": index},
            "ecc": {"bool": rng.random() < 0.6},
            "driverVersion": {"version": rng.choice(_VERSIONS)},
        },
        "capacity": {"memory": {"value": memory}},
    }


def _node_slices(rng: random.Random, node: str, partitionable: bool) -> list[dict[str, Any]]:
    """The GPU slices of NODE: one plain slice, or a partitionable pool of two slices
    (one with only the shared counters, one with devices consuming them)."""
    if not partitionable:
        devices = [_gpu_device(rng, f"gpu-{i}", i) for i in range(rng.randint(1, 4))]
        return [{"name": f"{node}-gpu", "node": node, "driver": GPU_DRIVER, "devices": devices}]
    # One 80Gi GPU, usable whole or as two 40Gi halves: the counters say that
    # taking the whole device leaves nothing for the halves, and vice versa.
    counters = [{"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}}]
    devices = []
    for name, index, memory in (
        ("gpu-0", 0, "80Gi"),
        ("gpu-0-a", 1, "40Gi"),
        ("gpu-0-b", 2, "40Gi"),
    ):
        device = _gpu_device(rng, name, index)
        device["attributes"]["model"] = {"string": "h100"}
        device["capacity"] = {"memory": {"value": memory}}
        device["consumesCounters"] = [
            {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": memory}}}
        ]
        devices.append(device)
    return [
        {
            "name": f"{node}-counters",
            "node": node,
            "driver": GPU_DRIVER,
            "sharedCounters": counters,
        },
        {"name": f"{node}-gpu", "node": node, "driver": GPU_DRIVER, "devices": devices},
    ]


def _network_slice(rng: random.Random) -> dict[str, Any]:
    """NICs reachable from every node, or from the nodes of one zone."""
    devices = [
        {
            "name": f"nic-{i}",
            "attributes": {"model": {"string": "cx7"}, "index": {"int": i}},
            "capacity": {"bandwidth": {"value": "100G"}},
        }
        for i in range(rng.randint(1, 3))
    ]
    out: dict[str, Any] = {"name": "fabric", "pool": "fabric", "driver": NIC_DRIVER}
    if rng.random() < 0.5:
        out["allNodes"] = True
    else:
        zone = rng.choice(ZONES)
        out["nodeSelector"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}
            ]
        }
    out["devices"] = devices
    return out


def _exact(rng: random.Random, device_class: str) -> dict[str, Any]:
    exact: dict[str, Any] = {"deviceClassName": device_class}
    if rng.random() < 0.15:
        exact["allocationMode"] = "All"
    else:
        exact["allocationMode"] = "ExactCount"
        exact["count"] = rng.choice((1, 1, 2))
    if device_class != "nic" and rng.random() < 0.2:
        exact["selectors"] = [{"cel": {"expression": rng.choice(_REQUEST_SELECTORS)}}]
    return exact


def _claim_spec(rng: random.Random, classes: Sequence[str], kind: str) -> dict[str, Any]:
    """The devices part of a claim (or template) spec. KIND: "plain", "impossible"
    (no device meets it), "missing-class" (names a class that does not exist)."""
    gpu_classes = [c for c in classes if c != "nic"]
    if kind == "missing-class":
        return {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": MISSING_CLASS}}]
            }
        }
    if kind == "impossible":
        exact = {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": _IMPOSSIBLE}}]}
        return {"devices": {"requests": [{"name": "gpu", "exactly": exact}]}}
    style = rng.random()
    requests: list[dict[str, Any]] = []
    constraints: list[dict[str, Any]] = []
    if style < 0.2:
        # A prioritized list: the better GPU if there is one, else any.
        requests.append(
            {
                "name": "gpu",
                "firstAvailable": [
                    {"name": "large", "deviceClassName": rng.choice(gpu_classes[1:] or ["gpu"])},
                    {"name": "any", "deviceClassName": "gpu"},
                ],
            }
        )
    elif style < 0.35:
        # Two GPUs of the same model on one node.
        requests.append({"name": "gpu", "exactly": {"deviceClassName": "gpu"}})
        requests.append({"name": "gpu2", "exactly": {"deviceClassName": rng.choice(gpu_classes)}})
        constraints.append({"requests": ["gpu", "gpu2"], "matchAttribute": f"{GPU_DRIVER}/model"})
    elif style < 0.45 and "nic" in classes:
        requests.append({"name": "nic", "exactly": _exact(rng, "nic")})
    else:
        requests.append({"name": "gpu", "exactly": _exact(rng, rng.choice(gpu_classes))})
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def _claim_kind(rng: random.Random) -> str:
    roll = rng.random()
    return "missing-class" if roll < 0.06 else "impossible" if roll < 0.12 else "plain"


def dra_objects(
    rng: random.Random, nodes: Sequence[Mapping[str, Any]], pods: list[dict[str, Any]]
) -> dict[str, Any]:
    """The feature's objects for NODES; claims are attached to some of PODS (their
    spec.resourceClaims and the first container's resources.claims), others keep none."""
    names = [n["name"] for n in nodes]
    classes = [
        "gpu",
        *sorted(rng.sample(sorted(set(CLASSES) - {"gpu", "nic"}), k=rng.randint(1, 3))),
    ]
    slices: list[dict[str, Any]] = []
    with_devices = [n for n in names if rng.random() < 0.7] or [rng.choice(names)]
    partitionable = rng.choice(with_devices) if rng.random() < 0.5 else None
    for node in with_devices:
        slices.extend(_node_slices(rng, node, node == partitionable))
    if rng.random() < 0.5:
        classes.append("nic")
        slices.append(_network_slice(rng))
    claims: list[dict[str, Any]] = []
    templates: list[dict[str, Any]] = []
    # Some pods with claims (at least one) and, mostly, some without in the same scenario.
    users = [p for p in pods if rng.random() < 0.5] or [rng.choice(pods)]
    shared: dict[str, Any] | None = None
    if len(users) >= 2 and rng.random() < 0.6:
        # One claim, two pods: they must land where its devices are.
        shared = {"name": "shared-0", "spec": _claim_spec(rng, classes, "plain")}
        claims.append(shared)
    unsatisfied = False
    for pod in users:
        entries: list[dict[str, Any]] = []
        if shared is not None and len(shared.setdefault("users", [])) < 2:
            shared["users"].append(pod["name"])
            entries.append({"name": "gpu", "resourceClaimName": shared["name"]})
            # The top priority, so that no pod preempts a sharer. Preempting one makes
            # the resourceclaim controller deallocate the claim while the other sharer
            # (or the preemptor) is retried: whether that retry's PreBind comes before
            # or after the deallocation is a race in kube-scheduler itself (seed41-050,
            # seed41-133), which no comparison of two runs can hold to one side.
            # tests/integration/test_run_dra.py covers kubesched in that race.
            pod["spec"]["priorityClassName"] = "diff-high"
        else:
            kind = _claim_kind(rng)
            if kind != "plain" and unsatisfied:
                kind = "plain"
            unsatisfied = unsatisfied or kind != "plain"
            spec = _claim_spec(rng, classes, kind)
            if rng.random() < 0.6:
                name = f"tpl-{len(templates)}"
                templates.append({"name": name, "spec": spec})
                entries.append({"name": "gpu", "resourceClaimTemplateName": name})
            else:
                name = f"claim-{len(claims)}"
                claims.append({"name": name, "spec": spec})
                entries.append({"name": "gpu", "resourceClaimName": name})
        if "nic" in classes and rng.random() < 0.2:
            name = f"tpl-{len(templates)}"
            nic = {"devices": {"requests": [{"name": "nic", "exactly": _exact(rng, "nic")}]}}
            templates.append({"name": name, "spec": nic})
            entries.append({"name": "nic", "resourceClaimTemplateName": name})
        pod["spec"]["resourceClaims"] = entries
        if rng.random() < 0.6:
            # Most pods with claims go where their devices are, not where a selector
            # sends them: otherwise node filters decide before DynamicResources does.
            pod["spec"].pop("nodeSelector", None)
            affinity = pod["spec"].get("affinity", {})
            node_affinity = affinity.get("nodeAffinity", {})
            node_affinity.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
            if not node_affinity:
                affinity.pop("nodeAffinity", None)
            if "affinity" in pod["spec"] and not affinity:
                del pod["spec"]["affinity"]
        resources = pod["spec"]["containers"][0].setdefault("resources", {})
        resources["claims"] = [{"name": e["name"]} for e in entries]
    for claim in claims:
        claim.pop("users", None)
    return {
        "classes": [{"name": c, "selectors": list(CLASSES[c])} for c in classes],
        "slices": slices,
        "claims": claims,
        "templates": templates,
    }


def slices_of(dra: Mapping[str, Any], node: str) -> list[dict[str, Any]]:
    """NODE's slices without the names that tell nodes apart (for isomorphism)."""
    out = []
    for s in dra.get("slices", []):
        if s.get("node") == node:
            body = copy.deepcopy(dict(s))
            body.pop("node")
            body.pop("name")
            out.append(body)
    return out
