"""PostFilter: free a claim that keeps the pod off every node (PostFilter upstream).

It runs first among the PostFilter plugins (before DefaultPreemption), and the
framework joins every plugin's reasons with ", " after the FitError text: a pod
without claims reads "... no new claims to deallocate, preemption: ...". When the
DRA state is missing (an earlier PreFilter rejected the pod before this plugin's
ran), upstream's CycleState.Read fails and the text is "not found", an Error that
ends PostFilter before preemption.

Among the allocated claims some node could not use, one reserved for nobody but
this pod is deallocated (status cleared through the ClaimWriter), so that the next
attempt may allocate it elsewhere. Upstream picks one at random (map order); here
the lowest index, so that runs repeat.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from kubesched.api.resource import ResourceClaim, ResourceClaimStatus
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import PostFilterResult
from kubesched.framework.state.dra import ClaimWriter
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources import extended_writes
from kubesched.plugins.dynamicresources.state import (
    NAME,
    SPECIAL_CLAIM_NAME,
    StateNotFound,
    error,
    read_state,
)

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

log = logging.getLogger(__name__)

NO_CLAIMS = "no new claims to deallocate"
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"
STILL_NOT_SCHEDULABLE = "still not schedulable"


def _unschedulable(reason: str) -> Status:
    return Status.unschedulable(reason, plugin=NAME)


def post_filter(
    handle: Handle, state: CycleState, pod: PodInfo
) -> tuple[PostFilterResult | None, Status]:
    try:
        data = read_state(state)
    except StateNotFound as exc:
        return None, error(exc)
    if data.claims.empty():
        return None, _unschedulable(NO_CLAIMS)
    special = data.claims.extended_claim()
    special_exists = special is not None and special.metadata.name != SPECIAL_CLAIM_NAME
    for index in sorted(data.unavailable):
        claim = data.claims.claims[index]
        if data.claims.is_extended(index):
            if special_exists:
                break  # deleted below
            continue
        reserved = claim.status.reserved_for
        if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.pod.metadata.uid):
            writer = handle.dra.writer
            if writer is None:
                return None, error(f"no ClaimWriter to deallocate ResourceClaim {claim.key}")
            handle.spawn(_deallocate(writer, claim))
            return None, _unschedulable(DEALLOCATED)
    if special_exists:
        # The claim for extended resources an earlier cycle created (and perhaps
        # allocated) is deleted: the next attempt starts anew (deleteClaim).
        assert special is not None
        if not extended_writes.spawn_delete(handle, special):
            return None, error(f"no ClaimWriter to delete ResourceClaim {special.key}")
        return None, _unschedulable(DELETED)
    return None, _unschedulable(STILL_NOT_SCHEDULABLE)


async def _deallocate(writer: ClaimWriter, claim: ResourceClaim) -> None:
    """UpdateStatus with reservedFor, allocation and devices cleared."""
    cleared = msgspec.structs.replace(claim, status=ResourceClaimStatus())
    try:
        await writer.update_claim_status(cleared)
    except Exception:
        # Upstream returns the error as the PostFilter status; here the write runs after
        # the cycle, so it is logged. The claim stays allocated and PostFilter tries again.
        log.exception("deallocating ResourceClaim %s", claim.key)
