"""Pods as kube-apiserver validates them (ValidatePodCreate): names, labels and
annotations, tolerations, topology spread, ports, affinity, requests and limits,
containers and resource names. Each refused pod is one exact line naming file,
document, object and field with upstream's text; the other pods are still
scheduled and the exit code is 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.validation_helpers import (
    assert_accepted,
    assert_refused,
    container,
    pod,
    with_meta,
)

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
KEY_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
THREE_PARTS = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional "
    "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
)
PORT_RANGE = "must be between 1 and 65535, inclusive"
NODE_TERM = (
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
)
POD_TERM = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution[0]"
SPREAD = "spec.topologySpreadConstraints[0]"


def spread(**fields: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        **fields,
    }


def node_affinity_expr(**expr: Any) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"], **expr}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def pod_term(**fields: Any) -> dict[str, Any]:
    return {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}, **fields}


def resources(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return [container(resources=res)]


POD = "Pod default/bad"

# (id, pod document, field, body)
REFUSED: list[tuple[str, dict[str, Any], str, str, str]] = [
    # --- names, labels, annotations
    (
        "name-not-subdomain",
        with_meta(pod(), name="Bad_Name"),
        "Pod default/Bad_Name",
        "metadata.name",
        f'Invalid value: "Bad_Name": {SUBDOMAIN}',
    ),
    (
        "name-too-long",
        with_meta(pod(), name="a" * 254),
        f"Pod default/{'a' * 254}",
        "metadata.name",
        f'Invalid value: "{"a" * 254}": must be no more than 253 characters',
    ),
    (
        "generate-name",
        {**pod(), "metadata": {"generateName": "Web-"}},
        "Pod default/Web-",
        "metadata.generateName",
        f'Invalid value: "Web-": {SUBDOMAIN}',
    ),
    (
        "namespace-not-label",
        with_meta(pod(), namespace="team.a"),
        "Pod team.a/bad",
        "metadata.namespace",
        'Invalid value: "team.a": must not contain dots',
    ),
    (
        "label-key",
        with_meta(pod(), labels={"-app": "x"}),
        POD,
        "metadata.labels",
        f'Invalid value: "-app": {KEY_NAME}',
    ),
    (
        "label-key-three-parts",
        with_meta(pod(), labels={"a/b/c": "x"}),
        POD,
        "metadata.labels",
        f'Invalid value: "a/b/c": {THREE_PARTS}',
    ),
    (
        "label-key-long-name",
        with_meta(pod(), labels={"example.com/" + "k" * 64: "x"}),
        POD,
        "metadata.labels",
        f'Invalid value: "example.com/{"k" * 64}": name part must be no more than 63 bytes',
    ),
    (
        "label-value-long",
        with_meta(pod(), labels={"app": "v" * 64}),
        POD,
        "metadata.labels",
        f'Invalid value: "{"v" * 64}": must be no more than 63 bytes',
    ),
    (
        "label-value-chars",
        with_meta(pod(), labels={"app": "a b"}),
        POD,
        "metadata.labels",
        f'Invalid value: "a b": {LABEL_VALUE}',
    ),
    (
        "annotation-key",
        with_meta(pod(), annotations={"bad key": "x"}),
        POD,
        "metadata.annotations",
        f'Invalid value: "bad key": {KEY_NAME}',
    ),
    (
        "annotations-too-big",
        with_meta(pod(), annotations={"a": "x" * 262144}),
        POD,
        "metadata.annotations",
        "Too long: may not be more than 262144 bytes",
    ),
    (
        "node-selector",
        pod(nodeSelector={"zone": "a b"}),
        POD,
        "spec.nodeSelector",
        f'Invalid value: "a b": {LABEL_VALUE}',
    ),
    # --- tolerations
    (
        "toleration-operator",
        pod(tolerations=[{"key": "k", "operator": "Foo"}]),
        POD,
        "spec.tolerations[0].operator",
        'Unsupported value: "Foo": supported values: "Equal", "Exists"',
    ),
    (
        "toleration-lt-gated",
        pod(tolerations=[{"key": "k", "operator": "Lt", "value": "5"}]),
        POD,
        "spec.tolerations[0].operator",
        'Unsupported value: "Lt": supported values: "Equal", "Exists", "Lt", "Gt"',
    ),
    (
        "toleration-effect",
        pod(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoRun"}]),
        POD,
        "spec.tolerations[0].effect",
        'Unsupported value: "NoRun": supported values: '
        '"NoSchedule", "PreferNoSchedule", "NoExecute"',
    ),
    (
        "toleration-exists-value",
        pod(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
        POD,
        "spec.tolerations[0].operator",
        "Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
    ),
    (
        "toleration-empty-key",
        pod(tolerations=[{"operator": "Equal", "value": "v"}]),
        POD,
        "spec.tolerations[0].operator",
        'Invalid value: "Equal": operator must be Exists when `key` is empty, '
        'which means "match all '
        'values and all keys"',
    ),
    (
        "toleration-seconds",
        pod(tolerations=[{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]),
        POD,
        "spec.tolerations[0].effect",
        "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
    ),
    (
        "toleration-key",
        pod(tolerations=[{"key": "a b", "operator": "Exists"}]),
        POD,
        "spec.tolerations[0].key",
        f'Invalid value: "a b": {KEY_NAME}',
    ),
    (
        "toleration-value",
        pod(tolerations=[{"key": "k", "value": "a b"}]),
        POD,
        "spec.tolerations[0].operator",
        f'Invalid value: "a b": {LABEL_VALUE}',
    ),
    # --- topology spread
    (
        "spread-when",
        pod(topologySpreadConstraints=[spread(whenUnsatisfiable="Never")]),
        POD,
        f"{SPREAD}.whenUnsatisfiable",
        'Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway"',
    ),
    (
        "spread-max-skew",
        pod(topologySpreadConstraints=[spread(maxSkew=0)]),
        POD,
        f"{SPREAD}.maxSkew",
        "Invalid value: 0: must be greater than zero",
    ),
    (
        "spread-topology-key",
        pod(topologySpreadConstraints=[spread(topologyKey="")]),
        POD,
        f"{SPREAD}.topologyKey",
        "Required value: can not be empty",
    ),
    (
        "spread-min-domains",
        pod(topologySpreadConstraints=[spread(minDomains=0)]),
        POD,
        f"{SPREAD}.minDomains",
        "Invalid value: 0: must be greater than zero",
    ),
    (
        "spread-min-domains-anyway",
        pod(topologySpreadConstraints=[spread(minDomains=2, whenUnsatisfiable="ScheduleAnyway")]),
        POD,
        f"{SPREAD}.minDomains",
        "Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
        "not ScheduleAnyway",
    ),
    (
        "spread-affinity-policy",
        pod(topologySpreadConstraints=[spread(nodeAffinityPolicy="Always")]),
        POD,
        f"{SPREAD}.nodeAffinityPolicy",
        'Unsupported value: "Always": supported values: "Honor", "Ignore"',
    ),
    (
        "spread-taints-policy",
        pod(topologySpreadConstraints=[spread(nodeTaintsPolicy="honor")]),
        POD,
        f"{SPREAD}.nodeTaintsPolicy",
        'Unsupported value: "honor": supported values: "Honor", "Ignore"',
    ),
    (
        "spread-repeated",
        pod(topologySpreadConstraints=[spread(), spread(maxSkew=2)]),
        POD,
        f"{SPREAD}.{{topologyKey, whenUnsatisfiable}}",
        'Duplicate value: "{zone, DoNotSchedule}"',
    ),
    (
        "spread-match-label-keys-no-selector",
        pod(topologySpreadConstraints=[{**spread(matchLabelKeys=["app"]), "labelSelector": None}]),
        POD,
        f"{SPREAD}.matchLabelKeys",
        "Forbidden: must not be specified when labelSelector is not set",
    ),
    (
        "spread-match-label-keys-in-selector",
        pod(topologySpreadConstraints=[spread(matchLabelKeys=["app"])]),
        POD,
        f"{SPREAD}[0]",
        'Invalid value: "app": exists in both matchLabelKeys and labelSelector',
    ),
    (
        "spread-selector-operator",
        pod(
            topologySpreadConstraints=[
                spread(labelSelector={"matchExpressions": [{"key": "app", "operator": "Is"}]})
            ]
        ),
        POD,
        f"{SPREAD}.labelSelector.matchExpressions[0].operator",
        'Invalid value: "Is": not a valid selector operator',
    ),
    # --- ports
    (
        "container-port-high",
        pod(containers=[container(ports=[{"containerPort": 70000}])]),
        POD,
        "spec.containers[0].ports[0].containerPort",
        f"Invalid value: 70000: {PORT_RANGE}",
    ),
    (
        "container-port-negative",
        pod(containers=[container(ports=[{"containerPort": -1}])]),
        POD,
        "spec.containers[0].ports[0].containerPort",
        f"Invalid value: -1: {PORT_RANGE}",
    ),
    (
        "container-port-missing",
        pod(containers=[container(ports=[{"hostPort": 80}])]),
        POD,
        "spec.containers[0].ports[0].containerPort",
        "Required value",
    ),
    (
        "host-port-high",
        pod(containers=[container(ports=[{"containerPort": 80, "hostPort": 65536}])]),
        POD,
        "spec.containers[0].ports[0].hostPort",
        f"Invalid value: 65536: {PORT_RANGE}",
    ),
    (
        "port-protocol",
        pod(containers=[container(ports=[{"containerPort": 80, "protocol": "HTTP"}])]),
        POD,
        "spec.containers[0].ports[0].protocol",
        'Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
    ),
    (
        "port-name",
        pod(containers=[container(ports=[{"containerPort": 80, "name": "http--web"}])]),
        POD,
        "spec.containers[0].ports[0].name",
        'Invalid value: "http--web": must not contain consecutive hyphens',
    ),
    (
        "host-port-twice",
        pod(
            containers=[
                container(ports=[{"containerPort": 80, "hostPort": 8080}]),
                {**container(ports=[{"containerPort": 81, "hostPort": 8080}]), "name": "d"},
            ]
        ),
        POD,
        "spec.containers[1].ports[0].hostPort",
        'Duplicate value: "TCP//8080"',
    ),
    (
        "host-network-port",
        pod(
            hostNetwork=True,
            containers=[container(ports=[{"containerPort": 80, "hostPort": 8080}])],
        ),
        POD,
        "spec.containers[0].ports[0].hostPort",
        "Invalid value: 8080: must match `containerPort` when `hostNetwork` is true",
    ),
    # --- affinity
    (
        "node-preferred-weight-negative",
        pod(affinity={"nodeAffinity": {PREFERRED[:-3]: [{"weight": -5, "preference": {}}]}}),
        POD,
        f"spec.affinity.nodeAffinity.{PREFERRED}.weight",
        "Invalid value: -5: must be in the range 1-100",
    ),
    (
        "node-preferred-weight-zero",
        pod(affinity={"nodeAffinity": {PREFERRED[:-3]: [{"weight": 0, "preference": {}}]}}),
        POD,
        f"spec.affinity.nodeAffinity.{PREFERRED}.weight",
        "Invalid value: 0: must be in the range 1-100",
    ),
    (
        "pod-preferred-weight-high",
        pod(
            affinity={
                "podAffinity": {PREFERRED[:-3]: [{"weight": 101, "podAffinityTerm": pod_term()}]}
            }
        ),
        POD,
        f"spec.affinity.podAffinity.{PREFERRED}.weight",
        "Invalid value: 101: must be in the range 1-100",
    ),
    (
        "anti-preferred-weight-negative",
        pod(
            affinity={
                "podAntiAffinity": {PREFERRED[:-3]: [{"weight": -1, "podAffinityTerm": pod_term()}]}
            }
        ),
        POD,
        f"spec.affinity.podAntiAffinity.{PREFERRED}.weight",
        "Invalid value: -1: must be in the range 1-100",
    ),
    (
        "node-selector-operator",
        pod(affinity=node_affinity_expr(operator="Equals")),
        POD,
        f"{NODE_TERM}.matchExpressions[0].operator",
        'Invalid value: "Equals": not a valid selector operator',
    ),
    (
        "node-selector-in-without-values",
        pod(affinity=node_affinity_expr(values=[])),
        POD,
        f"{NODE_TERM}.matchExpressions[0].values",
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
    ),
    (
        "node-selector-no-terms",
        pod(
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
                }
            }
        ),
        POD,
        NODE_TERM[:-3],
        "Required value: must have at least one node selector term",
    ),
    (
        "pod-affinity-selector-operator",
        pod(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        pod_term(
                            labelSelector={
                                "matchExpressions": [
                                    {"key": "app", "operator": "Equals", "values": ["web"]}
                                ]
                            }
                        )
                    ]
                }
            }
        ),
        POD,
        f"{POD_TERM}.labelSelector.matchExpressions[0].operator",
        'Invalid value: "Equals": not a valid selector operator',
    ),
    (
        "pod-affinity-match-label-key-in-selector",
        pod(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        pod_term(matchLabelKeys=["app"])
                    ]
                }
            }
        ),
        POD,
        f"{POD_TERM}[0]",
        'Invalid value: "app": exists in both matchLabelKeys and labelSelector',
    ),
    (
        "pod-affinity-key-in-match-and-mismatch",
        pod(
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        pod_term(
                            labelSelector={}, matchLabelKeys=["tier"], mismatchLabelKeys=["tier"]
                        )
                    ]
                }
            }
        ),
        POD,
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".matchLabelKeys[0]",
        'Invalid value: "tier": exists in both matchLabelKeys and mismatchLabelKeys',
    ),
    (
        "pod-affinity-topology-key",
        pod(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [pod_term(topologyKey="")]
                }
            }
        ),
        POD,
        f"{POD_TERM}.topologyKey",
        "Required value: can not be empty",
    ),
    # --- requests and limits
    (
        "cpu-limit-below-request",
        pod(containers=resources({"cpu": "2"}, {"cpu": "1"})),
        POD,
        "spec.containers[0].resources.requests",
        'Invalid value: "2": must be less than or equal to cpu limit of 1',
    ),
    (
        "memory-limit-below-request",
        pod(containers=resources({"memory": "2Gi"}, {"memory": "1024Mi"})),
        POD,
        "spec.containers[0].resources.requests",
        'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi',
    ),
    (
        "cpu-milli-limit",
        pod(containers=resources({"cpu": "0.5"}, {"cpu": "250m"})),
        POD,
        "spec.containers[0].resources.requests",
        'Invalid value: "500m": must be less than or equal to cpu limit of 250m',
    ),
    (
        "extended-request-not-limit",
        pod(containers=resources({"example.com/gpu": "2"}, {"example.com/gpu": "1"})),
        POD,
        "spec.containers[0].resources.requests",
        'Invalid value: "2": must be equal to example.com/gpu limit of 1',
    ),
    (
        "extended-without-limit",
        pod(containers=resources({"example.com/gpu": "1"})),
        POD,
        "spec.containers[0].resources.limits",
        "Required value: Limit must be set for non overcommitable resources",
    ),
    (
        "extended-fraction",
        pod(containers=resources(limits={"example.com/gpu": "500m"})),
        POD,
        "spec.containers[0].resources.limits[example.com/gpu]",
        'Invalid value: "500m": must be an integer',
    ),
    (
        "pod-level-limit-below-request",
        pod(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        POD,
        "spec.resources.requests",
        'Invalid value: "2": must be less than or equal to cpu limit of 1',
    ),
    (
        "pod-level-resource-name",
        pod(resources={"limits": {"example.com/gpu": "1"}}),
        POD,
        "spec.resources.limits[example.com/gpu]",
        'Unsupported value: "example.com/gpu": supported values: "cpu", "hugepages-", "memory"',
    ),
    # --- containers
    ("no-containers", pod(containers=[]), POD, "spec.containers", "Required value"),
    (
        "duplicate-container",
        pod(containers=[container(), container()]),
        POD,
        "spec.containers[1].name",
        'Duplicate value: "c"',
    ),
    (
        "init-container-same-name",
        pod(initContainers=[container()]),
        POD,
        "spec.initContainers[0].name",
        'Duplicate value: "c"',
    ),
    (
        "container-name",
        pod(containers=[{**container(), "name": "Web_1"}]),
        POD,
        "spec.containers[0].name",
        f'Invalid value: "Web_1": {LABEL}',
    ),
    (
        "container-no-name",
        pod(containers=[{"image": "nginx"}]),
        POD,
        "spec.containers[0].name",
        "Required value",
    ),
    # --- resource names
    (
        "resource-unqualified",
        pod(containers=resources({"gpu": "1"})),
        POD,
        "spec.containers[0].resources.requests[gpu]",
        'Invalid value: "gpu": must be a standard resource type or fully qualified',
    ),
    (
        "resource-not-for-containers",
        pod(containers=resources({"pods": "1"})),
        POD,
        "spec.containers[0].resources.requests[pods]",
        'Invalid value: "pods": must be a standard resource for containers',
    ),
    (
        "resource-requests-prefix",
        pod(containers=resources(limits={"requests.example.com/gpu": "1"})),
        POD,
        "spec.containers[0].resources.limits[requests.example.com/gpu]",
        'Invalid value: "requests.example.com/gpu": '
        "doesn't follow extended resource name standard",
    ),
    (
        "resource-bad-name",
        pod(containers=resources({"example.com/a b": "1"})),
        POD,
        "spec.containers[0].resources.requests[example.com/a b]",
        f'Invalid value: "example.com/a b": {KEY_NAME}',
    ),
    (
        "hugepages-not-multiple",
        pod(containers=resources({"cpu": "1", "hugepages-2Mi": "3Mi"}, {"hugepages-2Mi": "3Mi"})),
        POD,
        "spec.containers[0].resources.limits[hugepages-2Mi]",
        'Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi',
    ),
    (
        "hugepages-alone",
        pod(containers=resources(limits={"hugepages-2Mi": "4Mi"})),
        POD,
        "spec.containers[0].resources",
        "Forbidden: HugePages require cpu or memory",
    ),
    # --- priority
    (
        "preemption-policy",
        pod(preemptionPolicy="Sometimes"),
        POD,
        "spec.preemptionPolicy",
        'Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
    ),
    (
        "priority-class-name",
        pod(priorityClassName="High_Priority"),
        POD,
        "spec.priorityClassName",
        f'Invalid value: "High_Priority": {SUBDOMAIN}',
    ),
]


@pytest.mark.parametrize(
    ("document", "what", "field", "body"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_invalid_pod_is_refused_with_upstreams_text(
    tmp_path: Path, document: dict[str, Any], what: str, field: str, body: str
) -> None:
    assert_refused(tmp_path, document, what, field, body)


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("prefixed-labels", with_meta(pod(), labels={"example.com/App_1.x": "V-1.2_b", "empty": ""})),
    (
        "name-253",
        with_meta(pod(), name="a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61),
    ),
    (
        "tolerations",
        pod(
            tolerations=[
                {"operator": "Exists"},
                {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30},
                {
                    "key": "example.com/k",
                    "operator": "Equal",
                    "value": "",
                    "effect": "PreferNoSchedule",
                },
            ]
        ),
    ),
    (
        "spread",
        pod(
            topologySpreadConstraints=[
                spread(minDomains=1, nodeAffinityPolicy="Honor", nodeTaintsPolicy="Ignore"),
                spread(whenUnsatisfiable="ScheduleAnyway", matchLabelKeys=["pod-template-hash"]),
            ]
        ),
    ),
    (
        "ports",
        pod(
            containers=[
                container(
                    ports=[
                        {"containerPort": 65535, "hostPort": 1, "protocol": "UDP", "name": "dns"},
                        {"containerPort": 1, "hostPort": 1, "protocol": "TCP"},
                        {"containerPort": 2, "protocol": "SCTP"},
                    ]
                )
            ]
        ),
    ),
    (
        "weights",
        pod(
            affinity={
                "nodeAffinity": {
                    PREFERRED[:-3]: [
                        {"weight": 1, "preference": {}},
                        {"weight": 100, "preference": {}},
                    ]
                },
                "podAntiAffinity": {
                    PREFERRED[:-3]: [{"weight": 100, "podAffinityTerm": pod_term()}]
                },
            }
        ),
    ),
    (
        "node-preferred-allows-odd-values",
        pod(
            affinity={
                "nodeAffinity": {
                    PREFERRED[:-3]: [
                        {
                            "weight": 1,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["a b"]}
                                ]
                            },
                        }
                    ]
                }
            }
        ),
    ),
    (
        "requests-equal-limits",
        pod(
            containers=resources(
                {"cpu": "1", "memory": "1Gi", "example.com/gpu": "1", "hugepages-2Mi": "4Mi"},
                {
                    "cpu": "1000m",
                    "memory": "1024Mi",
                    "example.com/gpu": "1",
                    "hugepages-2Mi": "4Mi",
                },
            )
        ),
    ),
    ("limits-only", pod(containers=resources(limits={"cpu": "1", "example.com/gpu": "2"}))),
    ("kubernetes-io-resource", pod(containers=resources({"cpu": "1", "ephemeral-storage": "1Gi"}))),
    ("init-containers", pod(initContainers=[{**container(), "name": "init"}])),
]


@pytest.mark.parametrize("document", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_valid_pod_is_accepted(tmp_path: Path, document: dict[str, Any]) -> None:
    out = assert_accepted(tmp_path, document)
    assert out["placements"].get(f"default/{document['metadata']['name']}") == "n1"
