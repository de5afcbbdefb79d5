"""The DynamicResources plugin's view of a real cluster: DRA informers and PreBind's
claim writes.

Informers keep the scheduler's DraState in line with the API server for the
objects upstream's scheduler watches (resource.k8s.io/v1 ResourceClaims,
ResourceSlices and DeviceClasses: its informer factory never lists
ResourceClaimTemplates, which only the resourceclaim controller reads); every
change reaches the scheduling queue as a cluster event.

PreBind's writes (bindClaim upstream: Update of the claim for the finalizer,
UpdateStatus for the allocation and reservedFor) are made as JSON merge patches
carrying the claim's resourceVersion. The precondition is the same as an
update's (a stale version is a 409, raised as ClaimConflict), but only the
fields the scheduler owns are sent: kubesched decodes claims into lean structs,
and a whole-object PUT would drop what they leave out (a driver's
status.devices[].data, fields of newer API versions), as kube/storage.py does
for volumes. The role needs `patch` where upstream's uses `update`.

The claim for a pod's DRA-backed extended resources is created (POST, the name
from generateName) and, when stale, deleted (DELETE) as upstream's
createExtendedResourceClaimInAPI and deleteClaim do: `create` and `delete`, as in
upstream's role with DRAExtendedResource on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from kubesched.api import kinds
from kubesched.api.kinds import Kind
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceClaimStatus, ResourceSlice
from kubesched.framework.state.dra import ClaimConflict, DraState
from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.informer import Handlers, Informer

RESOURCE_API = "/apis/resource.k8s.io/v1"


# The kinds dra_informers watches (`run` checks that the API server serves them).
DRA_KINDS = (kinds.RESOURCE_CLAIM, kinds.RESOURCE_SLICE, kinds.DEVICE_CLASS)


def dra_informers(client: KubeClient, dra: DraState) -> list[Informer[Any]]:
    """Claims by key, slices and classes by name (cluster-scoped)."""

    def informer(
        kind: Kind,
        struct: type[Any],
        upsert: Callable[[Any], None],
        delete: Callable[[Any], None],
    ) -> Informer[Any]:
        return Informer(
            client,
            kind.list_path,
            struct,
            Handlers(upsert, lambda _old, new: upsert(new), delete),
            name=kind.resource,
        )

    return [
        informer(
            kinds.RESOURCE_CLAIM,
            ResourceClaim,
            dra.upsert_claim,
            lambda claim: dra.delete_claim(claim.key),
        ),
        informer(
            kinds.RESOURCE_SLICE,
            ResourceSlice,
            dra.upsert_slice,
            lambda resource_slice: dra.delete_slice(resource_slice.metadata.name),
        ),
        informer(
            kinds.DEVICE_CLASS,
            DeviceClass,
            dra.upsert_class,
            lambda device_class: dra.delete_class(device_class.metadata.name),
        ),
    ]


def _claim_path(namespace: str, name: str) -> str:
    return f"{RESOURCE_API}/namespaces/{namespace}/resourceclaims/{name}"


def _preconditions(claim: ResourceClaim) -> dict[str, Any]:
    """The metadata of a patch: the resourceVersion it must apply to (none: any)."""
    version = claim.metadata.resource_version
    return {"resourceVersion": version} if version else {}


class KubeClaimWriter:
    """DraState's ClaimWriter on the API server."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    async def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        try:
            return await self.client.get(_claim_path(namespace, name), ResourceClaim)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    async def _patch(self, path: str, body: dict[str, Any]) -> ResourceClaim:
        try:
            raw = await self.client.patch(path, body, patch_type="merge-patch")
        except ApiError as exc:
            if exc.status == 409:
                raise ClaimConflict(exc.message) from exc
            raise
        return msgspec.json.decode(raw, type=ResourceClaim)

    async def update_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """The finalizers: the one field of the claim object PreBind changes."""
        meta = claim.metadata
        body = {"metadata": {**_preconditions(claim), "finalizers": list(meta.finalizers)}}
        return await self._patch(_claim_path(meta.namespace, meta.name), body)

    async def update_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        """status.allocation and status.reservedFor, on the status subresource. The
        API server drops the device statuses of devices no longer allocated itself."""
        meta = claim.metadata
        status = claim.status
        body = {
            "metadata": _preconditions(claim),
            "status": {
                "allocation": (
                    None if status.allocation is None else msgspec.to_builtins(status.allocation)
                ),
                "reservedFor": msgspec.to_builtins(status.reserved_for),
            },
        }
        return await self._patch(f"{_claim_path(meta.namespace, meta.name)}/status", body)

    async def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        """POST of the whole claim (metadata, spec): status is a subresource, and the
        scheduler makes the claim, so the lean struct drops nothing of anyone's."""
        meta = claim.metadata
        body = msgspec.to_builtins(msgspec.structs.replace(claim, status=ResourceClaimStatus()))
        body["apiVersion"] = "resource.k8s.io/v1"
        body["kind"] = "ResourceClaim"
        body.pop("status", None)
        try:
            raw = await self.client.post(
                f"{RESOURCE_API}/namespaces/{meta.namespace}/resourceclaims", body
            )
        except ApiError as exc:
            if exc.status == 409:
                raise ClaimConflict(exc.message) from exc
            raise
        return msgspec.json.decode(raw, type=ResourceClaim)

    async def delete_claim(self, namespace: str, name: str) -> None:
        await self.client.delete(_claim_path(namespace, name))
