"""Builders for tests and examples: nodes, pods and tables in a line each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from kubesched.api.objects import (
    CSINode,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo


def make_node(
    name: str,
    *,
    cpu: str | int = "4",
    memory: str = "16Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str | int] | None = None,
    images: Iterable[tuple[list[str], int]] = (),
    declared_features: Iterable[str] = (),
) -> Node:
    allocatable: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods}
    allocatable.update(extra or {})
    return msgspec.convert(
        {
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"unschedulable": unschedulable, "taints": [dict(t) for t in taints]},
            "status": {
                "allocatable": allocatable,
                "capacity": allocatable,
                "images": [{"names": n, "sizeBytes": s} for n, s in images],
                "declaredFeatures": list(declared_features),
            },
        },
        Node,
    )


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    requests: Mapping[str, str | int] | None = None,
    spec: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    node_name: str = "",
    priority: int | None = None,
    image: str = "",
) -> Pod:
    """A one-container pod; `spec` entries (in API spelling) override the defaults."""
    reqs: dict[str, Any] = dict(requests or {})
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": image, "resources": {"requests": reqs}}
    full_spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        full_spec["nodeName"] = node_name
    if priority is not None:
        full_spec["priority"] = priority
    full_spec.update(spec or {})
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
            "spec": full_spec,
        },
        Pod,
    )


def make_table(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> NodeTable:
    """A table holding `nodes`, with each pod that names a node placed on it."""
    table = NodeTable()
    for node in nodes:
        table.upsert_node(node)
    for pod in pods:
        row = table.row_of(pod.spec.node_name)
        if row is not None:
            table.add_pod(PodInfo(pod), row)
    return table


# --- storage ---------------------------------------------------------------------------


def make_pv(
    name: str,
    *,
    storage: str = "10Gi",
    storage_class: str = "",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    hostname: str | None = None,
    labels: Mapping[str, str] | None = None,
    claim: tuple[str, str] | None = None,
    phase: str = "Available",
    csi: tuple[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> PersistentVolume:
    """A PV; `hostname` pins it to that node (a local volume), `claim` (namespace,
    name) pre-binds it, `csi` is (driver, volume handle)."""
    full_spec: dict[str, Any] = {
        "capacity": {"storage": storage},
        "accessModes": list(access_modes),
        "storageClassName": storage_class,
    }
    if hostname is not None:
        full_spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": [hostname],
                            }
                        ]
                    }
                ]
            }
        }
    if claim is not None:
        full_spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    if csi is not None:
        full_spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    full_spec.update(spec or {})
    return msgspec.convert(
        {
            "metadata": {"name": name, "labels": dict(labels or {}), "resourceVersion": "1"},
            "spec": full_spec,
            "status": {"phase": phase},
        },
        PersistentVolume,
    )


def make_pvc(
    name: str,
    *,
    namespace: str = "default",
    storage: str | None = "5Gi",
    storage_class: str | None = None,
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    volume_name: str = "",
    bound: bool = False,
    annotations: Mapping[str, str] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> PersistentVolumeClaim:
    """A claim; `bound` marks the binding completed (with `volume_name`)."""
    full_spec: dict[str, Any] = {"accessModes": list(access_modes)}
    if storage is not None:
        full_spec["resources"] = {"requests": {"storage": storage}}
    if storage_class is not None:
        full_spec["storageClassName"] = storage_class
    if volume_name:
        full_spec["volumeName"] = volume_name
    full_spec.update(spec or {})
    notes = dict(annotations or {})
    if bound:
        notes["pv.kubernetes.io/bind-completed"] = "yes"
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"uid-{namespace}-{name}",
                "annotations": notes,
                "resourceVersion": "1",
            },
            "spec": full_spec,
            "status": {"phase": "Bound" if bound else "Pending"},
        },
        PersistentVolumeClaim,
    )


def make_storage_class(
    name: str,
    *,
    provisioner: str = "csi.example.com",
    mode: str | None = "WaitForFirstConsumer",
    allowed_zones: Iterable[str] | None = None,
) -> StorageClass:
    raw: dict[str, Any] = {"metadata": {"name": name}, "provisioner": provisioner}
    if mode is not None:
        raw["volumeBindingMode"] = mode
    if allowed_zones is not None:
        raw["allowedTopologies"] = [
            {
                "matchLabelExpressions": [
                    {"key": "topology.kubernetes.io/zone", "values": list(allowed_zones)}
                ]
            }
        ]
    return msgspec.convert(raw, StorageClass)


def make_csi_node(
    name: str, drivers: Mapping[str, int | None], topology_keys: Iterable[str] = ()
) -> CSINode:
    """A CSINode: driver name -> allocatable count (None: no limit reported)."""
    return msgspec.convert(
        {
            "metadata": {"name": name},
            "spec": {
                "drivers": [
                    {
                        "name": driver,
                        "nodeID": name,
                        "topologyKeys": list(topology_keys),
                        **({} if count is None else {"allocatable": {"count": count}}),
                    }
                    for driver, count in drivers.items()
                ]
            },
        },
        CSINode,
    )


def claim_volume(claim: str, name: str | None = None) -> dict[str, Any]:
    """A pod volume using a claim, for `make_pod(spec={"volumes": [...]})`."""
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}
