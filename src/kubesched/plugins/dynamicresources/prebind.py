"""PreBind and Unreserve: the writes that make Reserve's in-memory choice real.

Upstream: PreBind, bindClaim, isClaimReadyForBinding, isClaimTimeout,
isPodReadyForBinding and Unreserve in dynamicresources.go. For each claim not yet
reserved for the pod: the finalizer resource.kubernetes.io/delete-protection in a
plain update, then status.allocation (if Reserve allocated it) and the pod in
reservedFor in a status update, the whole retried on a conflict with a fresh GET
(retry.RetryOnConflict with retry.DefaultRetry: five attempts). The written claim
is assumed at once (AssumeClaimAfterAPICall) and the in-flight allocation dropped.
Then, if an allocated device has binding conditions, the pod waits (event
BindingConditionsPending) until they are all true, one of its binding failure
conditions is true, or bindingTimeout passes.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from typing import TYPE_CHECKING

import msgspec

from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    ResourceClaim,
    is_reserved_for_pod,
    pod_consumer,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.dra import ClaimConflict, ClaimWriter
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources import extended_writes
from kubesched.plugins.dynamicresources.args import DynamicResourcesArgs
from kubesched.plugins.dynamicresources.state import (
    SPECIAL_CLAIM_NAME,
    DraCycleState,
    StateNotFound,
    claim_key,
    error,
    read_state,
)
from kubesched.plugins.helpers.args import go_quote

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

log = logging.getLogger(__name__)

# retry.DefaultRetry's Steps.
RETRY_STEPS = 5
# wait.PollUntilContextTimeout's interval in PreBind.
BINDING_POLL_SECONDS = 5.0
# PreBind wraps the poll's context.DeadlineExceeded in ErrDeviceBindingTimeout.
POLL_TIMEOUT = "device binding timeout: context deadline exceeded"


class BindingFailed(Exception):
    """A binding failure condition of an allocated device is true."""


class ClaimWriteError(Exception):
    pass


class _Conflict(ClaimWriteError):
    """A write refused with 409, with bindClaim's text around it: RetryOnConflict
    tries again, and after the last attempt that text is the error."""


def claim_ready_for_binding(claim: ResourceClaim) -> bool:
    """isClaimReadyForBinding: every binding condition of every allocated device is
    true; raises BindingFailed when a binding failure condition is true."""
    allocation = claim.status.allocation
    if allocation is None:
        return False
    for result in allocation.devices.results:
        if not result.binding_conditions:
            continue
        for status in claim.status.devices:
            if (status.driver, status.pool, status.device) == (
                result.driver,
                result.pool,
                result.device,
            ):
                break
        else:
            return False
        conditions = {c.type: c for c in status.conditions}
        for wanted in result.binding_failure_conditions:
            failed = conditions.get(wanted)
            if failed is not None and failed.status == "True":
                # ErrDeviceBindingFailed wrapped as isClaimReadyForBinding does.
                raise BindingFailed(
                    f"device binding failed: claim={claim.metadata.name}, "
                    f"reason={failed.reason}, message={go_quote(failed.message)}"
                )
        for wanted in result.binding_conditions:
            found = conditions.get(wanted)
            if found is None or found.status != "True":
                return False
    return True


def _parse_time(text: str) -> float | None:
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def claim_timed_out(claim: ResourceClaim, binding_timeout: float, now: float | None = None) -> bool:
    """isClaimTimeout: allocated longer than bindingTimeout ago, with a device that has
    binding conditions."""
    allocation = claim.status.allocation
    if allocation is None or allocation.allocation_timestamp is None:
        return False
    started = _parse_time(allocation.allocation_timestamp)
    if started is None:
        return False
    current = datetime.datetime.now(datetime.UTC).timestamp() if now is None else now
    return any(
        r.binding_conditions and started + binding_timeout < current
        for r in allocation.devices.results
    )


def _rfc3339_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def pre_bind(
    handle: Handle, state: CycleState, pod: PodInfo, node_name: str, args: DynamicResourcesArgs
) -> Status:
    try:
        data = read_state(state)
    except StateNotFound as exc:
        return error(exc)
    if data.claims.empty():
        return Status()
    writer = handle.dra.writer
    if writer is None:
        return error(
            "DynamicResources: no ClaimWriter is configured, the pod's ResourceClaims "
            "cannot be allocated and reserved"
        )
    for index, claim in data.claims.all():
        if is_reserved_for_pod(pod.pod, claim):
            continue
        try:
            written = await _bind_claim(handle, writer, data, index, pod, node_name)
        except ClaimWriteError as exc:
            return error(exc)
        data.claims.claims[index] = written
    if not _has_binding_conditions(data):
        return Status()
    if handle.cluster is not None:
        handle.cluster.record_event(
            pod.pod,
            "Normal",
            "BindingConditionsPending",
            f"waiting for binding conditions for device on node {node_name}",
        )
    try:
        await _wait_for_binding(handle, writer, data, args)
    except (BindingFailed, ClaimWriteError) as exc:
        return error(exc)
    return Status()


def _has_binding_conditions(data: DraCycleState) -> bool:
    for _, claim in data.claims.all():
        allocation = claim.status.allocation
        if allocation is not None and any(r.binding_conditions for r in allocation.devices.results):
            return True
    return False


def _pod_ready_for_binding(handle: Handle, data: DraCycleState, timeout: float) -> bool:
    """isPodReadyForBinding, on the claims as the DRA manager has them now."""
    for index, claim in data.claims.all():
        current = handle.dra.claim(claim.key)
        if current is None:
            raise ClaimWriteError(f"could not find ResourceClaim {go_quote(claim.key)}")
        data.claims.claims[index] = current
        if not claim_ready_for_binding(current):
            if claim_timed_out(current, timeout):
                # isPodReadyForBinding: ErrDeviceBindingTimeout with the claim's name.
                raise ClaimWriteError(f"device binding timeout: claim={current.metadata.name}")
            return False
    return True


async def _wait_for_binding(
    handle: Handle, writer: ClaimWriter, data: DraCycleState, args: DynamicResourcesArgs
) -> None:
    """wait.PollUntilContextTimeout(5s, bindingTimeout, immediate). A writer that
    settles on write (the in-memory one) has nobody who could change the conditions
    while the binding cycle runs, so one check decides, as VolumeBinding does."""
    if getattr(writer, "settles_on_write", False):
        if not _pod_ready_for_binding(handle, data, args.binding_timeout):
            raise ClaimWriteError(POLL_TIMEOUT)
        return
    clock = handle.clock
    deadline = clock.now() + args.binding_timeout
    while not _pod_ready_for_binding(handle, data, args.binding_timeout):
        if clock.now() >= deadline:
            raise ClaimWriteError(POLL_TIMEOUT)
        await asyncio.sleep(BINDING_POLL_SECONDS)


def _with_finalizer(claim: ResourceClaim) -> ResourceClaim:
    finalizers = [*claim.metadata.finalizers, DELETE_PROTECTION_FINALIZER]
    return msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(claim.metadata, finalizers=finalizers)
    )


async def _bind_claim(
    handle: Handle,
    writer: ClaimWriter,
    data: DraCycleState,
    index: int,
    pod: PodInfo,
    node_name: str,
) -> ResourceClaim:
    """bindClaim: allocation (if Reserve made one) and reservation of one claim."""
    claim = data.claims.claims[index]
    allocation = data.infos[index].allocation
    is_extended = data.claims.is_extended(index)
    if is_extended and allocation is None and not claim.spec.devices.requests:
        return claim  # the node's device plugin serves the extended resources
    dra = handle.dra
    # The in-flight allocation's key before the special claim gets its real name.
    pending_key = claim_key(claim)
    written: ResourceClaim | None = None
    try:
        if is_extended and claim.metadata.name == SPECIAL_CLAIM_NAME:
            try:
                claim = await extended_writes.create_claim(writer, data, node_name)
            except extended_writes.ExtendedClaimError as exc:
                raise ClaimWriteError(str(exc)) from exc
            # Unreserve deletes it from now on (updateExtendedResourceClaim).
            data.claims.claims[index] = written = claim
        name = f"{claim.metadata.namespace}/{claim.metadata.name}"
        refresh = False
        for attempt in range(RETRY_STEPS):
            if refresh:
                fresh = await writer.get_claim(claim.metadata.namespace, claim.metadata.name)
                if fresh is None:
                    raise ClaimWriteError(
                        f"get updated claim {name} after conflict: resourceclaims.resource.k8s.io "
                        f"{go_quote(claim.metadata.name)} not found"
                    )
                claim = fresh
            refresh = True
            try:
                written = await _write_once(writer, claim, allocation, pod, name)
            except _Conflict as exc:
                if attempt == RETRY_STEPS - 1:
                    raise ClaimWriteError(str(exc)) from None
            else:
                break
        assert written is not None  # the loop ends in a write or raises
        if is_extended:
            found = data.node_allocation(node_name)
            mappings = found.request_mappings if found is not None else ()
            try:
                await extended_writes.write_pod_status(handle, pod.pod, written, mappings)
            except extended_writes.ExtendedClaimError as exc:
                raise ClaimWriteError(str(exc)) from exc
        return written
    finally:
        if written is not None:
            if is_extended:
                await extended_writes.wait_in_assume_cache(
                    dra, handle.clock, written, getattr(writer, "settles_on_write", False)
                )
            else:
                dra.assume_claim_after_api_call(written)
        if allocation is not None:
            dra.remove_claim_pending_allocation(pending_key)


async def _write_once(
    writer: ClaimWriter,
    claim: ResourceClaim,
    allocation: object,
    pod: PodInfo,
    name: str,
) -> ResourceClaim:
    if claim.metadata.deletion_timestamp is not None:
        raise ClaimWriteError(f"claim {name} got deleted in the meantime")
    status = claim.status
    if allocation is not None:
        if status.allocation is not None:
            raise ClaimWriteError(f"claim {name} got allocated elsewhere in the meantime")
        if DELETE_PROTECTION_FINALIZER not in claim.metadata.finalizers:
            try:
                claim = await writer.update_claim(_with_finalizer(claim))
            except ClaimConflict as exc:
                raise _Conflict(f"add finalizer to claim {name}: {exc}") from exc
            except Exception as exc:
                raise ClaimWriteError(f"add finalizer to claim {name}: {exc}") from exc
        status = msgspec.structs.replace(claim.status, allocation=allocation)
    reserved = [*status.reserved_for, pod_consumer(pod.pod)]
    status = msgspec.structs.replace(status, reserved_for=reserved)
    if status.allocation is None:
        # bindClaim (DRADeviceBindingConditions on): an allocated claim lost its
        # allocation between Filter and PreBind.
        raise ClaimWriteError(f"claim {name} got deallocated elsewhere in the meantime")
    if status.allocation.allocation_timestamp is None:
        # With DRADeviceBindingConditions on (v1.36.3), every write stamps the time.
        status = msgspec.structs.replace(
            status,
            allocation=msgspec.structs.replace(
                status.allocation, allocation_timestamp=_rfc3339_now()
            ),
        )
    what = "allocation and reservation" if allocation is not None else "reservation"
    try:
        return await writer.update_claim_status(msgspec.structs.replace(claim, status=status))
    except ClaimConflict as exc:
        raise _Conflict(f"add {what} to claim {name}: {exc}") from exc
    except Exception as exc:
        raise ClaimWriteError(f"add {what} to claim {name}: {exc}") from exc


def unreserve(handle: Handle, state: CycleState, pod: PodInfo) -> None:
    """Unreserve: drop in-flight allocations (and what was assumed for them); take the
    pod out of reservedFor where PreBind had already put it, in the background."""
    try:
        data = read_state(state)
    except StateNotFound:
        return
    dra = handle.dra
    for index, claim in data.claims.all():
        if data.claims.is_extended(index):
            continue  # extended_writes.unreserve, below
        if dra.remove_claim_pending_allocation(claim_key(claim)):
            dra.assumed_claim_restore(claim.key)
        if claim.status.allocation is not None and is_reserved_for_pod(pod.pod, claim):
            writer = dra.writer
            if writer is None:
                log.error("unreserve %s: no ClaimWriter", claim.key)
                continue
            handle.spawn(_remove_reservation(writer, claim, pod))
    extended_writes.unreserve(handle, data)


async def _remove_reservation(writer: ClaimWriter, claim: ResourceClaim, pod: PodInfo) -> None:
    """The strategic-merge patch that deletes the pod's reservedFor entry, as a
    read-modify-write (the ClaimWriter has no patch), retried on conflict."""
    uid = pod.pod.metadata.uid
    current: ResourceClaim | None = claim
    for _ in range(RETRY_STEPS):
        if current is None or current.metadata.uid != claim.metadata.uid:
            return
        kept = [r for r in current.status.reserved_for if r.uid != uid]
        try:
            await writer.update_claim_status(
                msgspec.structs.replace(
                    current, status=msgspec.structs.replace(current.status, reserved_for=kept)
                )
            )
            return
        except ClaimConflict:
            current = await writer.get_claim(claim.metadata.namespace, claim.metadata.name)
        except Exception:
            log.exception("unreserve %s", claim.key)
            return
