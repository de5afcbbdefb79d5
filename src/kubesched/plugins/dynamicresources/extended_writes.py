"""The API writes for the claim of a pod's DRA-backed extended resources.

Upstream: createExtendedResourceClaimInAPI, waitForExtendedClaimInAssumeCache,
patchPodExtendedResourceClaimStatus, deleteClaim and unreserveExtendedResourceClaim
in extendeddynamicresources.go. The special claim lives in memory
(`<extended-resources>`) until PreBind creates it, named by the API server from
generateName `<pod name>-extended-resources-`; PreBind then allocates and reserves
it like any claim (bindClaim), and writes the pod's
status.extendedResourceClaimStatus: the claim's name and which of its requests
serves each container's resource. A claim a failed binding cycle left behind is
deleted by Unreserve, or by PostFilter when the next cycle finds it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from kubesched.api.objects import ContainerExtendedResourceRequest, Pod
from kubesched.api.objects import PodExtendedResourceClaimStatus as ClaimStatus
from kubesched.api.resource import DELETE_PROTECTION_FINALIZER, ResourceClaim
from kubesched.framework.clock import Clock
from kubesched.framework.state.dra import ClaimConflict, ClaimWriter, DraState
from kubesched.plugins.dynamicresources.state import SPECIAL_CLAIM_NAME, DraCycleState

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

log = logging.getLogger(__name__)

# AssumeExtendedResourceTimeoutDefaultSeconds, and the poll's interval.
ASSUME_TIMEOUT_SECONDS = 120.0
ASSUME_POLL_SECONDS = 1.0
# retry.DefaultRetry's Steps (deleteClaim's RetryOnConflict).
RETRY_STEPS = 5


class ExtendedClaimError(Exception):
    """A write for the special claim failed; PreBind returns it as an Error."""


def is_special(claim: ResourceClaim) -> bool:
    """isSpecialClaimName: the claim exists only in memory so far."""
    return claim.metadata.name == SPECIAL_CLAIM_NAME


def _kobj(claim: ResourceClaim) -> str:
    """klog.KObj's text: namespace/name (an empty name leaves "namespace/")."""
    meta = claim.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


async def create_claim(writer: ClaimWriter, data: DraCycleState, node_name: str) -> ResourceClaim:
    """createExtendedResourceClaimInAPI: create the node's variant of the special
    claim Filter made, without the in-memory name, the made-up uid and the
    allocation (PreBind writes that next, as for any claim)."""
    found = data.node_allocation(node_name)
    if found is None or found.extended_claim is None:
        raise ExtendedClaimError(f"extended resource claim not found for node {node_name}")
    claim = found.extended_claim
    claim = msgspec.structs.replace(
        claim,
        metadata=msgspec.structs.replace(claim.metadata, name="", uid=""),
        status=msgspec.structs.replace(claim.status, allocation=None),
    )
    try:
        return await writer.create_claim(claim)
    except Exception as exc:
        raise ExtendedClaimError(
            f"create claim for extended resources {_kobj(claim)}: {exc}"
        ) from exc


async def wait_in_assume_cache(
    dra: DraState, clock: Clock, claim: ResourceClaim, settles_on_write: bool
) -> None:
    """waitForExtendedClaimInAssumeCache: AssumeClaimAfterAPICall fails (not found)
    until the informer has delivered the created claim, so poll every second for up
    to 120s; giving up is only logged, the claim was created. A writer that settles
    on write (the in-memory one) stored it already."""
    deadline = clock.now() + ASSUME_TIMEOUT_SECONDS
    while claim.key not in dra.claims:
        if settles_on_write or clock.now() >= deadline:
            log.info("claim %s not stored in assume cache after retries", claim.key)
            return
        await asyncio.sleep(ASSUME_POLL_SECONDS)
    dra.assume_claim_after_api_call(claim)


async def write_pod_status(
    handle: Handle,
    pod: Pod,
    claim: ResourceClaim,
    mappings: Sequence[ContainerExtendedResourceRequest],
) -> None:
    """patchPodExtendedResourceClaimStatus: the pod learns its claim's name and
    which request serves each container's extended resource."""
    meta = pod.metadata
    if not mappings:
        raise ExtendedClaimError(
            f"nil or empty request mappings, no update of pod {meta.namespace}/{meta.name} "
            "ExtendedResourceClaimStatus"
        )
    if handle.cluster is None:
        return  # a bare framework in unit tests: no pods to write to
    status = ClaimStatus(request_mappings=list(mappings), resource_claim_name=claim.metadata.name)
    try:
        await handle.cluster.set_extended_resource_claim_status(pod, status)
    except Exception as exc:
        raise ExtendedClaimError(
            f"update pod {meta.namespace}/{meta.name} ExtendedResourceClaimStatus: {exc}"
        ) from exc


async def delete_claim(writer: ClaimWriter, claim: ResourceClaim) -> None:
    """deleteClaim: drop the delete-protection finalizer in an update (retried with a
    fresh GET on a conflict), then delete the claim."""
    meta = claim.metadata
    name = f"{meta.namespace}/{meta.name}"
    current: ResourceClaim = claim
    for attempt in range(RETRY_STEPS):
        if attempt:
            fresh = await writer.get_claim(meta.namespace, meta.name)
            if fresh is None:
                raise ExtendedClaimError(
                    f"get resourceclaim {name}: resourceclaims.resource.k8s.io "
                    f'"{meta.name}" not found'
                )
            current = fresh
        finalizers = list(current.metadata.finalizers)
        if DELETE_PROTECTION_FINALIZER in finalizers:
            finalizers.remove(DELETE_PROTECTION_FINALIZER)
        try:
            await writer.update_claim(
                msgspec.structs.replace(
                    current,
                    metadata=msgspec.structs.replace(current.metadata, finalizers=finalizers),
                )
            )
            break
        except ClaimConflict as exc:
            if attempt == RETRY_STEPS - 1:
                raise ExtendedClaimError(f"update resourceclaim {name}: {exc}") from exc
        except Exception as exc:
            raise ExtendedClaimError(f"update resourceclaim {name}: {exc}") from exc
    await writer.delete_claim(meta.namespace, meta.name)


async def _delete_logged(writer: ClaimWriter, claim: ResourceClaim) -> None:
    try:
        await delete_claim(writer, claim)
    except Exception:
        # Upstream logs it too (Unreserve), or returns it from PostFilter; the next
        # cycle finds the claim again and retries.
        log.exception("delete resourceclaim %s", claim.key)


def spawn_delete(handle: Handle, claim: ResourceClaim) -> bool:
    """Delete a created special claim in the background; False without a writer."""
    writer = handle.dra.writer
    if writer is None:
        log.error("delete resourceclaim %s: no ClaimWriter", claim.key)
        return False
    handle.spawn(_delete_logged(writer, claim))
    return True


def unreserve(handle: Handle, data: DraCycleState) -> None:
    """unreserveExtendedResourceClaim: drop the in-flight allocation (kept under the
    key the in-memory claim had) and what was assumed for it; a claim PreBind had
    created already is deleted, so that it is not left behind."""
    special = data.claims.extended_claim()
    if special is None:
        return
    dra = handle.dra
    if dra.remove_claim_pending_allocation(data.initial_extended_key):
        dra.assumed_claim_restore(special.key)
    if is_special(special):
        return
    spawn_delete(handle, special)
