"""One Allocate call: request validation and upstream's backtracking search
(allocator_incubating.go of v1.36: validateDeviceRequest, allocateOne,
isSelectable, selectorsMatch, allocateDevice, checkAvailableCounters)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from kubesched.api.quantity import parse_quantity
from kubesched.api.resource import (
    ALL,
    EXACT_COUNT,
    CapacityRequirements,
    Device,
    DeviceClass,
    DeviceSelector,
    DeviceTaint,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.framework.state.dra import DeviceID
from kubesched.plugins.dynamicresources.structured.base import (
    AllocationError,
    AllocationTimeout,
    claim_ref,
)
from kubesched.plugins.dynamicresources.structured.capacity import (
    CapacityError,
    Consumed,
    consumed_from_request,
    request_over_capacity_ok,
)
from kubesched.plugins.dynamicresources.structured.celenv import CelEvalError
from kubesched.plugins.dynamicresources.structured.constraints import (
    Constraint,
    DistinctAttributeConstraint,
    MatchAttributeConstraint,
)
from kubesched.plugins.dynamicresources.structured.pools import Pool, PoolError, node_matches

if TYPE_CHECKING:
    from kubesched.api.objects import Node
    from kubesched.plugins.dynamicresources.structured.allocator import Allocator

ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize


class _MaxSizeExceeded(Exception):
    """errAllocationResultMaxSizeExceeded."""


@dataclass(frozen=True, slots=True)
class Request:
    """requestAccessor: a request's exactly or one of its subrequests."""

    name: str
    device_class_name: str
    allocation_mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: tuple[DeviceSelector, ...]
    tolerations: tuple[DeviceToleration, ...]
    capacity: CapacityRequirements | None


@dataclass(slots=True)
class RequestData:
    request: Request
    parent: Request | None
    device_class: DeviceClass | None = None
    num_devices: int = 0
    selected_subrequest: int = 0
    all_devices: list[Candidate] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name


@dataclass(frozen=True, slots=True)
class Candidate:
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class ChosenDevice:
    """internalDeviceResult."""

    request: Request
    request_name: str
    device_id: DeviceID
    device: Device
    slice: ResourceSlice
    share_id: str | None
    consumed: Consumed


