"""DraState: the Dynamic Resource Allocation objects the scheduler knows.

ResourceClaims, ResourceClaimTemplates, DeviceClasses and ResourceSlices, kept by
key and fed by informers (`kubesched run`) or by the manifests (`simulate`). It is
upstream's SharedDRAManager (dynamicresources/dra_manager.go) in one place:

- claims behind an assume cache: PreBind's API writes are assumed at once
  (AssumeClaimAfterAPICall), so the next pods see the allocation before the
  informer does; a stored object of a newer resourceVersion replaces the assumed one.
- in-flight allocations: between Reserve and the end of PreBind, a claim's
  allocation lives only here (SignalClaimPendingAllocation), and the devices it
  takes count as allocated for every other pod.
- the allocated state (GatherAllocatedState): every device some claim holds, with
  the capacity that shared devices have given away, kept up to date on every
  change of a claim as upstream's allocatedDevices (allocateddevices.go) is.

Every change is announced to subscribers as a ClusterEvent, as StorageState does.
The DynamicResources plugin's PreBind writes through `writer` (the API server in
`run`, this state itself in `simulate`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubesched.api.quantity import milli_value
from kubesched.api.resource import (
    DeviceClass,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from kubesched.framework.state.event_source import EventSource
from kubesched.framework.types import ActionType, Resource

# (driver, pool, device): a device's identity across slices (structured.DeviceID).
DeviceID = tuple[str, str, str]

# One tuple object per DeviceID, as sys.intern does for strings: the allocator's
# outcome cache compares a node's devices with the allocated ones in sets on every
# Filter, and a set look-up of the very object it holds is an identity check
# (equal tuples made apart are compared element by element). Only speed depends
# on it, so it is simply cleared when it grows past its bound.
_DEVICE_IDS: dict[DeviceID, DeviceID] = {}
_DEVICE_IDS_MAX = 1_000_000


def device_id(driver: str, pool: str, device: str) -> DeviceID:
    """The DeviceID (driver, pool, device), the same object every time."""
    key = (driver, pool, device)
    found = _DEVICE_IDS.get(key)
    if found is None:
        if len(_DEVICE_IDS) >= _DEVICE_IDS_MAX:
            _DEVICE_IDS.clear()
        _DEVICE_IDS[key] = found = key
    return found


class ClaimConflict(Exception):
    """The write was refused because the claim changed since it was read (HTTP 409)."""


class ClaimWriter(Protocol):
    """The API writes of DynamicResources' PreBind and Unreserve: on the API server in
    `kubesched run`, on this state in `simulate`. Each returns the stored result and
    raises ClaimConflict on a stale resourceVersion."""

    async def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim as stored now (a fresh GET, for a retry after a conflict)."""
        ...

    async def update_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """Update metadata and spec (the finalizer)."""
        ...

    async def update_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """Update the status subresource (allocation, reservedFor)."""
        ...

    async def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """Create the claim (metadata.generateName gives it its name): the special claim
        for a pod's DRA-backed extended resources (createExtendedResourceClaimInAPI)."""
        ...

    async def delete_claim(self, namespace: str, name: str) -> None:
        """Delete the claim; a claim that is gone already is not an error (deleteClaim's
        caller removes the finalizer first with update_claim)."""
        ...


@dataclass
class AllocatedState:
    """What is taken already (structured.AllocatedState)."""

    # Devices held whole by some claim (adminAccess allocations do not count).
    devices: set[DeviceID] = field(default_factory=set)
    # Shares of devices that allow multiple allocations: (device, shareID).
    shared: set[tuple[DeviceID, str]] = field(default_factory=set)
    # Capacity given away on shared devices: device -> capacity name -> milli-units.
    consumed_capacity: dict[DeviceID, dict[str, int]] = field(default_factory=dict)


# What one claim's allocation adds to the allocated state: whole devices, shares,
# and (device, capacity name, milli-units) consumed by shares.
_Contribution = tuple[
    tuple[DeviceID, ...], tuple[tuple[DeviceID, str], ...], tuple[tuple[DeviceID, str, int], ...]
]


