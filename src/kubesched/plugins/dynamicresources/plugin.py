"""DynamicResources: a pod's ResourceClaims get devices on the node it goes to.

Upstream: pkg/scheduler/framework/plugins/dynamicresources (dynamicresources.go).
PreEnqueue holds pods whose claims are missing; PreFilter reads the claims, checks
their classes and builds the structured allocator once; Filter checks allocated
claims' node selectors and asks the allocator about the node (per node, as
upstream: the allocation depends on the node's slices); Score prefers nodes where
prioritized lists got an earlier alternative; Reserve keeps the allocation in
memory (in flight) for the next pods; PreBind writes the finalizer, the allocation
and reservedFor through the ClaimWriter and waits for binding conditions;
PostFilter deallocates a claim that keeps the pod off every node. Every rejection
is UnschedulableAndUnresolvable, as upstream's statusUnschedulable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec
import numpy as np

from kubesched.api.node_affinity import node_matches_terms, parse_node_selector
from kubesched.api.objects import ContainerExtendedResourceRequest, Node
from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
    is_reserved_for_pod,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterScope,
    NodeFilterPlugin,
    NodeScorePlugin,
    NodeVerdicts,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    Uniform,
    verdicts_per_node,
)
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.signature import SignFragment, SignPlugin, not_signable
from kubesched.framework.state.dra import AllocatedState, DraState
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo
from kubesched.plugins.dynamicresources import extended, postfilter, prebind
from kubesched.plugins.dynamicresources.args import DynamicResourcesArgs, dynamic_resources_args
from kubesched.plugins.dynamicresources.events import events_to_register
from kubesched.plugins.dynamicresources.lookup import ClaimProblem, pod_claims
from kubesched.plugins.dynamicresources.state import (
    FIRST_AVAILABLE_MAX_SIZE,
    NAME,
    RESERVED_FOR_MAX_SIZE,
    STATE_KEY,
    ClaimInfo,
    ClaimStore,
    DraCycleState,
    NodeAllocation,
    StateNotFound,
    claim_key,
    error,
    in_flight_copy,
    read_state,
    unresolvable,
)
from kubesched.plugins.dynamicresources.structured.allocator import Allocator
from kubesched.plugins.dynamicresources.structured.base import (
    AllocationError,
    AllocationTimeout,
    FailedAllocationOnNode,
    Features,
)
from kubesched.plugins.dynamicresources.structured.celenv import CelCache, selector_expressions
from kubesched.plugins.dynamicresources.structured.outcomes import OutcomeCache
from kubesched.plugins.dynamicresources.structured.pools import PoolCache, SelectorCache
from kubesched.plugins.helpers.args import raw_args
from kubesched.plugins.helpers.normalize import default_normalize_score

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

# Builds the allocator (tests inject a fake one).
AllocatorFactory = Callable[
    [Sequence[ResourceClaim], AllocatedState, Mapping[str, DeviceClass], Sequence[ResourceSlice]],
    Allocator,
]


class _SharedCachesAllocator:
    """Builds real allocators that share one CEL cache (compiled selectors and their
    results per device), one parsed-node-selector cache, one cache of the pools
    per node and one of the outcomes per node across scheduling cycles, as
    upstream's plugin keeps one celCache for its lifetime."""

    def __init__(self) -> None:
        self.cel_cache = CelCache(consumable_capacity=Features().consumable_capacity)
        self.selector_cache = SelectorCache()
        self.pool_cache = PoolCache()
        self.outcome_cache = OutcomeCache()

    def __call__(
        self,
        claims: Sequence[ResourceClaim],
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
    ) -> Allocator:
        return Allocator(
            claims,
            allocated,
            classes,
            slices,
            Features(),
            cel_cache=self.cel_cache,
            selector_cache=self.selector_cache,
            pool_cache=self.pool_cache,
            outcome_cache=self.outcome_cache,
        )


