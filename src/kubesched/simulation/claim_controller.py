"""What the resourceclaim controller and the garbage collector do when a pod goes,
for `simulate` (where preemption deletes its victims).

Upstream (kubernetes v1.36.3):

- the garbage collector deletes the claims the pod owned (those made from its
  templates). A claim with the delete-protection finalizer (an allocated one)
  is only marked, deletionTimestamp set, until the controller lets it go;
- the controller's syncClaim (pkg/controller/resourceclaim/controller.go) drops
  from status.reservedFor every pod that is gone, was replaced (another uid) or
  is done. When that leaves the list empty it clears status.allocation, for any
  claim carrying the finalizer (generated from a template or not: "it doesn't
  hurt to also trigger deallocation for such claims"), then removes the
  finalizer. A claim being deleted that nobody reserves loses its allocation and
  its finalizer the same way, and is then gone. A claim that only lost a
  reservation but has other consumers keeps its allocation.

The writes go through the InMemoryClaimWriter, so each reaches the queue as the
informers' events would (the claim updated with its devices released, then
deleted).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    POD_CONSUMER_RESOURCE,
    ResourceClaim,
)
from kubesched.simulation.claim_writer import InMemoryClaimWriter

_TERMINAL = ("Succeeded", "Failed")


def _pod_done(pod: Pod) -> bool:
    """isPodDone: terminal, or deleted before it was scheduled."""
    return pod.status.phase in _TERMINAL or (
        pod.metadata.deletion_timestamp is not None and not pod.spec.node_name
    )


class ResourceClaimController:
    """A watcher of the InMemoryCluster (after the scheduler) for pod deletions.

    `pods` is the cluster's pods by key, `now` the deletion time to stamp."""

    def __init__(
        self, writer: InMemoryClaimWriter, pods: Mapping[str, Pod], now: Callable[[], str]
    ) -> None:
        self.writer = writer
        self.pods = pods
        self.now = now
        self.deleted: set[str] = set()  # the uids of the pods seen going (deletedObjects)

    # --- Watcher ---------------------------------------------------------------------

    def on_node_add(self, node: Node) -> None:
        pass

    def on_node_update(self, old: Node | None, new: Node) -> None:
        pass

    def on_node_delete(self, node: Node) -> None:
        pass

    def on_pod_add(self, pod: Pod) -> None:
        pass

    def on_pod_update(self, old: Pod | None, new: Pod) -> None:
        pass

    def on_pod_delete(self, pod: Pod) -> None:
        self.deleted.add(pod.metadata.uid)
        dra = self.writer.dra
        uid = pod.metadata.uid
        owned: list[str] = []
        reserving: list[str] = []
        for key, claim in dra.claims.items():
            if claim.metadata.namespace != pod.metadata.namespace:
                continue
            if any(ref.uid == uid for ref in claim.metadata.owner_references):
                owned.append(key)
            elif any(ref.uid == uid for ref in claim.status.reserved_for):
                reserving.append(key)
        # The garbage collector deletes what the pod owned (its only owner here).
        for key in owned:
            self.writer.delete(key, self.now())
        for key in [*owned, *reserving]:
            self.sync_claim(key)

    # --- syncClaim -----------------------------------------------------------------------

    def _keep(self, claim: ResourceClaim, index: int) -> bool:
        ref = claim.status.reserved_for[index]
        if ref.api_group or ref.resource != POD_CONSUMER_RESOURCE:
            return True  # a consumer the controller does not know how to check
        if ref.uid in self.deleted:
            return False
        pod = self.pods.get(f"{claim.metadata.namespace}/{ref.name}")
        return pod is not None and pod.metadata.uid == ref.uid and not _pod_done(pod)

    def sync_claim(self, key: str) -> None:
        writer = self.writer
        claim = writer.dra.claims.get(key)
        if claim is None:
            return
        reserved = claim.status.reserved_for
        remaining = [ref for i, ref in enumerate(reserved) if self._keep(claim, i)]
        protected = DELETE_PROTECTION_FINALIZER in claim.metadata.finalizers
        if len(remaining) < len(reserved):
            status = msgspec.structs.replace(claim.status, reserved_for=remaining)
            if not remaining and protected:
                # Deallocate as soon as the last consumer is gone.
                status = msgspec.structs.replace(status, allocation=None)
            claim = writer.put_status(msgspec.structs.replace(claim, status=status))
            if protected and claim.status.allocation is None:
                self._drop_finalizer(claim)
                claim = writer.dra.claims.get(key) or claim
        elif protected and claim.metadata.deletion_timestamp is not None and not remaining:
            if claim.status.allocation is not None:
                status = msgspec.structs.replace(claim.status, allocation=None)
                claim = writer.put_status(msgspec.structs.replace(claim, status=status))
            self._drop_finalizer(claim)
            return
        if not remaining and key in writer.dra.claims:
            self._delete_if_owner_done(claim)

    def _drop_finalizer(self, claim: ResourceClaim) -> None:
        finalizers = [f for f in claim.metadata.finalizers if f != DELETE_PROTECTION_FINALIZER]
        meta = msgspec.structs.replace(claim.metadata, finalizers=finalizers)
        self.writer.put(msgspec.structs.replace(claim, metadata=meta))

    def _delete_if_owner_done(self, claim: ResourceClaim) -> None:
        """A generated claim nobody reserves goes when its pod was replaced or is done."""
        for ref in claim.metadata.owner_references:
            if ref.controller and ref.kind == "Pod":
                pod = self.pods.get(f"{claim.metadata.namespace}/{ref.name}")
                if pod is not None and (pod.metadata.uid != ref.uid or _pod_done(pod)):
                    self.writer.delete(claim.key, self.now())
                return
