"""PersistentVolumes and claims: the rules every volume plugin shares.

This is component-helpers' `storage/volume` and `storage/ephemeral` (and the few
helpers of `pkg/apis/core/v1/helper` the plugins use) on kubesched's structs:
which class a claim asks for, whether a volume is bound to a claim, whether a
volume can serve a claim, the annotations of the binding protocol between the
scheduler, the PV controller and provisioners.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from fractions import Fraction

import msgspec

from kubesched.api.labels import (
    label_selector_as_selector,
)
from kubesched.api.objects import (
    LabelSelector,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    Volume,
)
from kubesched.api.quantity import QuantityError, parse_quantity

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
IS_DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
IMMEDIATE = "Immediate"

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
FILESYSTEM = "Filesystem"

VOLUME_PENDING = "Pending"
VOLUME_AVAILABLE = "Available"
VOLUME_BOUND = "Bound"
VOLUME_RELEASED = "Released"
CLAIM_PENDING = "Pending"
CLAIM_BOUND = "Bound"
CLAIM_LOST = "Lost"

STORAGE = "storage"


def go_quote(text: str) -> str:
    """Go's %q for the names that appear in messages (JSON quoting matches it for these)."""
    return json.dumps(text, ensure_ascii=False)


def not_found(resource: str, name: str) -> str:
    """apierrors.NewNotFound(...).Error(): `persistentvolumeclaim "data" not found`."""
    return f"{resource} {go_quote(name)} not found"


# --- classes -----------------------------------------------------------------------------


def claim_class(claim: PersistentVolumeClaim) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation wins over spec.storageClassName."""
    annotations = claim.metadata.annotations
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return claim.spec.storage_class_name or ""


def claim_has_class(claim: PersistentVolumeClaim) -> bool:
    """PersistentVolumeClaimHasClass: the annotation or spec.storageClassName is set."""
    return (
        BETA_STORAGE_CLASS_ANNOTATION in claim.metadata.annotations
        or claim.spec.storage_class_name is not None
    )


def volume_class(volume: PersistentVolume) -> str:
    """GetPersistentVolumeClass."""
    annotations = volume.metadata.annotations
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return volume.spec.storage_class_name


# --- binding -----------------------------------------------------------------------------


def is_volume_bound_to_claim(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    ref = volume.spec.claim_ref
    if ref is None:
        return False
    if claim.metadata.name != ref.name or claim.metadata.namespace != ref.namespace:
        return False
    return not (ref.uid and claim.metadata.uid != ref.uid)


def is_claim_fully_bound(claim: PersistentVolumeClaim) -> bool:
    """isPVCFullyBound: volumeName set and the PV controller finished the binding."""
    return bool(claim.spec.volume_name) and ANN_BIND_COMPLETED in claim.metadata.annotations


def claim_reference(claim: PersistentVolumeClaim) -> ObjectReference:
    """reference.GetReference for a claim."""
    meta = claim.metadata
    return ObjectReference(
        kind="PersistentVolumeClaim",
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        api_version="v1",
        resource_version=meta.resource_version,
    )


def bind_volume_to_claim(
    volume: PersistentVolume, claim: PersistentVolumeClaim
) -> tuple[PersistentVolume, bool]:
    """GetBindVolumeToClaim: a copy of the volume whose claimRef names the claim, and
    whether anything changed (dirty)."""
    dirty = False
    should_set_bound_by_controller = not is_volume_bound_to_claim(volume, claim)
    spec = volume.spec
    ref = spec.claim_ref
    meta = claim.metadata
    if (
        ref is None
        or ref.name != meta.name
        or ref.namespace != meta.namespace
        or ref.uid != meta.uid
    ):
        spec = msgspec.structs.replace(spec, claim_ref=claim_reference(claim))
        dirty = True
    annotations = volume.metadata.annotations
    if should_set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations:
        annotations = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    clone = msgspec.structs.replace(
        volume,
        metadata=msgspec.structs.replace(volume.metadata, annotations=annotations),
        spec=spec,
    )
    return clone, dirty


# --- matching ----------------------------------------------------------------------------


def quantity(raw: str | int | float | None) -> Fraction:
    """A Quantity as an exact number; absent (or unparsable) is zero, as a zero Quantity."""
    if raw is None:
        return Fraction(0)
    try:
        return parse_quantity(raw)
    except QuantityError:
        return Fraction(0)


def storage_request(claim: PersistentVolumeClaim) -> Fraction:
    return quantity(claim.spec.resources.requests.get(STORAGE))


def volume_capacity(volume: PersistentVolume) -> Fraction:
    return quantity(volume.spec.capacity.get(STORAGE))


def volume_mode_mismatch(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    """CheckVolumeModeMismatches (an unset mode is Filesystem)."""
    return (claim.spec.volume_mode or FILESYSTEM) != (volume.spec.volume_mode or FILESYSTEM)


def access_modes_match(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    """CheckAccessModes: the volume offers every mode the claim asks for."""
    offered = set(volume.spec.access_modes)
    return all(mode in offered for mode in claim.spec.access_modes)


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Whether `labels` match the selector (an empty selector matches everything);
    raises SelectorError when the selector does not parse."""
    return label_selector_as_selector(selector).matches(labels)


