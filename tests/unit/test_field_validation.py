"""cluster.validation.fields: the apiserver's strict decoding of every kind the
loader reads (unknown and duplicate fields, wrong JSON types, int32/int64 ranges),
with its texts, and the reader's marking of duplicate JSON keys."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubesched.api import kinds
from kubesched.cluster.manifest_reader import _json_documents, _may_name_a_key_twice
from kubesched.cluster.validation.fields import (
    MAX_PROBLEMS,
    SAVED,
    STRICT,
    DuplicateKeyDict,
    FieldProblem,
    check_fields,
    copy_object,
    duplicate_fields,
    has_schema,
    refusal,
    triage,
)

Doc = dict[str, Any]

POD_SPEC: Doc = {"containers": [{"name": "c", "image": "i"}]}
TEMPLATE: Doc = {"metadata": {"labels": {"app": "a"}}, "spec": POD_SPEC}


def with_template(spec: Doc, **more: Any) -> Doc:
    """A workload spec whose pod template's spec gets `spec`'s fields."""
    return {
        "selector": {"matchLabels": {"app": "a"}},
        "template": {**TEMPLATE, "spec": {**POD_SPEC, **spec}},
        **more,
    }


def problems(doc: Doc, api_version: str = "v1", kind: str = "Pod") -> list[tuple[str, str]]:
    found = check_fields(doc, api_version, kind)
    assert found is not None, f"{api_version} {kind} has no schema"
    return [(p.field, p.message) for p in found]


def unknown(path: str, close: str | None = None) -> str:
    text = f'unknown field "{path}"'
    return text if close is None else f'{text}; did you mean "{close}"?'


# (apiVersion, kind, document, field, did-you-mean): one unknown field, nested, per kind.
UNKNOWN_CASES: list[tuple[str, str, Doc, str, str | None]] = [
    (
        "v1",
        "Pod",
        {"spec": {**POD_SPEC, "nodeSelecter": {"d": "s"}}},
        "spec.nodeSelecter",
        "nodeSelector",
    ),
    (
        "v1",
        "Node",
        {"spec": {"taints": [{"key": "k", "efect": "NoSchedule"}]}},
        "spec.taints[0].efect",
        "effect",
    ),
    ("v1", "Namespace", {"spec": {"finalizer": ["kubernetes"]}}, "spec.finalizer", "finalizers"),
    (
        "v1",
        "Service",
        {"spec": {"ports": [{"port": 80, "targetPorts": 8080}]}},
        "spec.ports[0].targetPorts",
        "targetPort",
    ),
    (
        "v1",
        "ReplicationController",
        {
            "spec": {
                "template": {
                    "spec": {
                        **POD_SPEC,
                        "affinity": {
                            "nodeAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [
                                        {"matchExpressions": [{"key": "k", "operater": "In"}]}
                                    ]
                                }
                            }
                        },
                    }
                }
            }
        },
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].operater",
        "operator",
    ),
    (
        "v1",
        "PersistentVolume",
        {"spec": {"csi": {"driver": "d", "volumeHandel": "h"}}},
        "spec.csi.volumeHandel",
        "volumeHandle",
    ),
    (
        "v1",
        "PersistentVolumeClaim",
        {"spec": {"resources": {"request": {"storage": "1Gi"}}}},
        "spec.resources.request",
        "requests",
    ),
    (
        "apps/v1",
        "Deployment",
        {"spec": with_template({"nodeSelecter": {}})},
        "spec.template.spec.nodeSelecter",
        "nodeSelector",
    ),
    (
        "apps/v1",
        "ReplicaSet",
        {"spec": with_template({"tolerations": [{"effekt": "NoSchedule"}]})},
        "spec.template.spec.tolerations[0].effekt",
        "effect",
    ),
    (
        "apps/v1",
        "StatefulSet",
        {"spec": with_template({"containers": [{"name": "c", "imagee": "i"}]})},
        "spec.template.spec.containers[0].imagee",
        "image",
    ),
    (
        "apps/v1",
        "DaemonSet",
        {"spec": {"template": {"metadata": {"labelz": {}}}}},
        "spec.template.metadata.labelz",
        "labels",
    ),
    (
        "batch/v1",
        "Job",
        {"spec": with_template({"restartPolice": "Never"})},
        "spec.template.spec.restartPolice",
        "restartPolicy",
    ),
    (
        "policy/v1",
        "PodDisruptionBudget",
        {"spec": {"minAvailible": 1}},
        "spec.minAvailible",
        "minAvailable",
    ),
    ("scheduling.k8s.io/v1", "PriorityClass", {"valu": 1000}, "valu", "value"),
    (
        "scheduling.k8s.io/v1alpha2",
        "Workload",
        {
            "spec": {
                "podGroupTemplates": [{"name": "g", "schedulingPolicy": {"gang": {"minCont": 2}}}]
            }
        },
        "spec.podGroupTemplates[0].schedulingPolicy.gang.minCont",
        "minCount",
    ),
    # BasicSchedulingPolicy is an empty struct: every field in it is unknown.
    (
        "scheduling.k8s.io/v1alpha2",
        "PodGroup",
        {"spec": {"schedulingPolicy": {"basic": {"x": 1}}}},
        "spec.schedulingPolicy.basic.x",
        None,
    ),
    (
        "node.k8s.io/v1",
        "RuntimeClass",
        {"handler": "h", "scheduling": {"tolerations": [{"tolerationSecond": 5}]}},
        "scheduling.tolerations[0].tolerationSecond",
        "tolerationSeconds",
    ),
    (
        "storage.k8s.io/v1",
        "StorageClass",
        {"provisioner": "p", "parameter": {"a": "b"}},
        "parameter",
        "parameters",
    ),
    (
        "storage.k8s.io/v1",
        "CSINode",
        {"spec": {"drivers": [{"name": "d", "topologyKey": []}]}},
        "spec.drivers[0].topologyKey",
        "topologyKeys",
    ),
    (
        "storage.k8s.io/v1",
        "CSIDriver",
        {"spec": {"attachRequire": True}},
        "spec.attachRequire",
        "attachRequired",
    ),
    (
        "storage.k8s.io/v1",
        "CSIStorageCapacity",
        {"nodeTopology": {"matchLabel": {}}},
        "nodeTopology.matchLabel",
        "matchLabels",
    ),
    (
        "storage.k8s.io/v1",
        "VolumeAttachment",
        {"spec": {"source": {"persistentVolumeNam": "pv"}}},
        "spec.source.persistentVolumeNam",
        "persistentVolumeName",
    ),
    (
        "resource.k8s.io/v1",
        "DeviceClass",
        {"spec": {"selectors": [{"cel": {"expresion": "true"}}]}},
        "spec.selectors[0].cel.expresion",
        "expression",
    ),
    (
        "resource.k8s.io/v1",
        "ResourceSlice",
        {"spec": {"devices": [{"name": "d", "capacity": {"mem": {"valu": "1Gi"}}}]}},
        "spec.devices[0].capacity[mem].valu",  # the strict path writes the map key with "."
        "value",
    ),
    (
        "resource.k8s.io/v1",
        "ResourceClaim",
        {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClass": "c"}}]}}},
        "spec.devices.requests[0].exactly.deviceClass",
        "deviceClassName",
    ),
    (
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        {"spec": {"metadata": {"label": {}}}},
        "spec.metadata.label",
        "labels",
    ),
    (
        "resource.k8s.io/v1beta2",
        "ResourceClaim",
        {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassNam": "c"}}]}}},
        "spec.devices.requests[0].exactly.deviceClassNam",
        "deviceClassName",
    ),
]


@pytest.mark.parametrize(
    ("api_version", "kind", "doc", "field", "close"),
    UNKNOWN_CASES,
    ids=[f"{c[0]}/{c[1]}" for c in UNKNOWN_CASES],
)
def test_an_unknown_field_is_named_with_its_path(
    api_version: str, kind: str, doc: Doc, field: str, close: str | None
) -> None:
    strict = field.replace("[mem]", ".mem")
    assert problems(doc, api_version, kind) == [(field, unknown(strict, close))]


def test_every_kind_the_loader_reads_has_a_schema_and_a_case() -> None:
    """Every built-in kind of api/kinds.py's list (CRDs have no OpenAPI here)."""
    cases = {(c[0], c[1]) for c in UNKNOWN_CASES}
    for read in kinds.SIMULATOR_KINDS:
        if read in kinds.PLUGIN_KINDS:
            continue
        group_version, kind = read.api_version, read.kind
        assert has_schema(group_version, kind)
        assert (group_version, kind) in cases
        assert check_fields({"apiVersion": group_version, "kind": kind}, group_version, kind) == []