class DynamicResources(
    SignPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    NodeFilterPlugin,
    PostFilterPlugin,
    NodeScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
):
    """Args (DynamicResourcesArgs): `filterTimeout` (default 10s, 0 for none) and
    `bindingTimeout` (default 600s)."""

    name = NAME
    args_decoder = staticmethod(dynamic_resources_args)
    # The runner feeds DraState (claims, slices, classes) to profiles with this plugin,
    # as it does StorageState for uses_storage.
    uses_dra: ClassVar[bool] = True

    def __init__(
        self,
        args: Mapping[str, Any] | DynamicResourcesArgs | None = None,
        handle: Handle | None = None,
        allocator_factory: AllocatorFactory | None = None,
    ):
        super().__init__(raw_args(args), handle)
        self.dra_args = dynamic_resources_args(args)
        self.allocator_factory = (
            _SharedCachesAllocator() if allocator_factory is None else allocator_factory
        )
        if handle is not None and isinstance(self.allocator_factory, _SharedCachesAllocator):
            # Compile CEL selectors as their classes and claims arrive (the informers'
            # sync, in `run`), not in the first cycle that needs them: the first
            # compile loads the CEL library, about 0.5 s the scheduling cycle would
            # otherwise spend (seed47-078: a retry bound 0.5 s after kube-scheduler's).
            handle.dra.subscribe(self._compile_selectors)

    def _compile_selectors(self, event: ClusterEvent, _old: object, new: object) -> None:
        """Puts the CEL selectors of a DeviceClass or ResourceClaim that arrived into
        the shared cache (a bad one is cached with its error, for the cycle to report)."""
        if event.action == ActionType.DELETE:
            return
        assert isinstance(self.allocator_factory, _SharedCachesAllocator)
        cache = self.allocator_factory.cel_cache
        for expression in selector_expressions(new):
            cache.get_or_compile(expression)

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: a pod with ResourceClaims is not signable."""
        if pod.pod.spec.resource_claims:
            return not_signable("pods with dra resource claims are not signable")
        return (), Status.success()

    @property
    def dra(self) -> DraState:
        return self.handle.dra

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return events_to_register(self.dra)

    # --- PreEnqueue ------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        try:
            pod_claims(self.dra, pod.pod)
        except ClaimProblem as exc:
            return unresolvable(str(exc))
        return Status()

    # --- PreFilter -------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        # Written first, empty: PostFilter tells "no claims" from "never ran" by it.
        data = DraCycleState()
        state.write(STATE_KEY, data)
        if not pod.pod.spec.resource_claims and not self.dra.classes:
            # No claim, and no DeviceClass to back an extended resource: the claim
            # store below would be empty (the common pod, quickly).
            return None, Status.skip()
        try:
            user_claims = [claim for _, claim in pod_claims(self.dra, pod.pod)]
        except ClaimProblem as exc:
            return None, unresolvable(str(exc))
        special = self._pre_filter_extended(pod, data)
        store = ClaimStore([*user_claims, *([special] if special else [])], special is not None)
        if store.empty():
            return None, Status.skip()
        data.infos = [ClaimInfo() for _ in store.claims]
        to_allocate = 0
        for index, claim in store.all():
            allocation = claim.status.allocation
            if allocation is not None:
                reservable = len(claim.status.reserved_for) < RESERVED_FOR_MAX_SIZE
                if not reservable and not is_reserved_for_pod(pod.pod, claim):
                    return None, unresolvable("resourceclaim in use")
                if allocation.node_selector is not None:
                    try:
                        terms = parse_node_selector(allocation.node_selector)
                    except ValueError as exc:
                        return None, error(exc)
                    data.infos[index].available_on = terms
                continue
            to_allocate += 1
            if self.dra.claim_has_pending_allocation(claim_key(claim)):
                return None, unresolvable(
                    f"resource claim {claim.key} is in the process of being allocated"
                )
            if store.is_extended(index):
                continue  # no requests yet: Filter makes them per node
            status = self._check_requests(claim)
            if status is not None:
                return None, status
        data.allocated_indices = [
            index for index, claim in store.all() if claim.status.allocation is not None
        ]
        data.has_prioritized_list = any(
            request.first_available
            for claim in store.claims
            for request in claim.spec.devices.requests
        )
        if to_allocate:
            data.pending = [claim for _, claim in store.to_allocate()]
            data.allocator = self.allocator_factory(
                data.pending,
                self.dra.allocated_state(),
                self.dra.classes,
                self.dra.slice_list(),
            )
        data.claims = store
        return None, Status()

    def _pre_filter_extended(self, pod: PodInfo, data: DraCycleState) -> ResourceClaim | None:
        """preFilterExtendedResources: the special claim when the pod asks for an
        extended resource some device class backs."""
        requests = extended.backed_requests(pod.requests, self.dra.device_class_for)
        if not requests:
            return None
        data.extended_requests = requests
        data.resource_to_class = {
            name: found for name in requests if (found := self.dra.device_class_for(name))
        }
        claim = extended.find_extended_claim(pod.pod, self.dra.list_claims())
        if claim is None:
            claim = extended.in_memory_claim(pod.pod)
        data.initial_extended_key = claim_key(claim)
        return claim

    def _check_requests(self, claim: ResourceClaim) -> Status | None:
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                status = self._check_class(request.exactly.device_class_name, request.name)
            elif request.first_available:
                status = None
                for sub in request.first_available:
                    status = self._check_class(sub.device_class_name, f"{request.name}/{sub.name}")
                    if status is not None:
                        break
            else:
                status = unresolvable(
                    f"resource claim {claim.key}, request {request.name}: unknown request type"
                )
            if status is not None:
                return status
        return None

    def _check_class(self, class_name: str, request: str) -> Status | None:
        """validateDeviceClass."""
        if not class_name:
            return error(f"request {request}: unsupported request type")
        if class_name not in self.dra.classes:
            return unresolvable(f"request {request}: device class {class_name} does not exist")
        return None

    # --- Filter ----------------------------------------------------------------------

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the Node object (name, labels, allocatable) and the DRA
        # objects, which what-if changes to nodes' pods leave alone.
        return FilterScope.NODE

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        """Filter over many nodes: the cycle state read once, then each node as
        filter_node judges it; a pod without claims passes everywhere at once."""
        try:
            data = read_state(state)
        except StateNotFound as exc:
            return verdicts_per_node(self.name, (error(exc) for _ in rows), len(rows))
        if data.claims.empty():
            return NodeVerdicts.passing(len(rows))
        node_list = [nodes.node(row) for row in rows.tolist()]
        if data.allocator is not None and not (data.claims.has_extended or data.allocated_indices):
            statuses = self._filter_allocating(data, node_list)
            return verdicts_per_node(self.name, statuses, len(rows))
        statuses = (self._filter(data, pod, node) for node in node_list)
        return verdicts_per_node(self.name, statuses, len(rows))

    def _filter_allocating(self, data: DraCycleState, nodes: list[Node]) -> Iterator[Status | None]:
        """Filter for claims that all need an allocation (none allocated, no
        extended resources): each node's verdict is the allocator's, asked for all
        nodes in one go (Allocator.allocate_each), as _filter would ask per node."""
        allocator = data.allocator
        assert allocator is not None
        allocator.claims = data.pending
        wanted = len(data.pending)
        # Read only by verdicts_per_node: one Status serves every node it fits.
        cannot = unresolvable("cannot allocate all claims")
        outcomes = allocator.allocate_each(nodes, self.dra_args.filter_timeout)
        for node, outcome in zip(nodes, outcomes, strict=True):
            if isinstance(outcome, AllocationError):
                yield allocation_error_status(node, outcome)
            elif outcome is None or len(outcome) != wanted:
                yield cannot
            else:
                data.node_results[node.metadata.name] = outcome
                yield None

    def filter_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        try:
            data = read_state(state)
        except StateNotFound as exc:
            return error(exc)
        if data.claims.empty():
            return Status()
        return self._filter(data, pod, node_info.node) or Status()

    def _filter(self, data: DraCycleState, pod: PodInfo, node: Node) -> Status | None:
        """Filter on one node for a pod with claims; None: it fits."""
        node_claim: ResourceClaim | None = None
        mappings: list[ContainerExtendedResourceRequest] | None = None
        if data.claims.has_extended:
            node_claim, mappings, status = extended.filter_extended(data, pod.pod, node)
            if status is not None:
                return status
            if node_claim is None and data.claims.no_user_claim():
                return None
        unavailable = self._unavailable(data, node) if data.allocated_indices else None
        results: list[AllocationResult] | None = None
        if data.allocator is not None:
            claims = data.pending
            if node_claim is not None:
                special = data.claims.extended_claim()
                claims = [node_claim if claim is special else claim for claim in claims]
            data.allocator.claims = claims
            timeout = self.dra_args.filter_timeout
            deadline = time.monotonic() + timeout if timeout > 0 else None
            try:
                results = data.allocator.allocate(node, deadline=deadline)
            except AllocationError as exc:
                return allocation_error_status(node, exc)
            if results is None or len(results) != len(claims):
                return unresolvable("cannot allocate all claims")
        if unavailable:
            data.unavailable.update(unavailable)
            return unresolvable("resourceclaim not available on the node")
        if data.allocator is not None and results is not None:
            if node_claim is None and not mappings:
                data.node_results[node.metadata.name] = results
            else:
                data.node_allocations[node.metadata.name] = NodeAllocation(
                    results, node_claim, mappings if mappings is not None else ()
                )
        return None

    def _unavailable(self, data: DraCycleState, node: Node) -> list[int]:
        """The allocated claims the pod cannot use on `node`: their node selector
        does not match, their binding failed or timed out (only allocated claims
        have a node selector or binding state)."""
        unavailable: list[int] = []
        for index in data.allocated_indices:
            claim = data.claims.claims[index]
            terms = data.infos[index].available_on
            if terms is not None and not node_matches_terms(node, terms):
                unavailable.append(index)
                continue
            try:
                ready = prebind.claim_ready_for_binding(claim)
            except prebind.BindingFailed:
                unavailable.append(index)
                continue
            if not ready and prebind.claim_timed_out(claim, self.dra_args.binding_timeout):
                unavailable.append(index)
        return unavailable

    # --- PostFilter ------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        return postfilter.post_filter(self.handle, state, pod)

    # --- Score -----------------------------------------------------------------------

    def uniform_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> Uniform | None:
        """Nothing allocated (no claim, or none PreFilter/Filter worked on), or no
        prioritized list to score: Score is 0 everywhere, and so is its
        normalization."""
        data = state.get(STATE_KEY)
        if (
            not isinstance(data, DraCycleState)
            or not data.has_node_allocations()
            or not data.has_prioritized_list
        ):
            return (0, 0)
        return None

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        data = state.get(STATE_KEY)
        if (
            not isinstance(data, DraCycleState)
            or not data.has_node_allocations()
            or not data.has_prioritized_list
        ):
            # Nothing allocated, or no prioritized list to score: no preference.
            return np.zeros(len(rows), dtype=np.int64)
        return super().score(state, pod, nodes, rows)

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        data = read_state(state)
        found = data.node_allocation(node.name)
        if found is None:
            return 0
        return prioritized_list_score(data, found)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        default_normalize_score(100, False, scores)

    # --- Reserve ---------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        try:
            data = read_state(state)
        except StateNotFound as exc:
            return error(exc)
        pending = list(data.claims.to_allocate())
        if not pending or data.allocator is None:
            return Status()
        found = data.node_allocation(node_name)
        if found is None or not found.results:
            if all(data.claims.is_extended(index) for index, _ in pending):
                return Status()  # the node's device plugin serves the extended resources
            return error("claim allocation not found for node")
        if len(found.results) != len(pending):
            return error(
                f"internal error, have {len(found.results)} allocations, "
                f"{len(pending)} claims to allocate, want {len(pending)} claims"
            )
        for (index, claim), allocation in zip(pending, found.results, strict=True):
            data.infos[index].allocation = allocation
            if data.claims.is_extended(index) and found.extended_claim is not None:
                claim = found.extended_claim
            # The in-memory copy upstream also carries the finalizer PreBind will add.
            finalizers = list(claim.metadata.finalizers)
            if DELETE_PROTECTION_FINALIZER not in finalizers:
                finalizers.append(DELETE_PROTECTION_FINALIZER)
            allocated = msgspec.structs.replace(
                claim,
                metadata=msgspec.structs.replace(claim.metadata, finalizers=finalizers),
                status=msgspec.structs.replace(claim.status, allocation=allocation),
            )
            self.dra.signal_claim_pending_allocation(in_flight_copy(allocated))
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        prebind.unreserve(self.handle, state, pod)

    # --- PreBind ---------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return await prebind.pre_bind(self.handle, state, pod, node_name, self.dra_args)


def allocation_error_status(node: Node, exc: AllocationError) -> Status:
    """Filter's verdict when the allocator failed on `node`."""
    if isinstance(exc, AllocationTimeout):
        # A timeout is transient: an Error sends the pod to backoff (v1.36.3 Filter).
        return error(f"node {node.metadata.name}: timed out trying to allocate devices")
    if isinstance(exc, FailedAllocationOnNode):
        # This node only; the others may still work (ErrFailedAllocationOnNode).
        return unresolvable(str(exc))
    return error(exc)


def prioritized_list_score(data: DraCycleState, found: NodeAllocation) -> int:
    """Score: computeScore over all of the pod's claims."""
    return compute_score([claim for _, claim in data.claims.all()], found.results)


def compute_score(claims: Sequence[ResourceClaim], results: Sequence[AllocationResult]) -> int:
    """computeScore: for each prioritized list, the earlier the alternative that got
    devices, the more points (FirstAvailableDeviceRequestMaxSize - its index).

    As upstream, every claim counts: an allocated claim through its
    status.allocation, a claim to allocate through the next of Filter's results
    (which come in the order of the claims to allocate). So a claim allocated in an
    earlier cycle adds its points to every node that has results."""
    score = 0
    pending = iter(results)
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None:
            allocation = next(pending, None)
            if allocation is None:
                raise ValueError(
                    f"number of allocations {len(results)} is smaller than number of "
                    "claims needing allocation"
                )
        chosen = {r.request for r in allocation.devices.results if "/" in r.request}
        for request in claim.spec.devices.requests:
            if request.exactly is not None:
                continue
            for i, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in chosen:
                    score += FIRST_AVAILABLE_MAX_SIZE - i
    return score
