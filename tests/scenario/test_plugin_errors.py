"""A plugin that raises (issue #31): the attempt fails with upstream's text, the log
line says where it raised, and `simulate` exits non-zero."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kubesched.cli.main import main

PLUGIN = """
from kubesched.framework.interfaces import NodeFilterPlugin


class Boom(NodeFilterPlugin):
    name = "Boom"

    def filter_node(self, state, pod, node_info):
        raise RuntimeError("kaboom")
"""

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c}]}
"""


def test_a_raising_plugin_is_located_and_fails_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "boom_plugin.py").write_text(PLUGIN)
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    sys.path.insert(0, str(tmp_path))
    try:
        args = ["simulate", "-f", str(tmp_path / "cluster.yaml"), "-o", "json"]
        result = CliRunner().invoke(
            main, [*args, "--plugin", "boom_plugin:Boom", "--enable", "Boom"]
        )
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("boom_plugin", None)
    assert result.exit_code == 1, result.output
    # The scheduler's log line (stderr, through logging) says where it raised.
    assert f"raised at {tmp_path / 'boom_plugin.py'}:9" in caplog.text
    assert (
        'error: 1 pods failed with an error: default/p: running "Boom" filter plugin: kaboom'
        in (result.stderr)
    )
