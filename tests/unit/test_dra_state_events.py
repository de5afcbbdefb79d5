"""The claim events DraState gives the queue, as upstream's assume cache pushes them:
an assumed write is announced at once, and the informer bringing the same version
back is no second event."""

from __future__ import annotations

import msgspec

from kubesched.api.objects import ObjectMeta
from kubesched.api.resource import AllocationResult, ResourceClaim, ResourceClaimStatus
from kubesched.framework.state.dra import DraState


def _claim(version: str, allocated: bool) -> ResourceClaim:
    status = ResourceClaimStatus(allocation=AllocationResult() if allocated else None)
    meta = ObjectMeta(name="c", namespace="ns", uid="u", resource_version=version)
    return ResourceClaim(metadata=meta, status=status)


def test_an_assumed_write_is_announced_once() -> None:
    dra = DraState()
    seen: list[tuple[str, bool, bool]] = []

    def listener(event: object, old: object, new: object) -> None:
        assert isinstance(new, ResourceClaim)
        was = isinstance(old, ResourceClaim) and old.status.allocation is not None
        seen.append((str(getattr(event, "label", "")), was, new.status.allocation is not None))

    dra.subscribe(listener)
    dra.upsert_claim(_claim("1", allocated=False))
    written = _claim("2", allocated=True)
    dra.assume_claim_after_api_call(written)
    assert seen[-1] == ("ResourceClaimUpdate", False, True)
    dra.upsert_claim(msgspec.structs.replace(written))  # the informer brings it back
    assert len(seen) == 2
    dra.upsert_claim(_claim("3", allocated=False))  # someone deallocates it
    assert seen[-1] == ("ResourceClaimUpdate", True, False)
