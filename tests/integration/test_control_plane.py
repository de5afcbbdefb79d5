"""The integration fixtures against the real control plane: kube-apiserver from
hack/, the real kube-scheduler, restarts."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import pytest

from tests.integration.admin_api import AdminApi, ApiError, event_fields, unique_name
from tests.integration.control_plane import HACK_DIR, ControlPlane
from tests.integration.kube_scheduler_proc import KubeSchedulerProcess

pytestmark = pytest.mark.integration

StartScheduler = Callable[..., KubeSchedulerProcess]


def test_control_plane_fields(control_plane: ControlPlane, api: AdminApi) -> None:
    cp = control_plane
    for path in (cp.kubeconfig, cp.scheduler_kubeconfig, cp.ca_cert, cp.admin_cert, cp.admin_key):
        assert path.is_file(), path
    assert cp.binary("kube-scheduler").is_file()
    assert cp.binary("etcd").is_file()
    assert cp.url.startswith("https://127.0.0.1:")
    assert cp.env["APISERVER_URL"] == cp.url
    assert (cp.dir / "kube-apiserver.args").read_text().splitlines()[0].endswith("kube-apiserver")
    version = os.environ.get("K8S_VERSION") or (HACK_DIR / "k8s-version").read_text().strip()
    assert api.get("/version")["gitVersion"] == version
    assert api.ready()
    assert api.whoami()["username"] == "admin"


def test_namespace_fixture_is_fresh(api: AdminApi, namespace: str) -> None:
    ns = api.get(f"/api/v1/namespaces/{namespace}")
    assert ns["status"]["phase"] == "Active"
    assert api.list_pods(namespace) == []


def test_kube_scheduler_binds_default_scheduler_pod(
    api: AdminApi, namespace: str, kube_scheduler: StartScheduler
) -> None:
    node = unique_name("node-a")
    api.create_node(node, cpu="2", memory="4Gi")
    api.create_pod(namespace, "web", cpu="500m", memory="256Mi", scheduler_name="default-scheduler")
    assert api.node_of(namespace, "web") is None

    kube_scheduler()
    assert api.wait_for_node_name(namespace, "web", timeout=30) == node

    # kube-scheduler reports through events.k8s.io/v1; list_events sees it once.
    scheduled = api.wait_for(
        lambda: [
            f
            for f in map(event_fields, api.list_events(namespace))
            if f["reason"] == "Scheduled" and f["object"] == "web"
        ],
        timeout=15,
        message="the Scheduled event",
    )
    assert len(scheduled) == 1
    assert scheduled[0]["source"] == "default-scheduler"
    assert f"to {node}" in scheduled[0]["message"]


def test_kube_scheduler_ignores_kubesched_pods(
    api: AdminApi, namespace: str, kube_scheduler: StartScheduler
) -> None:
    node = unique_name("node-b")
    api.create_node(node)
    api.create_pod(namespace, "ours", cpu="100m", scheduler_name="kubesched")
    api.create_pod(namespace, "sentinel", cpu="100m", scheduler_name="default-scheduler")

    kube_scheduler()
    # Once the sentinel (created later) is bound, kube-scheduler has seen both.
    assert api.wait_for_node_name(namespace, "sentinel", timeout=30) == node
    time.sleep(2)
    pod = api.get_pod(namespace, "ours")
    assert "nodeName" not in pod["spec"]
    assert not [c for c in pod["status"].get("conditions", []) if c["type"] == "PodScheduled"]
    assert api.events_for(namespace, "ours") == []


def test_kube_scheduler_with_config_file(
    api: AdminApi, namespace: str, kube_scheduler: StartScheduler
) -> None:
    """A KubeSchedulerConfiguration (as a dict; a path works the same) with a
    profile of another name: only that profile's pods are scheduled."""
    node = unique_name("node-c")
    api.create_node(node, labels={"pool": "ref"})
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "reference-scheduler"}],
    }
    api.create_pod(namespace, "ref", cpu="100m", scheduler_name="reference-scheduler")
    proc = kube_scheduler(config)
    assert (proc.workdir / "config.yaml").read_text().count(str(api.cp.scheduler_kubeconfig)) == 1
    assert api.wait_for_node_name(namespace, "ref", timeout=30) == node


def test_list_events_merges_both_apis(api: AdminApi, namespace: str) -> None:
    api.create_pod(namespace, "p")
    api.post(
        f"/api/v1/namespaces/{namespace}/events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "p.core", "namespace": namespace},
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "p",
                "namespace": namespace,
            },
            "reason": "CoreReason",
            "message": "from core/v1",
            "type": "Normal",
            "source": {"component": "test"},
        },
    )
    api.post(
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "p.new", "namespace": namespace},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": namespace},
            "reason": "NewReason",
            "note": "from events.k8s.io/v1",
            "type": "Warning",
            "action": "Testing",
            "reportingController": "test",
            "reportingInstance": "test-1",
        },
    )
    events = api.events_for(namespace, "p")
    assert sorted(events) == [
        ("Normal", "CoreReason", "from core/v1"),
        ("Warning", "NewReason", "from events.k8s.io/v1"),
    ]


def test_apply_creates_then_replaces(api: AdminApi, namespace: str) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": namespace},
        "data": {"a": "1"},
    }
    (first,) = api.apply(cm)
    (second,) = api.apply({**cm, "data": {"a": "2"}})
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert api.get(f"/api/v1/namespaces/{namespace}/configmaps/cfg")["data"] == {"a": "2"}
    # Strict field validation: a typo is an error, not silently dropped.
    with pytest.raises(ApiError) as err:
        api.apply({**cm, "dta": {}})
    assert err.value.code == 400
    with pytest.raises(ValueError, match="not supported"):
        api.apply({"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}})


def test_delete_pod_removes_bound_pod_at_once(api: AdminApi, namespace: str) -> None:
    node = unique_name("node-d")
    api.create_node(node)
    api.create_pod(namespace, "bound")
    api.bind(namespace, "bound", node)
    assert api.node_of(namespace, "bound") == node
    api.delete_pod(namespace, "bound")
    assert api.list_pods(namespace) == []


def test_restart_apiserver_keeps_data(
    control_plane: ControlPlane, api: AdminApi, namespace: str
) -> None:
    node = unique_name("node-r")
    api.create_node(node)
    api.create_pod(namespace, "survivor", cpu="100m")
    old_pid = control_plane.pid()

    new_pid = api.restart_apiserver()

    assert new_pid != old_pid
    assert control_plane.pid() == new_pid
    assert node in [n["metadata"]["name"] for n in api.list_nodes()]
    assert [p["metadata"]["name"] for p in api.list_pods(namespace)] == ["survivor"]
    # Writable again, and a crash (SIGKILL) restart works too.
    api.bind(namespace, "survivor", node)
    api.restart_apiserver(hard=True)
    assert api.node_of(namespace, "survivor") == node
