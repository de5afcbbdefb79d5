"""The Dynamic Resource Allocation objects of the manifests, and the claims the
resourceclaim controller would create for them.

Kinds read (group resource.k8s.io): ResourceClaim, ResourceClaimTemplate,
DeviceClass, ResourceSlice, in version v1. v1beta2 is read as v1: for these four
kinds its schema is the same (k8s.io/api resource/v1beta2 and v1 differ only by
DeviceTaintRule). v1beta1 and v1alpha3 have another shape (no `exactly` in
requests, devices wrapped in `basic`) and are refused with a problem on
`apiVersion`. Each object is checked as the apiserver would (dra_validation).

After reading, as kube-controller-manager's resourceclaim controller would
(pkg/controller/resourceclaim, syncPod and handleClaim):

- each pod entry naming a resourceClaimTemplateName gets a claim made from the
  template, named from generateName `<pod>-<entry>-` (both parts cut in
  proportion when longer than 57 characters) plus five characters, owned by the
  pod (a controller ownerReference with its uid), with the template's labels,
  its annotations and `resource.kubernetes.io/pod-claim-name: <entry>`; the pod's
  status.resourceClaimStatuses records the name. A claim of the input that the
  pod owns and that carries that annotation is adopted instead
  (findPodResourceClaim);
- a pod already bound to a node gets its place in the reservedFor of each
  allocated claim it uses that does not list it yet (reserveFor).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kubesched.api.objects import OwnerReference, Pod, PodResourceClaimStatus
from kubesched.api.resource import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    is_reserved_for_pod,
    pod_consumer,
)
from kubesched.cluster import dra_validation
from kubesched.cluster.generated_names import _uid
from kubesched.cluster.load_problems import duplicate_problem
from kubesched.framework.state.dra import DraState

DraObject = ResourceClaim | ResourceClaimTemplate | DeviceClass | ResourceSlice

RESOURCE_GROUP = "resource.k8s.io"
# kind -> (struct, namespaced)
DRA_KINDS: Mapping[str, tuple[type[Any], bool]] = {
    "ResourceClaim": (ResourceClaim, True),
    "ResourceClaimTemplate": (ResourceClaimTemplate, True),
    "DeviceClass": (DeviceClass, False),
    "ResourceSlice": (ResourceSlice, False),
}
DRA_GROUPS: Mapping[str, tuple[str, ...]] = {kind: (RESOURCE_GROUP,) for kind in DRA_KINDS}
CLUSTER_SCOPED_DRA = frozenset(k for k, (_, namespaced) in DRA_KINDS.items() if not namespaced)
# Versions read as v1 (the same schema for these kinds), and those refused.
READ_AS_V1 = ("v1", "v1beta2")

# resourceapi.PodResourceClaimAnnotation: which entry of the pod a generated claim is for.
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# handleClaim leaves room for "-" and five random characters in 63.
_MAX_CLAIM_BASE = 57
# resourceclaim.ResourceClaimReservedForMaxSize (CanBeReserved).
RESERVED_FOR_MAX_SIZE = 256


def check_version(api_version: str) -> tuple[str, str] | None:
    """A problem on apiVersion for the versions not read (None: read it as v1)."""
    version = api_version.rpartition("/")[2]
    if not api_version or version in READ_AS_V1:
        return None
    return "apiVersion", (
        f"{api_version} is not supported: write the object as {RESOURCE_GROUP}/v1 "
        f"(its request and device fields differ from v1 in {version})"
    )


def check(obj: DraObject, raw: Mapping[str, Any]) -> tuple[str, str] | None:
    if isinstance(obj, ResourceClaim):
        return dra_validation.check_claim(obj, raw)
    if isinstance(obj, ResourceClaimTemplate):
        return dra_validation.check_template_spec(obj.spec.spec.devices, raw)
    if isinstance(obj, DeviceClass):
        return dra_validation.check_class(obj)
    return dra_validation.check_slice(obj)


@dataclass
class DraObjects:
    """The DRA objects read, by kind and key, with where they came from."""

    by_kind: dict[str, dict[str, tuple[DraObject, str]]] = field(default_factory=dict)

    def add(
        self, kind: str, obj: DraObject, raw: Mapping[str, Any], origin: str
    ) -> tuple[str, str] | None:
        meta = obj.metadata
        namespaced = DRA_KINDS[kind][1]
        if namespaced and not meta.namespace:
            meta.namespace = "default"
        if not namespaced:
            meta.namespace = ""
        if not meta.name:
            return "metadata.name", "name is required"
        problem = check(obj, raw)
        if problem is not None:
            return problem
        objects = self.by_kind.setdefault(kind, {})
        key = meta.key
        if key in objects:
            return duplicate_problem(kind, key, objects[key][1])
        if not meta.uid:
            meta.uid = _uid(kind, meta.namespace, meta.name)
        # The API always answers with the kind's preferred version.
        obj.api_version = f"{RESOURCE_GROUP}/v1"
        objects[key] = (obj, origin)
        return None

    def of(self, kind: str) -> list[Any]:
        return [obj for obj, _ in self.by_kind.get(kind, {}).values()]

    def count(self, kind: str) -> int:
        return len(self.by_kind.get(kind, {}))


GenerateName = Callable[[str, str, str, Callable[[str], bool]], str]


def claim_generate_name(pod_name: str, entry: str) -> str:
    """The generateName handleClaim gives a template's claim: `<pod>-<entry>-`, or when
    that is too long both names cut in proportion (and no "-" at the end)."""
    base = f"{pod_name}-{entry}-"
    if len(base) > _MAX_CLAIM_BASE:
        cut_pod = len(pod_name) * _MAX_CLAIM_BASE // len(base)
        cut_entry = len(entry) * _MAX_CLAIM_BASE // len(base)
        base = f"{pod_name[:cut_pod]}-{entry[:cut_entry]}"
    return base


def _owned_by(claim: ResourceClaim, pod: Pod) -> bool:
    return any(
        ref.controller and ref.uid == pod.metadata.uid and ref.kind == "Pod"
        for ref in claim.metadata.owner_references
    )


def _owned_claims(state: DraState) -> dict[str, list[ResourceClaim]]:
    """The claims of the input by the uid of each owner (the claimPodOwnerIndex)."""
    index: dict[str, list[ResourceClaim]] = {}
    for claim in state.claims.values():
        for ref in claim.metadata.owner_references:
            index.setdefault(ref.uid, []).append(claim)
    return index


def _adoptable(
    owned: Mapping[str, list[ResourceClaim]], pod: Pod, entry: str
) -> ResourceClaim | None:
    """findPodResourceClaim: a claim the pod owns, annotated for this entry."""
    for claim in owned.get(pod.metadata.uid, ()):
        if (
            claim.metadata.namespace == pod.metadata.namespace
            and claim.metadata.annotations.get(POD_CLAIM_NAME_ANNOTATION) == entry
        ):
            return claim
    return None


def _taken(state: DraState, namespace: str, name: str) -> bool:
    return f"{namespace}/{name}" in state.claims


def _new_claim(
    pod: Pod, entry: str, template: ResourceClaimTemplate, name: str, base: str
) -> ResourceClaim:
    owner = OwnerReference(
        api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid
    )
    owner.controller = True
    template_meta = template.spec.metadata
    namespace = pod.metadata.namespace
    return ResourceClaim(
        metadata=msgspec.structs.replace(
            template_meta,
            name=name,
            generate_name=base,
            namespace=namespace,
            uid=_uid("ResourceClaim", namespace, name),
            resource_version="",
            labels=dict(template_meta.labels),
            annotations={**template_meta.annotations, POD_CLAIM_NAME_ANNOTATION: entry},
            owner_references=[owner],
            finalizers=[],
            creation_timestamp=pod.metadata.creation_timestamp,
            deletion_timestamp=None,
        ),
        spec=template.spec.spec,
    )


@dataclass
class ClaimsCreated:
    claims: int = 0
    pods: int = 0
    missing_templates: list[str] = field(default_factory=list)  # "pod: template"
    reserved: int = 0


def create_pod_claims(
    state: DraState, pods: Sequence[Pod], generate_name: GenerateName
) -> ClaimsCreated:
    """What syncPod does for each pod that is not done (see the module docstring)."""
    done = ClaimsCreated()
    owned = _owned_claims(state)
    for pod in pods:
        if pod.metadata.deletion_timestamp is not None or pod.status.phase in (
            "Succeeded",
            "Failed",
        ):
            continue
        statuses = {s.name: s for s in pod.status.resource_claim_statuses}
        recorded: dict[str, str] = {}
        for entry in pod.spec.resource_claims:
            template_name = entry.resource_claim_template_name
            if template_name is None or entry.resource_claim_name is not None:
                continue
            status = statuses.get(entry.name)
            if status is not None:
                if status.resource_claim_name is None:
                    continue  # resourceclaim.Name: no claim needed
                existing = state.claims.get(
                    f"{pod.metadata.namespace}/{status.resource_claim_name}"
                )
                if existing is not None and _owned_by(existing, pod):
                    continue
            claim = _adoptable(owned, pod, entry.name)
            if claim is None:
                template = state.templates.get(f"{pod.metadata.namespace}/{template_name}")
                if template is None:
                    done.missing_templates.append(f"{pod.key}: {template_name}")
                    continue
                namespace = pod.metadata.namespace
                base = claim_generate_name(pod.metadata.name, entry.name)
                name = generate_name(
                    "ResourceClaim", namespace, base, functools.partial(_taken, state, namespace)
                )
                claim = _new_claim(pod, entry.name, template, name, base)
                state.upsert_claim(claim)
                done.claims += 1
            recorded[entry.name] = claim.metadata.name
        if recorded:
            # ApplyStatus of resourceClaimStatuses: a map keyed by the entry's name.
            merged = [s for s in pod.status.resource_claim_statuses if s.name not in recorded]
            merged.extend(
                PodResourceClaimStatus(name=entry, resource_claim_name=claim_name)
                for entry, claim_name in recorded.items()
            )
            pod.status = msgspec.structs.replace(pod.status, resource_claim_statuses=merged)
            done.pods += 1
        if pod.spec.node_name:
            done.reserved += _reserve_for_bound_pod(state, pod)
    return done


def _reserve_for_bound_pod(state: DraState, pod: Pod) -> int:
    """syncPod's second half: an allocated claim of a bound pod lists the pod."""
    reserved = 0
    statuses = {s.name: s.resource_claim_name for s in pod.status.resource_claim_statuses}
    for entry in pod.spec.resource_claims:
        name = entry.resource_claim_name or statuses.get(entry.name)
        if not name:
            continue
        claim = state.claims.get(f"{pod.metadata.namespace}/{name}")
        if (
            claim is None
            or claim.status.allocation is None
            or is_reserved_for_pod(pod, claim)
            or len(claim.status.reserved_for) >= RESERVED_FOR_MAX_SIZE
        ):
            continue
        if entry.resource_claim_name is None and not _owned_by(claim, pod):
            continue
        status = msgspec.structs.replace(
            claim.status, reserved_for=[*claim.status.reserved_for, pod_consumer(pod)]
        )
        state.upsert_claim(msgspec.structs.replace(claim, status=status))
        reserved += 1
    return reserved


