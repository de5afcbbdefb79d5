"""The volume plugins' view of a real cluster: storage informers and PreBind's writes.

Informers keep the scheduler's StorageState (PVs, PVCs, StorageClasses,
CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments) in line with the
API server; every change also reaches the scheduling queue as a cluster event.
NodeVolumeLimits counts the CSI volumes attached to a node from the
VolumeAttachments, as upstream's getNodeVolumeAttachmentInfo does.

VolumeBinding's PreBind writes the binding as upstream does, with merge patches
carrying the object's resourceVersion (so a concurrent change fails the write
as an update would) instead of whole-object updates, since kubesched decodes
only the fields it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from kubesched.api import kinds
from kubesched.api.kinds import Kind
from kubesched.api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from kubesched.api.volumes import ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE
from kubesched.framework.state.storage import StorageState
from kubesched.kube.client import KubeClient
from kubesched.kube.informer import Handlers, Informer


def storage_informers(client: KubeClient, storage: StorageState) -> list[Informer[Any]]:
    def informer(
        kind: Kind,
        struct: type[Any],
        upsert: Callable[[Any], None],
        delete: Callable[[Any], None],
    ) -> Informer[Any]:
        return Informer(
            client,
            kind.list_path,
            struct,
            Handlers(upsert, lambda _old, new: upsert(new), delete),
            name=kind.resource,
        )

    sources: Sequence[tuple[Kind, type[Any], Callable[[Any], None], Callable[[Any], None]]] = (
        (kinds.PERSISTENT_VOLUME, PersistentVolume, storage.upsert_pv, storage.delete_pv),
        (
            kinds.PERSISTENT_VOLUME_CLAIM,
            PersistentVolumeClaim,
            storage.upsert_pvc,
            storage.delete_pvc,
        ),
        (
            kinds.STORAGE_CLASS,
            StorageClass,
            storage.upsert_storage_class,
            storage.delete_storage_class,
        ),
        (kinds.CSI_NODE, CSINode, storage.upsert_csi_node, storage.delete_csi_node),
        (kinds.CSI_DRIVER, CSIDriver, storage.upsert_csi_driver, storage.delete_csi_driver),
        (
            kinds.CSI_STORAGE_CAPACITY,
            CSIStorageCapacity,
            storage.upsert_capacity,
            storage.delete_capacity,
        ),
        (
            kinds.VOLUME_ATTACHMENT,
            VolumeAttachment,
            storage.upsert_volume_attachment,
            storage.delete_volume_attachment,
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
