"""Scheduler extenders on the real control plane: kube-scheduler v1.36.3, as shipped,
and `kubesched run`, each configured with the same extender (tests/extender_server.py),
place the same pods and write the same FailedScheduling texts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.extender_server import TestExtender, filter_answer, node_names, pod_name, serve_extender
from tests.integration.admin_api import AdminApi, unique_name
from tests.integration.control_plane import ControlPlane
from tests.integration.kube_scheduler_proc import KubeSchedulerProcess
from tests.integration.kubesched_proc import start_kubesched

pytestmark = pytest.mark.integration

PROFILE = "extended"


def config(*extenders: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": PROFILE}],
        "extenders": list(extenders),
    }


def failed_message(api: AdminApi, ns: str, pod: str) -> str:
    """The pod's PodScheduled=False message, once it has one."""

    def message() -> str | None:
        for cond in api.get_pod(ns, pod).get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return str(cond.get("message", ""))
        return None

    return str(api.wait_for(message, timeout=30))


def run_both(
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    control_plane: ControlPlane,
    api: AdminApi,
    tmp_path: Path,
    cfg: dict[str, Any],
    scenario: Callable[[str], dict[str, str | None]],
) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """The scenario under kube-scheduler, then under kubesched, each in a namespace
    of its own; what each gave."""
    results = []
    for which in ("kube-scheduler", "kubesched"):
        ns = unique_name(f"ext-{which}")
        api.create_namespace(ns)
        if which == "kube-scheduler":
            proc: Any = kube_scheduler(cfg)
        else:
            path = tmp_path / "kubesched.yaml"
            path.write_text(yaml.safe_dump(cfg))
            proc = start_kubesched(control_plane, tmp_path, "--config", str(path))
            proc.wait_ready()
        try:
            results.append(scenario(ns))
        finally:
            proc.stop()
            for pod in api.list_pods(ns):
                api.delete_pod(ns, pod["metadata"]["name"])
    return results[0], results[1]


def test_filter_and_prioritize_place_pods_as_kube_scheduler_does(
    control_plane: ControlPlane,
    api: AdminApi,
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
) -> None:
    mine = [unique_name(f"ext-{i}") for i in range(3)]
    for name in mine:
        api.create_node(name, cpu="2", memory="4Gi")
    ext = TestExtender()
    # Of this test's nodes the extender keeps the last two (every other node of the
    # shared cluster is refused), and prefers the last.
    ext.verbs["filter"] = lambda args: filter_answer(
        args,
        lambda n: n in mine[1:] and pod_name(args) != "nowhere",
        "node(s) are outside the extender's pool",
    )
    ext.verbs["prioritize"] = lambda args: [
        {"Host": n, "Score": 10 if n == mine[2] else 1} for n in node_names(args)
    ]

    def scenario(ns: str) -> dict[str, str | None]:
        api.create_pod(ns, "placed", cpu="100m", schedulerName=PROFILE)
        placed = api.wait_for_node_name(ns, "placed")
        api.create_pod(ns, "nowhere", cpu="100m", schedulerName=PROFILE)
        return {"placed": placed, "nowhere": failed_message(api, ns, "nowhere")}

    with serve_extender(ext):
        cfg = config(
            {
                "urlPrefix": ext.url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 10,
                "nodeCacheCapable": True,
            }
        )
        reference, ours = run_both(kube_scheduler, control_plane, api, tmp_path, cfg, scenario)
    assert reference["placed"] == mine[2]
    assert "node(s) are outside the extender's pool" in str(reference["nowhere"])
    assert ours == reference


def test_a_failing_extender_and_an_ignorable_one_as_kube_scheduler_handles_them(
    control_plane: ControlPlane,
    api: AdminApi,
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
) -> None:
    node = unique_name("ext-solo")
    api.create_node(node, cpu="2", memory="4Gi")
    broken = TestExtender(verbs={"filter": lambda args: 500})
    flaky = TestExtender(verbs={"filter": lambda args: 503})

    def scenario(ns: str) -> dict[str, str | None]:
        api.create_pod(ns, "p", cpu="100m", schedulerName=PROFILE)
        return {"p": failed_message(api, ns, "p")}

    with serve_extender(broken), serve_extender(flaky):
        cfg = config(
            {"urlPrefix": flaky.url, "filterVerb": "filter", "ignorable": True},
            {"urlPrefix": broken.url, "filterVerb": "filter"},
        )
        reference, ours = run_both(kube_scheduler, control_plane, api, tmp_path, cfg, scenario)
    assert reference["p"] == f"failed filter with extender at URL {broken.url}/filter, code 500"
    assert ours == reference


def test_the_binding_extender_binds_the_pod(
    control_plane: ControlPlane,
    api: AdminApi,
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
) -> None:
    node = unique_name("ext-bind")
    api.create_node(node, cpu="2", memory="4Gi")
    ext = TestExtender()
    ext.verbs["filter"] = lambda args: filter_answer(args, lambda n: n == node)

    def bind(args: dict[str, Any]) -> dict[str, Any]:
        api.bind(args["PodNamespace"], args["PodName"], args["Node"])
        return {"Error": ""}

    ext.verbs["bind"] = bind

    def scenario(ns: str) -> dict[str, str | None]:
        api.create_pod(ns, "p", cpu="100m", schedulerName=PROFILE)
        return {"p": api.wait_for_node_name(ns, "p")}

    with serve_extender(ext):
        cfg = config(
            {
                "urlPrefix": ext.url,
                "filterVerb": "filter",
                "bindVerb": "bind",
                "nodeCacheCapable": True,
            }
        )
        reference, ours = run_both(kube_scheduler, control_plane, api, tmp_path, cfg, scenario)
    assert reference == ours == {"p": node}
    # Each scheduler asked the extender to bind its pod, and bound nothing itself.
    binds = ext.calls("bind")
    assert len(binds) == 2 and {b["Node"] for b in binds} == {node}
