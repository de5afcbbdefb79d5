"""Node declared features: component-helpers' nodedeclaredfeatures as v0.36.3 has it.

A node lists in status.declaredFeatures the features its kubelet has turned on; a
pod needs some of them, as inferred from its spec. kube-scheduler keeps both as
bitmaps over the features the library knows (its registry), so a feature name that
is not registered counts for nothing on either side. Here a bitmap is an int: bit i
stands for REGISTERED[i].

Of the five features registered in v0.36.3 (features.AllFeatures), only two are
inferred for scheduling; the other three matter only to pod updates (in-place
resize), which the scheduler does not ask about. None of the five has a MaxVersion,
so the scheduler's own version changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.api.objects import PodSpec

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"

# features.AllFeatures, sorted by name as Framework.New sorts it: the bit order.
REGISTERED: tuple[str, ...] = tuple(
    sorted(
        (
            RESTART_ALL_CONTAINERS,
            "InPlacePodLevelResourcesVerticalScaling",
            "ExtendWebSocketsToKubelet",
            "InPlacePodVerticalScalingInitContainers",
            USER_NAMESPACES_HOST_NETWORK,
        )
    )
)
BIT: dict[str, int] = {name: 1 << i for i, name in enumerate(REGISTERED)}

# ContainerRestartRuleActionRestartAllContainers
ACTION_RESTART_ALL_CONTAINERS = "RestartAllContainers"


def try_map(declared: Sequence[str]) -> int:
    """FeatureMapper.TryMap: the registered features among `declared`, as a bitmap.

    Upstream walks both sorted lists side by side, so on a list that is not sorted
    (the API server rejects those, manifests may not) it misses the features that
    come after a larger name; walking the same way keeps that result."""
    found = 0
    i = j = 0
    while i < len(declared) and j < len(REGISTERED):
        name, known = declared[i], REGISTERED[j]
        if name == known:
            found |= 1 << j
            i += 1
            j += 1
        elif name < known:
            i += 1
        else:
            j += 1
    return found


def needs_restart_all_containers(spec: PodSpec) -> bool:
    """restartAllContainersFeature.InferForScheduling: a regular or init container
    has a restart rule whose action restarts all containers (ephemeral containers
    are not looked at)."""
    for container in (*spec.containers, *spec.init_containers):
        for rule in container.restart_policy_rules:
            if rule.action == ACTION_RESTART_ALL_CONTAINERS:
                return True
    return False


def needs_user_namespaces_host_network(spec: PodSpec) -> bool:
    """userNamespacesHostNetworkFeature.InferForScheduling: the host's network with a
    user namespace of the pod's own (hostUsers set, and false)."""
    return spec.host_network and spec.host_users is False


def infer_for_scheduling(spec: PodSpec) -> int:
    """Framework.InferForPodScheduling: the features a node must declare to take the
    pod, as a bitmap (0 when it needs none, the common case)."""
    required = 0
    if needs_restart_all_containers(spec):
        required |= BIT[RESTART_ALL_CONTAINERS]
    if needs_user_namespaces_host_network(spec):
        required |= BIT[USER_NAMESPACES_HOST_NETWORK]
    return required
