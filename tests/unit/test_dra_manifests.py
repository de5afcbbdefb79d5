"""DRA objects in manifests: reading, the apiserver's checks, and the claims the
resourceclaim controller makes from the pods' templates."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubesched.api.resource import ALL, EXACT_COUNT
from kubesched.cluster.dra_manifests import POD_CLAIM_NAME_ANNOTATION, claim_generate_name
from tests.unit.manifests_helpers import SUFFIX, load, only_problem

CLASS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
"""
SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: n1-gpu}
spec:
  driver: gpu.example.com
  pool: {name: n1, resourceSliceCount: 1}
  nodeName: n1
  devices:
  - name: gpu-0
    attributes: {model: {string: a100}}
    capacity: {memory: {value: 40Gi}}
"""
TEMPLATE = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  metadata:
    labels: {team: ml}
    annotations: {note: from-template}
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers: [{name: c, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
"""


def docs(*parts: str) -> str:
    return "---".join(parts)


def test_reads_the_four_kinds(tmp_path: Path) -> None:
    claim = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared}
spec:
  devices:
    requests:
    - name: all
      exactly: {deviceClassName: gpu.example.com, allocationMode: All}
    - name: pick
      firstAvailable:
      - {name: big, deviceClassName: gpu.example.com, count: 2}
      - {name: small, deviceClassName: gpu.example.com}
    constraints: [{requests: [all, pick/big], matchAttribute: gpu.example.com/model}]
"""
    state = load(tmp_path, docs(CLASS, SLICE, TEMPLATE, claim))
    assert state.problems == []
    dra = state.dra
    assert list(dra.classes) == ["gpu.example.com"]
    assert list(dra.slices) == ["n1-gpu"]
    assert list(dra.templates) == ["ml/one-gpu"]
    stored = dra.claims["default/shared"]
    exact = stored.spec.devices.requests[0].exactly
    assert exact is not None and (exact.allocation_mode, exact.count) == (ALL, 0)
    subs = stored.spec.devices.requests[1].first_available
    assert [(s.allocation_mode, s.count) for s in subs] == [(EXACT_COUNT, 2), (EXACT_COUNT, 1)]
    assert stored.metadata.uid
    assert any("1 DeviceClasses, 1 ResourceSlices" in note for note in state.notes)


def test_v1beta2_is_read_as_v1_and_v1beta1_is_refused(tmp_path: Path) -> None:
    state = load(tmp_path, CLASS.replace("resource.k8s.io/v1", "resource.k8s.io/v1beta2"))
    assert state.problems == []
    assert state.dra.classes["gpu.example.com"].api_version == "resource.k8s.io/v1"
    problem = only_problem(
        load(tmp_path, CLASS.replace("resource.k8s.io/v1", "resource.k8s.io/v1beta1"))
    )
    assert (problem.kind, problem.name, problem.field) == (
        "DeviceClass",
        "gpu.example.com",
        "apiVersion",
    )
    assert "resource.k8s.io/v1beta1 is not supported" in problem.message


@pytest.mark.parametrize(
    ("request_yaml", "field", "message"),
    [
        ("{name: Bad_Name, exactly: {deviceClassName: c}}", "requests[0].name", "RFC 1123"),
        ("{name: r}", "requests[0]", "exactly one of `exactly` or `firstAvailable`"),
        (
            "{name: r, exactly: {deviceClassName: c}, firstAvailable: [{name: s, "
            "deviceClassName: c}]}",
            "requests[0]",
            "but multiple fields are set",
        ),
        (
            "{name: r, exactly: {deviceClassName: c, allocationMode: Some}}",
            "requests[0].exactly.allocationMode",
            'Unsupported value: "Some"',
        ),
        (
            "{name: r, exactly: {deviceClassName: c, allocationMode: All, count: 2}}",
            "requests[0].exactly.count",
            "must not be specified when allocationMode is 'All'",
        ),
        (
            "{name: r, exactly: {deviceClassName: c, count: -1}}",
            "requests[0].exactly.count",
            "greater than zero",
        ),
        ("{name: r, exactly: {}}", "requests[0].exactly.deviceClassName", "Required"),
        (
            "{name: r, exactly: {deviceClassName: c, selectors: [{}]}}",
            "requests[0].exactly.selectors[0].cel",
            "Required",
        ),
        (
            "{name: r, firstAvailable: [{name: s, deviceClassName: c}, {name: s, "
            "deviceClassName: c}]}",
            "requests[0].firstAvailable[1]",
            "Duplicate value",
        ),
    ],
)
def test_claim_request_checks(tmp_path: Path, request_yaml: str, field: str, message: str) -> None:
    claim = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: c1, namespace: ml}}
spec:
  devices:
    requests: [{request_yaml}]
"""
    problem = only_problem(load(tmp_path, claim))
    assert (problem.kind, problem.name) == ("ResourceClaim", "ml/c1")
    assert problem.field == f"spec.devices.{field}"
    assert message in problem.message


