"""The storage objects of the manifests, and what the apiserver and controllers make of them.

Kinds read: PersistentVolume, PersistentVolumeClaim, StorageClass (Immediate
binding when not given, as the apiserver defaults it), CSINode, CSIDriver,
CSIStorageCapacity, VolumeAttachment. After reading, as a cluster would:

- the StatefulSet controller creates the claims of each replica from the
  volumeClaimTemplates (`<template>-<set>-<ordinal>`) unless the input has them;
- the ephemeral volume controller creates each pod's generic ephemeral volume
  claim (`<pod>-<volume>`, owned by the pod) unless the input has it;
- the DefaultStorageClass admission (and the PV controller's retroactive
  assignment) gives unbound claims without a class the default class;
- the PV controller sets PV phases, binds claims that do not wait for a
  consumer to matching PVs or has them provisioned (see volume_controller).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    ObjectMeta,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimStatus,
    Pod,
    StorageClass,
    VolumeAttachment,
)
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.volumes import (
    BETA_IS_DEFAULT_CLASS_ANNOTATION,
    BETA_STORAGE_CLASS_ANNOTATION,
    CLAIM_BOUND,
    CLAIM_PENDING,
    IMMEDIATE,
    IS_DEFAULT_CLASS_ANNOTATION,
    WAIT_FOR_FIRST_CONSUMER,
    ephemeral_claim_name,
)
from kubesched.api.workloads import PersistentVolumeClaimTemplate
from kubesched.cluster.generated_names import _uid
from kubesched.cluster.load_problems import duplicate_problem
from kubesched.cluster.volume_controller import sync_claims, sync_volume_phases
from kubesched.framework.state.storage import StorageState

StorageObject = (
    PersistentVolume
    | PersistentVolumeClaim
    | StorageClass
    | CSINode
    | CSIDriver
    | CSIStorageCapacity
    | VolumeAttachment
)

# kind -> (struct, namespaced)
STORAGE_KINDS: Mapping[str, tuple[type[Any], bool]] = {
    "PersistentVolume": (PersistentVolume, False),
    "PersistentVolumeClaim": (PersistentVolumeClaim, True),
    "StorageClass": (StorageClass, False),
    "CSINode": (CSINode, False),
    "CSIDriver": (CSIDriver, False),
    "CSIStorageCapacity": (CSIStorageCapacity, True),
    "VolumeAttachment": (VolumeAttachment, False),
}
STORAGE_GROUPS: Mapping[str, tuple[str, ...]] = {
    kind: ("",) if kind.startswith("Persistent") else ("storage.k8s.io",) for kind in STORAGE_KINDS
}
CLUSTER_SCOPED_STORAGE = frozenset(
    k for k, (_, namespaced) in STORAGE_KINDS.items() if not namespaced
)


def _check_quantity(raw: object, path: str) -> tuple[str, str] | None:
    if raw is None:
        return None
    try:
        amount = parse_quantity(raw)  # type: ignore[arg-type]
    except QuantityError as exc:
        return path, str(exc)
    if amount < 0:
        return path, f"must be greater than or equal to 0, got {raw!r}"
    return None


def _check_quantities(resources: Mapping[str, object], path: str) -> tuple[str, str] | None:
    for name, raw in resources.items():
        problem = _check_quantity(raw, f"{path}.{name}")
        if problem is not None:
            return problem
    return None


def check(obj: StorageObject) -> tuple[str | None, str] | None:
    """What the apiserver's validation (and defaulting) says: a (field, message) problem."""
    if isinstance(obj, PersistentVolumeClaim):
        return _check_quantities(obj.spec.resources.requests, "spec.resources.requests")
    if isinstance(obj, PersistentVolume):
        return _check_quantities(obj.spec.capacity, "spec.capacity")
    if isinstance(obj, StorageClass):
        if not obj.provisioner:
            return "provisioner", "Required value"
        if obj.volume_binding_mode is None:
            obj.volume_binding_mode = IMMEDIATE  # SetDefaults_StorageClass
        if obj.volume_binding_mode not in (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER):
            return (
                "volumeBindingMode",
                f'Unsupported value: "{obj.volume_binding_mode}": supported values: '
                f'"Immediate", "WaitForFirstConsumer"',
            )
        return None
    if isinstance(obj, CSIStorageCapacity):
        return _check_quantity(obj.capacity, "capacity") or _check_quantity(
            obj.maximum_volume_size, "maximumVolumeSize"
        )
    return None


@dataclass
class StorageObjects:
    """The storage objects read, by kind and key, with where they came from."""

    by_kind: dict[str, dict[str, tuple[StorageObject, str]]] = field(default_factory=dict)

    def add(self, kind: str, obj: StorageObject, origin: str) -> tuple[str | None, str] | None:
        meta = obj.metadata
        namespaced = STORAGE_KINDS[kind][1]
        if namespaced and not meta.namespace:
            meta.namespace = "default"
        if not meta.name:
            return "metadata.name", "name is required"
        problem = check(obj)
        if problem is not None:
            return problem
        key = meta.key if namespaced else meta.name
        objects = self.by_kind.setdefault(kind, {})
        if key in objects:
            return duplicate_problem(kind, key, objects[key][1])
        if not meta.uid:
            meta.uid = _uid(kind, meta.namespace, meta.name)
        objects[key] = (obj, origin)
        return None

    def of(self, kind: str) -> list[Any]:
        return [obj for obj, _ in self.by_kind.get(kind, {}).values()]


