"""The plugin's per-cycle state (stateData upstream) and the claim store.

PreFilter always writes a `DraCycleState`, empty for a pod without claims, so that
PostFilter can tell "no claims" (`no new claims to deallocate`) from "PreFilter did
not run" (`not found`, as upstream's CycleState.Read fails with fwk.ErrNotFound).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import msgspec

from kubesched.api.node_affinity import ParsedTerm
from kubesched.api.objects import ContainerExtendedResourceRequest
from kubesched.api.resource import AllocationResult, ResourceClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Status
from kubesched.plugins.dynamicresources.structured.allocator import Allocator

NAME = "DynamicResources"
STATE_KEY = NAME

# The name of the in-memory claim for DRA-backed extended resources until PreBind
# creates it (specialClaimInMemName): not a valid object name, so it cannot clash.
SPECIAL_CLAIM_NAME = "<extended-resources>"
# The annotation that marks a claim as the one for a pod's extended resources
# (resourceapi.ExtendedResourceClaimAnnotation).
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"

# resourceapi.ResourceClaimReservedForMaxSize: a claim has at most this many consumers.
RESERVED_FOR_MAX_SIZE = 256
# resourceapi.FirstAvailableDeviceRequestMaxSize: the longest prioritized list.
FIRST_AVAILABLE_MAX_SIZE = 8


class StateNotFound(Exception):
    """Upstream's fwk.ErrNotFound from CycleState.Read: its text is "not found"."""

    def __init__(self) -> None:
        super().__init__("not found")


def unresolvable(reason: str) -> Status:
    """statusUnschedulable: every rejection of this plugin is UnschedulableAndUnresolvable."""
    return Status.unresolvable(reason, plugin=NAME)


def error(reason: str | BaseException) -> Status:
    """statusError (fwk.AsStatus)."""
    return Status.as_error(reason, plugin=NAME)


@dataclass(slots=True)
class ClaimInfo:
    """informationForClaim: where an allocated claim may be used, and what Reserve chose."""

    # The allocation's node selector, parsed; None: everywhere (or not allocated).
    available_on: tuple[ParsedTerm, ...] | None = None
    allocation: AllocationResult | None = None


@dataclass(slots=True)
class NodeAllocation:
    """What Filter found on one node (nodeAllocation upstream)."""

    # One result per claim to allocate, in their order (may be shared with the
    # allocator's outcome cache: read only).
    results: list[AllocationResult]
    # The node's variant of the claim for extended resources, if it needs devices.
    extended_claim: ResourceClaim | None = None
    # Which of its requests serves each container's extended resource
    # (containerResourceRequestMappings): the pod's extendedResourceClaimStatus.
    request_mappings: Sequence[ContainerExtendedResourceRequest] = ()


@dataclass(slots=True)
class ClaimStore:
    """The pod's claims in spec.resourceClaims order, then the special claim for
    extended resources if there is one (claimStore upstream)."""

    claims: list[ResourceClaim] = field(default_factory=list)
    has_extended: bool = False

    def empty(self) -> bool:
        return not self.claims

    def __len__(self) -> int:
        return len(self.claims)

    def all(self) -> Iterator[tuple[int, ResourceClaim]]:
        return iter(enumerate(self.claims))

    def user_claims(self) -> list[ResourceClaim]:
        return self.claims[:-1] if self.has_extended else list(self.claims)

    def no_user_claim(self) -> bool:
        return len(self.claims) == (1 if self.has_extended else 0)

    def extended_claim(self) -> ResourceClaim | None:
        return self.claims[-1] if self.has_extended else None

    def is_extended(self, index: int) -> bool:
        return self.has_extended and index == len(self.claims) - 1

    def to_allocate(self) -> Iterator[tuple[int, ResourceClaim]]:
        """The claims without an allocation, with their index in the store."""
        for index, claim in enumerate(self.claims):
            if claim.status.allocation is None:
                yield index, claim


@dataclass(slots=True)
class DraCycleState:
    claims: ClaimStore = field(default_factory=ClaimStore)
    infos: list[ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    # Filter's results by node name: the plain results where that is all there is
    # (one list, shared with the allocator's outcome cache, instead of an object
    # per node: Filter runs for hundreds of nodes), else a NodeAllocation (the
    # special claim for extended resources). Read them with node_allocation.
    node_results: dict[str, list[AllocationResult]] = field(default_factory=dict)
    node_allocations: dict[str, NodeAllocation] = field(default_factory=dict)
    # Indices of allocated claims that some node could not use (PostFilter's candidates).
    unavailable: set[int] = field(default_factory=set)
    # Extended resources the pod requests (name -> amount) and the class behind each.
    extended_requests: dict[str, int] = field(default_factory=dict)
    resource_to_class: dict[str, str] = field(default_factory=dict)
    # claim_key of the special claim as PreFilter made it: the in-flight allocation
    # stays under it after PreBind created the claim (getInitialExtendedResourceClaimUID).
    initial_extended_key: str = ""
    # Made once by PreFilter for Filter and Score, which run per node: the indices
    # of the allocated claims (the only ones Filter checks before allocating), the
    # claims to allocate in store order, and whether any claim has a prioritized
    # list (else every node scores 0).
    allocated_indices: list[int] = field(default_factory=list)
    pending: list[ResourceClaim] = field(default_factory=list)
    has_prioritized_list: bool = False

    def node_allocation(self, node_name: str) -> NodeAllocation | None:
        """What Filter found on the node (None: no allocation there)."""
        found = self.node_allocations.get(node_name)
        if found is None:
            results = self.node_results.get(node_name)
            if results is not None:
                return NodeAllocation(results)
        return found

    def has_node_allocations(self) -> bool:
        return bool(self.node_results or self.node_allocations)


def read_state(state: CycleState) -> DraCycleState:
    found = state.get(STATE_KEY)
    if not isinstance(found, DraCycleState):
        raise StateNotFound()
    return found


def claim_key(claim: ResourceClaim) -> str:
    """The key the DRA manager tracks in-flight allocations by. Upstream uses the UID;
    kubesched's DraState uses namespace/name, which stands in for it, except for the
    in-memory special claims: they all share one name, so their made-up UID is added."""
    if claim.metadata.name == SPECIAL_CLAIM_NAME:
        return f"{claim.metadata.namespace}/{SPECIAL_CLAIM_NAME}{claim.metadata.uid}"
    return claim.key


def in_flight_copy(claim: ResourceClaim) -> ResourceClaim:
    """The claim as DraState keeps it in flight: under claim_key's name."""
    if claim.metadata.name != SPECIAL_CLAIM_NAME:
        return claim
    name = claim_key(claim).partition("/")[2]
    return msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(claim.metadata, name=name)
    )
