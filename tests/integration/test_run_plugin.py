"""`kubesched run --plugin` loads plugin classes as `simulate --plugin` does, and the
configuration file enables them: the example plugin package's plugins, not installed,
decide a real cluster's placements."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kubesched_team_plugins.team_nodes import REASON

from tests.integration.admin_api import AdminApi, unique_name
from tests.integration.control_plane import ControlPlane
from tests.integration.kubesched_proc import start_kubesched
from tests.packaging.venvs import PLUGIN_PACKAGE

pytestmark = pytest.mark.integration


def test_run_with_plugin_option_and_configuration_file(
    control_plane: ControlPlane, api: AdminApi, namespace: str, tmp_path: Path
) -> None:
    spot, red = unique_name("spot"), unique_name("red")
    api.create_node(spot, labels={"example.com/capacity-type": "spot"})
    api.create_node(unique_name("on-demand"), labels={"example.com/capacity-type": "on-demand"})
    api.create_node(red, labels={"example.com/team": "red"})
    path = os.pathsep.join(
        filter(None, [str(PLUGIN_PACKAGE / "src"), os.environ.get("PYTHONPATH")])
    )
    proc = start_kubesched(
        control_plane,
        tmp_path,
        "--config",
        str(PLUGIN_PACKAGE / "example" / "scheduler-config.yaml"),
        "--no-leader-elect",
        "--plugin",
        "kubesched_team_plugins:TeamNodes",
        "--plugin",
        "kubesched_team_plugins.prefer_node_label:PreferNodeLabel",
        PYTHONPATH=path,
    )
    try:
        proc.wait_ready()
        api.create_pod(namespace, "batch", cpu="100m")
        api.create_pod(
            namespace, "intruder", cpu="100m", nodeSelector={"kubernetes.io/hostname": red}
        )
        assert api.wait_for(lambda: api.node_of(namespace, "batch"), timeout=20) == spot
        api.wait_for(
            lambda: any(
                reason == "FailedScheduling" and REASON in message
                for _, reason, message in api.events_for(namespace, "intruder")
            ),
            timeout=20,
        )
    finally:
        assert proc.stop() == 0, proc.log()[-3000:]
