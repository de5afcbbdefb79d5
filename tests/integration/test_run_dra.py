"""`kubesched run` allocates ResourceClaims on a real control plane, as kube-scheduler
v1.36.3's DynamicResources does: the pod goes to the node that has the device, the
claim gets its finalizer, status.allocation and reservedFor, a claim that cannot be
satisfied gives upstream's FailedScheduling text, and once the first pod is deleted
the real kube-controller-manager (resourceclaim controller) releases the device for
the next pod. Each case runs with kubesched and with the real kube-scheduler, so the
expected texts are checked against upstream in the same run."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import AdminApi, ControlPlane
from tests.integration.kube_scheduler_proc import KubeSchedulerProcess
from tests.integration.kubesched_proc import KubeschedProcess, start_kubesched
from tests.integration.test_run import unique_prefix

pytestmark = pytest.mark.integration

RESOURCE = "/apis/resource.k8s.io/v1"


def _claim(namespace: str, name: str, device_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}
        },
    }


def _scheduled_condition(api: AdminApi, namespace: str, name: str) -> dict[str, Any] | None:
    pod = api.get_pod(namespace, name)
    for condition in pod.get("status", {}).get("conditions", []):
        if condition.get("type") == "PodScheduled":
            return dict(condition)
    return None


def _wait(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _gpu_class_and_slice(api: AdminApi, prefix: str, node: str, devices: int) -> str:
    """A DeviceClass for this test's driver, and NODE's ResourceSlice with DEVICES
    GPUs named gpu-0, gpu-1, ...; the class name."""
    driver = f"gpu.{prefix}.example.com"
    device_class = f"{prefix}-gpu"
    api.post(
        f"{RESOURCE}/deviceclasses",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": device_class},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
        },
    )
    api.post(
        f"{RESOURCE}/resourceslices",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpu"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": f"gpu-{i}", "attributes": {"model": {"string": "h100"}}}
                    for i in range(devices)
                ],
            },
        },
    )
    return device_class


@pytest.mark.parametrize("scheduler", ["kubesched", "default-scheduler"])
def test_a_claim_is_allocated_on_the_node_with_the_device_and_freed_with_its_pod(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
    scheduler: str,
) -> None:
    prefix = unique_prefix("dra")
    pool = {"kubesched.test/pool": prefix}
    gpu_node, plain_node = f"{prefix}-gpu", f"{prefix}-plain"
    for name in (gpu_node, plain_node):
        api.create_node(name, cpu="4", memory="16Gi", labels=pool)
    device_class = _gpu_class_and_slice(api, prefix, gpu_node, 1)
    driver = f"gpu.{prefix}.example.com"
    for claim in ("first", "second"):
        api.post(
            f"{RESOURCE}/namespaces/{namespace}/resourceclaims",
            _claim(namespace, claim, device_class),
        )

    if scheduler == "kubesched":
        run = start_kubesched(control_plane, tmp_path, "--no-leader-elect", name="kubesched-dra")
        kubesched.append(run)
    else:
        kube_scheduler()

    def claim_pod(name: str) -> None:
        api.create_pod(
            namespace,
            name,
            cpu="100m",
            scheduler_name=scheduler,
            nodeSelector=pool,
            resourceClaims=[{"name": "gpu", "resourceClaimName": name}],
        )

    # The first pod goes to the node whose slice has the device.
    claim_pod("first")
    assert api.wait_for_node_name(namespace, "first", timeout=60) == gpu_node
    first = api.get_pod(namespace, "first")
    claim = api.get(f"{RESOURCE}/namespaces/{namespace}/resourceclaims/first")
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["request"], r["driver"], r["pool"], r["device"]) for r in results] == [
        ("gpu", driver, gpu_node, "gpu-0")
    ]
    assert [(r["resource"], r["name"], r["uid"]) for r in claim["status"]["reservedFor"]] == [
        ("pods", "first", first["metadata"]["uid"])
    ]

    # The second claim cannot be satisfied while the only device is taken.
    claim_pod("second")
    condition = _wait(
        "second's PodScheduled=False",
        lambda: (c := _scheduled_condition(api, namespace, "second")) and c["status"] == "False",
    )
    condition = _scheduled_condition(api, namespace, "second")
    assert condition is not None
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )

    # Deleting the first pod: the resourceclaim controller drops it from reservedFor and
    # deallocates the claim; the device is free and the second pod gets it.
    api.delete_pod(namespace, "first")
    assert api.wait_for_node_name(namespace, "second", timeout=90) == gpu_node
    second = api.get(f"{RESOURCE}/namespaces/{namespace}/resourceclaims/second")
    assert second["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"


@pytest.mark.parametrize("scheduler", ["kubesched", "default-scheduler"])
def test_a_pod_with_a_claim_template_waits_for_its_claim_then_gets_a_device(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
    scheduler: str,
) -> None:
    """The real resourceclaim controller makes `<pod>-<claim>-xxxxx` from the template
    and records it in the pod's status; only then may the pod be scheduled."""
    prefix = unique_prefix("drat")
    pool = {"kubesched.test/pool": prefix}
    node = f"{prefix}-gpu"
    api.create_node(node, cpu="4", memory="16Gi", labels=pool)
    device_class = _gpu_class_and_slice(api, prefix, node, 2)
    api.post(
        f"{RESOURCE}/namespaces/{namespace}/resourceclaimtemplates",
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "two-gpus", "namespace": namespace},
            "spec": {
                "spec": {
                    "devices": {
                        "requests": [
                            {
                                "name": "gpus",
                                "exactly": {"deviceClassName": device_class, "count": 2},
                            }
                        ]
                    }
                }
            },
        },
    )
    if scheduler == "kubesched":
        run = start_kubesched(control_plane, tmp_path, "--no-leader-elect", name="kubesched-drat")
        kubesched.append(run)
    else:
        kube_scheduler()
    api.create_pod(
        namespace,
        "trainer",
        cpu="100m",
        scheduler_name=scheduler,
        nodeSelector=pool,
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "two-gpus"}],
    )
    assert api.wait_for_node_name(namespace, "trainer", timeout=60) == node
    pod = api.get_pod(namespace, "trainer")
    [status] = pod["status"]["resourceClaimStatuses"]
    assert status["name"] == "gpu" and status["resourceClaimName"].startswith("trainer-gpu-")
    claim = api.get(
        f"{RESOURCE}/namespaces/{namespace}/resourceclaims/{status['resourceClaimName']}"
    )
    devices = sorted(r["device"] for r in claim["status"]["allocation"]["devices"]["results"])
    assert devices == ["gpu-0", "gpu-1"]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]


