"""The `workloads` feature's objects on the control plane: the RuntimeClasses
(cluster-scoped, named `<prefix>-<class>`, created once per scenario and shared by
both runs like the nodes), and each run's Services, ReplicationControllers,
ReplicaSets and StatefulSets, created in the run's namespace before its pods (which
name the controllers, with the uids the API server gave them, in their
ownerReferences) and deleted after them.

No replication, ReplicaSet or StatefulSet controller and no garbage collector runs
on the test control plane: nothing creates, adopts or deletes pods for these
controllers. They are deleted with `propagationPolicy: Background`, which puts no
finalizer on them (an `Orphan` one would wait for a garbage collector for ever)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from tests.differential import generator as gen
from tests.integration.conftest import AdminApi, ApiError

RUNTIME_CLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
KINDS = ("Service", *gen.CONTROLLER_KINDS)
_BACKGROUND = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}


def create_cluster_objects(
    api: AdminApi, scenario: Mapping[str, Any], prefix: str
) -> list[dict[str, Any]]:
    """The scenario's RuntimeClasses as the API server stored them."""
    created: list[dict[str, Any]] = []
    try:
        for manifest in gen.runtime_class_manifests(scenario.get("workloads"), prefix):
            created.append(api.post(RUNTIME_CLASSES, manifest))
    except BaseException:
        delete_cluster_objects(api, created)
        raise
    return created


def delete_cluster_objects(api: AdminApi, created: Sequence[Mapping[str, Any]]) -> None:
    for obj in reversed(created):
        with contextlib.suppress(ApiError, httpx.HTTPError):
            api.request("DELETE", f"{RUNTIME_CLASSES}/{obj['metadata']['name']}", ok=(404,))


def create_namespace_objects(
    api: AdminApi, scenario: Mapping[str, Any], ns: str
) -> list[dict[str, Any]]:
    """The run's Services and controllers (in NS), as the API server stored them."""
    created: list[dict[str, Any]] = []
    for manifest in gen.workload_manifests(scenario.get("workloads"), ns):
        created.append(api.post(api.resource_path(manifest), manifest))
    return created


def delete_namespace_objects(api: AdminApi, objects: Sequence[Mapping[str, Any]]) -> None:
    """Delete the run's Services and controllers among OBJECTS (after its pods)."""
    for obj in reversed(objects):
        if obj.get("kind") not in KINDS:
            continue
        path = f"{api.resource_path(obj)}/{obj['metadata']['name']}"
        with contextlib.suppress(ApiError, httpx.HTTPError):
            api.request("DELETE", path, _BACKGROUND, ok=(404,))


def owner_uids(objects: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """(kind, name) -> uid of the controllers among OBJECTS (for the pods' ownerReferences)."""
    return {
        (o["kind"], o["metadata"]["name"]): o["metadata"]["uid"]
        for o in objects
        if o.get("kind") in gen.CONTROLLER_KINDS
    }
