"""The text report's placements by workload, new pods apart from running ones, and
what simulated time means; the HTML report's content without a browser (what is
shown, escaped, and nothing fetched)."""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli.html.report import MAX_PODS_PER_REASON, NODE_NAMES_SHOWN
from kubesched.cli.main import main
from kubesched.cli.report import WORKLOAD_ROWS
from kubesched.cli.workloads import explained_pods_of, workload_of
from kubesched.cluster.manifests import load_documents, pending_pods
from tests.browser.scenario import write_scenario

ROOT = Path(__file__).resolve().parents[2]

WORKLOADS = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {topology.kubernetes.io/zone: z1}}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-2, labels: {topology.kubernetes.io/zone: z2}}
status: {allocatable: {cpu: "8", memory: 16Gi, pods: "110"}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: plain-rs, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: rs}}
  template:
    metadata: {labels: {app: rs}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 2
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: etl, namespace: default}
spec:
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x, resources: {requests: {cpu: "100"}}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: default}
spec:
  nodeName: node-1
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def _state(text: str) -> list[object]:
    return [("test", i + 1, doc) for i, doc in enumerate(yaml.safe_load_all(text))]


def test_each_pod_is_listed_under_its_workload() -> None:
    state = load_documents(_state(WORKLOADS))  # type: ignore[arg-type]
    refs = {(str(workload_of(p))) for p in state.pods}
    assert refs == {
        "Deployment default/web",  # its ReplicaSet web-<hash> is the Deployment's
        "ReplicaSet default/plain-rs",
        "StatefulSet default/db",
        "Job default/etl",
        "DaemonSet default/agent",
        "Pod default/old",
    }


def test_the_html_report_explains_the_first_and_last_pod_of_each_workload() -> None:
    state = load_documents(_state(WORKLOADS))  # type: ignore[arg-type]
    pending = pending_pods(state)
    keys = explained_pods_of(pending, 100)
    by_workload: dict[str, list[str]] = {}
    for pod in pending:
        by_workload.setdefault(str(workload_of(pod)), []).append(pod.key)
    expected = {k for keys_ in by_workload.values() for k in (keys_[0], keys_[-1])}
    assert set(keys) == expected
    assert len(keys) == len(expected)  # a workload of one pod is explained once
    assert explained_pods_of(pending, 3) == keys[:3]


def _simulate_text(tmp_path: Path, text: str, *args: str) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    outcome = CliRunner().invoke(
        main, ["simulate", "-f", str(path), "--seed", "1", *args], catch_exceptions=False
    )
    assert outcome.exit_code == 0, outcome.output
    return outcome.output


def test_text_report_lists_placements_by_workload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = _simulate_text(tmp_path, WORKLOADS)
    rows = {
        line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
        for line in out.splitlines()
        if line.startswith("│") and ("default/" in line.split("│")[1])
    }
    # new placed, pending, running before, zones, nodes
    assert rows["Job default/etl"][:3] == ["0", "2", "0"]
    assert rows["Pod default/old"][:3] == ["0", "0", "1"]
    assert rows["DaemonSet default/agent"][:3] == ["2", "0", "0"]
    assert rows["DaemonSet default/agent"][3] in ("z1, z2", "z2, z1")
    assert rows["DaemonSet default/agent"][4] in ("node-1, node-2", "node-2, node-1")
    assert rows["Deployment default/web"][:3] == ["2", "0", "0"]
    # 2 web + 1 rs + 2 db + 2 agent placed, 2 etl pending, 1 already running.
    assert "7/9 new pods scheduled, 2 unscheduled; 1 already running;" in out
    assert "simulated time: the scheduler's own clock in the simulation" in out


def test_text_report_collapses_the_nodes_a_workload_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    nodes = "".join(
        f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\n"
        f"status: {{allocatable: {{cpu: '1', memory: 1Gi, pods: '110'}}}}\n"
        for i in range(7)
    )
    deploy = """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 7
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}
"""
    out = _simulate_text(tmp_path, nodes + deploy)
    row = next(line for line in out.splitlines() if "Deployment default/web" in line)
    # One pod per node: 4 names shown, 3 more counted; no zone label on the nodes.
    assert "… +3" in row
    assert len(re.findall(r"\bn\d\b", row)) == 4
    assert "(no zone)×7" in row


