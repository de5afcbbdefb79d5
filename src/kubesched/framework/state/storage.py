"""StorageState: the volume objects the scheduler knows, as its informers' listers would.

PersistentVolumes, PersistentVolumeClaims, StorageClasses and the CSI objects
(CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments), kept by key
and fed by informers (`kubesched run`) or by the manifests (`simulate`).

On top of the stored objects sits the volume binder's assume cache: in
Reserve, VolumeBinding assumes that a PV is bound to a claim (claimRef set)
or that a claim will be provisioned on a node (selected-node annotation), so
the next pods see that before the API does. An assumed object hides the
stored one while both have the same resourceVersion; a newer stored version
(the informer saw the write, or someone else's) makes it expire, as upstream's
passive assume cache.

Every change is announced to subscribers as a ClusterEvent (the scheduler's
queue, which requeues the pods the change may help). VolumeBinding's PreBind
writes through `writer`: the API server in `kubesched run`
(kube.storage.KubeVolumeWriter), this state itself in `simulate`
(cluster.volume_writer.InMemoryVolumeWriter, which also plays the PV
controller and the provisioner).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol

import msgspec

from kubesched.api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    namespaced_name,
)
from kubesched.api.volumes import volume_class
from kubesched.framework.state.event_source import EventSource
from kubesched.framework.types import ActionType, Resource


class VolumeWriter(Protocol):
    """The API writes of VolumeBinding's PreBind (BindPodVolumes' updates), on the API
    server in `kubesched run`, on the in-memory cluster in `simulate`."""

    @property
    def settles_on_write(self) -> bool:
        """True when the PV controller's and the provisioner's part is done by the time a
        write returns: the stored objects are then final, and PreBind checks them once
        instead of polling for the controllers (see VolumeBinding's _wait_for_bindings)."""
        ...

    async def bind_volume(self, volume: PersistentVolume) -> PersistentVolume:
        """Write the volume's claimRef (and bound-by-controller annotation); the stored result."""
        ...

    async def select_node(
        self, claim: PersistentVolumeClaim, node_name: str
    ) -> PersistentVolumeClaim:
        """Write the claim's selected-node annotation; the stored result."""
        ...


class StorageState(EventSource):
    def __init__(self) -> None:
        super().__init__()
        self.pvs: dict[str, PersistentVolume] = {}
        self.pvcs: dict[str, PersistentVolumeClaim] = {}  # "namespace/name"
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}  # "namespace/name"
        self.volume_attachments: dict[str, VolumeAttachment] = {}
        # class name (GetPersistentVolumeClass) -> PV names, in the order they came
        self._pvs_by_class: dict[str, dict[str, None]] = {}
        # node name -> VolumeAttachment names
        self._attachments_by_node: dict[str, dict[str, None]] = {}
        self.assumed_pvs: dict[str, PersistentVolume] = {}
        self.assumed_pvcs: dict[str, PersistentVolumeClaim] = {}
        # Set by whoever owns the cluster (the runner, the simulator); None: PreBind
        # cannot bind volumes.
        self.writer: VolumeWriter | None = None
        self.csi_node_version = 0  # bumped when a CSINode changes
        self._next_version = 0

    def copy(self) -> StorageState:
        """A state of its own holding the same objects (which nobody mutates)."""
        other = StorageState()
        for pv in self.pvs.values():
            other.upsert_pv(pv)
        for pvc in self.pvcs.values():
            other.upsert_pvc(pvc)
        for sc in self.storage_classes.values():
            other.upsert_storage_class(sc)
        for csi_node in self.csi_nodes.values():
            other.upsert_csi_node(csi_node)
        for driver in self.csi_drivers.values():
            other.upsert_csi_driver(driver)
        for capacity in self.capacities.values():
            other.upsert_capacity(capacity)
        for attachment in self.volume_attachments.values():
            other.upsert_volume_attachment(attachment)
        other._next_version = self._next_version
        return other

    def is_empty(self) -> bool:
        return not (
            self.pvs
            or self.pvcs
            or self.storage_classes
            or self.csi_nodes
            or self.csi_drivers
            or self.capacities
            or self.volume_attachments
        )

    # --- PersistentVolumes ------------------------------------------------------------

    def upsert_pv(self, pv: PersistentVolume) -> None:
        name = pv.metadata.name
        old = self.pvs.get(name)
        if old is not None:
            old_class = volume_class(old)
            if old_class != volume_class(pv):
                self._pvs_by_class.get(old_class, {}).pop(name, None)
        self.pvs[name] = pv
        self._pvs_by_class.setdefault(volume_class(pv), {})[name] = None
        self._may_expire_pv(name)
        self._emit(
            Resource.PERSISTENT_VOLUME,
            ActionType.ADD if old is None else ActionType.UPDATE,
            old,
            pv,
        )

    def delete_pv(self, pv: PersistentVolume | str) -> None:
        name = pv if isinstance(pv, str) else pv.metadata.name
        old = self.pvs.pop(name, None)
        if old is None:
            return
        self._pvs_by_class.get(volume_class(old), {}).pop(name, None)
        self._may_expire_pv(name)
        self._emit(Resource.PERSISTENT_VOLUME, ActionType.DELETE, old, None)

    def pv(self, name: str) -> PersistentVolume | None:
        """The stored PV (the lister's view, GetAPIObj)."""
        return self.pvs.get(name)

    def assumed_pv(self, name: str) -> PersistentVolume | None:
        """The PV as the assume cache sees it (Get)."""
        stored = self.pvs.get(name)
        if stored is None:
            return None
        assumed = self.assumed_pvs.get(name)
        if (
            assumed is not None
            and assumed.metadata.resource_version == stored.metadata.resource_version
        ):
            return assumed
        return stored

    def pvs_of_class(self, class_name: str) -> list[PersistentVolume]:
        """ListPVs: the PVs of a class, assumed versions where they hold."""
        out: list[PersistentVolume] = []
        for name in self._pvs_by_class.get(class_name, {}):
            found = self.assumed_pv(name)
            if found is not None:
                out.append(found)
        return out

    def assume_pv(self, pv: PersistentVolume) -> str | None:
        """Assume; an error message when the stored PV is gone or of another version."""
        name = pv.metadata.name
        stored = self.pvs.get(name)
        if stored is None:
            return f'persistentvolumes "{name}" not found'
        if stored.metadata.resource_version != pv.metadata.resource_version:
            return (
                f'"{name}" is out of sync (stored: {stored.metadata.resource_version}, '
                f"assume: {pv.metadata.resource_version})"
            )
        self.assumed_pvs[name] = pv
        return None

    def restore_pv(self, pv: PersistentVolume) -> None:
        name = pv.metadata.name
        assumed = self.assumed_pvs.get(name)
        if (
            assumed is not None
            and assumed.metadata.resource_version == pv.metadata.resource_version
        ):
            del self.assumed_pvs[name]

    def _may_expire_pv(self, name: str) -> None:
        assumed = self.assumed_pvs.get(name)
        if assumed is None:
            return
        stored = self.pvs.get(name)
        if stored is None or stored.metadata.resource_version != assumed.metadata.resource_version:
            del self.assumed_pvs[name]

    # --- PersistentVolumeClaims -------------------------------------------------------

    def upsert_pvc(self, pvc: PersistentVolumeClaim) -> None:
        key = pvc.key
        old = self.pvcs.get(key)
        self.pvcs[key] = pvc
        self._may_expire_pvc(key)
        self._emit(
            Resource.PERSISTENT_VOLUME_CLAIM,
            ActionType.ADD if old is None else ActionType.UPDATE,
            old,
            pvc,
        )

    def delete_pvc(self, pvc: PersistentVolumeClaim) -> None:
        old = self.pvcs.pop(pvc.key, None)
        if old is None:
            return
        self._may_expire_pvc(pvc.key)
        self._emit(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.DELETE, old, None)

    def pvc(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        """The stored claim (the lister's view)."""
        return self.pvcs.get(namespaced_name(namespace, name))

    def assumed_pvc(self, key: str) -> PersistentVolumeClaim | None:
        stored = self.pvcs.get(key)
        if stored is None:
            return None
        assumed = self.assumed_pvcs.get(key)
        if (
            assumed is not None
            and assumed.metadata.resource_version == stored.metadata.resource_version
        ):
            return assumed
        return stored

    def assume_pvc(self, pvc: PersistentVolumeClaim) -> str | None:
        key = pvc.key
        stored = self.pvcs.get(key)
        if stored is None:
            return f'persistentvolumeclaims "{key}" not found'
        if stored.metadata.resource_version != pvc.metadata.resource_version:
            return (
                f'"{key}" is out of sync (stored: {stored.metadata.resource_version}, '
                f"assume: {pvc.metadata.resource_version})"
            )
        self.assumed_pvcs[key] = pvc
        return None

    def restore_pvc(self, pvc: PersistentVolumeClaim) -> None:
        key = pvc.key
        assumed = self.assumed_pvcs.get(key)
        if (
            assumed is not None
            and assumed.metadata.resource_version == pvc.metadata.resource_version
        ):
            del self.assumed_pvcs[key]

    def _may_expire_pvc(self, key: str) -> None:
        assumed = self.assumed_pvcs.get(key)
        if assumed is None:
            return
        stored = self.pvcs.get(key)
        if stored is None or stored.metadata.resource_version != assumed.metadata.resource_version:
            del self.assumed_pvcs[key]

    # --- StorageClasses and CSI objects -----------------------------------------------

    def upsert_storage_class(self, sc: StorageClass) -> None:
        old = self.storage_classes.get(sc.metadata.name)
        self.storage_classes[sc.metadata.name] = sc
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self._emit(Resource.STORAGE_CLASS, action, old, sc)

    def delete_storage_class(self, sc: StorageClass) -> None:
        old = self.storage_classes.pop(sc.metadata.name, None)
        if old is not None:
            self._emit(Resource.STORAGE_CLASS, ActionType.DELETE, old, None)

    def upsert_csi_node(self, csi_node: CSINode) -> None:
        old = self.csi_nodes.get(csi_node.metadata.name)
        self.csi_nodes[csi_node.metadata.name] = csi_node
        self.csi_node_version += 1
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self._emit(Resource.CSI_NODE, action, old, csi_node)

    def delete_csi_node(self, csi_node: CSINode) -> None:
        old = self.csi_nodes.pop(csi_node.metadata.name, None)
        self.csi_node_version += 1
        if old is not None:
            self._emit(Resource.CSI_NODE, ActionType.DELETE, old, None)

    def upsert_csi_driver(self, driver: CSIDriver) -> None:
        old = self.csi_drivers.get(driver.metadata.name)
        self.csi_drivers[driver.metadata.name] = driver
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self._emit(Resource.CSI_DRIVER, action, old, driver)

    def delete_csi_driver(self, driver: CSIDriver) -> None:
        old = self.csi_drivers.pop(driver.metadata.name, None)
        if old is not None:
            self._emit(Resource.CSI_DRIVER, ActionType.DELETE, old, None)

    def upsert_capacity(self, capacity: CSIStorageCapacity) -> None:
        key = capacity.metadata.key
        old = self.capacities.get(key)
        self.capacities[key] = capacity
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self._emit(Resource.CSI_STORAGE_CAPACITY, action, old, capacity)

    def delete_capacity(self, capacity: CSIStorageCapacity) -> None:
        key = capacity.metadata.key
        old = self.capacities.pop(key, None)
        if old is not None:
            self._emit(Resource.CSI_STORAGE_CAPACITY, ActionType.DELETE, old, None)

    def upsert_volume_attachment(self, attachment: VolumeAttachment) -> None:
        name = attachment.metadata.name
        old = self.volume_attachments.get(name)
        if old is not None:
            self._attachments_by_node.get(old.spec.node_name, {}).pop(name, None)
        self.volume_attachments[name] = attachment
        self._attachments_by_node.setdefault(attachment.spec.node_name, {})[name] = None
        action = ActionType.ADD if old is None else ActionType.UPDATE
        self._emit(Resource.VOLUME_ATTACHMENT, action, old, attachment)

    def delete_volume_attachment(self, attachment: VolumeAttachment) -> None:
        name = attachment.metadata.name
        old = self.volume_attachments.pop(name, None)
        if old is None:
            return
        self._attachments_by_node.get(old.spec.node_name, {}).pop(name, None)
        self._emit(Resource.VOLUME_ATTACHMENT, ActionType.DELETE, old, None)

    def attachments_on(self, node_name: str) -> Iterator[VolumeAttachment]:
        for name in self._attachments_by_node.get(node_name, {}):
            yield self.volume_attachments[name]

    # --- writes in memory (simulate) --------------------------------------------------

    def next_resource_version(self, *current: str) -> str:
        """A resourceVersion newer than every one seen, as the API server would give."""
        for version in current:
            with contextlib.suppress(ValueError):
                self._next_version = max(self._next_version, int(version or 0))
        self._next_version += 1
        return str(self._next_version)

    def write_pv(self, pv: PersistentVolume) -> PersistentVolume:
        """Store a PV as if the API server took the write: a new resourceVersion."""
        stored = self.pvs.get(pv.metadata.name)
        version = self.next_resource_version(
            pv.metadata.resource_version, stored.metadata.resource_version if stored else ""
        )
        written = msgspec.structs.replace(
            pv, metadata=msgspec.structs.replace(pv.metadata, resource_version=version)
        )
        self.upsert_pv(written)
        return written

    def write_pvc(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        stored = self.pvcs.get(pvc.key)
        version = self.next_resource_version(
            pvc.metadata.resource_version, stored.metadata.resource_version if stored else ""
        )
        written = msgspec.structs.replace(
            pvc, metadata=msgspec.structs.replace(pvc.metadata, resource_version=version)
        )
        self.upsert_pvc(written)
        return written