def test_the_brief_s_example() -> None:
    doc = {"spec": {**POD_SPEC, "nodeSelecter": {"disk": "ssd"}, "priority": 99999999999999999999}}
    assert problems(doc) == [
        ("spec.nodeSelecter", unknown("spec.nodeSelecter", "nodeSelector")),
        (
            "spec.priority",
            "json: cannot unmarshal number 99999999999999999999 into Go struct field "
            "PodSpec.spec.priority of type int32",
        ),
    ]


def test_did_you_mean_only_when_a_known_field_is_close() -> None:
    assert problems({"spec": {"zzz": 1}}) == [("spec.zzz", unknown("spec.zzz"))]
    assert problems({"metdata": {}}) == [("metdata", unknown("metdata", "metadata"))]
    # Case matters, as in the apiserver (UnmarshalCaseSensitivePreserveInts).
    assert problems({"spec": {"NodeName": "n"}}) == [
        ("spec.NodeName", unknown("spec.NodeName", "nodeName"))
    ]


def test_kinds_without_a_schema_are_not_validated() -> None:
    assert check_fields({"spec": {"x": 1}}, "scheduling.x-k8s.io/v1alpha1", "PodGroup") is None
    assert check_fields({"spec": {"x": 1}}, "extensions/v1beta1", "Deployment") is None
    assert check_fields({"spec": {"x": 1}}, "", "Pod") is None
    assert check_fields({}, "v1", "ConfigMap") is None
    assert not has_schema("scheduling.x-k8s.io/v1alpha1", "PodGroup")