def _contribution(claim: ResourceClaim) -> _Contribution | None:
    """foreachAllocatedDevice: what the claim's allocation takes (None: nothing)."""
    allocation = claim.status.allocation
    if allocation is None:
        return None
    devices: list[DeviceID] = []
    shared: list[tuple[DeviceID, str]] = []
    consumed: list[tuple[DeviceID, str, int]] = []
    for result in allocation.devices.results:
        if result.admin_access:
            # Admin access looks at a device without taking it (DRAAdminAccess).
            continue
        device = device_id(result.driver, result.pool, result.device)
        if result.share_id is None:
            devices.append(device)
            continue
        shared.append((device, result.share_id))
        for name, amount in result.consumed_capacity.items():
            consumed.append((device, name, milli_value(amount)))
    if not (devices or shared or consumed):
        return None
    return tuple(devices), tuple(shared), tuple(consumed)


class _AllocatedIndex:
    """The allocated state, updated per claim instead of rebuilt from every claim
    (upstream's allocatedDevices.addDevices/removeDevices). Counts, not sets: two
    claims may name one device (a stale informer view), and the device stays taken
    until both let go, so the index always equals a rebuild from the claims."""

    def __init__(self) -> None:
        self.devices: Counter[DeviceID] = Counter()
        # The keys of `devices` as a set: a snapshot copies it (a set copies faster
        # than a Counter's keys are gathered, and it is copied once per change).
        self.device_set: set[DeviceID] = set()
        self.shared: Counter[tuple[DeviceID, str]] = Counter()
        # Amounts per device and capacity name, and how many results name each
        # (a name stays in the state, maybe at 0, while some result names it).
        self.consumed: dict[DeviceID, dict[str, int]] = {}
        self.consumed_refs: Counter[tuple[DeviceID, str]] = Counter()
        # Results with consumed capacity per device (the device's entry exists then).
        self.consuming: Counter[DeviceID] = Counter()

    def add(self, contribution: _Contribution) -> None:
        devices, shared, consumed = contribution
        self.devices.update(devices)
        self.device_set.update(devices)
        self.shared.update(shared)
        for device, name, milli in consumed:
            amounts = self.consumed.setdefault(device, {})
            amounts[name] = amounts.get(name, 0) + milli
            self.consumed_refs[(device, name)] += 1
        self.consuming.update({device for device, _, _ in consumed})

    def remove(self, contribution: _Contribution) -> None:
        devices, shared, consumed = contribution
        for device in devices:
            if _count_down(self.devices, device):
                self.device_set.discard(device)
        for share in shared:
            _count_down(self.shared, share)
        for device, name, milli in consumed:
            amounts = self.consumed[device]
            amounts[name] -= milli
            if _count_down(self.consumed_refs, (device, name)):
                del amounts[name]
        for device in {device for device, _, _ in consumed}:
            if _count_down(self.consuming, device):
                del self.consumed[device]

    def snapshot(self) -> AllocatedState:
        """A copy for one scheduling cycle (allocatedDevices.Get clones likewise)."""
        return AllocatedState(
            devices=set(self.device_set),
            shared=set(self.shared),
            consumed_capacity={device: dict(amounts) for device, amounts in self.consumed.items()},
        )


def _count_down(counts: Counter[Any], key: Any) -> bool:
    """One holder less; True if that was the last (the key is gone then)."""
    left = counts[key] - 1
    if left > 0:
        counts[key] = left
        return False
    del counts[key]
    return True


def _version(claim: ResourceClaim) -> int:
    try:
        return int(claim.metadata.resource_version or 0)
    except ValueError:
        return 0