def test_html_page_is_self_contained_and_escaped(tmp_path: Path) -> None:
    cluster = write_scenario(tmp_path)
    # A reason with markup in it: an unknown schedulerName, quoted in the reason.
    evil = tmp_path / "evil.yaml"
    evil.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: evil, namespace: default}\n"
        "spec: {schedulerName: '<img src=x onerror=alert(1)>', containers: [{name: c, image: x}]}\n"
    )
    page = tmp_path / "report.html"
    outcome = CliRunner().invoke(
        main, ["simulate", "-f", str(cluster), "-f", str(evil), "--html", str(page)]
    )
    assert outcome.exit_code == 0, outcome.output
    html = page.read_text()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    # Nothing to fetch: no src= or href= but in-page anchors, and no @import or url().
    assert re.findall(r'\s(?:src|href)="(?!#)', html) == []
    assert "@import" not in html and "url(" not in html
    assert 'id="heat-data"' in html


def test_html_lists_stay_short(tmp_path: Path) -> None:
    """Pending pods and node names are cut to a few, with a count of the rest."""
    node = (
        "apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\n"
        "status: {{allocatable: {{cpu: '1', memory: 1Gi, pods: '110'}}}}\n"
    )
    nodes = "---\n".join(node.format(i=i) for i in range(NODE_NAMES_SHOWN + 5))
    job = f"""---
apiVersion: batch/v1
kind: Job
metadata: {{name: big, namespace: default}}
spec:
  parallelism: {MAX_PODS_PER_REASON + 7}
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: x, resources: {{requests: {{cpu: '2'}}}}}}]
"""
    path = tmp_path / "cluster.yaml"
    path.write_text(nodes + job)
    page = tmp_path / "report.html"
    outcome = CliRunner().invoke(main, ["simulate", "-f", str(path), "--html", str(page)])
    assert outcome.exit_code == 0, outcome.output
    html = page.read_text()
    assert html.count('class="pending-pod"') == MAX_PODS_PER_REASON
    assert "… 7 more" in html
    # Every node rejects the explained pods: 12 names and "+5" in their verdict row.
    assert "… +5" in html


def test_templates_are_package_data() -> None:
    """An installed wheel must carry the templates: pyproject's package-data for
    kubesched.cli.html matches every file of templates/."""
    folder = resources.files("kubesched.cli.html") / "templates"
    names = {entry.name for entry in folder.iterdir()}
    assert {"report.html.j2", "explanation.html.j2", "capacity.html.j2"} <= names
    assert {"report.css", "report.js"} <= names
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["kubesched.cli.html"]
    package = ROOT / "src" / "kubesched" / "cli" / "html"
    shipped = {p.relative_to(package).as_posix() for pat in patterns for p in package.glob(pat)}
    assert {f"templates/{name}" for name in names} <= shipped


def test_text_report_lists_the_largest_workloads_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    node = (
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "status: {allocatable: {cpu: '64', memory: 64Gi, pods: '110'}}\n"
    )
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i:02d}, namespace: default}}\n"
        "spec: {containers: [{name: c, image: x}]}\n"
        for i in range(WORKLOAD_ROWS + 3)
    )
    out = _simulate_text(tmp_path, node + pods)
    assert sum(1 for line in out.splitlines() if "Pod default/p" in line) == WORKLOAD_ROWS
    assert "… 3 more workloads (-o json lists every pod)" in out


def test_heat_map_counts_dra_devices_per_node(tmp_path: Path) -> None:
    """The example cluster's DRA nodes: devices allocated to bound pods' claims
    against those their node-local ResourceSlices publish."""
    example = str(ROOT / "examples" / "cluster")
    page = tmp_path / "report.html"
    outcome = CliRunner().invoke(
        main, ["simulate", "-f", example, "--seed", "1", "--html", str(page), "-o", "json"]
    )
    document = json.loads(outcome.stdout)
    heat = json.loads(
        re.search(r'id="heat-data">(.*?)</script>', page.read_text(), re.S).group(1)  # type: ignore[union-attr]
    )
    assert heat["resources"][-1] == "devices"
    assert "nvidia.com/gpu" in heat["resources"]
    on_node: dict[str, int] = {}
    for pod, devices in document["devices"].items():
        node = document["placements"][pod]
        on_node[node] = on_node.get(node, 0) + len(devices)
    published = {}
    for path in (ROOT / "examples" / "cluster").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "ResourceSlice" and doc["spec"].get("nodeName"):
                node = doc["spec"]["nodeName"]
                published[node] = published.get(node, 0) + len(doc["spec"]["devices"])
    assert published and on_node
    cells = {row[0]: row[3][-1] for row in heat["nodes"]}
    for node, total in published.items():
        used = on_node.get(node, 0)
        assert cells[node] == [round(100 * used / total), f"{used}/{total}"]
    # Nodes without a ResourceSlice offer no devices.
    assert cells["general-a-00"] == [-1, "0/0"]
