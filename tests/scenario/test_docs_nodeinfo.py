"""docs/how-to/write-a-plugin.md's one-node example runs as written, with `simulate --plugin`
(issue #31: NodeInfo was not documented, and `len(node_info.pods)` failed)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from click.testing import CliRunner

from kubesched.cli.main import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "write-a-plugin.md"

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: busy, labels: {example.com/maintenance: "false"}}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: idle}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: down, labels: {example.com/maintenance: "true"}}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: running-1}
spec: {nodeName: busy, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: running-2}
spec: {nodeName: busy, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: running-3}
spec: {nodeName: idle, containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: new}
spec: {containers: [{name: c}]}
"""


def example_code() -> str:
    text = DOC.read_text()
    section = text[text.index("## One node at a time: NodeInfo") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_the_one_node_example_runs_as_documented(tmp_path: Path) -> None:
    (tmp_path / "doc_plugins.py").write_text(example_code())
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    sys.path.insert(0, str(tmp_path))
    try:
        args = ["simulate", "-f", str(tmp_path / "cluster.yaml"), "-o", "json"]
        args += ["--plugin", "doc_plugins:NoMaintenance", "--enable", "NoMaintenance"]
        args += ["--plugin", "doc_plugins:FewestPods", "--enable", "FewestPods:50"]
        result = CliRunner().invoke(main, args)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("doc_plugins", None)
    assert result.exit_code == 0, result.output
    placements = json.loads(result.stdout)["placements"]
    # `down`, the emptiest node, is filtered out; of the others `idle` runs fewer pods.
    assert placements["default/new"] == "idle"
