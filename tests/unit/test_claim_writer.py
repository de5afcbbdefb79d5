"""The in-memory API server for ResourceClaims (InMemoryClaimWriter) and the
resourceclaim controller's part when pods go (ResourceClaimController)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from kubesched.api.objects import ObjectMeta, OwnerReference, Pod
from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaim,
    ResourceClaimStatus,
    pod_consumer,
)
from kubesched.framework.state.dra import ClaimConflict, DraState
from kubesched.framework.types import ActionType, ClusterEvent
from kubesched.simulation.claim_controller import ResourceClaimController
from kubesched.simulation.claim_writer import ClaimInvalid, InMemoryClaimWriter
from kubesched.simulation.memory import InMemoryCluster

ALLOCATION = AllocationResult(
    devices=DeviceAllocationResult(
        results=[DeviceRequestAllocationResult(request="gpu", driver="d", pool="p", device="g0")]
    )
)


def pod(name: str) -> Pod:
    return Pod(metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}"))


def claim(name: str, owner: Pod | None = None, version: str = "5") -> ResourceClaim:
    refs = []
    if owner is not None:
        ref = OwnerReference(
            api_version="v1", kind="Pod", name=owner.metadata.name, uid=owner.metadata.uid
        )
        ref.controller = True
        refs.append(ref)
    return ResourceClaim(
        metadata=ObjectMeta(
            name=name,
            namespace="ns",
            uid=f"uid-{name}",
            resource_version=version,
            owner_references=refs,
        )
    )


def allocated(c: ResourceClaim, *pods: Pod) -> ResourceClaim:
    """The claim as PreBind leaves it: finalizer, allocation, reservations."""
    meta = msgspec.structs.replace(c.metadata, finalizers=[DELETE_PROTECTION_FINALIZER])
    status = ResourceClaimStatus(
        allocation=ALLOCATION, reserved_for=[pod_consumer(p) for p in pods]
    )
    return msgspec.structs.replace(c, metadata=meta, status=status)


def state_with(
    *claims: ResourceClaim,
) -> tuple[DraState, list[tuple[ClusterEvent, object, object]]]:
    state = DraState()
    for c in claims:
        state.upsert_claim(c)
    events: list[tuple[ClusterEvent, object, object]] = []
    state.subscribe(lambda event, old, new: events.append((event, old, new)))
    return state, events


def test_writes_get_new_versions_and_reach_subscribers() -> None:
    state, events = state_with(claim("c"))
    writer = InMemoryClaimWriter(state)
    stored = asyncio.run(writer.get_claim("ns", "c"))
    assert stored is not None
    meta = msgspec.structs.replace(stored.metadata, finalizers=[DELETE_PROTECTION_FINALIZER])
    with_finalizer = asyncio.run(
        writer.update_claim(msgspec.structs.replace(stored, metadata=meta))
    )
    assert with_finalizer.metadata.resource_version == "6"
    status = ResourceClaimStatus(allocation=ALLOCATION, reserved_for=[pod_consumer(pod("a"))])
    written = asyncio.run(
        writer.update_claim_status(msgspec.structs.replace(with_finalizer, status=status))
    )
    assert written.metadata.resource_version == "7"
    assert written.metadata.finalizers == [DELETE_PROTECTION_FINALIZER]
    assert state.claims["ns/c"] == written
    assert [e.action for e, _, _ in events] == [ActionType.UPDATE, ActionType.UPDATE]


def test_stale_write_is_a_conflict_and_changes_nothing() -> None:
    state, events = state_with(claim("c"))
    writer = InMemoryClaimWriter(state)
    stale = claim("c", version="4")
    status = ResourceClaimStatus(allocation=ALLOCATION)
    with pytest.raises(ClaimConflict, match="the object has been modified"):
        asyncio.run(writer.update_claim_status(msgspec.structs.replace(stale, status=status)))
    with pytest.raises(ClaimConflict):
        asyncio.run(writer.update_claim(stale))
    assert state.claims["ns/c"].metadata.resource_version == "5" and events == []
    # No resourceVersion: an unconditional update, as the API allows for claims.
    unconditional = claim("c", version="")
    written = writer.put_status(msgspec.structs.replace(unconditional, status=status))
    assert written.status.allocation == ALLOCATION


def test_update_of_claim_keeps_stored_status_and_status_update_keeps_metadata() -> None:
    a = pod("a")
    state, _ = state_with(allocated(claim("c"), a))
    writer = InMemoryClaimWriter(state)
    bare = claim("c")  # no status, no finalizer
    written = writer.put(
        msgspec.structs.replace(
            bare, metadata=msgspec.structs.replace(bare.metadata, labels={"x": "y"})
        )
    )
    assert written.status.reserved_for == [pod_consumer(a)]
    assert written.metadata.labels == {"x": "y"}
    written = writer.put_status(msgspec.structs.replace(written, status=ResourceClaimStatus()))
    assert written.metadata.labels == {"x": "y"}
    assert written.status.allocation is None


def test_status_validation() -> None:
    state, _ = state_with(claim("c"))
    writer = InMemoryClaimWriter(state)
    reserved = ResourceClaimStatus(reserved_for=[pod_consumer(pod("a"))])
    with pytest.raises(ClaimInvalid, match="may not be specified when `allocated` is not set"):
        writer.put_status(msgspec.structs.replace(claim("c"), status=reserved))


def test_deleting_pod_releases_and_deletes_its_generated_claim() -> None:
    a = pod("a")
    state, events = state_with(allocated(claim("a-gpu-xyz12", owner=a), a))
    cluster = InMemoryCluster(pods={a.key: a})
    writer = InMemoryClaimWriter(state)
    cluster.watchers.append(
        ResourceClaimController(writer, cluster.pods, lambda: "2026-01-01T00:00:00Z")
    )
    asyncio.run(cluster.delete_pod(a, "preempted"))
    assert state.claims == {}
    assert state.allocated_state().devices == set()
    kinds = [(e.action, getattr(new, "status", None)) for e, _, new in events]
    # Marked for deletion, then released (no reservation, no allocation), then gone.
    assert [k for k, _ in kinds] == [
        ActionType.UPDATE,
        ActionType.UPDATE,
        ActionType.DELETE,
    ]
    released = events[1][2]
    assert isinstance(released, ResourceClaim)
    assert released.status.allocation is None and released.status.reserved_for == []


def test_shared_claim_is_deallocated_when_its_last_consumer_goes() -> None:
    a, b = pod("a"), pod("b")
    state, _ = state_with(allocated(claim("shared"), a, b))
    cluster = InMemoryCluster(pods={a.key: a, b.key: b})
    writer = InMemoryClaimWriter(state)
    cluster.watchers.append(ResourceClaimController(writer, cluster.pods, lambda: "t"))
    asyncio.run(cluster.delete_pod(a, "preempted"))
    after_a = state.claims["ns/shared"]
    assert after_a.status.reserved_for == [pod_consumer(b)]
    assert after_a.status.allocation == ALLOCATION
    assert after_a.metadata.finalizers == [DELETE_PROTECTION_FINALIZER]
    asyncio.run(cluster.delete_pod(b, "preempted"))
    after_b = state.claims["ns/shared"]
    # A claim of its own (not generated) stays, deallocated and without the finalizer.
    assert after_b.status.reserved_for == [] and after_b.status.allocation is None
    assert after_b.metadata.finalizers == []
    assert after_b.metadata.deletion_timestamp is None


def test_unallocated_generated_claim_goes_at_once() -> None:
    a = pod("a")
    state, events = state_with(claim("a-gpu-xyz12", owner=a))
    cluster = InMemoryCluster(pods={a.key: a})
    cluster.watchers.append(
        ResourceClaimController(InMemoryClaimWriter(state), cluster.pods, lambda: "t")
    )
    asyncio.run(cluster.delete_pod(a, "preempted"))
    assert state.claims == {}
    assert [e.action for e, _, _ in events] == [ActionType.DELETE]
