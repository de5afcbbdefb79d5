"""What the PV controller and the provisioners do, for a cluster that has neither.

`simulate` has no kube-controller-manager and no CSI external-provisioner, yet
users expect their claims to be bound as in a real cluster. This module does
their part, with the outcomes (not the timing) of the real controllers:

* `sync_volume_phases`: a PV without a status gets the phase the PV controller
  gives it (Available; Bound or Released when its claimRef names a claim);
* `sync_claims`: claims that do not wait for a consumer (Immediate binding, or
  no StorageClass) are bound to the smallest matching Available PV, or
  provisioned when their class has a provisioner; claims pre-bound with
  `spec.volumeName` are completed;
* `bind` and `provision`: after the scheduler's VolumeBinding PreBind wrote a
  PV's claimRef or a claim's selected-node annotation (through
  volume_writer.InMemoryVolumeWriter).

A provisioned PV gets the topology the CSI driver reports on the selected node
(the CSINode's topologyKeys, with the node's values) when it is known, and no
node affinity otherwise.
"""

from __future__ import annotations

import msgspec

from kubesched.api.labels import SelectorError
from kubesched.api.objects import (
    CSIPersistentVolumeSource,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeSpec,
    PersistentVolumeStatus,
    StorageClass,
    VolumeNodeAffinity,
)
from kubesched.api.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    CLAIM_BOUND,
    NOT_SUPPORTED_PROVISIONER,
    STORAGE,
    VOLUME_AVAILABLE,
    VOLUME_BOUND,
    VOLUME_RELEASED,
    WAIT_FOR_FIRST_CONSUMER,
    bind_volume_to_claim,
    claim_class,
    claim_reference,
    find_matching_volume_any_node,
    is_volume_bound_to_claim,
)
from kubesched.framework.state.storage import StorageState


def sync_volume_phases(state: StorageState) -> None:
    """syncVolume's phase for PVs that came without a status."""
    for pv in list(state.pvs.values()):
        if pv.status.phase:
            continue
        ref = pv.spec.claim_ref
        if ref is None or not ref.uid:
            phase = VOLUME_AVAILABLE
        else:
            claim = state.pvc(ref.namespace, ref.name)
            phase = (
                VOLUME_BOUND
                if claim is not None and claim.metadata.uid == ref.uid
                else VOLUME_RELEASED
            )
        state.upsert_pv(msgspec.structs.replace(pv, status=PersistentVolumeStatus(phase=phase)))


def _waits_for_consumer(state: StorageState, claim: PersistentVolumeClaim) -> bool:
    class_name = claim_class(claim)
    sc = state.storage_classes.get(class_name) if class_name else None
    return sc is not None and sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def sync_claims(state: StorageState) -> tuple[int, int, list[str]]:
    """The PV controller's first pass over unbound claims: (bound, provisioned, notes)."""
    bound = provisioned = 0
    notes: list[str] = []
    for key in list(state.pvcs):
        claim = state.pvcs[key]
        if claim.metadata.deletion_timestamp is not None:
            continue
        if claim.spec.volume_name:
            if ANN_BIND_COMPLETED in claim.metadata.annotations:
                continue
            pv = state.pv(claim.spec.volume_name)
            if pv is not None and (
                pv.spec.claim_ref is None or is_volume_bound_to_claim(pv, claim)
            ):
                bind(state, pv, claim, by_controller=False)
                bound += 1
            continue
        waits = _waits_for_consumer(state, claim)
        if waits and ANN_SELECTED_NODE in claim.metadata.annotations:
            continue  # the scheduler chose a node: the provisioner's turn (not simulated)
        class_name = claim_class(claim)
        try:
            pv = find_matching_volume_any_node(
                claim, state.pvs_of_class(class_name), set(), delay_binding=waits
            )
        except SelectorError as exc:
            notes.append(f"claim {key}: {exc}")
            continue
        if pv is not None:
            bind(state, pv, claim)
            bound += 1
            continue
        if waits:
            continue  # the scheduler picks the node first
        sc = state.storage_classes.get(class_name) if class_name else None
        if (
            sc is not None
            and sc.provisioner
            and sc.provisioner != NOT_SUPPORTED_PROVISIONER
            and claim.spec.selector is None  # provisioners refuse claims with a selector
        ):
            provision(state, claim, sc, None)
            provisioned += 1
    return bound, provisioned, notes


def bind(
    state: StorageState,
    pv: PersistentVolume,
    claim: PersistentVolumeClaim,
    *,
    by_controller: bool = True,
) -> tuple[PersistentVolume, PersistentVolumeClaim]:
    """bindVolumeToClaim + bindClaimToVolume: both sides Bound."""
    pv, _ = bind_volume_to_claim(pv, claim)
    pv = msgspec.structs.replace(pv, status=PersistentVolumeStatus(phase=VOLUME_BOUND))
    pv = state.write_pv(pv)
    annotations = {**claim.metadata.annotations, ANN_BIND_COMPLETED: "yes"}
    if by_controller:
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    claim = msgspec.structs.replace(
        claim,
        metadata=msgspec.structs.replace(claim.metadata, annotations=annotations),
        spec=msgspec.structs.replace(claim.spec, volume_name=pv.metadata.name),
        status=msgspec.structs.replace(claim.status, phase=CLAIM_BOUND),
    )
    claim = state.write_pvc(claim)
    return pv, claim


def _topology(
    state: StorageState, provisioner: str, node: Node | None
) -> VolumeNodeAffinity | None:
    if node is None:
        return None
    csi_node = state.csi_nodes.get(node.metadata.name)
    if csi_node is None:
        return None
    driver = next((d for d in csi_node.spec.drivers if d.name == provisioner), None)
    if driver is None:
        return None
    labels = node.metadata.labels
    expressions = [
        NodeSelectorRequirement(key=key, operator="In", values=[labels[key]])
        for key in driver.topology_keys
        if key in labels
    ]
    if not expressions:
        return None
    return VolumeNodeAffinity(
        required=NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=expressions)])
    )


def provision(
    state: StorageState, claim: PersistentVolumeClaim, sc: StorageClass, node: Node | None
) -> tuple[PersistentVolume, PersistentVolumeClaim]:
    """A provisioner's new PV for the claim (named pvc-<claim uid>), then the binding."""
    uid = claim.metadata.uid or f"{claim.metadata.namespace}-{claim.metadata.name}"
    name = f"pvc-{uid}"
    is_csi = sc.provisioner in state.csi_drivers or any(
        d.name == sc.provisioner for n in state.csi_nodes.values() for d in n.spec.drivers
    )
    request = claim.spec.resources.requests.get(STORAGE)
    pv = PersistentVolume(
        metadata=ObjectMeta(
            name=name,
            uid=name,
            annotations={ANN_DYNAMICALLY_PROVISIONED: sc.provisioner},
        ),
        spec=PersistentVolumeSpec(
            capacity={} if request is None else {STORAGE: request},
            access_modes=list(claim.spec.access_modes),
            claim_ref=claim_reference(claim),
            storage_class_name=sc.metadata.name,
            node_affinity=_topology(state, sc.provisioner, node),
            volume_mode=claim.spec.volume_mode,
            volume_attributes_class_name=claim.spec.volume_attributes_class_name,
            csi=CSIPersistentVolumeSource(driver=sc.provisioner, volume_handle=name)
            if is_csi
            else None,
        ),
        status=PersistentVolumeStatus(phase=VOLUME_BOUND),
    )
    pv = state.write_pv(pv)
    return bind(state, pv, claim)
