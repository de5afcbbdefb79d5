"""Resource pools as the allocator sees them from one node (structured/internal/
incubating/pools_incubating.go of v1.36: GatherPools, buildPool, NodeMatches)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field

from kubesched.api.node_affinity import ParsedTerm, node_matches_terms, parse_node_selector
from kubesched.api.objects import Node, NodeSelector
from kubesched.api.resource import CounterSet, ResourceSlice
from kubesched.framework.state.dra import DeviceID, device_id

PoolID = tuple[str, str]  # (driver, pool)


class PoolError(Exception):
    """GatherPools failed (a node selector that does not parse)."""


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""
    device_slices_targeting_node: list[ResourceSlice] = field(default_factory=list)
    device_slices_not_targeting_node: list[ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, CounterSet] = field(default_factory=dict)
    # The DeviceIDs of device_slices_targeting_node, slice by slice (made once:
    # the search looks them up for every device it tries, and pools are cached).
    _device_ids: list[list[DeviceID]] | None = None

    @property
    def pool_id(self) -> str:
        """PoolID.String()."""
        return f"{self.driver}/{self.name}"

    def device_ids(self) -> list[list[DeviceID]]:
        if self._device_ids is None:
            self._device_ids = [
                [device_id(self.driver, self.name, device.name) for device in rs.spec.devices]
                for rs in self.device_slices_targeting_node
            ]
        return self._device_ids


class SelectorCache:
    """Parsed node selectors by identity of the selector object (held, so ids stay
    unique); a parse error is kept as its message."""

    def __init__(self) -> None:
        self._parsed: dict[int, tuple[NodeSelector, tuple[ParsedTerm, ...] | str]] = {}

    def parse(self, selector: NodeSelector) -> tuple[ParsedTerm, ...] | str:
        entry = self._parsed.get(id(selector))
        if entry is not None and entry[0] is selector:
            return entry[1]
        try:
            parsed: tuple[ParsedTerm, ...] | str = parse_node_selector(selector)
        except ValueError as e:
            parsed = str(e)
        self._parsed[id(selector)] = (selector, parsed)
        return parsed


class PoolCache:
    """GatherPools' result per node, kept across allocators (scheduling cycles)
    while the ResourceSlices are the very same objects in the same order and the
    node is the same Node object: the pools depend on nothing else, and nobody
    mutates these objects (an update stores a new one). Upstream rebuilds them
    per Allocate call; between two pods the slices rarely change, so this skips
    the per-node work for every pod but the first after a change.

    Pools are shared read-only by the allocators that get them."""

    def __init__(self) -> None:
        # The sequence last given to `use` (DraState.slice_list gives the same list
        # object while the slices stay the same) and a copy of its slices.
        self._source: Sequence[ResourceSlice] | None = None
        self._slices: list[ResourceSlice] = []
        self._partitionable = False
        self.on_node: dict[str, list[ResourceSlice]] = {}
        self.shared: list[ResourceSlice] = []
        self._by_node: dict[str, tuple[Node, list[Pool]]] = {}

    def use(self, slices: Sequence[ResourceSlice], partitionable_devices: bool) -> None:
        """Start over unless `slices` are what the cache was built from. Buckets the
        slices as NewAllocator does: node-local ones by node; the rest
        (network-attached, node selectors, per-device selection, counter sets)
        are looked at for every node. A list given here must not be changed in
        place afterwards (a changed list is a new list)."""
        if partitionable_devices == self._partitionable and (
            slices is self._source
            or (len(slices) == len(self._slices) and all(map(operator.is_, slices, self._slices)))
        ):
            self._source = slices
            return
        self._source = slices
        self._slices = list(slices)
        self._partitionable = partitionable_devices
        self._by_node = {}
        self.on_node = {}
        self.shared = []
        for rs in slices:
            if not rs.spec.node_name or rs.spec.shared_counters:
                self.shared.append(rs)
            else:
                self.on_node.setdefault(rs.spec.node_name, []).append(rs)

    def kept(self, node: Node) -> list[Pool] | None:
        """The pools made for this very Node object since the last change, if any."""
        cached = self._by_node.get(node.metadata.name)
        return cached[1] if cached is not None and cached[0] is node else None

    def pools(self, node: Node, selectors: SelectorCache) -> list[Pool]:
        """gather_pools for `node` over the slices of the last `use`; PoolError
        is raised afresh each time (not cached)."""
        name = node.metadata.name
        cached = self._by_node.get(name)
        if cached is not None and cached[0] is node:
            return cached[1]
        pools = gather_pools(
            self.on_node.get(name, []) + self.shared,
            node,
            self._partitionable,
            self._slices,
            selectors,
        )
        self._by_node[name] = (node, pools)
        return pools


def node_matches(
    node: Node,
    node_name: str,
    all_nodes: bool,
    node_selector: NodeSelector | None,
    selectors: SelectorCache,
) -> bool:
    """NodeMatches; raises PoolError for a selector that does not parse."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if node_selector is not None:
        parsed = selectors.parse(node_selector)
        if isinstance(parsed, str):
            raise PoolError(f"failed to parse node selector {node_selector}: {parsed}")
        return node_matches_terms(node, parsed)
    return False


