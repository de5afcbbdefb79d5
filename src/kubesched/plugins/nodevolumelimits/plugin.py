"""NodeVolumeLimits (CSILimits): a node's CSI drivers attach at most so many volumes.

A CSINode's `drivers[].allocatable.count` caps the unique volumes of that driver
on the node: those of the pods already there and of the VolumeAttachments to
the node, plus the pod's new ones (a volume the node already has counts once).
A claim's volume is its PV's CSI driver and volume handle; a claim not bound
yet counts under its StorageClass's provisioner (an in-tree provisioner that
is migrated to CSI under that CSI driver), with a handle unique to the claim.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kubesched.api.objects import CSINode, PersistentVolumeClaim, Pod
from kubesched.api.volumes import (
    claim_class,
    claim_of,
    not_found,
    volume_is_for_pod,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.signature import VOLUMES_SIGNER, SignFragment, SignPlugin, volumes_signer
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_pod

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle
    from kubesched.framework.state.storage import StorageState

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

# csi-translation-lib: in-tree provisioners and the CSI drivers they migrated to.
IN_TREE_TO_CSI = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
# isCSIMigrationOn: the plugins whose migration the limits count (with a CSINode).
CSI_MIGRATION_ON = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/portworx-volume",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/cinder",
    }
)


class ClaimNotFound(Exception):
    pass


class NodeVolumeLimitsError(Exception):
    pass


def volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """getVolumeLimits: driver -> allocatable count, for drivers that report one."""
    if csi_node is None:
        return {}
    return {
        d.name: d.allocatable.count
        for d in csi_node.spec.drivers
        if d.allocatable is not None and d.allocatable.count is not None
    }


class NodeVolumeLimits(SignPlugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = NAME
    uses_storage: ClassVar[bool] = True

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None):
        super().__init__(args, handle)
        # Handles of claims not bound yet: unique to the claim, unlike any real handle.
        self.random_volume_id_prefix = secrets.token_hex(16)
        self._limits_key: tuple[int, int] | None = None
        self._limits_cache: dict[str, dict[str, int]] = {}

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's volume sources."""
        return [(VOLUMES_SIGNER, volumes_signer(pod.pod))], Status.success()

    @property
    def storage(self) -> StorageState:
        return self.handle.storage

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        for volume in pod.pod.spec.volumes:
            if volume.persistent_volume_claim is not None or volume.ephemeral is not None:
                return None, Status.success()
        return None, Status.skip()

    # --- counting ------------------------------------------------------------------------

    def attachable_volumes(
        self, pod: Pod, csi_node: CSINode | None, new_pod: bool, into: dict[str, str]
    ) -> None:
        """filterAttachableVolumes: add "driver/handle" -> driver for the pod's volumes."""
        for volume in pod.spec.volumes:
            found = claim_of(pod, volume)
            if found is None:
                continue  # inline volumes: in-tree migration is not modelled
            name, ephemeral = found
            if not name:
                raise NodeVolumeLimitsError("PersistentVolumeClaim had no name")
            claim = self.storage.pvc(pod.metadata.namespace, name)
            if claim is None:
                if new_pod:
                    raise ClaimNotFound(
                        f"looking up PVC {pod.metadata.namespace}/{name}: "
                        + not_found("persistentvolumeclaim", name)
                    )
                continue
            if ephemeral:
                problem = volume_is_for_pod(pod, claim)
                if problem is not None:
                    raise NodeVolumeLimitsError(problem)
            driver, handle = self._driver_info(csi_node, claim)
            if driver and handle:
                into[f"{driver}/{handle}"] = driver

    def _driver_info(
        self, csi_node: CSINode | None, claim: PersistentVolumeClaim
    ) -> tuple[str, str]:
        """getCSIDriverInfo."""
        pv_name = claim.spec.volume_name
        if not pv_name:
            return self._driver_info_from_class(csi_node, claim)
        pv = self.storage.pv(pv_name)
        if pv is None:
            return self._driver_info_from_class(csi_node, claim)
        if pv.spec.csi is None:
            return "", ""  # in-tree PV sources are not modelled (never migratable here)
        return pv.spec.csi.driver, pv.spec.csi.volume_handle

    def _driver_info_from_class(
        self, csi_node: CSINode | None, claim: PersistentVolumeClaim
    ) -> tuple[str, str]:
        class_name = claim_class(claim)
        if not class_name:
            return "", ""
        sc = self.storage.storage_classes.get(class_name)
        if sc is None:
            return "", ""
        handle = f"{self.random_volume_id_prefix}-{claim.metadata.namespace}/{claim.metadata.name}"
        provisioner = sc.provisioner
        if provisioner in IN_TREE_TO_CSI:
            if csi_node is None or provisioner not in CSI_MIGRATION_ON:
                return "", ""
            return IN_TREE_TO_CSI[provisioner], handle
        return provisioner, handle

    # --- Filter --------------------------------------------------------------------------

    def _limits(self) -> dict[str, dict[str, int]]:
        """Node name -> its CSINode's limits, for the nodes that have any."""
        storage = self.storage
        key = (id(storage), storage.csi_node_version)
        if self._limits_key != key:
            self._limits_cache = {
                name: limits
                for name, csi_node in storage.csi_nodes.items()
                if (limits := volume_limits(csi_node))
            }
            self._limits_key = key
        return self._limits_cache

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # A pod without volumes passes every node, whatever is on it; otherwise the
        # verdict counts the volumes of the node's pods.
        return FilterScope.NODE if not pod.pod.spec.volumes else FilterScope.ROW

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        n = len(rows)
        if not pod.pod.spec.volumes:
            return NodeVerdicts.passing(n)
        storage = self.storage
        # The new pod's volumes. They depend on the node only through whether it has a
        # CSINode (in-tree provisioners count then); nodes without one have no limits.
        new_volumes: dict[str, str] = {}
        try:
            self.attachable_volumes(pod.pod, CSINode(), True, new_volumes)
        except ClaimNotFound as exc:
            # The claim is needed: never schedulable until it exists.
            return NodeVerdicts.failing(
                n, [(str(exc), np.ones(n, dtype=np.bool_))], Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            )
        limited = self._limits()
        if not new_volumes or not limited:
            return NodeVerdicts.passing(n)
        exceeded = np.zeros(n, dtype=np.bool_)
        position = np.full(nodes.capacity, -1, dtype=np.intp)
        position[rows] = np.arange(n)
        for name, limits in limited.items():
            row = nodes.row_of(name)
            if row is None or position[row] < 0:
                continue
            i = int(position[row])
            csi_node = storage.csi_nodes[name]
            if self._exceeds(nodes, row, name, csi_node, limits, new_volumes):
                exceeded[i] = True
        return NodeVerdicts.failing(n, [(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, exceeded)])

    def _exceeds(
        self,
        nodes: NodeTable,
        row: int,
        node_name: str,
        csi_node: CSINode,
        limits: dict[str, int],
        new_volumes: dict[str, str],
    ) -> bool:
        storage = self.storage
        attached: dict[str, str] = {}
        node_row = nodes.rows[row]
        assert node_row is not None
        for existing in node_row.volume_pods.values():
            self.attachable_volumes(existing.pod, csi_node, False, attached)
        attached_count: dict[str, int] = {}
        fresh = dict(new_volumes)
        for unique_name, driver in attached.items():
            fresh.pop(unique_name, None)  # a volume used by several pods counts once
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for attachment in storage.attachments_on(node_name):
            spec = attachment.spec
            if not spec.attacher or spec.source.persistent_volume_name is None:
                continue
            pv = storage.pv(spec.source.persistent_volume_name)
            if pv is None or pv.spec.csi is None:
                continue
            unique_name = f"{spec.attacher}/{pv.spec.csi.volume_handle}"
            if unique_name not in attached:
                attached_count[spec.attacher] = attached_count.get(spec.attacher, 0) + 1
        new_count: dict[str, int] = {}
        for driver in fresh.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return True
        return False

    # --- queueing ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, ActionType.UPDATE),
                self.is_schedulable_after_csi_node_updated,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_pvc_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_volume_attachment_deleted,
            ),
        ]

    def is_schedulable_after_pod_deleted(self, pod: PodInfo, old: object, new: object) -> bool:
        deleted = as_pod(old)
        if deleted is None:
            return True
        if not deleted.spec.volumes:
            return False
        if not deleted.spec.node_name and not deleted.status.nominated_node_name:
            return False
        return any(
            v.persistent_volume_claim is not None or v.ephemeral is not None
            for v in deleted.spec.volumes
        )

    def is_schedulable_after_pvc_added(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(new, PersistentVolumeClaim):
            return True
        if new.metadata.namespace != pod.namespace:
            return False
        for volume in pod.pod.spec.volumes:
            found = claim_of(pod.pod, volume)
            if found is not None and found[0] == new.metadata.name:
                return True
        return False

    def is_schedulable_after_volume_attachment_deleted(
        self, pod: PodInfo, old: object, new: object
    ) -> bool:
        return any(v.persistent_volume_claim is not None for v in pod.pod.spec.volumes)

    def is_schedulable_after_csi_node_updated(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(old, CSINode) or not isinstance(new, CSINode):
            return True
        before = {
            d.name: (d.allocatable.count or 0) if d.allocatable is not None else 0
            for d in old.spec.drivers
        }
        for driver in new.spec.drivers:
            limit = (driver.allocatable.count or 0) if driver.allocatable is not None else 0
            if limit > before.get(driver.name, 0):
                return True
        return False
