"""Bad input: one clear line naming file, document, object and field; the rest still runs."""

from __future__ import annotations

from tests.scenario.conftest import Simulate

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""

GOOD_POD = """
---
apiVersion: v1
kind: Pod
metadata: {name: good}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 500m}}}]
"""


def test_malformed_quantity(simulate_yaml: Simulate) -> None:
    bad = """
---
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers: [{name: c, image: nginx, resources: {requests: {cpu: 2 cores}}}]
"""
    code, out, err = simulate_yaml(NODE + bad + GOOD_POD)
    assert code == 1
    assert out["placements"] == {"default/good": "n1"}
    [problem] = out["problems"]
    assert "00.yaml" in problem and "document 2" in problem and "Pod default/bad" in problem
    assert "spec.containers[0].resources.requests.cpu" in problem
    assert "Traceback" not in err
    assert problem in err  # also told on stderr when stdout is JSON


def test_wrong_type(simulate_yaml: Simulate) -> None:
    bad = """
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: three
  template: {spec: {containers: [{name: c, image: nginx}]}}
"""
    _code, out, _ = simulate_yaml(NODE + bad + GOOD_POD)
    [problem] = out["problems"]
    assert "Deployment default/web" in problem and "spec.replicas" in problem
    assert out["placements"] == {"default/good": "n1"}


def test_missing_required_field(simulate_yaml: Simulate) -> None:
    bad = """
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec:
  taints: [{value: x, effect: NoSchedule}]
"""
    _code, out, _ = simulate_yaml(NODE + bad + GOOD_POD)
    [problem] = out["problems"]
    assert "Node n2" in problem and "spec.taints[0].key" in problem
    assert list(out["nodes"]) == ["n1"]
    assert out["placements"] == {"default/good": "n1"}


def test_bad_node_allocatable(simulate_yaml: Simulate) -> None:
    bad = """
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {memory: 8Gib}}
"""
    _code, out, _ = simulate_yaml(NODE + bad + GOOD_POD)
    [problem] = out["problems"]
    assert "Node n2" in problem and "status.allocatable.memory" in problem


def test_unknown_kind_is_a_note_not_an_error(simulate_yaml: Simulate) -> None:
    other = """
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
"""
    code, out, _ = simulate_yaml(NODE + other + GOOD_POD)
    assert code == 0
    assert out["problems"] == []
    assert any("ConfigMap" in note for note in out["notes"])
    assert out["placements"] == {"default/good": "n1"}


def test_yaml_syntax_error_keeps_the_documents_before_it_and_other_files(
    simulate_yaml: Simulate,
) -> None:
    broken = NODE + "---\nkind: Pod\nmetadata: {name: [unclosed\n"
    code, out, _ = simulate_yaml(broken, GOOD_POD)
    assert code == 1
    assert out["placements"] == {"default/good": "n1"}
    [problem] = out["problems"]
    assert "00.yaml" in problem


def test_unknown_priority_class_is_refused_like_admission(simulate_yaml: Simulate) -> None:
    bad = """
---
apiVersion: v1
kind: Pod
metadata: {name: vip}
spec:
  priorityClassName: platinum
  containers: [{name: c, image: nginx}]
"""
    _code, out, _ = simulate_yaml(NODE + bad + GOOD_POD)
    [problem] = out["problems"]
    assert "no PriorityClass with name platinum was found" in problem
    assert out["placements"] == {"default/good": "n1"}
