"""Dynamic Resource Allocation objects (resource.k8s.io/v1), as lean msgspec structs.

ResourceClaim, ResourceClaimTemplate, DeviceClass and ResourceSlice with the fields
the DynamicResources plugin and its allocator read or write. Field names follow
the API (k8s.io/api/resource/v1 types.go), in Python spelling. Quantities stay as
they came on the wire (RawQuantity) and are parsed where they are compared.
"""

from __future__ import annotations

import msgspec

from kubesched.api.objects import (
    NodeSelector,
    ObjectMeta,
    Pod,
    PodResourceClaim,
    RawQuantity,
)

API_VERSION = "resource.k8s.io/v1"

# DeviceRequest allocation modes.
EXACT_COUNT = "ExactCount"
ALL = "All"

# ResourceClaimConsumerReference of a pod (reservedFor).
POD_CONSUMER_RESOURCE = "pods"

# The finalizer the scheduler puts on a claim before it writes the allocation
# (resource.k8s.io/delete-protection): the claim cannot vanish while allocated.
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"


class _Api(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


# --- device selection --------------------------------------------------------------


class CELDeviceSelector(_Api):
    expression: str = ""


class DeviceSelector(_Api):
    cel: CELDeviceSelector | None = None


class DeviceToleration(_Api):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class CapacityRequirements(_Api):
    """How much of each consumable capacity one allocation takes (DRAConsumableCapacity)."""

    requests: dict[str, RawQuantity] = {}


class ExactDeviceRequest(_Api):
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceSubRequest(_Api):
    """One alternative of a prioritized list (firstAvailable)."""

    name: str = ""
    device_class_name: str = ""
    selectors: list[DeviceSelector] = []
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    tolerations: list[DeviceToleration] = []
    capacity: CapacityRequirements | None = None


class DeviceRequest(_Api):
    """Exactly one of `exactly` and `first_available` is set."""

    name: str = ""
    exactly: ExactDeviceRequest | None = None
    first_available: list[DeviceSubRequest] = []


class DeviceConstraint(_Api):
    # The requests (or "request/subrequest") it applies to; empty: all of them.
    requests: list[str] = []
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class OpaqueDeviceConfiguration(_Api):
    driver: str = ""
    parameters: object = None


class DeviceClaimConfiguration(_Api):
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(_Api):
    requests: list[DeviceRequest] = []
    constraints: list[DeviceConstraint] = []
    config: list[DeviceClaimConfiguration] = []


class ResourceClaimSpec(_Api):
    devices: DeviceClaim = msgspec.field(default_factory=DeviceClaim)


# --- allocation results ------------------------------------------------------------


class DeviceRequestAllocationResult(_Api):
    # The request's name, or "request/subrequest" for a prioritized list.
    request: str = ""
    driver: str = ""
    pool: str = ""
    device: str = ""
    admin_access: bool | None = None
    tolerations: list[DeviceToleration] = []
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    share_id: str | None = msgspec.field(default=None, name="shareID")
    consumed_capacity: dict[str, RawQuantity] = {}


class DeviceAllocationConfiguration(_Api):
    source: str = ""  # FromClass or FromClaim
    requests: list[str] = []
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(_Api):
    results: list[DeviceRequestAllocationResult] = []
    config: list[DeviceAllocationConfiguration] = []


class AllocationResult(_Api):
    devices: DeviceAllocationResult = msgspec.field(default_factory=DeviceAllocationResult)
    # Where the allocated devices can be used; None: everywhere.
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(_Api):
    api_group: str = ""
    resource: str = ""
    name: str = ""
    uid: str = ""


class DeviceCondition(_Api):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""


class AllocatedDeviceStatus(_Api):
    driver: str = ""
    pool: str = ""
    device: str = ""
    share_id: str | None = msgspec.field(default=None, name="shareID")
    conditions: list[DeviceCondition] = []


class ResourceClaimStatus(_Api):
    allocation: AllocationResult | None = None
    reserved_for: list[ResourceClaimConsumerReference] = []
    devices: list[AllocatedDeviceStatus] = []


class ResourceClaim(_Api):
    api_version: str = API_VERSION
    kind: str = "ResourceClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = msgspec.field(default_factory=ResourceClaimStatus)

    @property
    def key(self) -> str:
        return self.metadata.key


class ResourceClaimTemplateSpec(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = msgspec.field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(_Api):
    api_version: str = API_VERSION
    kind: str = "ResourceClaimTemplate"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceClaimTemplateSpec = msgspec.field(default_factory=ResourceClaimTemplateSpec)

    @property
    def key(self) -> str:
        return self.metadata.key


# --- device classes ----------------------------------------------------------------


class DeviceClassConfiguration(_Api):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(_Api):
    selectors: list[DeviceSelector] = []
    config: list[DeviceClassConfiguration] = []
    # The extended resource (e.g. "example.com/gpu") this class backs (DRAExtendedResource).
    extended_resource_name: str | None = None


class DeviceClass(_Api):
    api_version: str = API_VERSION
    kind: str = "DeviceClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeviceClassSpec = msgspec.field(default_factory=DeviceClassSpec)


# --- resource slices ---------------------------------------------------------------


class DeviceAttribute(_Api):
    """Exactly one of the four is set. The Python names avoid shadowing the builtins
    inside the class body, which would break the annotations' evaluation."""

    int_value: int | None = msgspec.field(default=None, name="int")
    bool_value: bool | None = msgspec.field(default=None, name="bool")
    string_value: str | None = msgspec.field(default=None, name="string")
    version_value: str | None = msgspec.field(default=None, name="version")


class CapacityRequestPolicyRange(_Api):
    min: RawQuantity | None = None
    max: RawQuantity | None = None
    step: RawQuantity | None = None


class CapacityRequestPolicy(_Api):
    default: RawQuantity | None = None
    valid_values: list[RawQuantity] = []
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(_Api):
    value: RawQuantity = 0
    request_policy: CapacityRequestPolicy | None = None


class Counter(_Api):
    value: RawQuantity = 0


class CounterSet(_Api):
    name: str = ""
    counters: dict[str, Counter] = {}


class DeviceCounterConsumption(_Api):
    counter_set: str = ""
    counters: dict[str, Counter] = {}


class DeviceTaint(_Api):
    key: str = ""
    value: str = ""
    effect: str = ""  # NoSchedule, NoExecute (None is allowed for information only)
    time_added: str | None = None


class Device(_Api):
    name: str = ""
    attributes: dict[str, DeviceAttribute] = {}
    capacity: dict[str, DeviceCapacity] = {}
    consumes_counters: list[DeviceCounterConsumption] = []
    # Per-device node selection (perDeviceNodeSelection on the slice): one of the three.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: list[DeviceTaint] = []
    binds_to_node: bool | None = None
    binding_conditions: list[str] = []
    binding_failure_conditions: list[str] = []
    # Several claims may share the device, each taking part of its capacity.
    allow_multiple_allocations: bool | None = None


class ResourcePool(_Api):
    name: str = ""
    generation: int = 0
    resource_slice_count: int = 1


class ResourceSliceSpec(_Api):
    driver: str = ""
    pool: ResourcePool = msgspec.field(default_factory=ResourcePool)
    # Which nodes the devices are on: exactly one of the four is set.
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: list[Device] = []
    shared_counters: list[CounterSet] = []


class ResourceSlice(_Api):
    api_version: str = API_VERSION
    kind: str = "ResourceSlice"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ResourceSliceSpec = msgspec.field(default_factory=ResourceSliceSpec)


class ClaimNameError(Exception):
    """The pod's claim entry names no claim yet, or names none the API knows."""


def claim_name(pod: Pod, pod_claim: PodResourceClaim) -> tuple[str | None, bool]:
    """The name of the ResourceClaim behind one of the pod's spec.resourceClaims, and
    whether the claim must be checked to be owned by the pod (resourceclaim.Name).

    A template entry names the claim the resourceclaim controller generated, as the
    pod's status.resourceClaimStatuses records it; None there means no claim is
    needed. Raises ClaimNameError when the controller has not created it yet."""
    if pod_claim.resource_claim_name is not None:
        return pod_claim.resource_claim_name, False
    if pod_claim.resource_claim_template_name is not None:
        for status in pod.status.resource_claim_statuses:
            if status.name == pod_claim.name:
                return status.resource_claim_name, True
        raise ClaimNameError(
            f'pod "{pod.metadata.namespace}/{pod.metadata.name}": ResourceClaim not created yet'
        )
    raise ClaimNameError(
        f'pod "{pod.metadata.namespace}/{pod.metadata.name}", spec.resourceClaim '
        f'"{pod_claim.name}": none of the supported fields are set'
    )


def is_for_pod(pod: Pod, claim: ResourceClaim) -> str | None:
    """None when the claim is controlled by the pod (resourceclaim.IsForPod), else why not.
    metav1.IsControlledBy: the first controller reference decides, by UID alone."""
    controller = next((ref for ref in claim.metadata.owner_references if ref.controller), None)
    if controller is not None and controller.uid == pod.metadata.uid:
        return None
    return (
        f"ResourceClaim {claim.metadata.namespace}/{claim.metadata.name} was not created "
        f"for Pod {pod.metadata.namespace}/{pod.metadata.name} (Pod is not owner)"
    )


def is_reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    """The pod is among the claim's consumers (resourceclaim.IsReservedForPod)."""
    uid = pod.metadata.uid
    return any(
        ref.resource == POD_CONSUMER_RESOURCE and ref.api_group == "" and ref.uid == uid
        for ref in claim.status.reserved_for
    )


def pod_consumer(pod: Pod) -> ResourceClaimConsumerReference:
    """The reservedFor entry that names the pod."""
    return ResourceClaimConsumerReference(
        resource=POD_CONSUMER_RESOURCE, name=pod.metadata.name, uid=pod.metadata.uid
    )
