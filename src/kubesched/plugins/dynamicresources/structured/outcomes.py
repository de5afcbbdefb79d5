"""Allocate's outcome per node, kept across scheduling cycles (kubesched's addition).

Upstream's Filter runs the allocator's search on every node for every pod
(dynamicresources.go Filter -> allocator.Allocate). Between two pods that claim
devices the same way (claims made from one ResourceClaimTemplate), the search on
a node only gives another answer if something it reads has changed, and mostly
nothing has: one node got the previous pod's devices, the others did not. So the
outcome (the AllocationResults, or "does not fit") is kept per node together with
everything it depends on, and given back while all of that is unchanged:

- the claims' specs (equal, not the same objects: every pod has its own claims)
  and the DeviceClasses they name, and the feature switches (the context: a
  new context drops every entry);
- the Node object and the pools it sees (PoolCache gives the same list object
  while the slices and the node are the same objects);
- which of those pools' devices are allocated.

Only pools whose devices are taken whole are kept: no counter sets, no devices
that consume counters or allow multiple allocations (their shares get random
IDs and their capacity is counted across claims), no pools with slices beyond
the node's. Errors are never kept (the next call raises them afresh); the
results (list and AllocationResults) are shared read-only, as every API object
here is.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubesched.api.objects import Node
from kubesched.api.resource import AllocationResult, DeviceClass, ResourceClaimSpec
from kubesched.framework.state.dra import AllocatedState, DeviceID
from kubesched.plugins.dynamicresources.structured.base import Features
from kubesched.plugins.dynamicresources.structured.pools import Pool

Outcome = list[AllocationResult] | None


@dataclass(frozen=True, slots=True)
class OutcomeContext:
    """What every outcome depends on besides the node: the claims' specs in order,
    each class they name (None: missing) and the feature switches."""

    specs: tuple[ResourceClaimSpec, ...]
    classes: tuple[tuple[str, DeviceClass | None], ...]
    features: Features


@dataclass(slots=True)
class _Entry:
    node: Node
    pools: list[Pool]
    # The devices of the node's pools (None: the pools are not kept, see above).
    device_ids: frozenset[DeviceID] | None
    # Which of them were allocated when the outcome was made, and which were not.
    taken: frozenset[DeviceID] = frozenset()
    free: frozenset[DeviceID] = frozenset()
    outcome: Outcome = None
    has_outcome: bool = False


class OutcomeCache:
    """Outcomes by node name for one context at a time; share one across allocators
    (the DynamicResources plugin keeps one for its lifetime). Lookups allocate
    nothing: Filter makes one per node, and every object made there brings the
    next garbage collection closer."""

    def __init__(self, max_nodes: int = 100_000) -> None:
        self.max_nodes = max_nodes
        self.context: OutcomeContext | None = None
        self._entries: dict[str, _Entry] = {}

    def use(self, context: OutcomeContext) -> None:
        """Switch to `context`; the outcomes of another one are dropped."""
        if context != self.context:
            self.context = context
            self._entries = {}

    def get(self, node: Node, pools: list[Pool], allocated: AllocatedState) -> _Entry | None:
        """The entry whose `outcome` holds for this node, pools and allocated devices
        (the results list is shared: read it, do not change it); None otherwise."""
        entry = self._entries.get(node.metadata.name)
        # has_outcome implies device_ids (put keeps nothing for other pools).
        if (
            entry is None
            or not entry.has_outcome
            or entry.node is not node
            or entry.pools is not pools
        ):
            return None
        devices = allocated.devices
        if not (entry.taken <= devices and entry.free.isdisjoint(devices)):
            return None
        if allocated.consumed_capacity and _consumes_capacity(entry.device_ids, allocated):
            return None
        return entry

    def put(
        self, node: Node, pools: list[Pool], allocated: AllocatedState, outcome: Outcome
    ) -> None:
        """Keep the outcome of a search on `node` in the current context."""
        name = node.metadata.name
        entry = self._entries.get(name)
        if entry is None or entry.node is not node or entry.pools is not pools:
            if len(self._entries) >= self.max_nodes:
                self._entries = {}
            entry = _Entry(node, pools, _cacheable_device_ids(pools))
            self._entries[name] = entry
        device_ids = entry.device_ids
        if device_ids is None or _consumes_capacity(device_ids, allocated):
            entry.has_outcome = False
            return
        entry.taken = device_ids & allocated.devices
        entry.free = device_ids - entry.taken
        entry.outcome = outcome
        entry.has_outcome = True


def _consumes_capacity(device_ids: frozenset[DeviceID] | None, allocated: AllocatedState) -> bool:
    """Whether capacity was consumed on one of the devices: only shares consume
    capacity, and pools with shareable devices are not kept, but a stale
    allocation may still name one."""
    consumed = allocated.consumed_capacity
    return bool(consumed) and any(device in consumed for device in device_ids or ())


def _cacheable_device_ids(pools: list[Pool]) -> frozenset[DeviceID] | None:
    ids: list[DeviceID] = []
    for pool in pools:
        if pool.counter_sets or pool.device_slices_not_targeting_node:
            return None
        for rs, slice_ids in zip(pool.device_slices_targeting_node, pool.device_ids(), strict=True):
            for device in rs.spec.devices:
                if device.allow_multiple_allocations or device.consumes_counters:
                    return None
            ids.extend(slice_ids)
    return frozenset(ids)