def gather_pools(
    slices_for_node: Sequence[ResourceSlice],
    node: Node,
    partitionable_devices: bool,
    all_slices: Sequence[ResourceSlice],
    selectors: SelectorCache,
) -> list[Pool]:
    """GatherPools: the pools with devices usable from `node`, sorted by (driver,
    pool), the ones with binding conditions last. Out-dated slices are dropped;
    incomplete pools are kept as such (they make "All" requests fail) and invalid
    pools carry their reason."""
    pools: dict[PoolID, list[ResourceSlice]] = {}
    for rs in slices_for_node:
        spec = rs.spec
        if not partitionable_devices and (
            spec.per_device_node_selection is not None or spec.shared_counters
        ):
            continue
        relevant = False
        if spec.shared_counters:
            # Counter sets are needed to use the pool wherever its devices are.
            relevant = True
        elif spec.node_name or spec.all_nodes or spec.node_selector is not None:
            try:
                relevant = node_matches(
                    node, spec.node_name or "", bool(spec.all_nodes), spec.node_selector, selectors
                )
            except PoolError as e:
                raise PoolError(
                    f"failed to perform node selection for slice {rs.metadata.name}: {e}"
                ) from e
        elif spec.per_device_node_selection:
            for device in spec.devices:
                try:
                    match = node_matches(
                        node,
                        device.node_name or "",
                        bool(device.all_nodes),
                        device.node_selector,
                        selectors,
                    )
                except PoolError as e:
                    raise PoolError(
                        f"failed to perform node selection for device {device.name} "
                        f"in slice {rs.metadata.name}: {e}"
                    ) from e
                if match:
                    relevant = True
                    break
        else:
            # Some future way of node selection: not usable, other pools may be.
            continue
        if relevant:
            _add_slice(pools, rs)

    result: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for (driver, name), slices_for_pool in pools.items():
        wanted = slices_for_pool[0].spec.pool.resource_slice_count
        if len(slices_for_pool) == wanted:
            pool = _build_pool(driver, name, slices_for_pool, partitionable_devices, None)
        else:
            # Some slices may have been left out as irrelevant for this node.
            obsolete, all_for_pool = _check_slices_in_pool(
                all_slices, driver, name, slices_for_pool[0].spec.pool.generation
            )
            if obsolete:
                # A newer generation is being published: ignore this one.
                continue
            if len(all_for_pool) != wanted:
                result.append(Pool(driver, name, is_incomplete=True))
                continue
            pool = _build_pool(driver, name, slices_for_pool, partitionable_devices, all_for_pool)
        if _has_binding_conditions(pool):
            with_binding_conditions.append(pool)
        else:
            result.append(pool)
    # sortPoolsByID: first fit follows the drivers' and pools' names.
    result.sort(key=lambda p: (p.driver, p.name))
    with_binding_conditions.sort(key=lambda p: (p.driver, p.name))
    return result + with_binding_conditions