def test_template_checks_name_the_nested_spec(tmp_path: Path) -> None:
    template = TEMPLATE.replace("exactly: {deviceClassName: gpu.example.com}", "{}")
    template = template.replace("- name: gpu\n        {}", "- {name: gpu}")
    problem = only_problem(load(tmp_path, template))
    assert (problem.kind, problem.name, problem.field) == (
        "ResourceClaimTemplate",
        "ml/one-gpu",
        "spec.spec.devices.requests[0]",
    )


def test_constraint_and_config_request_references(tmp_path: Path) -> None:
    claim = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c1}
spec:
  devices:
    requests: [{name: r, exactly: {deviceClassName: c}}]
    constraints: [{requests: [r, other], matchAttribute: x.example.com/a}]
"""
    problem = only_problem(load(tmp_path, claim))
    assert problem.field == "spec.devices.constraints[0].requests[1]"
    assert "must be the name of a request" in problem.message


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ("devices: [{name: d}]", "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`"),
        ("{nodeName: n1, allNodes: true}", "spec", "but multiple fields are set"),
        ("{allNodes: false}", "spec.allNodes", "must be either unset or set to true"),
        ('{nodeName: ""}', "spec.nodeName", "non-empty string"),
        (
            "{nodeName: n1, devices: [{name: d}], sharedCounters: [{name: s, counters: "
            "{mem: {value: 1Gi}}}]}",
            "spec",
            "only one of `sharedCounters` or `devices` is allowed",
        ),
        (
            "{nodeName: n1, devices: [{name: d, nodeName: n1}]}",
            "spec.devices[0]",
            "can only be set if `perDeviceNodeSelection` is set to true",
        ),
        (
            "{perDeviceNodeSelection: true, devices: [{name: d}]}",
            "spec.devices[0]",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required when",
        ),
        (
            "{allNodes: true, devices: [{name: d, attributes: {a: {int: 1, bool: true}}}]}",
            "spec.devices[0].attributes[a]",
            "exactly one value must be specified",
        ),
    ],
)
def test_slice_checks(tmp_path: Path, spec: str, field: str, message: str) -> None:
    if not spec.startswith("{"):
        spec = "{" + spec.replace(": [", ": [", 1) + "}"
    text = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: s1}}
spec: {{driver: gpu.example.com, pool: {{name: p}}, {spec[1:]}
"""
    problem = only_problem(load(tmp_path, text))
    assert (problem.kind, problem.name, problem.field) == ("ResourceSlice", "s1", field)
    assert message in problem.message


