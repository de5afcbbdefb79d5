"""Issue #31 on a real control plane: `kubesched run --plugin ... --enable ...` schedules
with the plugin (as `simulate` takes the options); a start-up failure (a kind the API
server does not serve, a port in use) is one line on stderr and exit 1, no traceback."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.admin_api import AdminApi, unique_name
from tests.integration.control_plane import REPO_ROOT, ControlPlane
from tests.integration.kubesched_proc import start_kubesched
from tests.integration.test_run_coscheduling import PG_API, install_crd

pytestmark = pytest.mark.integration

APP_POOL = f"{REPO_ROOT / 'examples' / 'plugins' / 'app_pool.py'}:AppPool"
POOL = "example.com/pool"
CRD_NAME = "podgroups.scheduling.x-k8s.io"
# A klog error line ("E1129 01:02:03.456789 ...").
KLOG_ERROR = re.compile(r"^E\d{4} ")


def run_to_exit(cp: ControlPlane, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubesched run` as a user starts it, until it exits (it must, here)."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "kubesched.cli.main", "run"),
            *("--kubeconfig", str(cp.kubeconfig), "--no-leader-elect", *args),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=cp.process_env(),
    )


def assert_one_error_line(done: subprocess.CompletedProcess[str], expected: str) -> None:
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    errors = [
        line
        for line in done.stderr.splitlines()
        if line.startswith("Error:") or KLOG_ERROR.match(line)
    ]
    assert errors == [f"Error: {expected}"], done.stderr[-3000:]


def test_run_enables_a_plugin_given_on_the_command_line(
    control_plane: ControlPlane, api: AdminApi, namespace: str, tmp_path: Path
) -> None:
    blue = unique_name("blue")
    api.create_node(blue, labels={POOL: "blue"})
    api.create_node(unique_name("green"), labels={POOL: "green"})
    api.create_node(unique_name("plain"))
    proc = start_kubesched(
        control_plane,
        tmp_path,
        "--no-leader-elect",
        "--plugin",
        APP_POOL,
        "--enable",
        "AppPool",
    )
    try:
        proc.wait_ready()
        api.create_pod(namespace, "app", cpu="100m", labels={POOL: "blue"})
        api.create_pod(namespace, "lost", cpu="100m", labels={POOL: "red"})
        assert api.wait_for(lambda: api.node_of(namespace, "app"), timeout=20) == blue
        api.wait_for(
            lambda: any(
                reason == "FailedScheduling" and "node(s) are not in the pod's pool" in message
                for _, reason, message in api.events_for(namespace, "lost")
            ),
            timeout=20,
        )
    finally:
        assert proc.stop() == 0, proc.log()[-3000:]


def coscheduling_config(tmp_path: Path) -> Path:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [
            {
                "schedulerName": "kubesched",
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
            }
        ],
    }
    path = tmp_path / "coscheduling.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def remove_crd(api: AdminApi) -> None:
    """The PodGroup CRD gone (another test of the session may have installed it)."""
    api.request(
        "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}", ok=[404]
    )
    api.wait_for(lambda: api.status_code("GET", PG_API) == 404, timeout=60)


def test_coscheduling_without_its_crd_stops_in_one_line_and_starts_with_it(
    control_plane: ControlPlane, api: AdminApi, tmp_path: Path
) -> None:
    config = coscheduling_config(tmp_path)
    remove_crd(api)
    done = run_to_exit(control_plane, "--config", str(config), "--secure-port", "0")
    assert_one_error_line(
        done,
        "plugin Coscheduling needs PodGroup (scheduling.x-k8s.io/v1alpha1 podgroups), "
        "which the API server does not serve: install the CRD (kubectl apply -f "
        "deploy/crds/scheduling.x-k8s.io_podgroups.yaml) or disable Coscheduling",
    )
    install_crd(api)
    proc = start_kubesched(control_plane, tmp_path, "--config", str(config), "--no-leader-elect")
    try:
        proc.wait_ready(timeout=60)
    finally:
        assert proc.stop() == 0, proc.log()[-3000:]


def test_a_secure_port_in_use_stops_in_one_line(control_plane: ControlPlane) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_to_exit(control_plane, "--bind-address", "127.0.0.1", "--secure-port", str(port))
    assert_one_error_line(
        done,
        f"failed to listen on 127.0.0.1:{port} (--secure-port, --bind-address): "
        "address already in use",
    )
