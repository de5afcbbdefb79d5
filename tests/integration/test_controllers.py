"""The test cluster's kube-controller-manager (hack/cluster-up.sh) really runs the
controllers scheduling relies on: the disruption controller writes PDB status, the
PV binder binds claims (with the annotation VolumeBinding checks) and the
resourceclaim controller creates a pod's ResourceClaims from its templates."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import (
    PAUSE_IMAGE,
    AdminApi,
    ApiError,
    ControlPlane,
    KubeSchedulerProcess,
    unique_name,
)

pytestmark = pytest.mark.integration

CONTROLLERS = (
    "resourceclaim-controller",
    "persistentvolume-binder-controller",
    "disruption-controller",
)


def test_the_controller_manager_runs_the_controllers_scheduling_needs(
    control_plane: ControlPlane,
) -> None:
    assert control_plane.controllers == CONTROLLERS
    url = control_plane.env["CONTROLLER_MANAGER_URL"]
    # Its serving certificate is self-signed; /healthz needs no credentials.
    assert httpx.get(f"{url}/healthz", verify=False, timeout=5).text == "ok"
    pid = control_plane.pid("kube-controller-manager")
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert f"--controllers={','.join(CONTROLLERS)}".encode() in cmdline


# --------------------------------------------------------------------- disruption
def _ready(api: AdminApi, ns: str, pod: str) -> None:
    """The Ready condition a kubelet would report (the disruption controller counts
    only ready pods as healthy)."""
    api.patch(
        f"/api/v1/namespaces/{ns}/pods/{pod}/status",
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        "strategic-merge-patch",
    )


def test_the_disruption_controller_writes_pdb_status(api: AdminApi, namespace: str) -> None:
    pdb = api.post(
        f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/web"
    assert "status" not in pdb or not pdb["status"].get("observedGeneration")

    def status(**want: int) -> Callable[[], dict[str, Any] | None]:
        def check() -> dict[str, Any] | None:
            got = api.get(path).get("status", {})
            fields = {k: got.get(k, 0) for k in want}
            return got if got.get("observedGeneration") and fields == want else None

        return check

    for i in range(2):
        api.create_pod(namespace, f"web-{i}", labels={"app": "web"})
    # Not ready (no kubelet): nothing may be disrupted.
    api.wait_for(
        status(expectedPods=2, currentHealthy=0, desiredHealthy=1, disruptionsAllowed=0),
        message="PDB status for two unready pods",
    )
    for i in range(2):
        _ready(api, namespace, f"web-{i}")
    got = api.wait_for(
        status(expectedPods=2, currentHealthy=2, desiredHealthy=1, disruptionsAllowed=1),
        message="PDB status for two ready pods",
    )
    conditions = {c["type"]: c["status"] for c in got.get("conditions", [])}
    assert conditions == {"DisruptionAllowed": "True"}


# --------------------------------------------------------------------- PV binder
@pytest.fixture
def volumes(api: AdminApi) -> Iterator[list[str]]:
    """PV names to delete after the test. The StorageObjectInUseProtection
    admission plugin gives every PV a finalizer that only the pv-protection
    controller (not run here) would remove: drop it, then delete."""
    names: list[str] = []
    yield names
    for name in names:
        with contextlib.suppress(ApiError, httpx.HTTPError):
            path = f"/api/v1/persistentvolumes/{name}"
            api.patch(path, {"metadata": {"finalizers": None}}, "merge-patch")
            api.request("DELETE", path, ok=(404,))


def _pv(name: str, storage_class: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class,
        "hostPath": {"path": f"/tmp/{name}"},
    }
    if node:
        term = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": spec,
    }


def _pvc(api: AdminApi, ns: str, name: str, storage_class: str) -> dict[str, Any]:
    return api.post(
        f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                # A class of the test's own (no StorageClass object: no provisioning)
                # so that no other test's volume matches.
                "storageClassName": storage_class,
            },
        },
    )


def _bound_claim(api: AdminApi, ns: str, name: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        pvc = api.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}")
        notes = pvc["metadata"].get("annotations", {})
        bound = pvc.get("status", {}).get("phase") == "Bound"
        return pvc if bound and "pv.kubernetes.io/bind-completed" in notes else None

    return api.wait_for(check, message=f"claim {ns}/{name} to be bound")


def test_the_pv_binder_binds_a_claim_to_a_matching_volume(
    api: AdminApi, namespace: str, volumes: list[str]
) -> None:
    storage_class = unique_name("kubesched-test", max_len=40)
    pv_name = unique_name("pv-bind", max_len=40)
    volumes.append(pv_name)
    api.post("/api/v1/persistentvolumes", _pv(pv_name, storage_class))
    pvc = _pvc(api, namespace, "data", storage_class)
    bound = _bound_claim(api, namespace, "data")
    assert bound["spec"]["volumeName"] == pv_name
    assert bound["status"]["capacity"] == {"storage": "1Gi"}
    pv = api.wait_for(
        lambda: (
            v
            if (v := api.get(f"/api/v1/persistentvolumes/{pv_name}"))["status"].get("phase")
            == "Bound"
            else None
        ),
        message=f"volume {pv_name} to be Bound",
    )
    assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert pv["spec"]["claimRef"]["name"] == "data"


def test_kube_scheduler_follows_the_volume_the_binder_chose(
    api: AdminApi,
    namespace: str,
    volumes: list[str],
    kube_scheduler: Callable[..., KubeSchedulerProcess],
) -> None:
    """A claim bound by the real binder is fully bound for VolumeBinding: the pod
    goes to the one node the volume's node affinity allows (an unbound immediate
    claim would leave it unschedulable)."""
    prefix = unique_name("kcm-vol", max_len=30)
    nodes = [f"{prefix}-a", f"{prefix}-b"]
    for node in nodes:
        api.create_node(node)
    storage_class = unique_name("kubesched-test", max_len=40)
    pv_name = f"{prefix}-pv"
    volumes.append(pv_name)
    api.post("/api/v1/persistentvolumes", _pv(pv_name, storage_class, node=nodes[1]))
    _pvc(api, namespace, "data", storage_class)
    _bound_claim(api, namespace, "data")
    kube_scheduler()
    api.create_pod(
        namespace,
        "app",
        scheduler_name="default-scheduler",
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
    )
    assert api.wait_for_node_name(namespace, "app") == nodes[1]


# --------------------------------------------------------------------- resource claims
def test_the_resourceclaim_controller_creates_a_pods_claim_from_its_template(
    api: AdminApi, namespace: str
) -> None:
    api.post(
        f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaimtemplates",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-template"},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
                        ]
                    }
                }
            },
        },
    )
    pod = api.create_pod(
        namespace,
        "trainer",
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        containers=[
            {
                "name": "c",
                "image": PAUSE_IMAGE,
                "resources": {"claims": [{"name": "gpu"}]},
            }
        ],
    )

    def claim_name() -> str | None:
        statuses = api.get_pod(namespace, "trainer")["status"].get("resourceClaimStatuses", [])
        return next((s.get("resourceClaimName") for s in statuses if s["name"] == "gpu"), None)

    name = api.wait_for(claim_name, message="the pod's generated ResourceClaim")
    # generateName "<pod>-<claim in the pod>-": the API server adds 5 random characters.
    assert re.fullmatch(r"trainer-gpu-[a-z0-9]{5}", name), name
    claim = api.get(f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims/{name}")
    assert claim["metadata"]["generateName"] == "trainer-gpu-"
    assert claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner.get("controller")) == (
        "Pod",
        "trainer",
        pod["metadata"]["uid"],
        True,
    )
    assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == (
        "gpu.example.com"
    )
