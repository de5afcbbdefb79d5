"""Allocator: finds devices for a pod's claims on one node (structured.Allocator).

Follows the "incubating" variant of k8s.io/dynamic-resource-allocation/structured
as of v1.36 (internal/incubating/allocator_incubating.go), the one NewAllocator
picks with v1.36's default feature gates (ConsumableCapacity and
DeviceBindingAndStatus are beyond "stable"; ListTypeAttributes, the only extra of
"experimental", is alpha and off). The search is upstream's allocateOne: claims,
requests and devices in order, pools sorted by (driver, pool), slices by name,
first solution wins.

THE INTERFACE (constructor, `allocate`, AllocationError) IS FIXED: the
DynamicResources plugin codes against it.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction

from kubesched.api.objects import Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm
from kubesched.api.resource import (
    AllocationResult,
    DeviceAllocationConfiguration,
    DeviceAllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.framework.state.dra import AllocatedState, DeviceID
from kubesched.plugins.dynamicresources.structured.base import (
    DEFAULT_FEATURES,
    AllocationError,
    FailedAllocationOnNode,
    Features,
    random_share_id,
)
from kubesched.plugins.dynamicresources.structured.capacity import Consumed, format_quantity
from kubesched.plugins.dynamicresources.structured.celenv import CelCache
from kubesched.plugins.dynamicresources.structured.outcomes import OutcomeCache, OutcomeContext
from kubesched.plugins.dynamicresources.structured.pools import (
    PoolCache,
    PoolError,
    SelectorCache,
)
from kubesched.plugins.dynamicresources.structured.search import ChosenDevice, Prepared, Search


class Allocator:
    """Built once per scheduling cycle of a pod (PreFilter) for the claims that need an
    allocation; `allocate` runs once per node (Filter). To change the claims
    between nodes, assign another list to `claims` (it is not re-read in place).

    Optional keywords: `cel_cache` (compiled selectors and per-device results; pass
    one shared across cycles), `share_ids` (makes shareIDs of devices that allow
    multiple allocations; default random UUIDs), `selector_cache` (parsed node
    selectors, may be shared likewise), `pool_cache` (the pools per node, may be
    shared likewise), `outcome_cache` (the outcome per node, kept across cycles
    while nothing it depends on changes; none by default)."""

    def __init__(
        self,
        claims: Sequence[ResourceClaim],
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        features: Features = DEFAULT_FEATURES,
        *,
        cel_cache: CelCache | None = None,
        share_ids: Callable[[], str] = random_share_id,
        selector_cache: SelectorCache | None = None,
        pool_cache: PoolCache | None = None,
        outcome_cache: OutcomeCache | None = None,
    ) -> None:
        self.claims = claims
        self.allocated = allocated
        self.classes = classes
        self.slices = slices
        self.features = features
        self.cel_cache = cel_cache or CelCache(consumable_capacity=features.consumable_capacity)
        self.share_ids = share_ids
        self.selector_cache = selector_cache or SelectorCache()
        # GatherPools per node, kept across cycles when the caller shares the cache.
        self.pool_cache = pool_cache or PoolCache()
        self.pool_cache.use(slices, features.partitionable_devices)
        self.outcome_cache = outcome_cache
        # `claims` as a tuple, remade when another list is assigned to it.
        self._claims_list: Sequence[ResourceClaim] | None = None
        self._claims: tuple[ResourceClaim, ...] = ()
        # The claims the outcome cache's context was last set for, and the classes
        # they name as they were then (a class replaced since is a new context).
        self._context_claims: tuple[ResourceClaim, ...] | None = None
        self._context_classes: tuple[tuple[str, DeviceClass | None], ...] = ()
        # The claims that found no devices on a node that sees no slice at all:
        # GatherPools gives every such node no pools, so the search's outcome is the
        # same on all of them (nothing of the node is read without devices), and
        # the next such node is answered without searching again. Only that
        # outcome is kept: errors and (zero-device) results are made afresh.
        self._fails_without_slices: tuple[ResourceClaim, ...] | None = None
        # The requests as validated for the claims, kept by the search for the next
        # nodes when the validation read nothing of the node.
        self.prepared: Prepared | None = None
        # Devices that count as allocated for counters (IsDeviceAllocated), made
        # when a search first looks at counters.
        self._allocated_for_counters: set[DeviceID] | None = None
        # Counters left per pool *name* after completed allocations (as upstream,
        # keyed by the pool's name only), computed once per pool.
        self.available_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        # Capacity consumed by completed allocations, as Fractions.
        self.consumed_capacity: dict[DeviceID, Consumed] = {
            device: {name: Fraction(milli, 1000) for name, milli in amounts.items()}
            for device, amounts in allocated.consumed_capacity.items()
        }

    @property
    def allocated_for_counters(self) -> set[DeviceID]:
        """Devices that count as allocated for counters (IsDeviceAllocated): held
        whole, shared or with consumed capacity."""
        if self._allocated_for_counters is None:
            allocated = self.allocated
            self._allocated_for_counters = (
                set(allocated.devices)
                | {device for device, _ in allocated.shared}
                | set(allocated.consumed_capacity)
            )
        return self._allocated_for_counters

    def allocate(
        self, node: Node, *, deadline: float | None = None
    ) -> list[AllocationResult] | None:
        """One AllocationResult per claim, in the claims' order, for devices usable on
        `node`; None when they do not all fit there (upstream: nil, nil). With an
        outcome cache, the list may be one given out before: do not change it. Raises
        AllocationError for the other failures (FailedAllocationOnNode for those of
        this node only). `deadline` (time.monotonic()) aborts a long search as a
        cancelled context does upstream."""
        no_slices = not self.pool_cache.shared and node.metadata.name not in self.pool_cache.on_node
        claims = self._current_claims()
        if no_slices and _same(self._fails_without_slices, claims):
            return None
        try:
            pools = self.pool_cache.pools(node, self.selector_cache)
        except PoolError as e:
            raise AllocationError(f"gather pool information: {e}") from e
        outcomes = self.outcome_cache
        if outcomes is not None:
            self._use_context(outcomes, claims)
            kept = outcomes.get(node, pools, self.allocated)
            if kept is not None:
                return kept.outcome
        search = Search(self, node, pools, deadline)
        if not search.run():
            # Invalid pools only count when nothing could be allocated.
            if any(pool.is_invalid for pool in pools):
                raise FailedAllocationOnNode("invalid resource pools were encountered")
            if no_slices:
                self._fails_without_slices = claims
            if outcomes is not None:
                outcomes.put(node, pools, self.allocated, None)
            return None
        results = [self._result(search, i, claim, node) for i, claim in enumerate(claims)]
        if outcomes is not None:
            outcomes.put(node, pools, self.allocated, results)
        return results

    def allocate_each(
        self, nodes: Sequence[Node], timeout: float
    ) -> Iterator[list[AllocationResult] | AllocationError | None]:
        """`allocate` for each node in turn, an error given back instead of raised;
        each search gets `timeout` seconds from its start (0: no deadline), as each
        Filter call gets filterTimeout upstream. With an outcome cache, the nodes
        whose outcome is kept are answered in one loop (the claims and classes do
        not change while it runs: nothing else runs in between)."""
        outcomes = self.outcome_cache
        if outcomes is not None:
            self._use_context(outcomes, self._current_claims())
        kept_pools = self.pool_cache.kept
        allocated = self.allocated
        for node in nodes:
            if outcomes is not None:
                pools = kept_pools(node)
                kept = outcomes.get(node, pools, allocated) if pools is not None else None
                if kept is not None:
                    yield kept.outcome
                    continue
            deadline = time.monotonic() + timeout if timeout > 0 else None
            try:
                yield self.allocate(node, deadline=deadline)
            except AllocationError as e:
                yield e

    def _current_claims(self) -> tuple[ResourceClaim, ...]:
        """`claims` as a tuple, made again when another list was assigned (the
        plugin swaps the special claim per node); else the same tuple for every
        node of a cycle."""
        if self.claims is not self._claims_list:
            self._claims_list = self.claims
            self._claims = tuple(self.claims)
        return self._claims

    def _use_context(self, outcomes: OutcomeCache, claims: tuple[ResourceClaim, ...]) -> None:
        """Point the outcome cache at these claims' context: checked once per claims
        (the plugin swaps the special claim per node) and again when one of the
        classes they name was replaced."""
        if self._context_claims is claims or _same(self._context_claims, claims):
            for name, found in self._context_classes:
                if self.classes.get(name) is not found:
                    break
            else:
                return
        names = dict.fromkeys(
            name
            for claim in claims
            for request in claim.spec.devices.requests
            for name in ([request.exactly.device_class_name] if request.exactly is not None else [])
            + [sub.device_class_name for sub in request.first_available]
        )
        self._context_claims = claims
        self._context_classes = tuple((name, self.classes.get(name)) for name in names)
        outcomes.use(
            OutcomeContext(
                tuple(claim.spec for claim in claims), self._context_classes, self.features
            )
        )

    # --- results -------------------------------------------------------------------

    def _result(
        self, search: Search, claim_index: int, claim: ResourceClaim, node: Node
    ) -> AllocationResult:
        results: list[DeviceRequestAllocationResult] = []
        for chosen in search.result[claim_index]:
            request = chosen.request
            item = DeviceRequestAllocationResult(
                request=chosen.request_name,
                driver=chosen.device_id[0],
                pool=chosen.device_id[1],
                device=chosen.device_id[2],
                admin_access=True if request.admin_access else None,
                tolerations=list(request.tolerations),
                share_id=chosen.share_id,
                consumed_capacity={
                    name: format_quantity(amount) for name, amount in chosen.consumed.items()
                },
            )
            if self.features.binding_conditions:
                item.binding_conditions = list(chosen.device.binding_conditions)
                item.binding_failure_conditions = list(chosen.device.binding_failure_conditions)
            results.append(item)
        config = self._config(search, claim_index, claim)
        try:
            node_selector = _node_selector(search.result[claim_index], node.metadata.name)
        except ValueError as e:
            raise AllocationError(
                f"create NodeSelector for claim {claim.metadata.name}: {e}"
            ) from e
        return AllocationResult(
            devices=DeviceAllocationResult(results=results, config=config),
            node_selector=node_selector,
        )

    def _config(
        self, search: Search, claim_index: int, claim: ResourceClaim
    ) -> list[DeviceAllocationConfiguration]:
        """Class configs once per class (naming every request using it), then the
        claim's configs that apply to the requests or chosen subrequests (as
        upstream, a claim config is added once per request it names)."""
        config: list[DeviceAllocationConfiguration] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        requests = claim.spec.devices.requests
        for request_index in range(len(requests)):
            data = search.chosen_request(claim_index, request_index)
            device_class = data.device_class
            if device_class is None:
                continue
            name = device_class.metadata.name
            if name in class_ranges:
                start, end = class_ranges[name]
                for i in range(start, end):
                    config[i].requests.append(data.name)
                continue
            start = len(config)
            for class_config in device_class.spec.config:
                config.append(
                    DeviceAllocationConfiguration(
                        source="FromClass", requests=[data.name], opaque=class_config.opaque
                    )
                )
            class_ranges[name] = (start, len(config))
        for claim_config in claim.spec.devices.config:
            if not claim_config.requests:
                config.append(
                    DeviceAllocationConfiguration(source="FromClaim", opaque=claim_config.opaque)
                )
                continue
            for request_index, request in enumerate(requests):
                if request.name in claim_config.requests:
                    config.append(
                        DeviceAllocationConfiguration(
                            source="FromClaim",
                            requests=list(claim_config.requests),
                            opaque=claim_config.opaque,
                        )
                    )
                    continue
                data = search.chosen_request(claim_index, request_index)
                if data.parent is None:
                    continue
                if data.name in claim_config.requests:
                    config.append(
                        DeviceAllocationConfiguration(
                            source="FromClaim",
                            requests=list(claim_config.requests),
                            opaque=claim_config.opaque,
                        )
                    )
        return config


def _same(a: tuple[ResourceClaim, ...] | None, b: tuple[ResourceClaim, ...]) -> bool:
    return a is not None and len(a) == len(b) and all(map(operator.is_, a, b))


def _node_selector(chosen: Sequence[ChosenDevice], node_name: str) -> NodeSelector | None:
    """createNodeSelector: pinned to the node when any device is node-local or binds
    to the node; else the one-term node selectors of the slices (or devices, with
    per-device node selection) merged; None when available everywhere."""
    fields: list[NodeSelectorRequirement] = []
    expressions: list[NodeSelectorRequirement] = []
    for device in chosen:
        spec = device.slice.spec
        if spec.per_device_node_selection:
            name, selector = device.device.node_name, device.device.node_selector
        else:
            name, selector = spec.node_name, spec.node_selector
        if name is not None or device.device.binds_to_node:
            return NodeSelector(
                node_selector_terms=[
                    NodeSelectorTerm(
                        match_fields=[
                            NodeSelectorRequirement(
                                key="metadata.name", operator="In", values=[node_name]
                            )
                        ]
                    )
                ]
            )
        if selector is not None:
            terms = selector.node_selector_terms
            if len(terms) == 1:
                _add_requirements(terms[0].match_fields, fields)
                _add_requirements(terms[0].match_expressions, expressions)
            elif len(terms) > 1:
                raise ValueError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
    if fields or expressions:
        return NodeSelector(
            node_selector_terms=[
                NodeSelectorTerm(match_expressions=expressions, match_fields=fields)
            ]
        )
    return None


def _add_requirements(
    source: Sequence[NodeSelectorRequirement], into: list[NodeSelectorRequirement]
) -> None:
    """addNewNodeSelectorRequirements: skip requirements present already (same key,
    operator and set of values)."""
    for req in source:
        if not any(
            r.key == req.key and r.operator == req.operator and set(r.values) == set(req.values)
            for r in into
        ):
            into.append(req)


__all__ = ["AllocationError", "Allocator", "FailedAllocationOnNode", "Features"]
