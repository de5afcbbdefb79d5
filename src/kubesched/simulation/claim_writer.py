"""The in-memory cluster's ClaimWriter: the API server's side of DynamicResources'
PreBind writes (and of the resourceclaim controller's, in claim_controller).

In `kubesched run` the writes go to the API server (kube.claims.KubeClaimWriter).
`simulate` has none: this writer stores each write in the DraState as the API
server would, with the rules of its REST storage for resourceclaims
(pkg/registry/resource/resourceclaim/strategy.go):

- optimistic concurrency: a write carrying a resourceVersion other than the
  stored one is refused (ClaimConflict, a 409); one carrying none is
  unconditional (AllowUnconditionalUpdate);
- an update of the claim changes its metadata only (status is a subresource,
  spec is immutable), and one that drops the last finalizer of a claim being
  deleted removes it;
- a status update changes the status only; it may not reserve a claim without
  an allocation, nor add consumers once deletion started
  (validateResourceClaimStatusUpdate); device statuses go with the allocation.

- a create (DynamicResources' claim for DRA-backed extended resources) names
  the claim from metadata.generateName and drops the status; a delete of a
  claim with finalizers only marks it (deletionTimestamp).

Every accepted write gets a new resourceVersion and reaches the DraState's
subscribers (the scheduling queue) as an informer event would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import msgspec

from kubesched.api.resource import ResourceClaim, ResourceClaimStatus
from kubesched.cluster.generated_names import _MAX_GENERATE_NAME_BASE, _random_chars, _uid
from kubesched.framework.state.dra import ClaimConflict, DraState


class ClaimNotFound(Exception):
    """The claim is not stored (HTTP 404)."""


class ClaimInvalid(Exception):
    """The API server's validation refuses the write (HTTP 422)."""


def _conflict(claim: ResourceClaim) -> ClaimConflict:
    return ClaimConflict(
        f'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{claim.metadata.name}": '
        f"the object has been modified; please apply your changes to the latest version "
        f"and try again"
    )


class InMemoryClaimWriter:
    """A ClaimWriter on `dra`, and the writes the in-memory controllers make."""

    # Nobody changes device conditions while a binding cycle runs here: PreBind
    # decides binding conditions with one check instead of polling (as for volumes).
    settles_on_write = True

    def __init__(self, dra: DraState, now: Callable[[], str] | None = None) -> None:
        self.dra = dra
        self._version = 0
        # creationTimestamp of created claims (RFC 3339), the simulated clock's time.
        self.now = now
        # generateName -> how many names it gave, for deterministic suffixes.
        self._generated: dict[str, int] = {}
        for claim in dra.claims.values():
            self._seen(claim.metadata.resource_version)

    def _seen(self, version: str) -> None:
        with contextlib.suppress(ValueError):
            self._version = max(self._version, int(version or 0))

    def _stored(self, claim: ResourceClaim) -> ResourceClaim:
        stored = self.dra.claims.get(claim.key)
        if stored is None:
            raise ClaimNotFound(f'resourceclaims.resource.k8s.io "{claim.metadata.name}" not found')
        version = claim.metadata.resource_version
        if version and version != stored.metadata.resource_version:
            raise _conflict(claim)
        return stored

    def _store(self, claim: ResourceClaim) -> ResourceClaim:
        self._seen(claim.metadata.resource_version)
        self._version += 1
        written = msgspec.structs.replace(
            claim,
            metadata=msgspec.structs.replace(claim.metadata, resource_version=str(self._version)),
        )
        self.dra.upsert_claim(written)
        return written

    # --- writes, as the API server takes them (synchronous, for the controllers) ---

    def put(self, claim: ResourceClaim) -> ResourceClaim:
        """PUT of the claim: metadata from `claim`, spec and status as stored."""
        stored = self._stored(claim)
        meta = msgspec.structs.replace(
            claim.metadata,
            # What the client cannot change through an update.
            name=stored.metadata.name,
            namespace=stored.metadata.namespace,
            uid=stored.metadata.uid,
            creation_timestamp=stored.metadata.creation_timestamp,
            deletion_timestamp=stored.metadata.deletion_timestamp,
        )
        updated = msgspec.structs.replace(stored, metadata=meta)
        if meta.deletion_timestamp is not None and not meta.finalizers:
            # The last finalizer is gone: the deletion completes.
            self.dra.delete_claim(claim.key)
            return updated
        return self._store(updated)

    def put_status(self, claim: ResourceClaim) -> ResourceClaim:
        """PUT of the status subresource: status from `claim`, the rest as stored."""
        stored = self._stored(claim)
        status = claim.status
        if status.reserved_for and status.allocation is None:
            raise ClaimInvalid(
                f'ResourceClaim.resource.k8s.io "{claim.metadata.name}" is invalid: '
                f"status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
            )
        if stored.metadata.deletion_timestamp is not None:
            before = {ref.uid for ref in stored.status.reserved_for}
            if any(ref.uid not in before for ref in status.reserved_for):
                raise ClaimInvalid(
                    f'ResourceClaim.resource.k8s.io "{claim.metadata.name}" is invalid: '
                    f"status.reservedFor: Forbidden: new entries may not be added while "
                    f"`deallocationRequested` or `deletionTimestamp` are set"
                )
        if status.allocation is None and status.devices:
            # dropDeallocatedStatusDevices: no allocation, no device status.
            status = msgspec.structs.replace(status, devices=[])
        return self._store(msgspec.structs.replace(stored, status=status))

    def create(self, claim: ResourceClaim) -> ResourceClaim:
        """POST: a name from generateName (base cut to 58 characters, then 5 made-up
        ones, deterministic here), a uid, no status (a subresource), a version."""
        meta = claim.metadata
        name = meta.name
        while not name:
            base = meta.generate_name[:_MAX_GENERATE_NAME_BASE]
            counter = f"ResourceClaim/{meta.namespace}/{base}"
            self._generated[counter] = self._generated.get(counter, 0) + 1
            name = base + _random_chars(f"{counter}#{self._generated[counter]}")
            if f"{meta.namespace}/{name}" in self.dra.claims:
                name = ""
        if f"{meta.namespace}/{name}" in self.dra.claims:
            raise ClaimConflict(f'resourceclaims.resource.k8s.io "{name}" already exists')
        created = msgspec.structs.replace(
            claim,
            metadata=msgspec.structs.replace(
                meta,
                name=name,
                uid=_uid("ResourceClaim", meta.namespace, name),
                resource_version="",
                creation_timestamp=self.now() if self.now is not None else None,
                deletion_timestamp=None,
            ),
            status=ResourceClaimStatus(),
        )
        return self._store(created)

    def delete(self, key: str, now: str) -> None:
        """DELETE: gone at once without finalizers, else marked (deletionTimestamp)."""
        stored = self.dra.claims.get(key)
        if stored is None:
            return
        if not stored.metadata.finalizers:
            self.dra.delete_claim(key)
        elif stored.metadata.deletion_timestamp is None:
            meta = msgspec.structs.replace(stored.metadata, deletion_timestamp=now)
            self._store(msgspec.structs.replace(stored, metadata=meta))

    # --- ClaimWriter -------------------------------------------------------------------

    async def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        return self.dra.claims.get(f"{namespace}/{name}")

    async def update_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return self.put(claim)

    async def update_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        return self.put_status(claim)

    async def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        return self.create(claim)

    async def delete_claim(self, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}"
        if key not in self.dra.claims:
            raise ClaimNotFound(f'resourceclaims.resource.k8s.io "{name}" not found')
        self.delete(key, self.now() if self.now is not None else "")
