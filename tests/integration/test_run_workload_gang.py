"""The Workload API gang on a real control plane (kube-apiserver serving
scheduling.k8s.io/v1alpha2 with GenericWorkload and GangScheduling on, from
hack/cluster-up.sh with KUBESCHED_WORKLOAD_API=1): `kubesched run` with the same
gates binds a PodGroup's 8 pods all together, or none when only 7 fit, and writes
the PodGroupScheduled condition as kube-scheduler v1.36.3 does; kube-scheduler
with the gates on does the same on the same cluster."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.admin_api import AdminApi, unique_name
from tests.integration.control_plane import (
    CLUSTER_UP_TIMEOUT,
    ControlPlane,
    HackScriptError,
    ensure_binaries,
    run_hack,
)
from tests.integration.kube_scheduler_proc import start_kube_scheduler
from tests.integration.kubesched_proc import start_kubesched

pytestmark = pytest.mark.integration

GATES = "GenericWorkload=true,GangScheduling=true"
GROUPS = "/apis/scheduling.k8s.io/v1alpha2"
GANG_MESSAGE = (
    "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
    "one or more plugins asked to wait and no plugin rejected pod"
)


@pytest.fixture(scope="module")
def workload_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of its own that serves the alpha Workload API."""
    ensure_binaries()
    cluster_dir = tmp_path_factory.mktemp("workload-cluster")
    env = {"KUBESCHED_WORKLOAD_API": "1", "KUBESCHED_CONTROLLERS": "none"}
    try:
        env_file = Path(
            run_hack("cluster-up.sh", str(cluster_dir), timeout=CLUSTER_UP_TIMEOUT, env=env)
        )
    except HackScriptError:
        with contextlib.suppress(HackScriptError):
            run_hack("cluster-down.sh", str(cluster_dir), timeout=60)
        raise
    cp = ControlPlane.from_env_file(env_file)
    try:
        yield cp
    finally:
        logs = tmp_path_factory.mktemp("workload-cluster-logs")
        for log in cluster_dir.glob("*.log"):
            with contextlib.suppress(OSError):
                shutil.copy2(log, logs / log.name)
        run_hack("cluster-down.sh", str(cluster_dir), timeout=120)


@pytest.fixture
def wapi(workload_plane: ControlPlane) -> Iterator[AdminApi]:
    client = AdminApi(workload_plane)
    try:
        yield client
    finally:
        client.cleanup()
        client.close()


def create_gang(api: AdminApi, ns: str, scheduler: str, size: int, min_count: int) -> None:
    api.post(
        f"{GROUPS}/namespaces/{ns}/podgroups",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": ns},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
        },
    )
    for i in range(size):
        api.create_pod(
            ns,
            f"w{i}",
            cpu="3",
            scheduler_name=scheduler,
            schedulingGroup={"podGroupName": "train"},
        )


def pod_group_condition(api: AdminApi, ns: str) -> dict[str, Any] | None:
    group = api.get(f"{GROUPS}/namespaces/{ns}/podgroups/train")
    for condition in group.get("status", {}).get("conditions", []):
        if condition["type"] == "PodGroupScheduled":
            return dict(condition) | {"generation": group["metadata"].get("generation")}
    return None


def bound(api: AdminApi, ns: str) -> dict[str, str | None]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in api.list_pods(ns)}


def setup_nodes(api: AdminApi, count: int) -> None:
    for name in [n["metadata"]["name"] for n in api.list_nodes()]:
        api.delete_node(name)
    prefix = unique_name("g", max_len=20)
    for i in range(count):
        api.create_node(f"{prefix}-{i}", cpu="4", memory="16Gi")


def pod_group_attempts(proc: Any, result: str) -> float:
    """scheduler_podgroup_schedule_attempts_total of kubesched's profile for RESULT."""
    for family in text_string_to_metric_families(proc.metrics().text):
        for sample in family.samples:
            if sample.name == "scheduler_podgroup_schedule_attempts_total" and sample.labels == {
                "profile": "kubesched",
                "result": result,
            }:
                return float(sample.value)
    return 0.0


def start(scheduler: str, cp: ControlPlane, tmp_path: Path) -> Any:
    if scheduler == "kubesched":
        proc = start_kubesched(cp, tmp_path, "--no-leader-elect", "--feature-gates", GATES)
        proc.wait_ready()
        return proc
    return start_kube_scheduler(cp, extra_args=[f"--feature-gates={GATES}"])


@pytest.mark.parametrize("scheduler", ["kubesched", "default-scheduler"])
def test_gang_of_8_binds_all_together_and_the_pod_group_is_scheduled(
    workload_plane: ControlPlane, wapi: AdminApi, tmp_path: Path, scheduler: str
) -> None:
    setup_nodes(wapi, 8)
    ns = unique_name(f"gang8-{scheduler[:4]}", max_len=40)
    wapi.create_namespace(ns)
    proc = start(scheduler, workload_plane, tmp_path)
    try:
        create_gang(wapi, ns, scheduler, size=8, min_count=8)
        wapi.wait_for(lambda: all(bound(wapi, ns).values()), timeout=60)
        assert len(set(bound(wapi, ns).values())) == 8
        wapi.wait_for(lambda: pod_group_condition(wapi, ns) is not None, timeout=15)
        condition = pod_group_condition(wapi, ns)
        assert condition is not None
        assert (condition["status"], condition["reason"], condition.get("message", "")) == (
            "True",
            "Scheduled",
            "",
        )
        # PodGroups have no generation (the registry sets none): 0, omitted, in both.
        assert condition.get("observedGeneration", 0) == (condition["generation"] or 0)
        if scheduler == "kubesched":
            assert pod_group_attempts(proc, "scheduled") == 1
    finally:
        proc.stop()


@pytest.mark.parametrize("scheduler", ["kubesched", "default-scheduler"])
def test_gang_of_8_where_only_7_fit_binds_none(
    workload_plane: ControlPlane, wapi: AdminApi, tmp_path: Path, scheduler: str
) -> None:
    setup_nodes(wapi, 7)
    ns = unique_name(f"gang7-{scheduler[:4]}", max_len=40)
    wapi.create_namespace(ns)
    proc = start(scheduler, workload_plane, tmp_path)
    try:
        create_gang(wapi, ns, scheduler, size=8, min_count=8)
        wapi.wait_for(lambda: pod_group_condition(wapi, ns) is not None, timeout=60)
        condition = pod_group_condition(wapi, ns)
        assert condition is not None
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "False",
            "Unschedulable",
            "pod group is unschedulable",
        )

        def reasons() -> list[str]:
            out = []
            for pod in wapi.list_pods(ns):
                for c in pod["status"].get("conditions", []):
                    if c["type"] == "PodScheduled" and c["status"] == "False":
                        out.append(c["message"])
            return out

        wapi.wait_for(lambda: len(reasons()) == 8, timeout=30)
        messages = reasons()
        assert messages.count(GANG_MESSAGE) == 7
        assert (
            sum(m.startswith("0/7 nodes are available: 7 Insufficient cpu.") for m in messages) == 1
        )
        time.sleep(2)  # nothing binds later either
        assert not any(bound(wapi, ns).values())
        if scheduler == "kubesched":
            assert pod_group_attempts(proc, "unschedulable") >= 1
            assert pod_group_attempts(proc, "scheduled") == 0
    finally:
        proc.stop()
