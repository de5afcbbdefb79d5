"""VolumeZone: the zone and region labels of a pod's bound PersistentVolumes must
match the node's.

PreFilter reads the topology labels (failure-domain.beta.kubernetes.io/zone and
/region, topology.kubernetes.io/zone and /region) of the PVs the pod's claims
are bound to; a value may list several zones separated by "__". Filter
rejects nodes whose label (or, for a beta key, the GA equivalent) is missing or
not among the values, unless the node carries none of the four labels at all
(a single-zone cluster). Claims not yet bound are skipped when their class
waits for the first consumer, and rejected otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from kubesched.api.objects import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass
from kubesched.api.volumes import (
    WAIT_FOR_FIRST_CONSUMER,
    claim_class,
    go_quote,
    not_found,
    zones_of,
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
from kubesched.framework.state.node_table import BoolArray, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
GA_ZONE = "topology.kubernetes.io/zone"
GA_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, GA_ZONE, GA_REGION)


def translate_to_ga_label(label: str) -> str:
    if label == BETA_REGION:
        return GA_REGION
    if label == BETA_ZONE:
        return GA_ZONE
    return label


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class _State:
    topologies: tuple[PVTopology, ...]


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """getPVTopologies: a label whose value does not parse is ignored."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        zones = zones_of(value)
        if zones is None:
            continue
        out.append(PVTopology(pv.metadata.name, key, frozenset(zones)))
    return out


def pvc_names(pod: Pod) -> list[str]:
    return [
        v.persistent_volume_claim.claim_name
        for v in pod.spec.volumes
        if v.persistent_volume_claim is not None
    ]


class VolumeZone(SignPlugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = NAME
    uses_storage: ClassVar[bool] = True

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's volume sources."""
        return [(VOLUMES_SIGNER, volumes_signer(pod.pod))], Status.success()

    def _topologies(self, pod: Pod) -> tuple[list[PVTopology], Status]:
        """getPVbyPod."""
        storage = self.handle.storage
        topologies: list[PVTopology] = []
        for claim_name in pvc_names(pod):
            if not claim_name:
                return [], Status.unresolvable("PersistentVolumeClaim had no name", plugin=NAME)
            claim = storage.pvc(pod.metadata.namespace, claim_name)
            if claim is None:
                return [], Status.unresolvable(
                    not_found("persistentvolumeclaim", claim_name), plugin=NAME
                )
            pv_name = claim.spec.volume_name
            if not pv_name:
                class_name = claim_class(claim)
                if not class_name:
                    return [], Status.unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name", plugin=NAME
                    )
                sc = storage.storage_classes.get(class_name)
                if sc is None:
                    return [], Status.unresolvable(
                        not_found("storageclass.storage.k8s.io", class_name), plugin=NAME
                    )
                if sc.volume_binding_mode is None:
                    return [], Status.unresolvable(
                        f"VolumeBindingMode not set for StorageClass {go_quote(class_name)}",
                        plugin=NAME,
                    )
                if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                    continue  # not bound yet: VolumeBinding takes care of it
                return [], Status.unresolvable("PersistentVolume had no name", plugin=NAME)
            pv = storage.pv(pv_name)
            if pv is None:
                return [], Status.unresolvable(not_found("persistentvolume", pv_name), plugin=NAME)
            topologies.extend(pv_topologies(pv))
        return topologies, Status()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.pod.spec.volumes:
            return None, Status.skip()
        topologies, status = self._topologies(pod.pod)
        if not status.is_success():
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _State(tuple(topologies)))
        return None, Status.success()

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's labels, against the pod's PVs.
        return FilterScope.NODE

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        if not pod.pod.spec.volumes:
            return NodeVerdicts.passing(len(rows))
        found = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(found, _State):
            topologies: list[PVTopology] | tuple[PVTopology, ...] = found.topologies
        else:
            topologies, status = self._topologies(pod.pod)
            if not status.is_success():
                verdicts = NodeVerdicts.passing(len(rows))
                everywhere = np.ones(len(rows), dtype=np.bool_)
                for reason in status.reasons:
                    verdicts.add(reason, everywhere, status.code)
                return verdicts
        constrained = np.zeros(len(rows), dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            column = nodes.label(key)
            if column is not None:
                constrained |= column.codes[rows] >= 0
        conflict = np.zeros(len(rows), dtype=np.bool_)
        for topology in topologies:
            conflict |= ~_matches(nodes, rows, topology)
        return NodeVerdicts.failing(
            len(rows),
            [(ERR_REASON_CONFLICT, constrained & conflict)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        )

    # --- queueing ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_or_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, ActionType.ADD),
                self.is_schedulable_after_storage_class_added,
            ),
            # Queueing hints are on: no UpdateNodeTaint.
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, add_or_update),
                self.is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME, add_or_update),
                self.is_schedulable_after_pv_change,
            ),
        ]

    def is_schedulable_after_pvc_change(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(new, PersistentVolumeClaim):
            return True
        if pod.namespace != new.metadata.namespace:
            return False
        return new.metadata.name in pvc_names(pod.pod)

    def is_schedulable_after_storage_class_added(
        self, pod: PodInfo, old: object, new: object
    ) -> bool:
        if not isinstance(new, StorageClass):
            return True
        return new.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER

    def is_schedulable_after_pv_change(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(new, PersistentVolume):
            return True
        if old is None:
            return True
        if not isinstance(old, PersistentVolume):
            return True
        return pv_topologies(old) != pv_topologies(new)


def _matches(nodes: NodeTable, rows: Rows, topology: PVTopology) -> BoolArray:
    """Nodes whose label for the PV's key (or its GA name) is one of the PV's values."""
    n = len(rows)
    column = nodes.label(topology.key)
    codes = np.full(n, -1, dtype=np.int32) if column is None else column.codes[rows]
    matched = np.zeros(n, dtype=np.bool_)
    if column is not None:
        wanted = column.codes_for(topology.values)
        if len(wanted):
            matched = np.isin(codes, wanted)
    ga_key = translate_to_ga_label(topology.key)
    if ga_key != topology.key:
        missing = codes < 0
        ga_column = nodes.label(ga_key)
        if ga_column is not None and missing.any():
            ga_wanted = ga_column.codes_for(topology.values)
            if len(ga_wanted):
                matched |= missing & np.isin(ga_column.codes[rows], ga_wanted)
    return matched