def build_dra(
    objects: DraObjects,
    pods: Sequence[Pod],
    generate_name: GenerateName,
    note: Callable[[str], None],
) -> DraState:
    state = DraState()
    for device_class in objects.of("DeviceClass"):
        state.upsert_class(device_class)
    for resource_slice in objects.of("ResourceSlice"):
        state.upsert_slice(resource_slice)
    for template in objects.of("ResourceClaimTemplate"):
        state.upsert_template(template)
    for claim in objects.of("ResourceClaim"):
        state.upsert_claim(claim)
    done = create_pod_claims(state, pods, generate_name)
    if done.claims:
        note(
            f"{done.claims} ResourceClaims created from ResourceClaimTemplates for "
            f"{done.pods} pods, as the resourceclaim controller would"
        )
    if done.missing_templates:
        shown = ", ".join(done.missing_templates[:5])
        more = ", ..." if len(done.missing_templates) > 5 else ""
        note(
            f"{len(done.missing_templates)} pod claims name a ResourceClaimTemplate not in "
            f"the input; their pods wait for a claim that is never created: {shown}{more}"
        )
    if done.reserved:
        note(f"{done.reserved} allocated ResourceClaims reserved for the bound pods using them")
    if not state.is_empty():
        note(
            "DRA objects: "
            + ", ".join(
                f"{len(objs)} {kinds}"
                for kinds, objs in (
                    ("DeviceClasses", state.classes),
                    ("ResourceSlices", state.slices),
                    ("ResourceClaimTemplates", state.templates),
                    ("ResourceClaims", state.claims),
                )
            )
        )
    return state


__all__ = [
    "CLUSTER_SCOPED_DRA",
    "DRA_GROUPS",
    "DRA_KINDS",
    "POD_CLAIM_NAME_ANNOTATION",
    "DraObjects",
    "build_dra",
    "check_version",
    "claim_generate_name",
    "create_pod_claims",
]
