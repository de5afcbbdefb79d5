"""A live cluster's state, read once for `simulate --from-cluster` (read-only)."""

from __future__ import annotations

import json
from typing import Any

from kubesched.kube.client import KubeClient
from kubesched.kube.config import load_connection

# What the simulator needs, as (list path, kind, apiVersion) for each item.
_SOURCES: tuple[tuple[str, str, str, dict[str, str]], ...] = (
    ("/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass", "scheduling.k8s.io/v1", {}),
    ("/api/v1/namespaces", "Namespace", "v1", {}),
    ("/api/v1/nodes", "Node", "v1", {}),
    ("/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", {}),
    # The volume plugins' objects.
    ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass", "storage.k8s.io/v1", {}),
    ("/api/v1/persistentvolumes", "PersistentVolume", "v1", {}),
    ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim", "v1", {}),
    ("/apis/storage.k8s.io/v1/csinodes", "CSINode", "storage.k8s.io/v1", {}),
    ("/apis/storage.k8s.io/v1/csidrivers", "CSIDriver", "storage.k8s.io/v1", {}),
    (
        "/apis/storage.k8s.io/v1/csistoragecapacities",
        "CSIStorageCapacity",
        "storage.k8s.io/v1",
        {},
    ),
    ("/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment", "storage.k8s.io/v1", {}),
    # The DynamicResources plugin's objects; the templates too, from which the
    # simulation makes the claims of pods the resourceclaim controller has not served.
    ("/apis/resource.k8s.io/v1/deviceclasses", "DeviceClass", "resource.k8s.io/v1", {}),
    ("/apis/resource.k8s.io/v1/resourceslices", "ResourceSlice", "resource.k8s.io/v1", {}),
    (
        "/apis/resource.k8s.io/v1/resourceclaimtemplates",
        "ResourceClaimTemplate",
        "resource.k8s.io/v1",
        {},
    ),
    ("/apis/resource.k8s.io/v1/resourceclaims", "ResourceClaim", "resource.k8s.io/v1", {}),
    (
        "/api/v1/pods",
        "Pod",
        "v1",
        {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"},
    ),
)


async def read_cluster(
    kubeconfig: str | None, context: str | None
) -> list[tuple[str, int, object]]:
    """The cluster's objects as documents for the manifest loader, with GETs only."""
    connection = await load_connection(kubeconfig, context)
    client = KubeClient(connection)
    try:
        items: list[Any] = []
        for path, kind, api_version, params in _SOURCES:
            listed = await client.list(path, params)
            for raw in listed.items:
                obj = json.loads(bytes(raw))
                obj.setdefault("kind", kind)
                obj.setdefault("apiVersion", api_version)
                items.append(obj)
    finally:
        await client.aclose()
    return [(f"cluster {connection.host}", 1, {"apiVersion": "v1", "kind": "List", "items": items})]