# --- numbers --------------------------------------------------------------------


def int_problem(field: str, owner: str, stack: str, value: object, go_type: str) -> tuple[str, str]:
    return (
        field,
        f"json: cannot unmarshal {value} into Go struct field {owner}.{stack} of type {go_type}",
    )


@pytest.mark.parametrize("value", [2147483647, -2147483648, 0, None])
def test_int32_bounds_are_accepted(value: object) -> None:
    assert problems({"spec": {**POD_SPEC, "priority": value}}) == []
    assert problems({"value": value}, "scheduling.k8s.io/v1", "PriorityClass") == []


@pytest.mark.parametrize("value", [2147483648, -2147483649, 99999999999999999999, 1.5, 3.0, 1e20])
def test_int32_out_of_range_or_not_an_integer_is_refused(value: object) -> None:
    assert problems({"spec": {**POD_SPEC, "priority": value}}) == [
        int_problem("spec.priority", "PodSpec", "spec.priority", f"number {value!r}", "int32")
    ]
    assert problems({"value": value}, "scheduling.k8s.io/v1", "PriorityClass") == [
        int_problem("value", "PriorityClass", "value", f"number {value!r}", "int32")
    ]


def test_int32_in_lists_and_templates_names_the_go_struct() -> None:
    doc = {
        "spec": with_template({"containers": [{"name": "c", "ports": [{"containerPort": 2**31}]}]})
    }
    assert problems(doc, "apps/v1", "Deployment") == [
        int_problem(
            "spec.template.spec.containers[0].ports[0].containerPort",
            "ContainerPort",
            "spec.template.spec.containers.ports.containerPort",
            f"number {2**31}",
            "int32",
        )
    ]


