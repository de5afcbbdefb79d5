"""Random nodes and pods of a scenario: a node's labels, allocatable, taints and
images; a pod's containers and requests, node selector and node affinity,
tolerations, host ports and priority class, and what the spread and affinity
features add to it (see features.py)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from tests.differential.generator.features import _pod_affinity, _spread
from tests.differential.generator.vocabulary import (
    APPS,
    DEFAULT_IMAGE,
    GPU,
    HOSTNAME_LABEL,
    IMAGES,
    PRIORITY_CLASSES,
    REGION_LABEL,
    TAINTS,
    ZONE_LABEL,
    ZONES,
)


# --------------------------------------------------------------------- nodes
def _node(rng: random.Random, i: int, gpu_nodes: bool) -> dict[str, Any]:
    zone = ZONES[i % len(ZONES)] if rng.random() < 0.7 else rng.choice(ZONES)
    pool = "gpu" if gpu_nodes and rng.random() < 0.4 else rng.choice(("general", "infra"))
    labels = {
        ZONE_LABEL: zone,
        REGION_LABEL: "region-1" if zone != "zone-c" else "region-2",
        "disk": rng.choice(("ssd", "hdd")),
        "pool": pool,
        "tier": str(rng.randint(1, 4)),
    }
    if rng.random() < 0.2:
        del labels["disk"]
    allocatable = {
        "cpu": rng.choice(("1", "2", "2", "4", "4", "8", "3500m")),
        "memory": rng.choice(("2Gi", "4Gi", "4Gi", "8Gi", "16Gi", "6000Mi")),
        "pods": str(rng.choice((2, 3, 5, 110, 110, 110))),
    }
    if rng.random() < 0.5:
        allocatable["ephemeral-storage"] = rng.choice(("10Gi", "20Gi", "50Gi"))
    if pool == "gpu":
        allocatable[GPU] = str(rng.choice((1, 2, 4)))
    taints: list[dict[str, str]] = []
    if pool == "gpu" and rng.random() < 0.5:
        taints.append(dict(TAINTS[1]))
    if pool == "infra" and rng.random() < 0.35:
        taints.append(dict(TAINTS[0]))
    for taint in (TAINTS[2], TAINTS[3], TAINTS[4]):
        if rng.random() < (0.04 if taint["effect"] == "NoExecute" else 0.15):
            taints.append(dict(taint))
    images = []
    for name, size in IMAGES:
        if rng.random() < 0.3:
            images.append({"names": [name], "sizeBytes": size})
    node: dict[str, Any] = {
        "name": f"n{i}",
        "labels": labels,
        "allocatable": allocatable,
    }
    if taints:
        node["taints"] = taints
    if images:
        node["images"] = images
    if rng.random() < 0.06:
        node["unschedulable"] = True
    return node


# --------------------------------------------------------------------- pods
_CPU = (None, "50m", "100m", "250m", "500m", "1", "1500m", "2", "3")
_MEM = (None, "64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "3Gi", "6Gi")


def _requests(rng: random.Random, heavy: bool = False) -> dict[str, str]:
    cpu = rng.choice(_CPU[3:] if heavy else _CPU)
    mem = rng.choice(_MEM[3:] if heavy else _MEM)
    out = {}
    if cpu is not None:
        out["cpu"] = cpu
    if mem is not None:
        out["memory"] = mem
    if rng.random() < 0.1:
        out["ephemeral-storage"] = rng.choice(("1Gi", "5Gi", "30Gi"))
    return out


def _container(rng: random.Random, name: str, heavy: bool = False) -> dict[str, Any]:
    image = DEFAULT_IMAGE
    if rng.random() < 0.5:
        image = rng.choice(IMAGES)[0]
    container: dict[str, Any] = {"name": name, "image": image}
    requests = _requests(rng, heavy)
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if rng.random() < 0.15:
        # Limits only: the apiserver defaults requests to them.
        limits = _requests(rng)
        limits.pop("ephemeral-storage", None)
        if limits:
            resources = {"limits": limits}
    if resources:
        container["resources"] = resources
    return container


def _with_gpu(container: dict[str, Any], count: int) -> None:
    resources = container.setdefault("resources", {})
    resources.setdefault("requests", {})[GPU] = str(count)
    resources.setdefault("limits", {})[GPU] = str(count)


def _node_term(
    rng: random.Random, nodes: Sequence[Mapping[str, Any]], by_name: bool
) -> dict[str, Any]:
    """One nodeSelectorTerm: a few matchExpressions over the node labels, or
    matchFields on metadata.name."""
    if by_name:
        names = rng.sample([n["name"] for n in nodes], k=rng.randint(1, min(2, len(nodes))))
        if rng.random() < 0.15:
            names = ["n-missing"]
        if len(names) == 1 and rng.random() < 0.6:
            # A node field selector takes exactly one value.
            return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]}
        return {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": names}]}
    exprs: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 2)):
        kind = rng.random()
        if kind < 0.35:
            exprs.append(
                {
                    "key": ZONE_LABEL,
                    "operator": rng.choice(("In", "NotIn")),
                    "values": sorted(rng.sample(ZONES, k=rng.randint(1, 2))),
                }
            )
        elif kind < 0.55:
            exprs.append({"key": "disk", "operator": rng.choice(("Exists", "DoesNotExist"))})
        elif kind < 0.75:
            exprs.append(
                {
                    "key": "tier",
                    "operator": rng.choice(("Gt", "Lt")),
                    "values": [str(rng.randint(1, 4))],
                }
            )
        elif kind < 0.9:
            exprs.append(
                {
                    "key": "pool",
                    "operator": "In",
                    "values": [rng.choice(("general", "infra", "gpu"))],
                }
            )
        else:
            exprs.append({"key": "disk", "operator": "In", "values": ["nvme"]})
    return {"matchExpressions": exprs}


def _affinity(rng: random.Random, nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    node_affinity: dict[str, Any] = {}
    if rng.random() < 0.25:
        terms = [_node_term(rng, nodes, by_name=rng.random() < 0.15)]
        if rng.random() < 0.25:
            terms.append(_node_term(rng, nodes, by_name=False))
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": terms
        }
    if rng.random() < 0.35:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.choice((1, 5, 20, 50, 100)), "preference": _node_term(rng, nodes, False)}
            for _ in range(rng.randint(1, 3))
        ]
    return {"nodeAffinity": node_affinity} if node_affinity else None


def _tolerations(rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for taint in TAINTS:
        if rng.random() >= 0.3:
            continue
        style = rng.random()
        if style < 0.5:
            tol: dict[str, Any] = {"key": taint["key"], "operator": "Exists"}
        elif "value" in taint:
            tol = {"key": taint["key"], "operator": "Equal", "value": taint["value"]}
        else:
            tol = {"key": taint["key"], "operator": "Exists"}
        if rng.random() < 0.6:
            tol["effect"] = taint["effect"]
        if tol.get("effect") == "NoExecute" and rng.random() < 0.5:
            tol["tolerationSeconds"] = 60
        out.append(tol)
    if rng.random() < 0.03:
        out.append({"operator": "Exists"})  # tolerates everything
    return out


def _ports(rng: random.Random) -> list[dict[str, Any]]:
    if rng.random() >= 0.3:
        return []
    port = rng.choice((8080, 8080, 9090, 53))
    entry: dict[str, Any] = {"containerPort": port, "hostPort": port}
    protocol = rng.choice(("TCP", "TCP", "UDP"))
    if protocol != "TCP":
        entry["protocol"] = protocol
    if rng.random() < 0.2:
        entry["hostIP"] = "127.0.0.1"
    return [entry]


def _pod(
    rng: random.Random,
    i: int,
    nodes: Sequence[Mapping[str, Any]],
    gpu_nodes: bool,
    features: Sequence[str],
) -> dict[str, Any]:
    app = rng.choice(APPS)
    labels = {"app": app}
    if rng.random() < 0.3:
        labels["tier"] = rng.choice(("front", "back"))
    containers = [_container(rng, "c0", heavy=rng.random() < 0.2)]
    if rng.random() < 0.2:
        containers.append(_container(rng, "c1"))
    ports = _ports(rng)
    if ports:
        containers[0]["ports"] = ports
    spec: dict[str, Any] = {"containers": containers, "terminationGracePeriodSeconds": 0}
    if rng.random() < 0.15:
        init = _container(rng, "init", heavy=rng.random() < 0.3)
        if rng.random() < 0.4:
            init["restartPolicy"] = "Always"  # a sidecar
        spec["initContainers"] = [init]
    if gpu_nodes and rng.random() < 0.2:
        _with_gpu(containers[0], rng.choice((1, 1, 2, 3)))
    if rng.random() < 0.05:
        # Pod-level requests replace the containers' cpu and memory (which must
        # not ask for more, so they ask for none).
        spec["resources"] = {"requests": {"cpu": rng.choice(("500m", "3")), "memory": "1Gi"}}
        for container in [*containers, *spec.get("initContainers", [])]:
            for part in container.get("resources", {}).values():
                part.pop("cpu", None)
                part.pop("memory", None)
    if rng.random() < 0.25:
        key, values = rng.choice(
            (
                (ZONE_LABEL, ZONES),
                ("disk", ("ssd", "hdd")),
                ("pool", ("general", "infra", "gpu")),
                ("disk", ("nvme",)),
            )
        )
        spec["nodeSelector"] = {key: rng.choice(values)}
    affinity = _affinity(rng, nodes)
    if affinity:
        spec["affinity"] = affinity
    tolerations = _tolerations(rng)
    if tolerations:
        spec["tolerations"] = tolerations
    if rng.random() < 0.4:
        spec["priorityClassName"] = rng.choice(PRIORITY_CLASSES)["name"]
    if "spread" in features and rng.random() < 0.4:
        spec["topologySpreadConstraints"] = _spread(rng, app)
    if "affinity" in features and rng.random() < 0.4:
        spec.setdefault("affinity", {}).update(_pod_affinity(rng, app))
    return {"name": f"p{i:02d}", "labels": labels, "spec": spec}
