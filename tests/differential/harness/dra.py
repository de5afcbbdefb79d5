"""The harness's part for the `dra` feature: DRA objects on the control plane, the
resourceclaim controller's part when none runs, what a step records of the claims,
and the claims' allocations as the comparison reads them.

DeviceClasses and ResourceSlices are cluster-scoped and shared by both runs of a
scenario (per-scenario names): a device's allocation is recorded only in the claim
that holds it, so the second run sees free devices as long as the first run's claims
are gone. Claims and templates are namespaced, one set per run; after a run the
harness deletes its claims (removing the scheduler's delete-protection finalizer,
which no controller here removes once the pods are gone) before the other scheduler
starts, so that no allocation of one run leaks into the other.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from tests.differential import generator as gen
from tests.integration.conftest import AdminApi, ApiError

API = "/apis/resource.k8s.io/v1"
# The resourceclaim controller's annotation on a claim it made from a template: which
# of the pod's spec.resourceClaims it is for (resourceclaim.go, annotationPodClaimName).
POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# The controller's Lease (it runs with leader election by default).
CONTROLLER_LEASE = (
    "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
)

_COLLECTION = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices"}


# --------------------------------------------------------------------- cluster objects
def create_cluster_objects(
    api: AdminApi, scenario: Mapping[str, Any], prefix: str, names: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The scenario's DeviceClasses, then its ResourceSlices; (collection, name) of each,
    for delete_cluster_objects."""
    dra = scenario.get("dra")
    if not dra:
        return []
    created = []
    try:
        for manifest in gen.dra_cluster_manifests(dra, prefix, names):
            collection = _COLLECTION[manifest["kind"]]
            api.post(f"{API}/{collection}", manifest)
            created.append((collection, manifest["metadata"]["name"]))
    except BaseException:
        delete_cluster_objects(api, created)
        raise
    return created


def delete_cluster_objects(api: AdminApi, created: Sequence[tuple[str, str]]) -> None:
    for collection, name in reversed(created):
        with contextlib.suppress(ApiError, httpx.HTTPError):
            api.request("DELETE", f"{API}/{collection}/{name}", ok=(404,))


def create_namespace_objects(
    api: AdminApi, scenario: Mapping[str, Any], ns: str, prefix: str
) -> None:
    """The run's ResourceClaims and ResourceClaimTemplates (in NS)."""
    dra = scenario.get("dra")
    if not dra:
        return
    for manifest in gen.dra_namespace_manifests(dra, ns, prefix):
        collection = (
            "resourceclaims" if manifest["kind"] == "ResourceClaim" else "resourceclaimtemplates"
        )
        api.post(f"{API}/namespaces/{ns}/{collection}", manifest)


def delete_claims(api: AdminApi, ns: str, timeout: float = 30.0) -> None:
    """Delete every claim of NS and wait until they are gone. The schedulers put the
    delete-protection finalizer on the claims they allocate; without a controller to
    deallocate them (their pods are gone) it would keep them, allocated, for ever."""
    path = f"{API}/namespaces/{ns}/resourceclaims"
    for claim in api.get(path).get("items", []):
        name = claim["metadata"]["name"]
        with contextlib.suppress(ApiError, httpx.HTTPError):
            if claim["metadata"].get("finalizers"):
                api.patch(f"{path}/{name}", {"metadata": {"finalizers": None}}, "merge-patch")
            api.request("DELETE", f"{path}/{name}", ok=(404,))
    api.wait_for(lambda: not api.get(path).get("items"), timeout=timeout, message=f"claims of {ns}")


# --------------------------------------------------------------------- the controller's part
def controller_runs(api: AdminApi, env: Mapping[str, str]) -> bool:
    """Whether a kube-controller-manager (with its resourceclaim controller) serves the
    cluster: its control plane says so in DIR/env, or its leader-election Lease exists."""
    if any("CONTROLLER_MANAGER" in key for key in env):
        return True
    try:
        api.get(CONTROLLER_LEASE)
    except (ApiError, httpx.HTTPError):
        return False
    return True