def test_int64_bounds() -> None:
    assert problems({"spec": {**POD_SPEC, "activeDeadlineSeconds": 2**63 - 1}}) == []
    assert problems({"spec": {**POD_SPEC, "terminationGracePeriodSeconds": -(2**63)}}) == []
    assert problems({"spec": {**POD_SPEC, "activeDeadlineSeconds": 2**63}}) == [
        int_problem(
            "spec.activeDeadlineSeconds",
            "PodSpec",
            "spec.activeDeadlineSeconds",
            f"number {2**63}",
            "int64",
        )
    ]
    assert problems({"spec": {**POD_SPEC, "terminationGracePeriodSeconds": -(2**63) - 1}}) == [
        int_problem(
            "spec.terminationGracePeriodSeconds",
            "PodSpec",
            "spec.terminationGracePeriodSeconds",
            f"number {-(2**63) - 1}",
            "int64",
        )
    ]


def test_int_or_string_and_quantity() -> None:
    spec = {"selector": {}, "template": TEMPLATE}
    ok = {"spec": {**spec, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 2}}}}
    assert problems(ok, "apps/v1", "Deployment") == []
    bad = {
        "spec": {**spec, "strategy": {"rollingUpdate": {"maxSurge": True, "maxUnavailable": 2**31}}}
    }
    assert problems(bad, "apps/v1", "Deployment") == [
        # IntOrString.UnmarshalJSON's json.Unmarshal error, given the field's context.
        int_problem(
            "spec.strategy.rollingUpdate.maxSurge",
            "RollingUpdateDeployment",
            "spec.strategy.rollingUpdate.maxSurge",
            "bool",
            "int32",
        ),
        int_problem(
            "spec.strategy.rollingUpdate.maxUnavailable",
            "RollingUpdateDeployment",
            "spec.strategy.rollingUpdate.maxUnavailable",
            f"number {2**31}",
            "int32",
        ),
    ]
    resources = {"requests": {"cpu": 1.5, "memory": "1Gi"}, "limits": {"cpu": {"a": 1}}}
    doc = {"spec": {"containers": [{"name": "c", "resources": resources}]}}
    assert problems(doc) == [
        (
            "spec.containers[0].resources.limits[cpu]",
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        )
    ]


# --- JSON types -----------------------------------------------------------------


def test_wrong_json_types_name_the_go_type() -> None:
    doc = {
        "metadata": {"labels": {"app": 5}, "creationTimestamp": 7},
        "spec": {
            "nodeSelector": "disk=ssd",
            "containers": {"name": "c"},
            "hostNetwork": "true",
            "tolerations": ["x"],
            "restartPolicy": 1,
            "securityContext": [],
        },
    }
    assert problems(doc) == [
        int_problem("metadata.labels[app]", "ObjectMeta", "metadata.labels", "number", "string"),
        int_problem(
            "metadata.creationTimestamp",
            "ObjectMeta",
            "metadata.creationTimestamp",
            "number",
            "string",
        ),
        int_problem(
            "spec.nodeSelector", "PodSpec", "spec.nodeSelector", "string", "map[string]string"
        ),
        int_problem("spec.containers", "PodSpec", "spec.containers", "object", "[]v1.Container"),
        int_problem("spec.hostNetwork", "PodSpec", "spec.hostNetwork", "string", "bool"),
        int_problem(
            "spec.tolerations[0]", "PodSpec", "spec.tolerations", "string", "v1.Toleration"
        ),
        int_problem("spec.restartPolicy", "PodSpec", "spec.restartPolicy", "number", "string"),
        int_problem(
            "spec.securityContext",
            "PodSpec",
            "spec.securityContext",
            "array",
            "v1.PodSecurityContext",
        ),
    ]
    assert problems({"spec": "x"}) == [int_problem("spec", "Pod", "spec", "string", "v1.PodSpec")]


def test_null_decodes_into_anything_and_any_fields_take_anything() -> None:
    doc = {
        "metadata": {
            "labels": None,
            "managedFields": [{"fieldsV1": {"f:x": {"deep": [1, {"y": None}]}}}],
        },
        "spec": {
            "containers": [None, {"name": None, "ports": None}],
            "priority": None,
            "nodeSelector": {"a": None},
        },
        "status": None,
    }
    assert problems(doc) == []


