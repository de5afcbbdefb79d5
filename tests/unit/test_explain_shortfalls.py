"""Issue #31: `explain` shows, for each "Insufficient X" (and "Too many pods"), the pod's
request against what each rejected node has free, from the numbers NodeResourcesFit's
Filter compared (fitsRequest's InsufficientResource), in text, JSON and HTML."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubesched.cli.main import main

NODES = """
apiVersion: v1
kind: Node
metadata: {name: small}
status: {allocatable: {cpu: "1", memory: 2Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: busy-1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: busy-2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: tainted}
spec: {taints: [{key: dedicated, value: db, effect: NoSchedule}]}
status: {allocatable: {cpu: "1", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: full}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "1"}}
"""

RUNNING = """
apiVersion: v1
kind: Pod
metadata: {name: hog-1, namespace: default}
spec:
  nodeName: busy-1
  containers: [{name: c, image: x, resources: {requests: {cpu: 3500m, memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: hog-2, namespace: default}
spec:
  nodeName: busy-2
  containers: [{name: c, image: x, resources: {requests: {cpu: 3, memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: one, namespace: default}
spec:
  nodeName: full
  containers: [{name: c, image: x}]
"""

PENDING = """
apiVersion: v1
kind: Pod
metadata: {name: big, namespace: default}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "2", memory: 3Gi}}}]}
"""


def explain(tmp_path: Path, *args: str) -> Any:
    path = tmp_path / "in.yaml"
    path.write_text("---".join(textwrap.dedent(t) for t in (NODES, RUNNING, PENDING)))
    # A terminal wide enough for the verdict table's cells to stay one line each.
    result = CliRunner().invoke(
        main, ["explain", "big", "-f", str(path), *args], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 0, result.output
    return result


def groups(tmp_path: Path) -> dict[tuple[str, ...], dict[str, Any]]:
    document = json.loads(explain(tmp_path, "-o", "json").stdout)
    (explanation,) = document["pods"][0]["explanations"]
    return {tuple(g["nodes"]): g for g in explanation["rejected"]}


def test_json_has_the_request_and_each_nodes_free_amount(tmp_path: Path) -> None:
    found = groups(tmp_path)
    busy = found[("busy-1", "busy-2")]
    assert busy["reasons"] == ["Insufficient cpu"]
    # Milli-CPU, as the scheduler counts it: 4 allocatable, 3.5 and 3 requested.
    assert busy["insufficient"] == [
        {
            "resource": "cpu",
            "reason": "Insufficient cpu",
            "requested": 2000,
            "nodes": [
                {"node": "busy-1", "allocatable": 4000, "used": 3500, "free": 500},
                {"node": "busy-2", "allocatable": 4000, "used": 3000, "free": 1000},
            ],
        }
    ]
    small = found[("small",)]
    assert [
        (s["resource"], s["requested"], s["nodes"][0]["free"]) for s in small["insufficient"]
    ] == [
        ("cpu", 2000, 1000),
        ("memory", 3 * 2**30, 2 * 2**30),  # bytes
    ]


def test_too_many_pods_has_its_numbers_too(tmp_path: Path) -> None:
    (full,) = groups(tmp_path)[("full",)]["insufficient"]
    assert full == {
        "resource": "pods",
        "reason": "Too many pods",
        "requested": 1,
        "nodes": [{"node": "full", "allocatable": 1, "used": 1, "free": 0}],
    }


def test_a_shortfall_behind_another_filter_is_given_too(tmp_path: Path) -> None:
    tainted = groups(tmp_path)[("tainted",)]
    assert tainted["plugin"] == "TaintToleration"
    assert tainted["alsoRejectedBy"] == {"NodeResourcesFit": ["Insufficient cpu"]}
    assert [s["reason"] for s in tainted["insufficient"]] == ["Insufficient cpu"]


def test_text_shows_requested_against_free_in_the_resources_units(tmp_path: Path) -> None:
    text = explain(tmp_path).stdout
    # The two busy nodes differ: the range of what they have free.
    assert "cpu: requested 2, free 500m–1 (4 allocatable, 3–3500m already requested)" in text
    assert "memory: requested 3Gi, free 2Gi (2Gi allocatable, 0 already requested)" in text
    assert "pods: requested 1, free 0 (1 allocatable, 1 already requested)" in text


def test_the_html_page_shows_them(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    explain(tmp_path, "--html", str(page))
    html = page.read_text()
    assert "cpu: requested 2, free 500m–1 (4 allocatable, 3–3500m already requested)" in html
