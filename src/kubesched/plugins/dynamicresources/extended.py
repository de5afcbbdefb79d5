"""Extended resources backed by DRA (DRAExtendedResource, beta and on in v1.36.3).

A pod asks for an extended resource (say `example.com/gpu: 2`) that a DeviceClass
names in spec.extendedResourceName, or the class's implicit name
`deviceclass.resource.kubernetes.io/<class>`. On a node that does not advertise
the resource in its allocatable (no device plugin), DynamicResources allocates
devices for it through a claim of its own, which exists only in memory until
PreBind creates it (preFilterExtendedResources, filterExtendedResources and
createDeviceRequests upstream).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

import msgspec

from kubesched.api.objects import Node, ObjectMeta, OwnerReference, Pod
from kubesched.api.quantity import value as quantity_value
from kubesched.api.resource import (
    DeviceClaim,
    DeviceClass,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from kubesched.framework.status import Status
from kubesched.plugins.dynamicresources.state import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    SPECIAL_CLAIM_NAME,
    DraCycleState,
    unresolvable,
)

# resourceapi.ResourceDeviceClassPrefix: every class backs this implicit name.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName, with the device classes' implicit names,
    which sit in the kubernetes.io namespace but are extended resources."""
    if name.startswith(DEVICE_CLASS_PREFIX):
        return True
    if "/" not in name or "kubernetes.io/" in name:
        return False
    return not name.startswith("requests.")


def device_class_mapping(classes: Iterable[DeviceClass]) -> dict[str, str]:
    """extended.DeviceClassMapping: extended resource name -> device class. When two
    classes name the same resource, the newer one wins (then the greater name), so
    the answer does not depend on the order the classes are listed in."""
    ordered = sorted(classes, key=lambda c: (c.metadata.creation_timestamp or "", c.metadata.name))
    mapping: dict[str, str] = {}
    for device_class in ordered:
        name = device_class.metadata.name
        mapping[DEVICE_CLASS_PREFIX + name] = name
    for device_class in ordered:
        explicit = device_class.spec.extended_resource_name
        if explicit:
            mapping[explicit] = device_class.metadata.name
    return mapping


def backed_requests(requests: Mapping[str, int], mapping: Mapping[str, str]) -> dict[str, int]:
    """hasDeviceClassMappedExtendedResource's view: the pod's non-zero extended
    requests, when at least one of them has a class behind it; else nothing."""
    extended = {
        name: amount
        for name, amount in requests.items()
        if amount and is_extended_resource_name(name)
    }
    if not any(name in mapping for name in extended):
        return {}
    return extended


def find_extended_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """findExtendedResourceClaim: the claim a prior cycle created for the pod."""
    for claim in claims:
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for ref in claim.metadata.owner_references:
            if ref.name == pod.metadata.name and ref.controller and ref.uid == pod.metadata.uid:
                return claim
    return None


def in_memory_claim(pod: Pod) -> ResourceClaim:
    """The special claim before it exists: no requests yet (Filter fills them in per
    node), a made-up UID for the in-flight allocation, the pod as its owner."""
    return ResourceClaim(
        metadata=ObjectMeta(
            name=SPECIAL_CLAIM_NAME,
            namespace=pod.metadata.namespace,
            uid=str(uuid.uuid4()),
            generate_name=f"{pod.metadata.name}-extended-resources-",
            owner_references=[
                OwnerReference(
                    api_version="v1",
                    kind="Pod",
                    name=pod.metadata.name,
                    uid=pod.metadata.uid,
                    controller=True,
                )
            ],
            annotations={EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        )
    )


def filter_extended(
    state: DraCycleState, pod: Pod, node: Node
) -> tuple[ResourceClaim | None, Status | None]:
    """filterExtendedResources: the node's variant of the special claim (None when the
    node's device plugins cover everything), or a rejection."""
    special = state.claims.extended_claim()
    if special is None:
        return None, None
    if special.spec.devices.requests:
        # Left over from an earlier cycle: PostFilter deletes it and the pod retries.
        return None, unresolvable("cannot schedule extended resource claim")
    needed: dict[str, int] = {}
    for name, amount in state.extended_requests.items():
        on_node = name in node.status.allocatable
        backed = name in state.resource_to_class
        if backed and not on_node:
            needed[name] = amount
        elif not backed and not on_node:
            return None, unresolvable("cannot fit resource")
    if not needed:
        return None, None
    variant = msgspec.structs.replace(
        special,
        spec=ResourceClaimSpec(
            devices=DeviceClaim(requests=device_requests(pod, needed, state.resource_to_class))
        ),
    )
    return variant, None


def device_requests(
    pod: Pod, needed: Mapping[str, int], mapping: Mapping[str, str]
) -> list[DeviceRequest]:
    """createDeviceRequests: one ExactCount request per (container, resource), named
    container-<i>-request-<j>: i the container's index in initContainers then
    containers, j the resource's index in the container's sorted request names."""
    containers = [*pod.spec.init_containers, *pod.spec.containers]
    out: list[DeviceRequest] = []
    for resource in sorted(needed):
        class_name = mapping.get(resource)
        if not class_name:
            continue
        for i, container in enumerate(containers):
            requests = container.resources.requests
            if resource not in requests:
                continue
            count = quantity_value(requests[resource])
            if count == 0:
                continue
            j = sorted(requests).index(resource)
            out.append(
                DeviceRequest(
                    name=f"container-{i}-request-{j}",
                    exactly=ExactDeviceRequest(device_class_name=class_name, count=count),
                )
            )
    return out