@pytest.mark.parametrize("scheduler", ["kubesched", "default-scheduler"])
def test_a_preemptor_that_shares_its_victims_claim_ends_up_bound_with_it(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
    scheduler: str,
) -> None:
    """The race that the differential generator keeps out of its scenarios: once the
    victim is gone, the resourceclaim controller deallocates the shared claim while the
    preemptor is retried. Whether the retry's PreBind comes first (the claim keeps its
    allocation) or second (upstream's `got deallocated elsewhere in the meantime`, then
    a retry after backoff that allocates afresh), the preemptor must end up bound with
    the claim reserved for it alone, and never be preempted twice."""
    prefix = unique_prefix("drap")
    pool = {"kubesched.test/pool": prefix}
    node = f"{prefix}-gpu"
    api.create_node(node, cpu="1", memory="16Gi", labels=pool)
    device_class = _gpu_class_and_slice(api, prefix, node, 1)
    api.post(
        f"{RESOURCE}/namespaces/{namespace}/resourceclaims",
        _claim(namespace, "shared", device_class),
    )
    low, high = f"{namespace}-low", f"{namespace}-high"
    for name, value in ((low, 10), (high, 1000)):
        api.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    try:
        if scheduler == "kubesched":
            run = start_kubesched(
                control_plane, tmp_path, "--no-leader-elect", name="kubesched-drap"
            )
            kubesched.append(run)
        else:
            kube_scheduler()
        shared = [{"name": "gpu", "resourceClaimName": "shared"}]
        api.create_pod(
            namespace,
            "victim",
            cpu="800m",
            scheduler_name=scheduler,
            nodeSelector=pool,
            priorityClassName=low,
            resourceClaims=shared,
        )
        assert api.wait_for_node_name(namespace, "victim", timeout=60) == node
        api.create_pod(
            namespace,
            "preemptor",
            cpu="800m",
            scheduler_name=scheduler,
            nodeSelector=pool,
            priorityClassName=high,
            resourceClaims=shared,
        )
        assert api.wait_for_node_name(namespace, "preemptor", timeout=90) == node
        preemptor = api.get_pod(namespace, "preemptor")
        claim = _wait(
            "the claim reserved for the preemptor alone",
            lambda: (
                (c := api.get(f"{RESOURCE}/namespaces/{namespace}/resourceclaims/shared"))
                and [r["name"] for r in c["status"].get("reservedFor", [])] == ["preemptor"]
                and c
            ),
        )
        assert claim["status"]["reservedFor"][0]["uid"] == preemptor["metadata"]["uid"]
        assert claim["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
        # Preempted once: the victim is gone, and no other pod was touched.
        assert [p["metadata"]["name"] for p in api.list_pods(namespace)] == ["preemptor"]
    finally:
        for name in (low, high):
            api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", ok=(404,))