def _add_slice(pools: dict[PoolID, list[ResourceSlice]], rs: ResourceSlice) -> None:
    """addSlice: only the newest generation of a pool counts."""
    key = (rs.spec.driver, rs.spec.pool.name)
    current = pools.get(key)
    if current is None:
        pools[key] = [rs]
        return
    generation = current[0].spec.pool.generation
    if rs.spec.pool.generation < generation:
        return
    if rs.spec.pool.generation > generation:
        pools[key] = [rs]
        return
    current.append(rs)


def _build_pool(
    driver: str,
    name: str,
    slices: list[ResourceSlice],
    partitionable_devices: bool,
    all_slices_for_pool: list[ResourceSlice] | None,
) -> Pool:
    """buildPool: slices sorted by name; device names unique; counter sets and the
    counters devices consume (also on slices for other nodes) must exist."""
    slices.sort(key=lambda rs: rs.metadata.name)
    if partitionable_devices:
        counter_set_slices = [rs for rs in slices if rs.spec.shared_counters]
        device_slices = [rs for rs in slices if not rs.spec.shared_counters]
    else:
        counter_set_slices, device_slices = [], slices
    reason = _validate_device_names(device_slices)
    if reason:
        return Pool(driver, name, is_invalid=True, invalid_reason=reason)
    if not partitionable_devices:
        return Pool(driver, name, device_slices_targeting_node=device_slices)
    counter_sets: dict[str, CounterSet] = {}
    for rs in counter_set_slices:
        for counter_set in rs.spec.shared_counters:
            if counter_set.name in counter_sets:
                reason = f"duplicate counter set name {counter_set.name}"
                return Pool(driver, name, is_invalid=True, invalid_reason=reason)
            counter_sets[counter_set.name] = counter_set
    reason = _validate_counter_consumption(counter_sets, slices)
    if reason:
        return Pool(driver, name, is_invalid=True, invalid_reason=reason)
    if all_slices_for_pool is None or len(slices) == len(all_slices_for_pool):
        return Pool(
            driver, name, device_slices_targeting_node=device_slices, counter_sets=counter_sets
        )
    seen = {rs.metadata.name for rs in slices}
    others = [rs for rs in all_slices_for_pool if rs.metadata.name not in seen]
    reason = _validate_counter_consumption(counter_sets, others)
    if reason:
        return Pool(driver, name, is_invalid=True, invalid_reason=reason)
    return Pool(
        driver,
        name,
        device_slices_targeting_node=device_slices,
        device_slices_not_targeting_node=others,
        counter_sets=counter_sets,
    )


def _validate_device_names(slices: list[ResourceSlice]) -> str:
    names: set[str] = set()
    for rs in slices:
        for device in rs.spec.devices:
            if device.name in names:
                return f"duplicate device name {device.name}"
            names.add(device.name)
    return ""


def _validate_counter_consumption(
    counter_sets: dict[str, CounterSet], slices: list[ResourceSlice]
) -> str:
    for rs in slices:
        for device in rs.spec.devices:
            for consumption in device.consumes_counters:
                counter_set = counter_sets.get(consumption.counter_set)
                if counter_set is None:
                    return f"counter set {consumption.counter_set} not found"
                for counter in consumption.counters:
                    if counter not in counter_set.counters:
                        return f"counter {counter} not found in counter set {counter_set.name}"
    return ""


def _has_binding_conditions(pool: Pool) -> bool:
    return any(
        device.binding_conditions
        for rs in pool.device_slices_targeting_node
        for device in rs.spec.devices
    )


def _check_slices_in_pool(
    slices: Sequence[ResourceSlice], driver: str, name: str, generation: int
) -> tuple[bool, list[ResourceSlice]]:
    """checkSlicesInPool: (obsolete, the pool's slices of `generation`)."""
    found: list[ResourceSlice] = []
    for rs in slices:
        if rs.spec.driver != driver or rs.spec.pool.name != name:
            continue
        if rs.spec.pool.generation == generation:
            found.append(rs)
        elif rs.spec.pool.generation > generation:
            return True, []
    return False, found