def test_yaml_keys_that_are_no_strings_are_unknown_fields() -> None:
    assert problems({"spec": {1: "x"}}) == [("spec.1", unknown("spec.1"))]
    assert problems({"spec": {True: "y"}}) == [("spec.true", unknown("spec.true"))]


def test_the_refusal_is_the_error_decoding_returns() -> None:
    found = check_fields(
        {"spec": {"zz": 1, "priority": "high", "yy": 2, "hostPID": 1}}, "v1", "Pod"
    )
    assert found is not None
    assert [p.field for p in found] == ["spec.zz", "spec.priority", "spec.yy", "spec.hostPID"]
    assert [p.stage for p in found] == [STRICT, SAVED, STRICT, SAVED]
    assert refusal(found).field == "spec.priority"  # the first saved type error
    # An UnmarshalJSON method's error is returned at once, over saved ones.
    bad = {"metadata": {"labels": {"a": 1}, "creationTimestamp": 5}}
    found = check_fields(bad, "v1", "Pod")
    assert found is not None and refusal(found).field == "metadata.creationTimestamp"
    only_unknown = [FieldProblem("a", "unknown", STRICT), FieldProblem("b", "unknown", STRICT)]
    assert refusal(only_unknown).error == ("a", "unknown")


# --- duplicate JSON keys ----------------------------------------------------------


def read_json(text: str) -> list[Any]:
    reported: list[tuple[int, str]] = []
    docs = [obj for _, obj in _json_documents(text.encode(), lambda i, m: reported.append((i, m)))]
    assert reported == []
    return docs


POD_JSON = '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"%s}, "spec": {%s}}'


def test_json_without_duplicates_is_read_as_plain_dicts() -> None:
    (doc,) = read_json(POD_JSON % (', "labels": {"a:b": "c:d"}', '"nodeName": "n:1"'))
    assert type(doc) is dict
    assert not _may_name_a_key_twice(json.dumps(doc).encode(), doc)


def test_a_duplicate_field_is_reported_with_its_path() -> None:
    (doc,) = read_json(POD_JSON % ("", '"nodeName": "a", "containers": [], "nodeName": "b"'))
    assert isinstance(doc, DuplicateKeyDict)
    assert doc["spec"]["nodeName"] == "b"  # the last value, as msgspec keeps it
    assert problems(doc) == [("spec.nodeName", 'duplicate field "spec.nodeName"')]


def test_duplicates_in_maps_lists_and_unknown_fields() -> None:
    text = POD_JSON % (
        ', "labels": {"app": "a", "app": "b"}',
        '"containers": [{"name": "c", "image": "i", "name": "d"}], "zz": 1, "zz": 2',
    )
    (doc,) = read_json(text)
    assert problems(doc) == [
        ("metadata.labels[app]", 'duplicate field "metadata.labels.app"'),
        ("spec.containers[0].name", 'duplicate field "spec.containers[0].name"'),
        ("spec.zz", unknown("spec.zz")),  # once, as saveStrictError dedupes
    ]


def test_a_duplicate_whose_dropped_value_holds_colons_is_found() -> None:
    (doc,) = read_json(POD_JSON % ("", '"nodeName": "a:b:c", "nodeName": "d"'))
    assert problems(doc) == [("spec.nodeName", 'duplicate field "spec.nodeName"')]


def test_escaped_colons_and_keys_are_read_exactly() -> None:
    # "\u003a" is a ":" the text does not show: read again, and no duplicate is invented.
    (doc,) = read_json(POD_JSON % (', "labels": {"a\\u003ab": "c"}', ""))
    assert doc == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a:b": "c"}},
        "spec": {},
    }
    assert type(doc) is dict and problems(doc) == []
    # The same key written two ways is a duplicate.
    (doc,) = read_json(POD_JSON % ("", '"nodeName": "a", "node\\u004eame": "b"'))
    assert problems(doc) == [("spec.nodeName", 'duplicate field "spec.nodeName"')]


