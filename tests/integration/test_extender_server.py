"""`kubesched extender` behind a stock kube-scheduler v1.36.3: the example plugin
package's TeamNodes and PreferNodeLabel (not installed, on PYTHONPATH) answer
kube-scheduler's filter and prioritize calls, so pods land where the plugins say
and TeamNodes' rejection is in kube-scheduler's FailedScheduling event."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from kubesched_team_plugins.team_nodes import REASON

from tests.integration.admin_api import AdminApi, unique_name
from tests.integration.control_plane import ControlPlane, free_port
from tests.integration.kube_scheduler_proc import KubeSchedulerProcess
from tests.integration.kubesched_proc import KubeschedProcess
from tests.packaging.venvs import PLUGIN_PACKAGE

pytestmark = pytest.mark.integration

PROFILE = "with-extender"


EXAMPLE_PLUGINS = (
    "--config",
    str(PLUGIN_PACKAGE / "example" / "scheduler-config.yaml"),
    "--plugin",
    "kubesched_team_plugins:TeamNodes",
    "--plugin",
    "kubesched_team_plugins.prefer_node_label:PreferNodeLabel",
)


def start_extender(
    cp: ControlPlane,
    workdir: Path,
    *args: str,
    plugins: tuple[str, ...] = EXAMPLE_PLUGINS,
    site: Path | None = None,
) -> KubeschedProcess:
    """`kubesched extender` with PLUGINS' options (the example package's by default;
    SITE is put on the PYTHONPATH too), on a free port."""
    port = free_port()
    log_path = workdir / f"extender-{port}.log"
    path = os.pathsep.join(
        filter(
            None,
            [str(site or ""), str(PLUGIN_PACKAGE / "src"), os.environ.get("PYTHONPATH")],
        )
    )
    command = [
        sys.executable,
        "-m",
        "kubesched.cli.main",
        "extender",
        "--kubeconfig",
        str(cp.kubeconfig),
        "--secure-port",
        str(port),
        "-v",
        "2",
        *plugins,
        *args,
    ]
    with log_path.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=cp.process_env(PYTHONPATH=path)
        )
    return KubeschedProcess(proc, log_path, port, cp)


@pytest.mark.parametrize("node_cache_capable", [True, False], ids=["names", "nodes"])
def test_a_stock_kube_scheduler_places_pods_as_the_served_plugins_say(
    node_cache_capable: bool,
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
) -> None:
    """docs/how-to/serve-plugins-to-kube-scheduler.md's `kubesched extender --config
    ... --plugin ... --plugin ...` (start_extender), behind kube-scheduler; which
    sends node names (nodeCacheCapable) or whole Nodes, and gets the same back."""
    group = unique_name("ext-group")
    spot, on_demand, red = unique_name("spot"), unique_name("on-demand"), unique_name("red")
    # Only this test's nodes: the pods' node selector keeps the shared cluster's out.
    mine = {"example.com/ext-group": group}
    api.create_node(spot, labels={**mine, "example.com/capacity-type": "spot"})
    api.create_node(on_demand, labels={**mine, "example.com/capacity-type": "on-demand"})
    api.create_node(red, labels={**mine, "example.com/team": "red"})
    extender = start_extender(control_plane, tmp_path)
    try:
        extender.wait_ready()
        # The verbs answer without credentials (kube-scheduler sends none); /metrics
        # does not.
        assert extender.get("/metrics").status_code == 403
        kube_scheduler(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": PROFILE}],
                "extenders": [
                    {
                        "urlPrefix": f"https://127.0.0.1:{extender.port}/scheduler",
                        "filterVerb": "filter",
                        "prioritizeVerb": "prioritize",
                        # PreferNodeLabel's spot preference (10 of 10 against 0)
                        # outweighs the default plugins' differences.
                        "weight": 5,
                        "nodeCacheCapable": node_cache_capable,
                        # No CA: kube-scheduler skips verifying the self-signed
                        # certificate.
                        "enableHTTPS": True,
                    }
                ],
            }
        )
        select = {"nodeSelector": mine}
        for name in ("batch", "batch-2"):
            api.create_pod(namespace, name, cpu="100m", scheduler_name=PROFILE, **select)
        api.create_pod(
            namespace,
            "red-member",
            cpu="100m",
            scheduler_name=PROFILE,
            labels={"example.com/team": "red"},
            nodeSelector={**mine, "kubernetes.io/hostname": red},
        )
        api.create_pod(
            namespace,
            "intruder",
            cpu="100m",
            scheduler_name=PROFILE,
            nodeSelector={**mine, "kubernetes.io/hostname": red},
        )
        assert api.wait_for_node_name(namespace, "batch") == spot
        assert api.wait_for_node_name(namespace, "batch-2") == spot
        assert api.wait_for_node_name(namespace, "red-member") == red
        message = api.wait_for(
            lambda: next(
                (
                    text
                    for _, reason, text in api.events_for(namespace, "intruder")
                    if reason == "FailedScheduling"
                ),
                None,
            ),
            timeout=30,
        )
        assert f"1 {REASON}" in str(message), message
        assert api.node_of(namespace, "intruder") is None
        # kube-scheduler's calls were measured.
        token_metrics = extender.metrics()
        assert token_metrics.status_code == 200
        assert 'kubesched_extender_request_duration_seconds_count{code="200",verb="filter"}' in (
            token_metrics.text
        )
    finally:
        assert extender.stop() == 0, extender.log()[-3000:]


def test_bad_requests_get_400_and_no_traceback(
    control_plane: ControlPlane, api: AdminApi, tmp_path: Path
) -> None:
    extender = start_extender(control_plane, tmp_path)
    try:
        extender.wait_ready()
        url = f"https://127.0.0.1:{extender.port}/scheduler/filter"
        answer = httpx.post(url, content=b"{oops", verify=False, timeout=5)
        assert answer.status_code == 400
        assert answer.text.startswith("invalid ExtenderArgs")
        assert "Traceback" not in extender.log()
    finally:
        assert extender.stop() == 0, extender.log()[-3000:]


QUIET_PLUGIN = """
from kubesched.framework.interfaces import NodeFilterPlugin
from kubesched.framework.status import Status


class Quiet(NodeFilterPlugin):
    # Resolvable: the neighbour may leave. It is not a victim below, being of
    # higher priority than the preemptor.
    name = "Quiet"

    def filter_node(self, state, pod, node):
        if any(p.pod.metadata.labels.get("example.com/noisy") for p in node.pods):
            return Status.unschedulable("node(s) had a noisy neighbour")
        return Status.success()
"""


@pytest.mark.parametrize("preempt_verb", ["preempt", ""], ids=["with-verb", "without-verb"])
def test_preemption_asks_the_extender_which_candidates_its_plugins_accept(
    preempt_verb: str,
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kube_scheduler: Callable[..., KubeSchedulerProcess],
    tmp_path: Path,
) -> None:
    """Two full nodes. On "loud", a low-priority pod sits beside a noisy one of high
    priority; on "calm" a pod of middle priority. kube-scheduler's preemption
    prefers evicting the low-priority pod on "loud" (the lowest highest-priority
    victim, pickOneNodeForPreemption), but the served plugin Quiet still rejects
    "loud" with the noisy pod there. With the preempt verb the extender drops
    "loud": only the pod on "calm" is evicted. Without it, kube-scheduler evicts
    the low-priority pod for nothing, and then the one on "calm" as well."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "quiet_plugin.py").write_text(QUIET_PLUGIN)
    group = unique_name("ext-preempt")
    mine = {"example.com/ext-group": group}
    loud, calm = unique_name("loud"), unique_name("calm")
    for node in (loud, calm):
        api.create_node(node, cpu="1", labels=mine)
    classes = {"noisy": 1000, "preemptor": 100, "calm": 10}
    names = {role: f"{namespace}-{role}" for role in classes}
    for role, value in classes.items():
        api.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": names[role]},
                "value": value,
            },
        )
    extender = start_extender(
        control_plane,
        tmp_path,
        plugins=("--plugin", "quiet_plugin:Quiet", "--enable", "Quiet"),
        site=site,
    )
    try:
        # Placed directly (nodeName), so that only the preemptor is scheduled.
        api.create_pod(
            namespace,
            "noisy",
            cpu="100m",
            labels={"example.com/noisy": "true"},
            priorityClassName=names["noisy"],
            nodeName=loud,
        )
        api.create_pod(namespace, "low", cpu="900m", nodeName=loud)
        api.create_pod(namespace, "calm", cpu="1", priorityClassName=names["calm"], nodeName=calm)
        extender.wait_ready()
        verbs = (
            {"filterVerb": "filter", "preemptVerb": preempt_verb}
            if preempt_verb
            else {"filterVerb": "filter"}
        )
        kube_scheduler(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": PROFILE}],
                "extenders": [
                    {
                        "urlPrefix": f"https://127.0.0.1:{extender.port}/scheduler",
                        **verbs,
                        "nodeCacheCapable": True,
                        "enableHTTPS": True,
                    }
                ],
            }
        )
        api.create_pod(
            namespace,
            "preemptor",
            cpu="900m",
            scheduler_name=PROFILE,
            priorityClassName=names["preemptor"],
            nodeSelector=mine,
        )
        assert api.wait_for_node_name(namespace, "preemptor", timeout=60) == calm
        left = {p["metadata"]["name"] for p in api.list_pods(namespace)}
        assert "calm" not in left
        if preempt_verb:
            assert {"noisy", "low"} <= left, left
        else:
            assert "low" not in left, left
    finally:
        assert extender.stop() == 0, extender.log()[-3000:]
        for name in names.values():
            api.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}", ok=(404,))