def play_claim_controller(api: AdminApi, ns: str, pod: Mapping[str, Any]) -> None:
    """What the resourceclaim controller does for a new POD (as the API stored it) with
    template claims: a claim per template entry, generateName "<pod>-<claim>-", owned
    by the pod and annotated with its entry, then the pod's status.resourceClaimStatuses.
    Until then both schedulers keep the pod out of the queue (DynamicResources'
    PreEnqueue), so doing it right after the pod's creation changes nothing they see."""
    entries = [e for e in pod["spec"].get("resourceClaims", []) if "resourceClaimTemplateName" in e]
    if not entries:
        return
    meta = pod["metadata"]
    statuses = []
    for entry in entries:
        template = api.get(
            f"{API}/namespaces/{ns}/resourceclaimtemplates/{entry['resourceClaimTemplateName']}"
        )
        tmeta = template["spec"].get("metadata") or {}
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                # The controller truncates long names; the generator's are short.
                "generateName": f"{meta['name']}-{entry['name']}-",
                "namespace": ns,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
                "annotations": {
                    **(tmeta.get("annotations") or {}),
                    POD_CLAIM_ANNOTATION: entry["name"],
                },
                **({"labels": tmeta["labels"]} if tmeta.get("labels") else {}),
            },
            "spec": copy.deepcopy(template["spec"]["spec"]),
        }
        made = api.post(f"{API}/namespaces/{ns}/resourceclaims", claim)
        statuses.append({"name": entry["name"], "resourceClaimName": made["metadata"]["name"]})
    api.patch(
        f"/api/v1/namespaces/{ns}/pods/{meta['name']}/status",
        {"status": {"resourceClaimStatuses": statuses}},
        "merge-patch",
    )


# --------------------------------------------------------------------- records
def list_claims(api: AdminApi, ns: str) -> dict[str, dict[str, Any]]:
    """The claims of NS by name, as the API has them (without managedFields)."""
    out = {}
    for claim in api.get(f"{API}/namespaces/{ns}/resourceclaims").get("items", []):
        claim["metadata"].pop("managedFields", None)
        claim.setdefault("apiVersion", "resource.k8s.io/v1")
        claim.setdefault("kind", "ResourceClaim")
        out[claim["metadata"]["name"]] = claim
    return dict(sorted(out.items()))


def claim_statuses(pods: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per pod (of a pod list) its status.resourceClaimStatuses, where it has any."""
    out = {}
    for pod in pods:
        statuses = pod.get("status", {}).get("resourceClaimStatuses")
        if statuses:
            out[pod["metadata"]["name"]] = copy.deepcopy(statuses)
    return out


def claims_before(
    after_previous: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The claims as they were when a step's pod was scheduled: those after the
    previous step as they were then, and those made during the step (for the step's
    pod, from its templates) without the status the step gave them."""
    out = [copy.deepcopy(dict(c)) for c in after_previous.values()]
    for name, claim in after.items():
        if name not in after_previous:
            fresh = copy.deepcopy(dict(claim))
            fresh.pop("status", None)
            fresh["metadata"].pop("finalizers", None)
            out.append(fresh)
    return out


# --------------------------------------------------------------------- comparison
def allocations(
    pod: Mapping[str, Any],
    claims: Mapping[str, Mapping[str, Any]],
    statuses: Sequence[Mapping[str, Any]],
    logical: Mapping[str, str],
) -> dict[str, Any]:
    """Per entry of POD's spec.resourceClaims: "missing" (no claim), "unallocated",
    or the allocation in a form both runs can be compared by: the nodes its node
    selector names (logical) and the number of devices per request (a prioritized
    list's as "request/subrequest"). Which devices may differ on ties."""
    generated = {s["name"]: s.get("resourceClaimName") for s in statuses}
    out: dict[str, Any] = {}
    for entry in pod.get("spec", {}).get("resourceClaims", []):
        name = entry.get("resourceClaimName") or generated.get(entry["name"])
        claim = claims.get(name) if name else None
        if claim is None:
            out[entry["name"]] = "missing"
            continue
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            out[entry["name"]] = "unallocated"
            continue
        counts: dict[str, int] = {}
        for result in allocation.get("devices", {}).get("results", []):
            counts[result["request"]] = counts.get(result["request"], 0) + 1
        nodes = sorted(
            logical.get(v, v)
            for term in (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms", [])
            for part in (*term.get("matchFields", []), *term.get("matchExpressions", []))
            for v in part.get("values", [])
            if part.get("key") in ("metadata.name", "kubernetes.io/hostname")
        )
        out[entry["name"]] = {"nodes": nodes, "requests": dict(sorted(counts.items()))}
    return out