def test_duplicates_in_a_list_s_items_and_in_a_json_stream() -> None:
    item = '{"metadata": {"name": "p"}, "spec": {"priority": 1, "priority": 2}}'
    (doc,) = read_json(
        '{"apiVersion": "v1", "kind": "PodList", "items": [{"metadata": {}}, ' + item + "]}"
    )
    assert isinstance(doc, dict)
    first, second = doc["items"]
    assert type(first) is dict and isinstance(second, DuplicateKeyDict)
    # The loader gives typed lists' items their kind: copy_object keeps the mark.
    copied = copy_object(second, {"kind": "Pod", "apiVersion": "v1"})
    assert problems(copied) == [("spec.priority", 'duplicate field "spec.priority"')]
    assert type(copy_object(first, {"kind": "Pod"})) is dict
    stream = read_json(POD_JSON % ("", "") + "\n" + item)
    assert type(stream[0]) is dict and problems(stream[1]) == [
        ("spec.priority", 'duplicate field "spec.priority"')
    ]


def test_duplicates_are_not_looked_for_when_validation_is_off() -> None:
    data = (POD_JSON % ("", '"nodeName": "a", "nodeName": "b"')).encode()
    ((_, doc),) = _json_documents(data, lambda i, m: None, find_duplicates=False)
    assert type(doc) is dict


def test_a_duplicate_under_deeply_nested_lists_marks_the_document() -> None:
    depth = 900  # below the reader's MAX_DEPTH; the hook looks into lists without recursion
    text = POD_JSON % ("", '"zz": ' + "[" * depth + '{"a": 1, "a": 2}' + "]" * depth)
    (doc,) = read_json(text)
    assert isinstance(doc, DuplicateKeyDict)
    assert problems(doc) == [("spec.zz", unknown("spec.zz"))]


def test_a_hostile_document_gets_at_most_max_problems() -> None:
    doc = {
        "spec": {"containers": [{"name": "c", "bad": 1, "ports": [{"containerPort": "x"}]}] * 10**5}
    }
    found = problems(doc)
    assert len(found) == MAX_PROBLEMS
    assert found[:2] == [
        ("spec.containers[0].bad", unknown("spec.containers[0].bad")),
        (
            "spec.containers[0].ports[0].containerPort",
            "json: cannot unmarshal string into Go struct field "
            "ContainerPort.spec.containers.ports.containerPort of type int32",
        ),
    ]


def test_duplicates_of_kinds_without_a_schema() -> None:
    text = (
        '{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", '
        '"spec": {"minMember": 1, "x": [{"a": 1, "a": 2}], "minMember": 2}}'
    )
    (doc,) = read_json(text)
    assert check_fields(doc, "scheduling.x-k8s.io/v1alpha1", "PodGroup") is None
    assert [(p.field, p.message) for p in duplicate_fields(doc)] == [
        ("spec.minMember", 'duplicate field "spec.minMember"'),
        ("spec.x[0].a", 'duplicate field "spec.x[0].a"'),
    ]
    assert duplicate_fields({"spec": {"a": 1}}) == []


def test_the_modes_as_field_validation_treats_problems() -> None:
    unknown_only = check_fields({"spec": {"zz": 1, "yy": 2}}, "v1", "Pod")
    mixed = check_fields({"spec": {"zz": 1, "priority": 2**31}}, "v1", "Pod")
    assert unknown_only is not None and mixed is not None
    refused, warnings = triage(unknown_only, "strict")
    assert refused is not None and refused.field == "spec.zz" and warnings == []
    assert triage(unknown_only, "warn") == (None, unknown_only)
    assert triage(unknown_only, "ignore") == (None, [])
    # A value that does not decode refuses the object in every mode.
    for mode in ("strict", "warn", "ignore"):
        refused, warnings = triage(mixed, mode)
        assert refused is not None and refused.field == "spec.priority" and warnings == []
    assert triage([], "strict") == (None, [])
