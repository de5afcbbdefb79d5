"""api.declared_features: component-helpers v0.36.3's registry, TryMap and the
features inferred from a pod's spec."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.declared_features import (
    BIT,
    REGISTERED,
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
    infer_for_scheduling,
    try_map,
)
from kubesched.api.objects import Pod, PodSpec


def spec(**fields: Any) -> PodSpec:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}], **fields}
    return msgspec.convert(body, PodSpec)


def test_the_registry_of_v0_36_3_in_bit_order() -> None:
    assert REGISTERED == (
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "RestartAllContainersOnContainerExits",
        "UserNamespacesHostNetworkSupport",
    )
    assert [BIT[n] for n in REGISTERED] == [1, 2, 4, 8, 16]


def test_try_map_keeps_registered_names_of_a_sorted_list() -> None:
    assert try_map([]) == 0
    assert try_map(["Unknown"]) == 0
    every = ["A", *REGISTERED, "Zzz"]
    assert try_map(every) == 0b11111
    assert try_map(["ExtendWebSocketsToKubelet", "Foo", USER_NAMESPACES_HOST_NETWORK]) == 0b10001


def test_try_map_walks_an_unsorted_list_as_upstream_does() -> None:
    # After a name larger than a registered one, that one is passed for good.
    assert (
        try_map([USER_NAMESPACES_HOST_NETWORK, RESTART_ALL_CONTAINERS])
        == BIT[USER_NAMESPACES_HOST_NETWORK]
    )
    assert try_map(["Zzz", RESTART_ALL_CONTAINERS]) == 0


RESTART_ALL = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}
RESTART = {"action": "Restart", "exitCodes": {"operator": "NotIn", "values": [0]}}


@pytest.mark.parametrize(
    ("fields", "needed"),
    [
        ({}, 0),
        # RestartAllContainersOnContainerExits: a rule with that action, in a
        # regular container, an init container or a sidecar.
        ({"containers": [{"name": "c", "restartPolicyRules": [RESTART_ALL]}]}, 8),
        (
            {
                "containers": [
                    {"name": "a"},
                    {"name": "b", "restartPolicyRules": [RESTART, RESTART_ALL]},
                ]
            },
            8,
        ),
        ({"initContainers": [{"name": "i", "restartPolicyRules": [RESTART_ALL]}]}, 8),
        (
            {
                "initContainers": [
                    {"name": "s", "restartPolicy": "Always", "restartPolicyRules": [RESTART_ALL]}
                ]
            },
            8,
        ),
        ({"containers": [{"name": "c", "restartPolicyRules": [RESTART]}]}, 0),
        # UserNamespacesHostNetworkSupport: hostNetwork with hostUsers false.
        ({"hostNetwork": True, "hostUsers": False}, 16),
        ({"hostNetwork": True}, 0),
        ({"hostNetwork": True, "hostUsers": True}, 0),
        ({"hostUsers": False}, 0),
        (
            {
                "hostNetwork": True,
                "hostUsers": False,
                "initContainers": [{"name": "i", "restartPolicyRules": [RESTART_ALL]}],
            },
            24,
        ),
        # The three other registered features are for pod updates only.
        ({"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}, 0),
        ({"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}]}, 0),
    ],
)
def test_infer_for_scheduling(fields: dict[str, Any], needed: int) -> None:
    assert infer_for_scheduling(spec(**fields)) == needed


def test_the_pod_fields_decode_from_the_api_spelling() -> None:
    raw = {
        "metadata": {"name": "p"},
        "spec": {
            "hostNetwork": True,
            "hostUsers": False,
            "containers": [{"name": "c", "restartPolicyRules": [RESTART_ALL]}],
        },
    }
    pod = msgspec.json.decode(msgspec.json.encode(raw), type=Pod)
    assert pod.spec.host_users is False
    assert pod.spec.containers[0].restart_policy_rules[0].action == "RestartAllContainers"
    encoded = msgspec.to_builtins(pod)
    assert encoded["spec"]["hostUsers"] is False
    assert encoded["spec"]["containers"][0]["restartPolicyRules"] == [
        {"action": "RestartAllContainers"}
    ]
    assert "hostUsers" not in msgspec.to_builtins(msgspec.convert({"spec": {}}, Pod))["spec"]
