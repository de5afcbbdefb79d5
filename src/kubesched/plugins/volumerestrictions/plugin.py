"""VolumeRestrictions: volumes that cannot be shared.

* In-tree disks (GCE PD, AWS EBS, iSCSI, Ceph RBD) mounted by a pod already on
  the node: the same GCE PD is fine if every mount is read-only, the same EBS
  volume never, the same iSCSI IQN or RBD image (overlapping monitors, same pool)
  only read-only everywhere. "node(s) had no available disk".
* Claims with the ReadWriteOncePod access mode that some scheduled pod already
  uses, on any node: every node fails (Unschedulable: preemption of that pod may
  help, which AddPod/RemovePod account for).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from kubesched.api.objects import PersistentVolumeClaim, Pod, Volume
from kubesched.api.volumes import READ_WRITE_ONCE_POD, not_found
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.signature import VOLUMES_SIGNER, SignFragment, SignPlugin, volumes_signer
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_pod

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)


@dataclass(slots=True)
class _State:
    # names of the pod's claims with the ReadWriteOncePod access mode
    read_write_once_pod_claims: frozenset[str]
    # references to those claims by scheduled pods
    conflicting_refs: int

    def clone(self) -> _State:
        return _State(self.read_write_once_pod_claims, self.conflicting_refs)

    def refs_of(self, pod: Pod) -> int:
        return sum(
            1
            for v in pod.spec.volumes
            if v.persistent_volume_claim is not None
            and v.persistent_volume_claim.claim_name in self.read_write_once_pod_claims
        )


def _overlap(a: list[str], b: list[str]) -> bool:
    return not set(a).isdisjoint(b)


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """isVolumeConflict: `volume` cannot be mounted next to `pod`'s volumes."""
    for existing in pod.spec.volumes:
        gce, other_gce = volume.gce_persistent_disk, existing.gce_persistent_disk
        if (
            gce is not None
            and other_gce is not None
            and gce.pd_name == other_gce.pd_name
            and not (gce.read_only and other_gce.read_only)
        ):
            return True
        ebs, other_ebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
        if ebs is not None and other_ebs is not None and ebs.volume_id == other_ebs.volume_id:
            return True
        iscsi, other_iscsi = volume.iscsi, existing.iscsi
        if (
            iscsi is not None
            and other_iscsi is not None
            and iscsi.iqn == other_iscsi.iqn
            and not (iscsi.read_only and other_iscsi.read_only)
        ):
            return True
        rbd, other_rbd = volume.rbd, existing.rbd
        if (
            rbd is not None
            and other_rbd is not None
            and _overlap(rbd.monitors, other_rbd.monitors)
            and rbd.pool == other_rbd.pool
            and rbd.image == other_rbd.image
            and not (rbd.read_only and other_rbd.read_only)
        ):
            return True
    return False


def needs_restrictions_check(volume: Volume) -> bool:
    return (
        volume.gce_persistent_disk is not None
        or volume.aws_elastic_block_store is not None
        or volume.rbd is not None
        or volume.iscsi is not None
    )


def satisfies_volume_conflicts(pod: Pod, others: list[Pod]) -> bool:
    for volume in pod.spec.volumes:
        if not needs_restrictions_check(volume):
            continue
        if any(is_volume_conflict(volume, other) for other in others):
            return False
    return True


class VolumeRestrictions(
    SignPlugin, PreFilterPlugin, PreFilterExtensions, FilterPlugin, EnqueueExtensions
):
    name = NAME
    uses_storage: ClassVar[bool] = True

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's volume sources."""
        return [(VOLUMES_SIGNER, volumes_signer(pod.pod))], Status.success()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        volumes = pod.pod.spec.volumes
        if not volumes:
            return None, Status.skip()
        needs_check = any(needs_restrictions_check(v) for v in volumes)
        storage = self.handle.storage
        claims: set[str] = set()
        for volume in volumes:
            if volume.persistent_volume_claim is None:
                continue
            name = volume.persistent_volume_claim.claim_name
            claim = storage.pvc(pod.namespace, name)
            if claim is None:
                return None, Status.unresolvable(
                    not_found("persistentvolumeclaim", name), plugin=self.name
                )
            if READ_WRITE_ONCE_POD in claim.spec.access_modes:
                claims.add(claim.metadata.name)
        # IsPVCUsedByPods: a scheduled (or assumed) pod anywhere uses the claim.
        refs = sum(1 for name in claims if f"{pod.namespace}/{name}" in nodes.pvc_refs)
        if not needs_check and refs == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _State(frozenset(claims), refs))
        return None, Status.success()

    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, nodes: NodeTable, row: int
    ) -> Status:
        found = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(found, _State):
            return Status.as_error(f"cannot read {PRE_FILTER_STATE_KEY!r} from cycleState")
        found.conflicting_refs += found.refs_of(to_add.pod)
        return Status()

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, nodes: NodeTable, row: int
    ) -> Status:
        found = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(found, _State):
            return Status.as_error(f"cannot read {PRE_FILTER_STATE_KEY!r} from cycleState")
        found.conflicting_refs -= found.refs_of(to_remove.pod)
        return Status()

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        n = len(rows)
        disk_conflict = np.zeros(n, dtype=np.bool_)
        if any(needs_restrictions_check(v) for v in pod.pod.spec.volumes):
            for i, row in enumerate(rows):
                node_row = nodes.rows[int(row)]
                assert node_row is not None
                others = [p.pod for p in node_row.volume_pods.values()]
                if others and not satisfies_volume_conflicts(pod.pod, others):
                    disk_conflict[i] = True
        verdicts = NodeVerdicts.failing(n, [(ERR_REASON_DISK_CONFLICT, disk_conflict)])
        found = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(found, _State):
            raise RuntimeError(f"cannot read {PRE_FILTER_STATE_KEY!r} from cycleState")
        if found.conflicting_refs > 0:
            verdicts.add(
                ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, ~disk_conflict, Code.UNSCHEDULABLE
            )
        return verdicts

    # --- queueing ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            # Queueing hints are on: only Node/Add.
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_pvc_added,
            ),
        ]

    def is_schedulable_after_pvc_added(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(new, PersistentVolumeClaim):
            return True
        if new.metadata.namespace != pod.namespace:
            return False
        return any(
            v.persistent_volume_claim is not None
            and v.persistent_volume_claim.claim_name == new.metadata.name
            for v in pod.pod.spec.volumes
        )

    def is_schedulable_after_pod_deleted(self, pod: PodInfo, old: object, new: object) -> bool:
        deleted = as_pod(old)
        if deleted is None:
            return True
        if deleted.metadata.namespace != pod.namespace:
            return False
        if not satisfies_volume_conflicts(pod.pod, [deleted]):
            return True
        claims = {
            v.persistent_volume_claim.claim_name
            for v in pod.pod.spec.volumes
            if v.persistent_volume_claim is not None
        }
        return any(
            v.persistent_volume_claim is not None and v.persistent_volume_claim.claim_name in claims
            for v in deleted.spec.volumes
        )
