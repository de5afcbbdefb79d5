"""DraState keeps the allocated state up to date claim by claim (as upstream's
allocatedDevices does); after any sequence of claim changes it must equal the
state rebuilt from every claim, the way GatherAllocatedState merges stored,
assumed and in-flight allocations."""

from __future__ import annotations

import random

import pytest

from kubesched.api.objects import ObjectMeta
from kubesched.api.quantity import milli_value
from kubesched.api.resource import (
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourceClaimStatus,
)
from kubesched.framework.state.dra import AllocatedState, DraState

KEYS = [f"ns/claim-{i}" for i in range(6)]
DEVICES = [("drv", "pool", f"dev-{i}") for i in range(5)]


def rebuilt(dra: DraState) -> AllocatedState:
    """The allocated state from scratch: in-flight claims first, then the assume
    cache's view of every stored claim not in flight."""
    state = AllocatedState()
    claims = list(dra.in_flight.values())
    claims += [c for c in dra.list_claims() if c.key not in dra.in_flight]
    for claim in claims:
        allocation = claim.status.allocation
        if allocation is None:
            continue
        for result in allocation.devices.results:
            device = (result.driver, result.pool, result.device)
            if result.admin_access:
                continue
            if result.share_id is None:
                state.devices.add(device)
                continue
            state.shared.add((device, result.share_id))
            if result.consumed_capacity:
                consumed = state.consumed_capacity.setdefault(device, {})
                for name, amount in result.consumed_capacity.items():
                    consumed[name] = consumed.get(name, 0) + milli_value(amount)
    return state


def random_result(rng: random.Random) -> DeviceRequestAllocationResult:
    driver, pool, device = rng.choice(DEVICES)
    kind = rng.random()
    result = DeviceRequestAllocationResult(request="r", driver=driver, pool=pool, device=device)
    if kind < 0.15:
        result.admin_access = True
    elif kind < 0.55:
        result.share_id = rng.choice(["s1", "s2", "s3"])
        names = rng.sample(["memory", "cores"], rng.randint(0, 2))
        result.consumed_capacity = {n: f"{rng.randint(0, 4)}Gi" for n in names}
    return result


def random_claim(rng: random.Random, key: str) -> ResourceClaim:
    namespace, name = key.split("/")
    status = ResourceClaimStatus()
    if rng.random() < 0.75:
        results = [random_result(rng) for _ in range(rng.randint(0, 3))]
        status.allocation = AllocationResult(devices=DeviceAllocationResult(results=results))
    return ResourceClaim(
        metadata=ObjectMeta(
            name=name, namespace=namespace, resource_version=str(rng.randint(0, 9))
        ),
        status=status,
    )


def random_step(rng: random.Random, dra: DraState) -> None:
    key = rng.choice(KEYS)
    op = rng.randrange(6)
    if op == 0:
        dra.upsert_claim(random_claim(rng, key))
    elif op == 1:
        dra.delete_claim(key)
    elif op == 2:
        dra.assume_claim_after_api_call(random_claim(rng, key))
    elif op == 3:
        dra.assumed_claim_restore(key)
    elif op == 4:
        dra.signal_claim_pending_allocation(random_claim(rng, key))
    else:
        dra.remove_claim_pending_allocation(key)


@pytest.mark.parametrize("seed", range(40))
def test_incremental_allocated_state_equals_rebuild(seed: int) -> None:
    rng = random.Random(seed)
    dra = DraState()
    for _ in range(150):
        random_step(rng, dra)
        assert dra.allocated_state() == rebuilt(dra)
    # A copy counts its (stored) claims afresh.
    other = dra.copy()
    assert other.allocated_state() == rebuilt(other)


def test_allocated_state_is_a_snapshot() -> None:
    """A cycle's allocator keeps the state it got while later claims change."""
    rng = random.Random(7)
    dra = DraState()
    dra.upsert_claim(random_claim(rng, KEYS[0]))
    before = dra.allocated_state()
    copied = AllocatedState(
        set(before.devices),
        set(before.shared),
        {d: dict(a) for d, a in before.consumed_capacity.items()},
    )
    for _ in range(50):
        random_step(rng, dra)
    assert before == copied
