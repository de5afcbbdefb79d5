"""End to end with DRA objects: create a plan's DeviceClasses, ResourceSlices and
ResourceClaimTemplates, check that a resourceclaim controller makes the claims
of template pods, read the claims back, and delete it all at the end. The
Workload API's Workloads and PodGroups (bench.gang_workload) are created and
deleted the same way.

The claims of the pods are made by kube-controller-manager's
resourceclaim-controller, which must run beside the control plane: without it a
template pod waits for its claim forever. ``probe_claim_controller`` finds out in
seconds, before any scheduler starts, rather than letting the run time out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from typing import Any

from bench.cluster import Api, BenchError, encode
from bench.dra_workload import claim_state
from bench.workloads import ROLE_LABEL, RUN_LABEL, ClaimState, Manifest, Plan

RESOURCE_PATH = "/apis/resource.k8s.io/v1"
SCHEDULING_PATH = "/apis/scheduling.k8s.io/v1alpha2"
# kind -> (API group path, resource)
_RESOURCES = {
    "DeviceClass": (RESOURCE_PATH, "deviceclasses"),
    "ResourceSlice": (RESOURCE_PATH, "resourceslices"),
    "ResourceClaimTemplate": (RESOURCE_PATH, "resourceclaimtemplates"),
    "ResourceClaim": (RESOURCE_PATH, "resourceclaims"),
    "Workload": (SCHEDULING_PATH, "workloads"),
    "PodGroup": (SCHEDULING_PATH, "podgroups"),
}
PROBE_ROLE = "probe"
PROBE_TIMEOUT = 30.0
NO_CONTROLLER = (
    "no resourceclaim controller: the claims of template pods are made by "
    "kube-controller-manager --controllers=resourceclaim-controller, which does not "
    "run beside this control plane"
)


def collection_path(kind: str, namespace: str = "") -> str:
    group, resource = _RESOURCES[kind]
    if namespace:
        return f"{group}/namespaces/{namespace}/{resource}"
    return f"{group}/{resource}"


def needs_claim_controller(plan: Plan) -> bool:
    return any(m["kind"] == "ResourceClaimTemplate" for m in plan.objects)


async def create_objects(api: Api, plan: Plan) -> None:
    """The plan's objects, kind by kind in the plan's order (a template's class
    exists before the template), each kind `concurrency` at a time."""
    batch: list[Manifest] = []
    for manifest in [*plan.objects, None]:
        if batch and (manifest is None or manifest["kind"] != batch[0]["kind"]):
            await asyncio.gather(*(_create(api, m) for m in batch))
            batch = []
        if manifest is not None:
            batch.append(manifest)


async def _create(api: Api, manifest: Manifest) -> None:
    path = collection_path(manifest["kind"], manifest["metadata"].get("namespace", ""))
    await api.create(path, manifest)


async def probe_claim_controller(
    api: Api, plan: Plan, run_id: str, namespace: str, pod: Manifest
) -> None:
    """Create POD (a template pod of the plan, renamed, for no scheduler) in
    NAMESPACE and wait for the controller to record its claim; then delete both.
    Raises BenchError(NO_CONTROLLER) if no claim comes within PROBE_TIMEOUT."""
    probe = json.loads(json.dumps(pod))
    name = f"{run_id}-claim-probe"
    probe["metadata"].update(name=name, namespace=namespace)
    probe["metadata"]["labels"] = {RUN_LABEL: run_id, ROLE_LABEL: PROBE_ROLE}
    probe["spec"]["schedulerName"] = f"{run_id}-nobody"
    pod_path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    await api.create(f"/api/v1/namespaces/{namespace}/pods", probe)
    claim = ""
    deadline = time.monotonic() + PROBE_TIMEOUT
    try:
        while time.monotonic() < deadline:
            status = json.loads(await api.request("GET", pod_path)).get("status", {})
            names = [s.get("resourceClaimName") for s in status.get("resourceClaimStatuses", ())]
            if names and all(names):
                claim = names[0]
                break
            await asyncio.sleep(0.2)
    finally:
        body = encode({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
        await api.request("DELETE", pod_path, body, ok=(404,))
    if not claim:
        raise BenchError(NO_CONTROLLER)
    # No garbage collector runs: delete the probe's claim ourselves.
    await api.request("DELETE", f"{collection_path('ResourceClaim', namespace)}/{claim}", ok=(404,))


async def read_claims(api: Api, namespaces: Sequence[str]) -> list[ClaimState]:
    out: list[ClaimState] = []
    for namespace in namespaces:
        content = await api.request("GET", collection_path("ResourceClaim", namespace))
        items: list[dict[str, Any]] = json.loads(content).get("items", [])
        out.extend(claim_state(item) for item in items)
    return out


async def delete_objects(api: Api, plan: Plan, run_id: str, namespaces: Sequence[str]) -> None:
    """The run's claims, templates, PodGroups and Workloads (namespaced) and its
    classes and slices (cluster-scoped, by the run label). Claims still carrying the
    delete-protection finalizer go once the resourceclaim controller releases them."""
    if not plan.objects:
        return
    selector = {"labelSelector": f"{RUN_LABEL}={run_id}"}
    kinds = {m["kind"] for m in plan.objects}
    # The claims the controller made from the templates are the run's too.
    if "ResourceClaimTemplate" in kinds:
        kinds.add("ResourceClaim")
    for namespace in namespaces:
        for kind in ("ResourceClaim", "ResourceClaimTemplate", "PodGroup", "Workload"):
            if kind in kinds:
                with contextlib.suppress(BenchError):
                    await api.request("DELETE", collection_path(kind, namespace), ok=(404,))
    for kind in ("ResourceSlice", "DeviceClass"):
        if kind in kinds:
            await api.request("DELETE", collection_path(kind), params=selector, ok=(404,))
