"""Objects other than pods as kube-apiserver validates them: Nodes (taints,
resources), PriorityClasses, PodDisruptionBudgets, Namespaces, workloads'
names and templates, storage objects' names, and YAML that names a key twice.
Each refused object is one exact line with upstream's text; the good pods are
still scheduled and the exit code is 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.validation_helpers import assert_accepted, assert_refused, pod, run, with_meta

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
KEY_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
PERCENT = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
    "'93%', regex used for validation is '[0-9]+%')"
)


def node(
    name: str = "bad", taints: list[dict[str, Any]] | None = None, **status: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": "1"}, **status},
    }


def priority_class(name: str = "bad", value: int = 1000, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **fields,
    }


def pdb(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "bad"},
        "spec": spec,
    }


def workload(
    kind: str, name: str = "bad", template_spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": "w"}},
        "spec": template_spec if template_spec is not None else pod()["spec"],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}}, "template": template},
    }


EFFECTS = 'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'

REFUSED: list[tuple[str, Any, str, str, str]] = [
    # --- nodes and taints (upstream names a node's taints metadata.taints[i])
    (
        "taint-effect",
        node(taints=[{"key": "k", "effect": "NoRun"}]),
        "Node bad",
        "metadata.taints[0].effect",
        f'Unsupported value: "NoRun": {EFFECTS}',
    ),
    (
        "taint-effect-empty",
        node(taints=[{"key": "k", "effect": ""}]),
        "Node bad",
        "metadata.taints[0].effect",
        "Required value",
    ),
    (
        "taint-key",
        node(taints=[{"key": "a b", "effect": "NoSchedule"}]),
        "Node bad",
        "metadata.taints[0].key",
        f'Invalid value: "a b": {KEY_NAME}',
    ),
    (
        "taint-twice",
        node(
            taints=[
                {"key": "k", "value": "1", "effect": "NoSchedule"},
                {"key": "k", "value": "2", "effect": "NoSchedule"},
            ]
        ),
        "Node bad",
        "metadata.taints[1]",
        'Duplicate value: {"Key":"k","Value":"2","Effect":"NoSchedule","TimeAdded":null}: '
        "taints must be unique by key "
        "and effect pair",
    ),
    (
        "node-name",
        node(name="Node_1"),
        "Node Node_1",
        "metadata.name",
        f'Invalid value: "Node_1": {SUBDOMAIN}',
    ),
    (
        "node-label",
        with_meta(node(), labels={"zone": "a b c"}),
        "Node bad",
        "metadata.labels",
        'Invalid value: "a b c": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
    (
        "node-extended-fraction",
        node(capacity={"example.com/gpu": "1500m"}, allocatable={"cpu": "1"}),
        "Node bad",
        "status.capacity[example.com/gpu]",
        'Invalid value: "1500m": must be an integer',
    ),
    # --- PriorityClasses
    (
        "priority-too-high",
        priority_class(value=1000000001),
        "PriorityClass bad",
        "value",
        "Forbidden: maximum allowed value of a user defined priority is 1000000000",
    ),
    (
        "priority-system-prefix",
        priority_class(name="system-mine"),
        "PriorityClass system-mine",
        "metadata.name",
        "Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: system-mine is not a known system priority class",
    ),
    (
        "priority-system-value",
        priority_class(name="system-node-critical", value=5),
        "PriorityClass system-node-critical",
        "metadata.name",
        "Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: value of system-node-critical PriorityClass must be 2000001000",
    ),
    (
        "priority-preemption-policy",
        priority_class(preemptionPolicy="Always"),
        "PriorityClass bad",
        "preemptionPolicy",
        'Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"',
    ),
    (
        "priority-name",
        priority_class(name="High"),
        "PriorityClass High",
        "metadata.name",
        f'Invalid value: "High": {SUBDOMAIN}',
    ),
    # --- PodDisruptionBudgets
    (
        "pdb-both",
        pdb(minAvailable=1, maxUnavailable=1),
        "PodDisruptionBudget default/bad",
        "spec",
        'Invalid value: {"MinAvailable":1,"Selector":null,"MaxUnavailable":1,'
        '"UnhealthyPodEvictionPolicy":null}: '
        "minAvailable and maxUnavailable cannot "
        "be both set",
    ),
    (
        "pdb-both-with-selector",
        pdb(minAvailable="50%", maxUnavailable=1, selector={"matchLabels": {"app": "web"}}),
        "PodDisruptionBudget default/bad",
        "spec",
        'Invalid value: {"MinAvailable":"50%","Selector":{"matchLabels":{"app":"web"}},'
        '"MaxUnavailable":1,"UnhealthyPodEvictionPolicy":null}: '
        "minAvailable and maxUnavailable cannot be both set",
    ),
    (
        "pdb-negative",
        pdb(minAvailable=-1),
        "PodDisruptionBudget default/bad",
        "spec.minAvailable",
        "Invalid value: -1: must be greater than or equal to 0",
    ),
    (
        "pdb-percent-syntax",
        pdb(maxUnavailable="50"),
        "PodDisruptionBudget default/bad",
        "spec.maxUnavailable",
        f'Invalid value: "50": {PERCENT}',
    ),
    (
        "pdb-over-100",
        pdb(minAvailable="150%"),
        "PodDisruptionBudget default/bad",
        "spec.minAvailable",
        'Invalid value: "150%": must not be greater than 100%',
    ),
    (
        "pdb-selector",
        pdb(minAvailable=1, selector={"matchExpressions": [{"key": "app", "operator": "In"}]}),
        "PodDisruptionBudget default/bad",
        "spec.selector.matchExpressions[0].values",
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ),
    # --- namespaces and workloads
    (
        "namespace-name",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}},
        "Namespace team.a",
        "metadata.name",
        'Invalid value: "team.a": must not contain dots',
    ),
    (
        "statefulset-name-label",
        workload("StatefulSet", name="db.v1"),
        "StatefulSet default/db.v1",
        "metadata.name",
        'Invalid value: "db.v1": must not contain dots',
    ),
    (
        "deployment-no-containers",
        workload("Deployment", template_spec={"containers": []}),
        "Deployment default/bad",
        "spec.template.spec.containers",
        "Required value",
    ),
    (
        "deployment-template-toleration",
        workload(
            "Deployment",
            template_spec={**pod()["spec"], "tolerations": [{"key": "k", "operator": "In"}]},
        ),
        "Deployment default/bad",
        "spec.template.spec.tolerations[0].operator",
        'Unsupported value: "In": supported values: "Equal", "Exists"',
    ),
    (
        "storage-class-name",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "Fast"},
            "provisioner": "x",
        },
        "StorageClass Fast",
        "metadata.name",
        f'Invalid value: "Fast": {SUBDOMAIN}',
    ),
]


@pytest.mark.parametrize(
    ("document", "what", "field", "body"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_invalid_object_is_refused_with_upstreams_text(
    tmp_path: Path, document: Any, what: str, field: str, body: str
) -> None:
    assert_refused(tmp_path, document, what, field, body)


ACCEPTED: list[tuple[str, Any]] = [
    (
        "taints",
        node(
            name="n2",
            taints=[
                {"key": "k", "effect": "NoSchedule"},
                {"key": "k", "effect": "NoExecute"},
                {"key": "example.com/k", "value": "v", "effect": "PreferNoSchedule"},
            ],
        ),
    ),
    ("priority-classes", priority_class(name="top", value=1000000000, preemptionPolicy="Never")),
    ("system-class-as-built-in", priority_class(name="system-cluster-critical", value=2000000000)),
    ("pdb-percent", pdb(maxUnavailable="100%", selector={"matchLabels": {"app": "web"}})),
    ("pdb-zero", pdb(minAvailable=0)),
    ("pdb-name-is-a-path-segment", {**pdb(minAvailable=1), "metadata": {"name": "Web_Budget"}}),
    ("statefulset", workload("StatefulSet", name="db")),
]


@pytest.mark.parametrize("document", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_valid_object_is_accepted(tmp_path: Path, document: Any) -> None:
    out = assert_accepted(tmp_path, document)
    assert out["placements"]["default/first"] == "n1"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n"
            "spec: {containers: [{name: c}]}",
            9,
        ),
        (
            "apiVersion: v1\nkind: Pod\nkind: Pod\nmetadata: {name: a}\n"
            "spec: {containers: [{name: c}]}",
            7,
        ),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a, labels: {x: '1', x: '2'}}\n"
            "spec: {containers: [{name: c}]}",
            7,
        ),
    ],
    ids=["metadata", "top-level", "flow-mapping"],
)
def test_duplicate_yaml_keys_are_refused(tmp_path: Path, text: str, line: int) -> None:
    """PyYAML keeps the last value; the apiserver's strict decoding refuses the object."""
    code, out, path = run(tmp_path, text)
    key = "kind" if "kind: Pod\nkind" in text else "x" if "x: '1'" in text else "name"
    assert out["problems"] == [
        f'{path}: document 3: strict decoding error: line {line}: key "{key}" already set in map'
    ]
    assert out["placements"] == {"default/first": "n1", "default/last": "n1"}
    assert code == 1


def test_yaml_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: merged}\nspec:\n"
        "  containers:\n  - &base {name: c, image: nginx}\n  - {<<: *base, name: d}"
    )
    code, out, _ = run(tmp_path, text)
    assert (out["problems"], code) == ([], 0)
    assert out["placements"]["default/merged"] == "n1"