def test_pod_gets_a_claim_from_its_template(tmp_path: Path) -> None:
    state = load(tmp_path, docs(CLASS, TEMPLATE, POD))
    assert state.problems == []
    pod = next(p for p in state.pods if p.key == "ml/train")
    [status] = pod.status.resource_claim_statuses
    assert status.name == "gpu"
    assert re.fullmatch(f"train-gpu-{SUFFIX}", status.resource_claim_name or "")
    claim = state.dra.claims[f"ml/{status.resource_claim_name}"]
    assert claim.metadata.generate_name == "train-gpu-"
    [owner] = claim.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Pod",
        "train",
        pod.metadata.uid,
        True,
    )
    assert claim.metadata.annotations == {"note": "from-template", POD_CLAIM_NAME_ANNOTATION: "gpu"}
    assert claim.metadata.labels == {"team": "ml"}
    assert claim.spec.devices.requests[0].name == "gpu"
    # The same input gives the same names.
    again = load(tmp_path, docs(CLASS, TEMPLATE, POD), name="again.yaml")
    assert list(again.dra.claims) == list(state.dra.claims)
    assert any("1 ResourceClaims created from ResourceClaimTemplates" in n for n in state.notes)


def test_workload_pods_get_a_claim_each(tmp_path: Path) -> None:
    deployment = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
"""
    state = load(tmp_path, docs(TEMPLATE, deployment))
    assert state.problems == []
    claims = [c for c in state.dra.claims.values()]
    assert len(claims) == 3
    owners = {c.metadata.owner_references[0].uid for c in claims}
    assert owners == {p.metadata.uid for p in state.pods}
    for pod in state.pods:
        [status] = pod.status.resource_claim_statuses
        assert status.resource_claim_name is not None
        assert status.resource_claim_name.startswith(f"{pod.metadata.name}-gpu-")


def test_existing_claim_is_adopted_and_recorded(tmp_path: Path) -> None:
    state = load(tmp_path, docs(TEMPLATE, POD))
    pod = state.pods[0]
    claim_name = pod.status.resource_claim_statuses[0].resource_claim_name
    # A dump holding the pod (with its uid and status) and its claim: nothing new.
    dumped_claim = f"""
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: {claim_name}
  namespace: ml
  annotations: {{{POD_CLAIM_NAME_ANNOTATION}: gpu}}
  ownerReferences: [{{apiVersion: v1, kind: Pod, name: train, uid: {pod.metadata.uid},
    controller: true}}]
spec:
  devices:
    requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]
"""
    again = load(tmp_path, docs(TEMPLATE, POD, dumped_claim), name="dump.yaml")
    assert list(again.dra.claims) == [f"ml/{claim_name}"]
    assert again.pods[0].status.resource_claim_statuses[0].resource_claim_name == claim_name


def test_missing_template_is_a_note(tmp_path: Path) -> None:
    state = load(tmp_path, POD)
    assert state.problems == []
    assert state.pods[0].status.resource_claim_statuses == []
    assert any("ml/train: one-gpu" in note for note in state.notes)


def test_claim_generate_name_cuts_both_names_in_proportion() -> None:
    assert claim_generate_name("pod", "gpu") == "pod-gpu-"
    long_pod, long_claim = "p" * 60, "c" * 30
    base = claim_generate_name(long_pod, long_claim)
    # 92 characters cut to 57 in proportion: 60*57//92 and 30*57//92, no "-" at the end.
    assert base == "p" * 37 + "-" + "c" * 18


def test_pod_claim_entry_names_a_claim_or_a_template(tmp_path: Path) -> None:
    both = POD.replace(
        "resourceClaimTemplateName: one-gpu",
        "resourceClaimTemplateName: one-gpu, resourceClaimName: c",
    )
    problem = only_problem(load(tmp_path, both))
    assert (problem.kind, problem.name, problem.field) == (
        "Pod",
        "ml/train",
        "spec.resourceClaims[0]",
    )
    assert "at most one of" in problem.message
    neither = POD.replace(", resourceClaimTemplateName: one-gpu", "")
    problem = only_problem(load(tmp_path, neither, name="neither.yaml"))
    assert "must specify one of" in problem.message