class DraState(EventSource):
    def __init__(self) -> None:
        super().__init__()
        self.claims: dict[str, ResourceClaim] = {}  # "namespace/name"
        self.templates: dict[str, ResourceClaimTemplate] = {}  # "namespace/name"
        self.classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, ResourceSlice] = {}
        # claim key -> the claim as PreBind wrote it, until the informer catches up
        self.assumed: dict[str, ResourceClaim] = {}
        # claim key -> the claim with the allocation Reserve made, until PreBind ends
        self.in_flight: dict[str, ResourceClaim] = {}
        # Set by whoever owns the cluster; None: PreBind cannot write claims.
        self.writer: ClaimWriter | None = None
        # Bumped on every change to slices (the allocator's device view) and to
        # allocations (the allocated state), so derived views are rebuilt lazily.
        self.slices_version = 0
        self.allocations_version = 0
        self._allocated: tuple[int, AllocatedState] | None = None
        self._slice_list: tuple[int, list[ResourceSlice]] | None = None
        # What each claim's counted allocation adds to _index (the claim in flight,
        # else the assume cache's view of the stored claim).
        self._index = _AllocatedIndex()
        self._counted: dict[str, _Contribution] = {}
        # The DeviceClassResolver, rebuilt when a class changes (classes_version).
        self.classes_version = 0
        self._resolver: tuple[int, dict[str, str]] | None = None

    def is_empty(self) -> bool:
        return not (self.claims or self.templates or self.classes or self.slices)

    def copy(self) -> DraState:
        """A state of its own holding the same objects (which nobody mutates)."""
        other = DraState()
        other.claims = dict(self.claims)
        other.templates = dict(self.templates)
        other.classes = dict(self.classes)
        other.slices = dict(self.slices)
        for key in other.claims:
            other._recount(key)
        return other

    # --- claims (behind the assume cache) -----------------------------------------

    def upsert_claim(self, claim: ResourceClaim) -> None:
        key = claim.key
        old = self.claim(key)
        # AssumeCache.add: a version no newer than the one seen (the informer bringing
        # back what PreBind wrote and assumed, or a resync) is no event: the assume
        # announced that change already.
        seen = old is not None and 0 < _version(claim) <= _version(old)
        self.claims[key] = claim
        assumed = self.assumed.get(key)
        if assumed is not None and _version(claim) >= _version(assumed):
            del self.assumed[key]
        self.allocations_version += 1
        self._recount(key)
        if seen:
            return
        self._emit(
            Resource.RESOURCE_CLAIM,
            ActionType.ADD if old is None else ActionType.UPDATE,
            old,
            self.claim(key),
        )

    def delete_claim(self, key: str) -> None:
        old = self.claims.pop(key, None)
        self.assumed.pop(key, None)
        if old is None:
            return
        self.allocations_version += 1
        self._recount(key)
        self._emit(Resource.RESOURCE_CLAIM, ActionType.DELETE, old, None)

    def claim(self, key: str) -> ResourceClaim | None:
        """The claim as the assume cache sees it (Get)."""
        return self.assumed.get(key) or self.claims.get(key)

    def list_claims(self) -> Iterator[ResourceClaim]:
        for key in self.claims:
            found = self.claim(key)
            if found is not None:
                yield found

    def assume_claim_after_api_call(self, claim: ResourceClaim) -> None:
        """PreBind wrote the claim: use what it wrote until the informer delivers it."""
        key = claim.key
        stored = self.claims.get(key)
        if stored is not None and _version(stored) >= _version(claim) > 0:
            return
        old = self.claim(key)
        self.assumed[key] = claim
        self.allocations_version += 1
        self._recount(key)
        # AssumeCache.Assume announces the change at once (pushEvent): pods waiting on
        # the claim (another pod sharing it, one waiting for its devices) hear of the
        # allocation now, not only when the informer brings it back.
        self._emit(Resource.RESOURCE_CLAIM, ActionType.UPDATE, old, claim)

    def assumed_claim_restore(self, key: str) -> None:
        """Drop the assumed version (the write failed or was undone)."""
        if self.assumed.pop(key, None) is not None:
            self.allocations_version += 1
            self._recount(key)

    # --- in-flight allocations -----------------------------------------------------

    def signal_claim_pending_allocation(self, claim: ResourceClaim) -> None:
        """Reserve allocated the claim; its devices are taken until PreBind ends."""
        self.in_flight[claim.key] = claim
        self.allocations_version += 1
        self._recount(claim.key)

    def remove_claim_pending_allocation(self, key: str) -> bool:
        """True if the claim was in flight."""
        if self.in_flight.pop(key, None) is None:
            return False
        self.allocations_version += 1
        self._recount(key)
        return True

    def claim_has_pending_allocation(self, key: str) -> bool:
        return key in self.in_flight

    def allocated_state(self) -> AllocatedState:
        """Every device that stored, assumed or in-flight allocations hold
        (GatherAllocatedState): a copy of the index, made once per change."""
        if self._allocated is not None and self._allocated[0] == self.allocations_version:
            return self._allocated[1]
        state = self._index.snapshot()
        self._allocated = (self.allocations_version, state)
        return state

    def _recount(self, key: str) -> None:
        """Bring the index up to date after `key`'s claim changed in the store, the
        assume cache or the in-flight map (upstream's allocatedDevices handlers and
        the in-flight allocations GatherAllocatedState merges)."""
        claim = self.in_flight.get(key)
        if claim is None and key in self.claims:
            claim = self.claim(key)
        new = _contribution(claim) if claim is not None else None
        old = self._counted.get(key)
        if new == old:
            return
        if old is not None:
            self._index.remove(old)
            del self._counted[key]
        if new is not None:
            self._index.add(new)
            self._counted[key] = new

    # --- templates, classes and slices -----------------------------------------------

    def upsert_template(self, template: ResourceClaimTemplate) -> None:
        self.templates[template.key] = template

    def delete_template(self, key: str) -> None:
        self.templates.pop(key, None)

    def upsert_class(self, device_class: DeviceClass) -> None:
        name = device_class.metadata.name
        old = self.classes.get(name)
        self.classes[name] = device_class
        self.classes_version += 1
        self._emit(
            Resource.DEVICE_CLASS,
            ActionType.ADD if old is None else ActionType.UPDATE,
            old,
            device_class,
        )

    def delete_class(self, name: str) -> None:
        old = self.classes.pop(name, None)
        if old is not None:
            self.classes_version += 1
            self._emit(Resource.DEVICE_CLASS, ActionType.DELETE, old, None)

    def device_class_for(self, resource_name: str) -> str | None:
        """DeviceClassResolver.GetDeviceClass: the class that backs an extended
        resource (explicitly through spec.extendedResourceName, or implicitly as
        deviceclass.resource.kubernetes.io/<class>), None when no class does."""
        if self._resolver is None or self._resolver[0] != self.classes_version:
            self._resolver = (
                self.classes_version,
                extended_resource_classes(self.classes.values()),
            )
        return self._resolver[1].get(resource_name)

    def upsert_slice(self, resource_slice: ResourceSlice) -> None:
        name = resource_slice.metadata.name
        old = self.slices.get(name)
        self.slices[name] = resource_slice
        self.slices_version += 1
        self._emit(
            Resource.RESOURCE_SLICE,
            ActionType.ADD if old is None else ActionType.UPDATE,
            old,
            resource_slice,
        )

    def slice_list(self) -> list[ResourceSlice]:
        """The ResourceSlices as a list, the same list object until a slice changes
        (made once per change, as allocated_state; nobody may change it)."""
        if self._slice_list is None or self._slice_list[0] != self.slices_version:
            self._slice_list = (self.slices_version, list(self.slices.values()))
        return self._slice_list[1]

    def delete_slice(self, name: str) -> None:
        old = self.slices.pop(name, None)
        if old is not None:
            self.slices_version += 1
            self._emit(Resource.RESOURCE_SLICE, ActionType.DELETE, old, None)


# resourceapi.ResourceDeviceClassPrefix: every class backs this implicit resource name.
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"


def extended_resource_classes(classes: Iterable[DeviceClass]) -> dict[str, str]:
    """extendedresourcecache.ExtendedResourceCache's resourceName2class: extended
    resource name -> device class name, built as its OnAdd builds it, with the
    classes added in name order (the order an informer's initial list has them).
    updateResourceName2class skips a class whose extendedResourceName another class
    already holds, unless it is newer (or as new with a smaller name); a skipped
    class does not get its implicit name either."""
    mapping: dict[str, DeviceClass] = {}
    for device_class in sorted(classes, key=lambda c: c.metadata.name):
        explicit = device_class.spec.extended_resource_name
        holder = mapping.get(explicit) if explicit else None
        if holder is not None:
            new_ts = device_class.metadata.creation_timestamp or ""
            old_ts = holder.metadata.creation_timestamp or ""
            if new_ts < old_ts or (
                new_ts == old_ts and device_class.metadata.name >= holder.metadata.name
            ):
                continue
        if explicit:
            mapping[explicit] = device_class
        mapping[DEVICE_CLASS_PREFIX + device_class.metadata.name] = device_class
    return {name: c.metadata.name for name, c in mapping.items()}
