"""Extended resources backed by DRA (DRAExtendedResource, beta and on in v1.36.3).

A pod asks for an extended resource (say `example.com/gpu: 2`) that a DeviceClass
names in spec.extendedResourceName, or the class's implicit name
`deviceclass.resource.kubernetes.io/<class>`. On a node that does not advertise
the resource in its allocatable (no device plugin), DynamicResources allocates
devices for it through a claim of its own, which exists only in memory until
PreBind creates it (preFilterExtendedResources, filterExtendedResources and
createRequestsAndMappings upstream, in extendeddynamicresources.go). The writes of
PreBind, Unreserve and PostFilter for that claim are in extended_writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec

from kubesched.api.objects import (
    Container,
    ContainerExtendedResourceRequest,
    Node,
    ObjectMeta,
    OwnerReference,
    Pod,
)
from kubesched.api.quantity import value as quantity_value
from kubesched.api.resource import (
    DeviceClaim,
    DeviceRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
)
from kubesched.framework.state.dra import DEVICE_CLASS_PREFIX
from kubesched.framework.status import Status
from kubesched.plugins.dynamicresources.state import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    SPECIAL_CLAIM_NAME,
    DraCycleState,
    unresolvable,
)


def is_extended_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: v1helper.IsExtendedResourceName, or a
    device class's implicit name (in the kubernetes.io namespace, yet backed by DRA)."""
    if name.startswith(DEVICE_CLASS_PREFIX):
        return True
    if "/" not in name or "kubernetes.io/" in name:
        return False
    return not name.startswith("requests.")


def backed_requests(
    requests: Mapping[str, int], resolve: Callable[[str], str | None]
) -> dict[str, int]:
    """hasDeviceClassMappedExtendedResource's view: the pod's non-zero extended
    requests, when at least one of them has a class behind it; else nothing."""
    extended = {
        name: amount
        for name, amount in requests.items()
        if amount and is_extended_resource_name(name)
    }
    if not any(resolve(name) is not None for name in extended):
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


def _node_scalar(node: Node, name: str) -> int | None:
    """The node's allocatable amount of a scalar resource; None when it has no entry
    (GetScalarResources()[rName] with its ok)."""
    allocatable = node.status.allocatable or node.status.capacity
    if name not in allocatable:
        return None
    return quantity_value(allocatable[name])


def filter_extended(
    state: DraCycleState, pod: Pod, node: Node
) -> tuple[ResourceClaim | None, list[ContainerExtendedResourceRequest], Status | None]:
    """filterExtendedResources: the node's variant of the special claim and the
    pod's container -> request mappings (None and [] when the node's device plugins
    cover everything), or a rejection."""
    special = state.claims.extended_claim()
    if special is None:
        return None, [], None
    if special.spec.devices.requests:
        # Left over from an earlier cycle: PostFilter deletes it and the pod retries.
        return None, [], unresolvable("cannot schedule extended resource claim")
    needed: dict[str, int] = {}
    for name, amount in state.extended_requests.items():
        allocatable = _node_scalar(node, name)
        backed = name in state.resource_to_class
        if backed and not allocatable:
            # No device plugin on this node serves it (or it has none left to
            # advertise): DRA has to.
            needed[name] = amount
        elif allocatable is None:
            # Neither a device plugin nor a device class: the pod cannot fit.
            return None, [], unresolvable("cannot fit resource")
    if state.claims.no_user_claim() and not needed:
        return None, [], None
    if special.status.allocation is not None:
        return None, [], None
    requests, mappings = requests_and_mappings(pod, needed, state.resource_to_class)
    variant = msgspec.structs.replace(
        special, spec=ResourceClaimSpec(devices=DeviceClaim(requests=requests))
    )
    return variant, mappings, None


def _container_request(
    index: int,
    container: Container,
    resource: str,
    class_name: str,
    reusable: Sequence[DeviceRequest | None],
) -> tuple[DeviceRequest | None, list[ContainerExtendedResourceRequest]]:
    """createResourceRequestAndMappings: the device request one container needs for
    one resource, after it borrows the requests of `reusable` (the long-lived
    containers after a plain init container: it runs before they start)."""
    requests = container.resources.requests
    if resource not in requests:
        return None, []
    wanted = quantity_value(requests[resource])
    if wanted == 0:
        return None, []
    mappings: list[ContainerExtendedResourceRequest] = []
    total = 0
    for other in reusable:
        if other is None or other.exactly is None:
            continue
        total += other.exactly.count
        mappings.append(
            ContainerExtendedResourceRequest(
                container_name=container.name, resource_name=resource, request_name=other.name
            )
        )
        if total >= wanted:
            return None, mappings
    # The resource's index among the container's request names, sorted (a Go map
    # has no order of its own).
    name = f"container-{index}-request-{sorted(requests).index(resource)}"
    mappings.append(
        ContainerExtendedResourceRequest(
            container_name=container.name, resource_name=resource, request_name=name
        )
    )
    request = DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(device_class_name=class_name, count=wanted - total),
    )
    return request, mappings


def requests_and_mappings(
    pod: Pod, needed: Mapping[str, int], mapping: Mapping[str, str]
) -> tuple[list[DeviceRequest], list[ContainerExtendedResourceRequest]]:
    """createRequestsAndMappings: ExactCount device requests named
    container-<i>-request-<j> (i: the container's index in initContainers then
    containers; j: the resource's index in its sorted request names), sorted by name,
    and which request serves each container's resource. Plain init containers run
    one at a time before the others: they reuse the requests of the long-lived
    containers (sidecars and regular ones) after them, and share the largest of
    their own requests."""
    init = pod.spec.init_containers
    containers = [*init, *pod.spec.containers]
    long_lived = [
        i for i, c in enumerate(containers) if i >= len(init) or c.restart_policy == "Always"
    ]
    short_lived = [
        i for i, c in enumerate(containers) if i < len(init) and c.restart_policy != "Always"
    ]
    out: list[DeviceRequest] = []
    out_mappings: list[ContainerExtendedResourceRequest] = []
    for resource in sorted(needed):
        class_name = mapping.get(resource)
        if not class_name:
            continue
        long_requests: list[DeviceRequest | None] = [None] * len(containers)
        long_mappings: list[ContainerExtendedResourceRequest] = []
        for i in long_lived:
            request, found = _container_request(i, containers[i], resource, class_name, [])
            long_requests[i] = request
            long_mappings.extend(found)
        biggest: DeviceRequest | None = None
        short_names: set[str] = set()
        short_mappings: list[ContainerExtendedResourceRequest] = []
        for i in short_lived:
            request, found = _container_request(
                i, containers[i], resource, class_name, long_requests[i:]
            )
            if request is not None and request.exactly is not None:
                short_names.add(request.name)
                if (
                    biggest is None
                    or biggest.exactly is None
                    or biggest.exactly.count < request.exactly.count
                ):
                    biggest = request
            short_mappings.extend(found)
        if biggest is not None and len(short_names) > 1:
            short_names.discard(biggest.name)
            short_mappings = [
                msgspec.structs.replace(m, request_name=biggest.name)
                if m.request_name in short_names
                else m
                for m in short_mappings
            ]
        if biggest is not None:
            out.append(biggest)
        out.extend(r for r in long_requests if r is not None)
        out_mappings.extend(long_mappings)
        out_mappings.extend(short_mappings)
    out.sort(key=lambda r: r.name)
    return out, out_mappings
