"""`kubesched capacity`: cases whose answer is known by hand (resources, spread,
anti-affinity, taints, DRA devices), each count checked against `simulate` runs of
that many copies and one more."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from kubesched.cli.main import main


def node(name: str, cpu: str, zone: str = "z1", extra: str = "") -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}, topology.kubernetes.io/zone: {zone}}}
spec: {{{extra}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 64Gi, pods: "110"}}}}
"""


def pod(name: str, cpu: str, spec: str = "", labels: str = "{app: web}") -> str:
    body = textwrap.indent(textwrap.dedent(spec).strip(), "  ")
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, labels: {labels}}}
spec:
{body}
  containers:
  - {{name: c, image: nginx, resources: {{requests: {{cpu: "{cpu}"}}}}}}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run_capacity(tmp_path: Path, cluster: str, *specs: str, args: tuple[str, ...] = ()) -> Any:
    paths = ["-f", write(tmp_path, "cluster.yaml", cluster)]
    for i, spec in enumerate(specs):
        paths += ["--podspec", write(tmp_path, f"spec{i}.yaml", spec)]
    result = CliRunner().invoke(main, ["capacity", *paths, "-o", "json", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def simulated_copies(tmp_path: Path, cluster: str, spec: str, copies: int) -> int:
    """How many of `copies` copies of the spec `simulate` schedules."""
    template = yaml.safe_load(spec)
    documents = []
    for i in range(1, copies + 1):
        copy = json.loads(json.dumps(template))
        copy["metadata"]["name"] = f"{template['metadata']['name']}-{i}"
        copy["spec"]["preemptionPolicy"] = "Never"
        documents.append(copy)
    copies_path = write(tmp_path, "copies.yaml", yaml.safe_dump_all(documents))
    cluster_path = write(tmp_path, "cluster.yaml", cluster)
    args = ["simulate", "-f", cluster_path, "-f", copies_path, "-o", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    placements = json.loads(result.stdout)["placements"]
    name = template["metadata"]["name"]
    return sum(1 for key, n in placements.items() if key.startswith(f"default/{name}-") and n)


def check(tmp_path: Path, cluster: str, spec: str, expected: int) -> dict[str, Any]:
    found = run_capacity(tmp_path, cluster, spec)["specs"][0]
    assert found["count"] == expected
    assert sum(found["nodes"].values()) == expected
    # The same answer from simulate: all of `expected` copies fit, one more does not.
    assert simulated_copies(tmp_path, cluster, spec, expected) == expected
    assert simulated_copies(tmp_path, cluster, spec, expected + 1) == expected
    assert isinstance(found, dict)
    return found


RUNNING = pod("running", "1", "nodeName: a", labels="{app: other}")


def test_resources(tmp_path: Path) -> None:
    cluster = node("a", "4") + node("b", "2") + RUNNING
    # a: 3 cpu free, b: 2 cpu free; copies of 500m: 6 + 4.
    found = check(tmp_path, cluster, pod("web", "500m"), 10)
    assert found["nodes"] == {"a": 6, "b": 4}
    assert found["stopReason"] == {
        "reason": "Unschedulable",
        "message": "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, "
        "preemption: not eligible due to preemptionPolicy=Never.",
    }


def test_spread(tmp_path: Path) -> None:
    # Zone z2 holds two copies (cpu); maxSkew 1 lets zone z1 hold one more: 3 + 2.
    cluster = node("a", "100", "z1") + node("b", "2", "z2")
    spread = """
    topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: DoNotSchedule
      labelSelector: {matchLabels: {app: web}}
    """
    found = check(tmp_path, cluster, pod("web", "1", spread), 5)
    assert found["nodes"] == {"a": 3, "b": 2}
    message = found["stopReason"]["message"]
    assert "1 Insufficient cpu" in message
    assert "1 node(s) didn't match pod topology spread constraints" in message


def test_anti_affinity(tmp_path: Path) -> None:
    cluster = node("a", "8") + node("b", "8") + node("c", "8")
    anti = """
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: web}}
    """
    found = check(tmp_path, cluster, pod("web", "1", anti), 3)
    assert found["nodes"] == {"a": 1, "b": 1, "c": 1}
    assert "3 node(s) didn't match pod anti-affinity rules" in found["stopReason"]["message"]


def test_taints(tmp_path: Path) -> None:
    taint = "taints: [{key: dedicated, value: db, effect: NoSchedule}]"
    cluster = node("a", "4") + node("b", "8", extra=taint) + node("c", "8", extra=taint)
    found = check(tmp_path, cluster, pod("web", "1"), 4)
    assert found["nodes"] == {"a": 4}
    message = found["stopReason"]["message"]
    assert "2 node(s) had untolerated taint(s)" in message and "1 Insufficient cpu" in message


def slice_for(name: str, devices: int) -> str:
    listed = "\n".join(f"  - name: gpu-{i}" for i in range(devices))
    return f"""
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: {name}-gpu}}
spec:
  driver: gpu.example.com
  nodeName: {name}
  pool: {{name: {name}, generation: 1, resourceSliceCount: 1}}
  devices:
{listed}
"""


DRA_OBJECTS = """
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
"""


def test_dra_devices(tmp_path: Path) -> None:
    # Two nodes with 2 and 3 devices; one device per copy's claim: 5 copies.
    cluster = node("a", "64") + slice_for("a", 2) + node("b", "64") + slice_for("b", 3)
    cluster += DRA_OBJECTS
    claim = """
    resourceClaims:
    - {name: gpu, resourceClaimTemplateName: one-gpu}
    """
    spec = pod("trainer", "1", claim)
    found = run_capacity(tmp_path, cluster, spec)["specs"][0]
    assert found["count"] == 5
    assert found["nodes"] == {"a": 2, "b": 3}
    assert "cannot allocate all claims" in found["stopReason"]["message"]
    assert simulated_copies(tmp_path, cluster, spec, 5) == 5
    assert simulated_copies(tmp_path, cluster, spec, 6) == 5


def test_max_exclude_and_several_specs_in_turn(tmp_path: Path) -> None:
    cluster = node("a", "4") + node("b", "2") + RUNNING
    limited = run_capacity(tmp_path, cluster, pod("web", "500m"), args=("--max", "3"))
    assert limited["specs"][0]["count"] == 3
    assert limited["specs"][0]["stopReason"] == {
        "reason": "LimitReached",
        "message": "Maximum number of pods simulated: 3",
    }
    excluded = run_capacity(tmp_path, cluster, pod("web", "500m"), args=("--exclude-nodes", "b"))
    assert excluded["specs"][0]["nodes"] == {"a": 6}
    assert excluded["excludedNodes"] == ["b"]
    # In turn: web (500m), api (1), web, api, ... over 5 free cpus: web 4 (2 cpu) and
    # api 3 (3 cpu); api's fourth copy finds no room, then web's fifth neither.
    deployment = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: c, image: nginx, resources: {requests: {cpu: "1"}}}]
"""
    both = run_capacity(tmp_path, cluster, pod("web", "500m"), deployment)
    assert [s["count"] for s in both["specs"]] == [4, 3]
    assert both["specs"][1]["name"].startswith("default/api-")


def test_yaml_and_text_outputs(tmp_path: Path) -> None:
    cluster = write(tmp_path, "cluster.yaml", node("a", "2"))
    spec = write(tmp_path, "spec.yaml", pod("web", "1"))
    as_yaml = CliRunner().invoke(main, ["capacity", "-f", cluster, "--podspec", spec, "-o", "yaml"])
    assert yaml.safe_load(as_yaml.stdout)["specs"][0]["count"] == 2
    text = CliRunner().invoke(main, ["capacity", "-f", cluster, "--podspec", spec])
    assert "default/web: the cluster can schedule 2 more instance(s)" in text.stdout
    assert "Termination reason: Unschedulable: 0/1 nodes are available" in text.stdout
