"""The DRA sources of `kubesched run` against a real kube-apiserver: the informers
fill a DraState with DeviceClasses, ResourceSlices and ResourceClaims, and the
KubeClaimWriter writes PreBind's finalizer, allocation and reservation (a stale
write is a ClaimConflict)."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    AllocationResult,
    DeviceAllocationResult,
    DeviceRequestAllocationResult,
    ResourceClaimConsumerReference,
    ResourceClaimStatus,
)
from kubesched.framework.state.dra import ClaimConflict, DraState
from kubesched.framework.types import ClusterEvent
from kubesched.kube.claims import KubeClaimWriter, dra_informers
from kubesched.kube.client import KubeClient
from kubesched.kube.config import load_connection
from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import DEPLOY_DIR, ControlPlane

pytestmark = pytest.mark.integration

API = "/apis/resource.k8s.io/v1"
DRIVER = "gpu.kubesched.example.com"


def _objects(namespace: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": f"{namespace}-gpu"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }
    resource_slice = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{namespace}-node-1"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a100"}}}],
        },
    }
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "train", "namespace": namespace},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": f"{namespace}-gpu"}}]
            }
        },
    }
    return device_class, resource_slice, claim


async def _until(check: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


def _sa_kubeconfig(control_plane: ControlPlane, api: AdminApi, tmp_path: Path) -> Path:
    """A kubeconfig of kubesched's ServiceAccount, with deploy/rbac.yaml applied."""
    api.apply_file(DEPLOY_DIR / "rbac.yaml")
    token = api.create_token("kube-system", "kubesched", expiration_seconds=3600)
    ca = base64.b64encode(control_plane.ca_cert.read_bytes()).decode()
    path = tmp_path / "sa-kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": control_plane.url, "certificate-authority-data": ca},
                    }
                ],
                "users": [{"name": "kubesched", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "kubesched"}}],
                "current-context": "c",
            }
        )
    )
    return path


@pytest.mark.parametrize("identity", ["admin", "kubesched-serviceaccount"])
def test_informers_and_claim_writer(
    control_plane: ControlPlane, api: AdminApi, namespace: str, tmp_path: Path, identity: str
) -> None:
    """As admin, and as kubesched's ServiceAccount with exactly the deployed role
    (whose status writes also need the synthetic resourceclaims/binding permission)."""
    kubeconfig = (
        control_plane.kubeconfig
        if identity == "admin"
        else _sa_kubeconfig(control_plane, api, tmp_path)
    )
    device_class, resource_slice, claim_doc = _objects(namespace)
    api.post(f"{API}/deviceclasses", device_class)
    api.post(f"{API}/resourceslices", resource_slice)
    api.post(f"{API}/namespaces/{namespace}/resourceclaims", claim_doc)
    key = f"{namespace}/train"
    # A real (pending) consumer: the real resourceclaim controller drops reservations of
    # pods that do not exist, and then deallocates the claim.
    trainer_uid = api.create_pod(namespace, "trainer", scheduler_name="nobody")["metadata"]["uid"]

    async def scenario() -> None:
        client = KubeClient(await load_connection(str(kubeconfig), None))
        dra = DraState()
        events: list[ClusterEvent] = []
        dra.subscribe(lambda event, _old, _new: events.append(event))
        informers = dra_informers(client, dra)
        tasks = [asyncio.ensure_future(i.run()) for i in informers]
        try:
            for informer in informers:
                await asyncio.wait_for(informer.synced.wait(), 10)
            assert f"{namespace}-gpu" in dra.classes
            assert dra.slices[f"{namespace}-node-1"].spec.devices[0].name == "gpu-0"
            seen = dra.claims[key]
            assert seen.spec.devices.requests[0].name == "gpu"

            writer = KubeClaimWriter(client)
            fresh = await writer.get_claim(namespace, "train")
            assert fresh is not None
            assert await writer.get_claim(namespace, "absent") is None

            # PreBind: the finalizer in a normal update, then allocation and reservation.
            meta = msgspec.structs.replace(fresh.metadata, finalizers=[DELETE_PROTECTION_FINALIZER])
            protected = await writer.update_claim(msgspec.structs.replace(fresh, metadata=meta))
            assert protected.metadata.finalizers == [DELETE_PROTECTION_FINALIZER]
            assert protected.metadata.resource_version != fresh.metadata.resource_version
            status = ResourceClaimStatus(
                allocation=AllocationResult(
                    devices=DeviceAllocationResult(
                        results=[
                            DeviceRequestAllocationResult(
                                request="gpu", driver=DRIVER, pool="node-1", device="gpu-0"
                            )
                        ]
                    )
                ),
                reserved_for=[
                    ResourceClaimConsumerReference(resource="pods", name="trainer", uid=trainer_uid)
                ],
            )
            written = await writer.update_claim_status(
                msgspec.structs.replace(protected, status=status)
            )
            assert written.status.allocation is not None
            assert written.status.allocation.devices.results[0].device == "gpu-0"
            assert [r.name for r in written.status.reserved_for] == ["trainer"]
            assert written.metadata.finalizers == [DELETE_PROTECTION_FINALIZER]

            # A write from the version before is refused, and changes nothing.
            with pytest.raises(ClaimConflict):
                await writer.update_claim_status(
                    msgspec.structs.replace(protected, status=ResourceClaimStatus())
                )
            with pytest.raises(ClaimConflict):
                await writer.update_claim(fresh)

            # The informer delivers the writes.
            await _until(
                lambda: (
                    dra.claims[key].metadata.resource_version == written.metadata.resource_version
                )
            )
            assert dra.claims[key].status.reserved_for == written.status.reserved_for
            assert dra.allocated_state().devices == {(DRIVER, "node-1", "gpu-0")}
            assert {str(e.resource) for e in events} >= {
                "ResourceClaim",
                "ResourceSlice",
                "DeviceClass",
            }
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.aclose()

    try:
        asyncio.run(scenario())
    finally:
        # Let the claim go (its finalizer would keep it) and clean up cluster objects.
        api.patch(
            f"{API}/namespaces/{namespace}/resourceclaims/train/status",
            {"status": {"allocation": None, "reservedFor": None}},
            patch_type="merge-patch",
        )
        api.patch(
            f"{API}/namespaces/{namespace}/resourceclaims/train",
            {"metadata": {"finalizers": None}},
            patch_type="merge-patch",
        )
        api.delete(f"{API}/resourceslices/{namespace}-node-1")
        api.delete(f"{API}/deviceclasses/{namespace}-gpu")