def volume_can_serve(
    claim: PersistentVolumeClaim, volume: PersistentVolume, requested: Fraction
) -> bool:
    """FindMatchingVolume's first checks, those that do not depend on a node or on
    the claim's selector and class: claimRef, size, volume mode, attributes class,
    deletion."""
    if volume.spec.claim_ref is not None and not is_volume_bound_to_claim(volume, claim):
        return False
    if volume_capacity(volume) < requested:
        return False
    if volume_mode_mismatch(claim, volume):
        return False
    # VolumeAttributesClass is GA (locked on) in 1.36: the classes must be equal.
    if (claim.spec.volume_attributes_class_name or "") != (
        volume.spec.volume_attributes_class_name or ""
    ):
        return False
    return volume.metadata.deletion_timestamp is None


def find_matching_volume_any_node(
    claim: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume],
    excluded: set[str],
    delay_binding: bool = False,
) -> PersistentVolume | None:
    """FindMatchingVolume with no node, as the PV controller calls it: a claim that
    waits for its first consumer (`delay_binding`) only gets a PV pre-bound to it.
    Raises SelectorError."""
    requested = storage_request(claim)
    requested_class = claim_class(claim)
    selector = claim.spec.selector
    smallest: PersistentVolume | None = None
    smallest_size = Fraction(0)
    for volume in volumes:
        if volume.metadata.name in excluded or not volume_can_serve(claim, volume, requested):
            continue
        if is_volume_bound_to_claim(volume, claim):
            return volume
        if delay_binding:
            continue
        if volume.status.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector_matches(selector, volume.metadata.labels):
            continue
        if volume_class(volume) != requested_class:
            continue
        size = volume_capacity(volume)
        if smallest is None or smallest_size > size:
            smallest, smallest_size = volume, size
    return smallest


# --- pods --------------------------------------------------------------------------------


def ephemeral_claim_name(pod: Pod, volume: Volume) -> str:
    """ephemeral.VolumeClaimName: <pod>-<volume>."""
    return f"{pod.metadata.name}-{volume.name}"


def claim_of(pod: Pod, volume: Volume) -> tuple[str, bool] | None:
    """The claim a volume uses, and whether it is a generic ephemeral volume's."""
    if volume.persistent_volume_claim is not None:
        return volume.persistent_volume_claim.claim_name, False
    if volume.ephemeral is not None:
        return ephemeral_claim_name(pod, volume), True
    return None


def pod_uses_claims(pod: Pod) -> bool:
    return any(
        v.persistent_volume_claim is not None or v.ephemeral is not None for v in pod.spec.volumes
    )


def volume_is_for_pod(pod: Pod, claim: PersistentVolumeClaim) -> str | None:
    """ephemeral.VolumeIsForPod: why the claim is not the pod's own, or None."""
    controller = next((r for r in claim.metadata.owner_references if r.controller), None)
    owned = controller is not None and controller.uid == pod.metadata.uid
    if claim.metadata.namespace != pod.metadata.namespace or not owned:
        return (
            f"PVC {claim.metadata.namespace}/{claim.metadata.name} was not created for pod "
            f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
        )
    return None


def zones_of(label_value: str) -> set[str] | None:
    """volumehelpers.LabelZonesToSet: "a__b" -> {a, b}; None when a part is empty."""
    zones = set()
    for zone in label_value.split("__"):
        trimmed = zone.strip()
        if not trimmed:
            return None
        zones.add(trimmed)
    return zones


def compare_resource_versions(a: str, b: str) -> int:
    """storage.APIObjectVersioner.CompareResourceVersion: -1, 0 or 1 (unparsable is 0)."""
    try:
        x, y = int(a or 0), int(b or 0)
    except ValueError:
        return 0
    return (x > y) - (x < y)