@dataclass(frozen=True, slots=True)
class StatefulSetClaim:
    """A claim the StatefulSet controller creates for one replica."""

    namespace: str
    name: str
    template: PersistentVolumeClaimTemplate
    selector_labels: Mapping[str, str]


def _default_class(classes: Sequence[StorageClass]) -> str | None:
    """GetDefaultClass: the newest class marked default (then the first by name)."""
    defaults = [
        sc
        for sc in classes
        if sc.metadata.annotations.get(IS_DEFAULT_CLASS_ANNOTATION) == "true"
        or sc.metadata.annotations.get(BETA_IS_DEFAULT_CLASS_ANNOTATION) == "true"
    ]
    if not defaults:
        return None
    defaults.sort(key=lambda sc: sc.metadata.name)
    defaults.sort(key=lambda sc: sc.metadata.creation_timestamp or "", reverse=True)
    return defaults[0].metadata.name


def _with_default_class(claim: PersistentVolumeClaim, default: str | None) -> PersistentVolumeClaim:
    if (
        default is None
        or claim.spec.storage_class_name is not None
        or BETA_STORAGE_CLASS_ANNOTATION in claim.metadata.annotations
        or claim.spec.volume_name
    ):
        return claim
    return msgspec.structs.replace(
        claim, spec=msgspec.structs.replace(claim.spec, storage_class_name=default)
    )


def _new_claim(
    namespace: str,
    name: str,
    meta: ObjectMeta,
    spec: PersistentVolumeClaimSpec,
    labels: Mapping[str, str],
    owner: OwnerReference | None,
    created: str | None,
) -> PersistentVolumeClaim:
    return PersistentVolumeClaim(
        metadata=ObjectMeta(
            name=name,
            namespace=namespace,
            uid=_uid("PersistentVolumeClaim", namespace, name),
            labels=dict(labels),
            annotations=dict(meta.annotations),
            owner_references=[] if owner is None else [owner],
            creation_timestamp=created,
        ),
        spec=msgspec.structs.replace(spec),
        status=PersistentVolumeClaimStatus(phase=CLAIM_PENDING),
    )


def build_storage(
    objects: StorageObjects,
    pods: Sequence[Pod],
    stateful_set_claims: Sequence[StatefulSetClaim],
    note: Callable[[str], None],
) -> StorageState:
    state = StorageState()
    for sc in objects.of("StorageClass"):
        state.upsert_storage_class(sc)
    for csi_node in objects.of("CSINode"):
        state.upsert_csi_node(csi_node)
    for driver in objects.of("CSIDriver"):
        state.upsert_csi_driver(driver)
    for capacity in objects.of("CSIStorageCapacity"):
        state.upsert_capacity(capacity)
    for attachment in objects.of("VolumeAttachment"):
        state.upsert_volume_attachment(attachment)
    for pv in objects.of("PersistentVolume"):
        state.upsert_pv(pv)

    default = _default_class(list(state.storage_classes.values()))
    for claim in objects.of("PersistentVolumeClaim"):
        state.upsert_pvc(_with_default_class(claim, default))

    created = 0
    for wanted in stateful_set_claims:
        if state.pvc(wanted.namespace, wanted.name) is not None:
            continue
        template = wanted.template
        labels = {**template.metadata.labels, **wanted.selector_labels}
        claim = _new_claim(
            wanted.namespace, wanted.name, template.metadata, template.spec, labels, None, None
        )
        state.upsert_pvc(_with_default_class(claim, default))
        created += 1
    if created:
        note(f"{created} PersistentVolumeClaims created from StatefulSet volumeClaimTemplates")

    created = 0
    for pod in pods:
        for volume in pod.spec.volumes:
            source = volume.ephemeral
            if source is None or source.volume_claim_template is None:
                continue
            name = ephemeral_claim_name(pod, volume)
            if state.pvc(pod.metadata.namespace, name) is not None:
                continue
            claim_template = source.volume_claim_template
            owner = OwnerReference(
                api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid
            )
            owner.controller = True
            claim = _new_claim(
                pod.metadata.namespace,
                name,
                claim_template.metadata,
                claim_template.spec,
                claim_template.metadata.labels,
                owner,
                pod.metadata.creation_timestamp,
            )
            state.upsert_pvc(_with_default_class(claim, default))
            created += 1
    if created:
        note(f"{created} PersistentVolumeClaims created for generic ephemeral volumes")

    sync_volume_phases(state)
    for key, claim in list(state.pvcs.items()):
        if not claim.status.phase:
            phase = CLAIM_BOUND if claim.spec.volume_name else CLAIM_PENDING
            state.pvcs[key] = msgspec.structs.replace(
                claim, status=PersistentVolumeClaimStatus(phase=phase)
            )
    bound, provisioned, problems = sync_claims(state)
    for problem in problems:
        note(problem)
    if bound or provisioned:
        parts = [f"{bound} bound to PersistentVolumes"] if bound else []
        if provisioned:
            parts.append(f"{provisioned} provisioned (no topology known: usable on any node)")
        note("PersistentVolumeClaims bound as the PV controller would: " + ", ".join(parts))
    return state
