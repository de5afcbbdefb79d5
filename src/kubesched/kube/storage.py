"""The volume plugins' view of a real cluster: storage informers and PreBind's writes.

Informers keep the scheduler's StorageState (PVs, PVCs, StorageClasses,
CSINodes, CSIDrivers, CSIStorageCapacities) in line with the API server; every
change also reaches the scheduling queue as a cluster event. VolumeAttachments
are not watched (the deployed role cannot list them): NodeVolumeLimits counts
the volumes of the pods on a node only.

VolumeBinding's PreBind writes the binding as upstream does, with merge patches
carrying the object's resourceVersion (so a concurrent change fails the write
as an update would) instead of whole-object updates, since kubesched decodes
only the fields it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from kubesched.api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.api.volumes import ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE
from kubesched.framework.storage import StorageState
from kubesched.kube.client import KubeClient
from kubesched.kube.informer import Handlers, Informer


def storage_informers(client: KubeClient, storage: StorageState) -> list[Informer[Any]]:
    def informer(
        path: str,
        kind: type[Any],
        upsert: Callable[[Any], None],
        delete: Callable[[Any], None],
        name: str,
    ) -> Informer[Any]:
        return Informer(
            client,
            path,
            kind,
            Handlers(upsert, lambda _old, new: upsert(new), delete),
            name=name,
        )

    sources: Sequence[tuple[str, type[Any], Callable[[Any], None], Callable[[Any], None], str]] = (
        (
            "/api/v1/persistentvolumes",
            PersistentVolume,
            storage.upsert_pv,
            storage.delete_pv,
            "persistentvolumes",
        ),
        (
            "/api/v1/persistentvolumeclaims",
            PersistentVolumeClaim,
            storage.upsert_pvc,
            storage.delete_pvc,
            "persistentvolumeclaims",
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            StorageClass,
            storage.upsert_storage_class,
            storage.delete_storage_class,
            "storageclasses",
        ),
        (
            "/apis/storage.k8s.io/v1/csinodes",
            CSINode,
            storage.upsert_csi_node,
            storage.delete_csi_node,
            "csinodes",
        ),
        (
            "/apis/storage.k8s.io/v1/csidrivers",
            CSIDriver,
            storage.upsert_csi_driver,
            storage.delete_csi_driver,
            "csidrivers",
        ),
        (
            "/apis/storage.k8s.io/v1/csistoragecapacities",
            CSIStorageCapacity,
            storage.upsert_capacity,
            storage.delete_capacity,
            "csistoragecapacities",
        ),
    )
    return [informer(*source) for source in sources]


class KubeVolumeWriter:
    """StorageState's VolumeWriter on the API server."""

    # kube-controller-manager's PV controller and the external provisioners finish
    # the binding after the writes, asynchronously: PreBind polls for them.
    settles_on_write = False

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def bind_volume(self, volume: PersistentVolume) -> PersistentVolume:
        meta = volume.metadata
        ref = volume.spec.claim_ref
        patch: dict[str, Any] = {
            "metadata": {"resourceVersion": meta.resource_version},
            "spec": {"claimRef": msgspec.to_builtins(ref) if ref is not None else None},
        }
        if ANN_BOUND_BY_CONTROLLER in meta.annotations:
            patch["metadata"]["annotations"] = {
                ANN_BOUND_BY_CONTROLLER: meta.annotations[ANN_BOUND_BY_CONTROLLER]
            }
        raw = await self.client.patch(
            f"/api/v1/persistentvolumes/{meta.name}", patch, patch_type="merge-patch"
        )
        return msgspec.json.decode(raw, type=PersistentVolume)

    async def select_node(
        self, claim: PersistentVolumeClaim, node_name: str
    ) -> PersistentVolumeClaim:
        meta = claim.metadata
        patch = {
            "metadata": {
                "resourceVersion": meta.resource_version,
                "annotations": {ANN_SELECTED_NODE: node_name},
            }
        }
        raw = await self.client.patch(
            f"/api/v1/namespaces/{meta.namespace}/persistentvolumeclaims/{meta.name}",
            patch,
            patch_type="merge-patch",
        )
        return msgspec.json.decode(raw, type=PersistentVolumeClaim)