def _tolerates(toleration: DeviceToleration, taint: DeviceTaint) -> bool:
    """resourceclaim.ToleratesTaint."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def _taint_prevents(device: Device, request: Request) -> bool:
    """taintPreventsAllocation: NoSchedule and NoExecute taints must be tolerated."""
    return any(
        taint.effect in ("NoSchedule", "NoExecute")
        and not any(_tolerates(t, taint) for t in request.tolerations)
        for taint in device.taints
    )


class Search:
    def __init__(
        self, alloc: Allocator, node: Node, pools: list[Pool], deadline: float | None
    ) -> None:
        self.a = alloc
        self.features = alloc.features
        self.node = node
        self.pools = pools
        self.deadline = deadline
        self.claims = alloc.claims
        self.request_data: dict[tuple[int, int, int], RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.matches: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.allocating_devices: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, Consumed] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.result: list[list[ChosenDevice]] = [[] for _ in self.claims]

    def chosen_request(self, claim_index: int, request_index: int) -> RequestData:
        data = self.request_data[(claim_index, request_index, 0)]
        if data.parent is not None:
            return self.request_data[(claim_index, request_index, data.selected_subrequest)]
        return data

    # --- Allocate ----------------------------------------------------------------

    def run(self) -> bool:
        claims = tuple(self.claims)
        prepared = self.a.prepared
        if prepared is not None and _same_claims(prepared.claims, claims):
            for key, request, parent, device_class, num_devices in prepared.requests:
                self.request_data[key] = RequestData(request, parent, device_class, num_devices)
            self.constraints = [_constraints(claim) for claim in claims]
        else:
            self._prepare()
            if all(d.request.allocation_mode != ALL for d in self.request_data.values()):
                # The validation read nothing of the node (no pools: no "All"
                # request), so the next nodes of this cycle reuse it.
                self.a.prepared = Prepared(
                    claims,
                    [
                        (key, d.request, d.parent, d.device_class, d.num_devices)
                        for key, d in self.request_data.items()
                    ],
                )
        try:
            return self._allocate_one(0, 0, 0, 0, False, (0, 0, 0))
        except _MaxSizeExceeded:
            return False

    def _prepare(self) -> None:
        """Allocate's validation of every request (validateDeviceRequest) and
        constraint, before the search; raises AllocationError."""
        for ci, claim in enumerate(self.claims):
            min_devices = 0
            for ri, request in enumerate(claim.spec.devices.requests):
                ref = claim_ref(claim)
                if request.first_available and not self.features.prioritized_list:
                    raise AllocationError(
                        f"claim {ref}, request {request.name}: has subrequests, but the "
                        "DRAPrioritizedList feature is disabled"
                    )
                if not self.features.consumable_capacity:
                    if request.exactly is not None and request.exactly.capacity is not None:
                        raise AllocationError(
                            f"claim {ref}, request {request.name}: has capacity requests, "
                            "but the DRAConsumableCapacity feature is disabled"
                        )
                    for sub in request.first_available:
                        if sub.capacity is not None:
                            raise AllocationError(
                                f"claim {ref}, subrequest {sub.name}: has capacity requests, "
                                "but the DRAConsumableCapacity feature is disabled"
                            )
                if request.first_available:
                    parent = _exact(request.name, request.exactly)
                    least: int | None = None
                    for si, sub in enumerate(request.first_available):
                        data = self._validate(
                            Request(
                                sub.name,
                                sub.device_class_name,
                                sub.allocation_mode,
                                sub.count,
                                False,
                                False,
                                tuple(sub.selectors),
                                tuple(sub.tolerations),
                                sub.capacity,
                            ),
                            parent,
                            (ci, ri, si),
                        )
                        self.request_data[(ci, ri, si)] = data
                        least = data.num_devices if least is None else min(least, data.num_devices)
                    min_devices += least or 0
                else:
                    data = self._validate(_exact(request.name, request.exactly), None, (ci, ri, 0))
                    self.request_data[(ci, ri, 0)] = data
                    min_devices += data.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {claim_ref(claim)}: number of requested devices {min_devices} "
                    f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            self.constraints.append(_constraints(claim))

    def _validate(
        self, request: Request, parent: Request | None, key: tuple[int, int, int]
    ) -> RequestData:
        """validateDeviceRequest."""
        ref = claim_ref(self.claims[key[0]])
        data = RequestData(request, parent)
        for i, selector in enumerate(request.selectors):
            if selector.cel is None:
                raise AllocationError(
                    f"claim {ref}, request {request.name}, selector #{i}: CEL expression "
                    "empty (unsupported selector type?)"
                )
        if not self.features.admin_access and request.has_admin_access:
            raise AllocationError(
                f"claim {ref}, request {request.name}: admin access is requested, but the "
                "feature is disabled"
            )
        if not request.device_class_name:
            raise AllocationError(
                f"claim {ref}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.a.classes.get(request.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {ref}, request {request.name}: could not retrieve device class "
                f"{request.device_class_name}: deviceclass.resource.k8s.io "
                f'"{request.device_class_name}" not found'
            )
        data.device_class = device_class
        if request.allocation_mode == EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == ALL:
            for pool in self.pools:
                if pool.is_incomplete:
                    raise AllocationError(
                        f"claim {ref}, request {request.name}: asks for all devices, but "
                        f"resource pool {pool.pool_id} is currently being updated"
                    )
                if pool.is_invalid:
                    raise AllocationError(
                        f"claim {ref}, request {request.name}: asks for all devices, but "
                        f"resource pool {pool.pool_id} is currently invalid"
                    )
                for rs in pool.device_slices_targeting_node:
                    for device in rs.spec.devices:
                        if not self._selectable(key, data, rs, device):
                            continue
                        if self.features.consumable_capacity and not self._capacity_ok(
                            request, rs, device
                        ):
                            continue
                        device_id = (rs.spec.driver, rs.spec.pool.name, device.name)
                        data.all_devices.append(Candidate(device_id, device, rs, pool))
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {ref}, request {request.name}: unsupported count mode "
                f"{request.allocation_mode}"
            )
        return data

    # --- allocateOne ---------------------------------------------------------------

    def _allocate_one(
        self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int, int]
    ) -> bool:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise AllocationTimeout("filter operation aborted: context deadline exceeded")
        if ci >= len(self.claims):
            return True
        claim = self.claims[ci]
        if ri >= len(claim.spec.devices.requests):
            try:
                return self._allocate_one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except _MaxSizeExceeded:
                return False
        data = self.request_data[(ci, ri, si)]
        if not in_sub and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self.request_data:
                try:
                    success = self._allocate_one(ci, ri, sub, di, True, (0, 0, 0))
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if success:
                    data.selected_subrequest = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False
        request = data.request
        do_all = request.allocation_mode == ALL
        if do_all and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._allocate_one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if len(self.result[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded
        if do_all:
            ok, undo = self._allocate_device(ci, ri, si, data.all_devices[di], must=True)
            if not ok:
                return False
            try:
                done = self._allocate_one(ci, ri, si, di + 1, in_sub, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        key = (ci, ri, si)
        # deviceInUse inlined: most devices a search passes over are taken.
        allocated = self.a.allocated.devices
        allocating = self.allocating_devices
        admin_access = request.admin_access
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.is_incomplete or pool.is_invalid:
                continue
            slice_start = start[1] if pi == start[0] else 0
            slices = pool.device_slices_targeting_node
            pool_ids = pool.device_ids()
            for sli in range(slice_start, len(slices)):
                rs = slices[sli]
                dev_start = start[2] if (pi, sli) == start[:2] else 0
                devices = rs.spec.devices
                ids = pool_ids[sli]
                for dvi in range(dev_start, len(devices)):
                    device_id = ids[dvi]
                    if admin_access:
                        if ci in allocating.get(device_id, ()):
                            continue
                    elif device_id in allocated or allocating.get(device_id):
                        continue
                    device = devices[dvi]
                    if not self._selectable(key, data, rs, device):
                        continue
                    if self.features.consumable_capacity and not self._capacity_ok(
                        request, rs, device
                    ):
                        continue
                    candidate = Candidate(device_id, device, rs, pool)
                    ok, undo = self._allocate_device(ci, ri, si, candidate, must=False)
                    if not ok:
                        continue
                    try:
                        done = self._allocate_one(ci, ri, si, di + 1, in_sub, (pi, sli, dvi + 1))
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.devices or bool(self.allocating_devices.get(device_id))

    # --- isSelectable / selectorsMatch -----------------------------------------------

    def _selectable(
        self, key: tuple[int, int, int], data: RequestData, rs: ResourceSlice, device: Device
    ) -> bool:
        if not self.features.binding_conditions and device.binding_conditions:
            return False
        device_id = (rs.spec.driver, rs.spec.pool.name, device.name)
        match_key = (device_id, *key)
        cached = self.matches.get(match_key)
        if cached is not None:
            return cached
        result = True
        if (
            data.device_class is not None
            and not self._selectors_match(
                key[0], rs.spec.driver, device, data.device_class, data.device_class.spec.selectors
            )
        ) or not self._selectors_match(
            key[0], rs.spec.driver, device, None, data.request.selectors
        ):
            result = False
        elif rs.spec.per_device_node_selection:
            try:
                result = node_matches(
                    self.node,
                    device.node_name or "",
                    bool(device.all_nodes),
                    device.node_selector,
                    self.a.selector_cache,
                )
            except PoolError as e:
                raise AllocationError(str(e)) from e
        self.matches[match_key] = result
        return result

    def _selectors_match(
        self,
        ci: int,
        driver: str,
        device: Device,
        device_class: DeviceClass | None,
        selectors: list[DeviceSelector] | tuple[DeviceSelector, ...],
    ) -> bool:
        for i, selector in enumerate(selectors):
            assert selector.cel is not None
            owner = (
                f"class {device_class.metadata.name}"
                if device_class is not None
                else f"claim {claim_ref(self.claims[ci])}"
            )
            compiled = self.a.cel_cache.get_or_compile(selector.cel.expression)
            if compiled.error is not None:
                raise AllocationError(
                    f"{owner}: selector #{i}: CEL compile error: {compiled.error}"
                )
            try:
                if not self.a.cel_cache.device_matches(compiled, driver, device):
                    return False
            except CelEvalError as e:
                raise AllocationError(f"{owner}: selector #{i}: CEL runtime error: {e}") from e
        return True

    # --- capacity and counters ------------------------------------------------------

    def _capacity_ok(self, request: Request, rs: ResourceSlice, device: Device) -> bool:
        """CmpRequestOverCapacity; an error (unknown capacity) skips the device."""
        device_id = (rs.spec.driver, rs.spec.pool.name, device.name)
        consumed = self.a.consumed_capacity.get(device_id)
        allocating = self.allocating_capacity.get(device_id)
        if (
            not consumed
            and not allocating
            and (request.capacity is None or not request.capacity.requests)
            and not _has_request_policy(device)
        ):
            # The common case, decided without arithmetic: with no request and no
            # requestPolicy, calculateConsumedCapacity takes each capacity's whole
            # value, violatesPolicy(nil policy) is false, and nothing consumed or
            # being allocated is added to it, so value > value never holds and no
            # request can name a capacity the device lacks.
            return True
        try:
            return request_over_capacity_ok(
                consumed or {},
                request.capacity,
                device.capacity,
                allocating or {},
            )
        except CapacityError:
            return False

    def _available_counters(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        cached = self.a.available_counters.get(pool.name)
        if cached is not None:
            return cached
        available = {
            name: {c: parse_quantity(v.value) for c, v in cs.counters.items()}
            for name, cs in pool.counter_sets.items()
        }
        for slices in (pool.device_slices_targeting_node, pool.device_slices_not_targeting_node):
            for rs in slices:
                for device in rs.spec.devices:
                    if (rs.spec.driver, rs.spec.pool.name, device.name) not in (
                        self.a.allocated_for_counters
                    ):
                        continue
                    for consumption in device.consumes_counters:
                        counters = available.get(consumption.counter_set, {})
                        for name, c in consumption.counters.items():
                            if name in counters:
                                counters[name] -= parse_quantity(c.value)
        self.a.available_counters[pool.name] = available
        return available

    def _check_counters(self, candidate: Candidate) -> bool:
        """checkAvailableCounters: takes the device's counters if they fit."""
        available = self._available_counters(candidate.pool)
        consumed = self.consumed_counters.setdefault(candidate.pool.name, {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, c in consumption.counters.items():
                counters[name] = counters.get(name, Fraction(0)) + parse_quantity(c.value)
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if value < used.get(name, Fraction(0)):
                    self._release_counters(candidate)
                    return False
        return True

    def _release_counters(self, candidate: Candidate) -> None:
        """deallocateCountersForDevice."""
        consumed = self.consumed_counters.get(candidate.pool.name, {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, c in consumption.counters.items():
                counters[name] = counters.get(name, Fraction(0)) - parse_quantity(c.value)

    # --- allocateDevice ---------------------------------------------------------------

    def _allocate_device(
        self, ci: int, ri: int, si: int, candidate: Candidate, must: bool
    ) -> tuple[bool, Callable[[], None]]:
        """allocateDevice. Every mutation is recorded and undone in reverse order by
        rollbackDevice, both when a later check refuses the device (taint,
        constraint, capacity) and when the search backtracks past it."""
        data = self.request_data[(ci, ri, si)]
        request = data.request
        device, device_id = candidate.device, candidate.device_id
        multi = self.features.consumable_capacity and bool(device.allow_multiple_allocations)
        if not multi and request.admin_access and ci in self.allocating_devices.get(device_id, ()):
            return False, _noop
        if not request.admin_access and self._in_use(device_id):
            return False, _noop
        if not self.features.partitionable_devices and device.consumes_counters:
            return False, _noop
        # deviceCapacityInUse: a shared device whose counters an earlier share took.
        skip_counters = multi and (
            device_id in self.a.consumed_capacity or device_id in self.allocating_capacity
        )
        counters_reserved = False
        if not skip_counters and device.consumes_counters:
            if not self._check_counters(candidate):
                return False, _noop
            counters_reserved = True
        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name
        constraints = self.constraints[ci]
        # deviceRollbackState.
        constraints_added = 0
        device_marked = False
        capacity_inserted = False
        capacity_entry_existed = False
        result_added = False
        previous = len(self.result[ci])
        consumed: Consumed = {}

        def rollback() -> None:
            """rollbackDevice."""
            if result_added:
                del self.result[ci][previous:]
            if capacity_inserted:
                target = self.allocating_capacity.get(device_id)
                if target is not None:
                    # ConsumedCapacityCollection.Remove: the entry goes once empty...
                    for name, amount in consumed.items():
                        if name in target:
                            target[name] -= amount
                    if all(v == 0 for v in target.values()):
                        del self.allocating_capacity[device_id]
                if capacity_entry_existed:
                    # ...but an earlier share still marks the device as shared.
                    self.allocating_capacity.setdefault(device_id, {})
            if device_marked:
                self.allocating_devices[device_id].discard(ci)
            for i in range(constraints_added - 1, -1, -1):
                constraints[i].remove(base, sub, device, device_id)
            if counters_reserved:
                self._release_counters(candidate)

        if self.features.device_taints and device.taints and _taint_prevents(device, request):
            rollback()
            return False, _noop
        for constraint in constraints:
            if not constraint.add(base, sub, device, device_id):
                rollback()
                if must:
                    raise AllocationError(
                        f"claim {claim_ref(self.claims[ci])}, request {request.name}: cannot "
                        f"add device {'/'.join(device_id)} because a claim constraint would "
                        "not be satisfied"
                    )
                return False, _noop
            constraints_added += 1
        if not multi:
            self.allocating_devices.setdefault(device_id, set()).add(ci)
            device_marked = True
        share_id: str | None = None
        if self.features.consumable_capacity:
            if not self._capacity_ok(request, candidate.slice, device):
                rollback()
                return False, _noop
            if multi:
                consumed = consumed_from_request(request.capacity, device.capacity)
                share_id = self.a.share_ids()
                capacity_entry_existed = device_id in self.allocating_capacity
                target = self.allocating_capacity.setdefault(device_id, {})
                for name, amount in consumed.items():
                    target[name] = target.get(name, Fraction(0)) + amount
                capacity_inserted = True
        chosen = ChosenDevice(
            request, data.name, device_id, device, candidate.slice, share_id, consumed
        )
        self.result[ci].append(chosen)
        result_added = True
        return True, rollback


def _noop() -> None:
    pass


@dataclass(frozen=True, slots=True)
class Prepared:
    """The outcome of a successful validation for these claims (the very objects):
    per request key, the request, its parent, its class and its device count.
    An allocator keeps it for its next nodes (Allocate validates per node)."""

    claims: tuple[ResourceClaim, ...]
    requests: list[tuple[tuple[int, int, int], Request, Request | None, DeviceClass | None, int]]


def _same_claims(a: tuple[ResourceClaim, ...], b: tuple[ResourceClaim, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _constraints(claim: ResourceClaim) -> list[Constraint]:
    """The claim's constraints, fresh (they keep state during a search)."""
    constraints: list[Constraint] = []
    for i, c in enumerate(claim.spec.devices.constraints):
        if c.match_attribute is not None:
            constraints.append(MatchAttributeConstraint(c.requests, c.match_attribute))
        elif c.distinct_attribute is not None:
            constraints.append(DistinctAttributeConstraint(c.requests, c.distinct_attribute))
        else:
            raise AllocationError(
                f"claim {claim_ref(claim)}, constraint #{i}: empty constraint "
                "(unsupported constraint type?)"
            )
    return constraints


def _has_request_policy(device: Device) -> bool:
    return any(cap.request_policy is not None for cap in device.capacity.values())


def _exact(name: str, exactly: ExactDeviceRequest | None) -> Request:
    e = exactly if exactly is not None else ExactDeviceRequest()
    return Request(
        name,
        e.device_class_name,
        e.allocation_mode,
        e.count,
        bool(e.admin_access),
        e.admin_access is not None,
        tuple(e.selectors),
        tuple(e.tolerations),
        e.capacity,
    )
