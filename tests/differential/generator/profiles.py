"""Scheduler configurations of scenarios: kube-scheduler's default plugins, the
generator's features and the plugins each needs, the named profiles scenarios
take in turn, and the KubeSchedulerConfiguration file both schedulers run with."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tests.differential.generator.extenders import extender_configs
from tests.differential.generator.vocabulary import GPU

CONFIG_API_VERSION = "kubescheduler.config.k8s.io/v1"

# kube-scheduler v1.36.3's default multiPoint plugins and weights, in its order
# (`kube-scheduler --write-config-to`).
KUBE_DEFAULT_PLUGINS: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    ("NodeDeclaredFeatures", 0),
)

# Generator features and the kube-scheduler plugins each one needs enabled.
FEATURE_PLUGINS: dict[str, tuple[str, ...]] = {
    "spread": ("PodTopologySpread",),
    "affinity": ("InterPodAffinity",),
    "preemption": ("DefaultPreemption",),
    "volumes": ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone"),
    "dra": ("DynamicResources",),
    # Services, ReplicationControllers/ReplicaSets/StatefulSets owning pods and
    # RuntimeClasses (generator/workloads.py): no plugin of its own; they feed
    # PodTopologySpread's default constraints and, through RuntimeClass admission,
    # NodeResourcesFit (overhead), NodeAffinity and TaintToleration.
    "workloads": (),
}
FEATURES = tuple(FEATURE_PLUGINS)
# Features only run when asked for by name (not part of "every feature", which keeps
# the scenarios it always made):
# - gangs needs a control plane serving the alpha Workload API (hack/cluster-up.sh
#   with KUBESCHED_WORKLOAD_API=1) and both schedulers with GenericWorkload and
#   GangScheduling on, whose default profile then ends with GangScheduling;
# - batching needs no plugin of its own: it makes runs of identical pods and has
#   PodTopologySpread add no cluster-default constraints (defaultingType: List),
#   without which v1.36.3 signs no pod, so OpportunisticBatching (on by default in
#   both schedulers) has pods to batch;
# - extenders needs no plugin either: the configuration file gets `extenders:`, served
#   by the harness on loopback for the scenario's runs (generator/extenders.py).
OPT_IN_FEATURES = ("gangs", "batching", "extenders")
# `--features none` (make diff FEATURES=none): only the plugins no feature covers.
NO_FEATURES = "none"


# --------------------------------------------------------------------- profiles
def _profile_default() -> dict[str, Any]:
    return {}


def _profile_most_allocated() -> dict[str, Any]:
    """MostAllocated bin packing with the GPU weighted in, ImageLocality off,
    other weights changed through multiPoint."""
    return {
        "plugins": {
            "multiPoint": {
                "enabled": [
                    {"name": "NodeResourcesFit", "weight": 3},
                    {"name": "TaintToleration", "weight": 1},
                    {"name": "NodeAffinity", "weight": 5},
                ],
                "disabled": [{"name": "ImageLocality"}],
            }
        },
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                            {"name": GPU, "weight": 2},
                        ],
                    }
                },
            }
        ],
    }


def _profile_weights() -> dict[str, Any]:
    """BalancedAllocation off, weights changed at the score extension point
    (which takes precedence over multiPoint)."""
    return {
        "plugins": {
            "multiPoint": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]},
            "score": {
                "enabled": [
                    {"name": "ImageLocality", "weight": 4},
                    {"name": "NodeAffinity", "weight": 10},
                    {"name": "TaintToleration", "weight": 1},
                ]
            },
        },
        "percentageOfNodesToScore": 50,
    }


def _profile_ratio() -> dict[str, Any]:
    """RequestedToCapacityRatio with a custom shape, BalancedAllocation over cpu,
    memory and the GPU, and TaintToleration only as a filter."""
    return {
        "plugins": {"score": {"disabled": [{"name": "TaintToleration"}]}},
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "ignoredResources": ["example.com/ignored"],
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [
                            {"name": "cpu", "weight": 2},
                            {"name": "memory", "weight": 1},
                        ],
                        "requestedToCapacityRatio": {
                            "shape": [
                                {"utilization": 0, "score": 2},
                                {"utilization": 60, "score": 10},
                                {"utilization": 100, "score": 4},
                            ]
                        },
                    },
                },
            },
            {
                "name": "NodeResourcesBalancedAllocation",
                "args": {
                    "resources": [
                        {"name": "cpu", "weight": 1},
                        {"name": "memory", "weight": 1},
                        {"name": GPU, "weight": 1},
                    ]
                },
            },
        ],
    }


PROFILES = {
    "default": _profile_default,
    "most-allocated": _profile_most_allocated,
    "weights": _profile_weights,
    "ratio": _profile_ratio,
}


def kubesched_plugins() -> set[str]:
    """The plugins in kubesched's default profile (they grow as plugins land)."""
    from kubesched.framework.profile import DEFAULT_MULTI_POINT

    return {ref.name for ref in DEFAULT_MULTI_POINT}


def unsupported_features(features: Iterable[str]) -> dict[str, list[str]]:
    """feature -> the plugins it needs that kubesched's default profile lacks."""
    have = kubesched_plugins()
    out: dict[str, list[str]] = {}
    for feature in features:
        if feature not in FEATURE_PLUGINS and feature not in OPT_IN_FEATURES:
            known = ", ".join((*FEATURES, *OPT_IN_FEATURES))
            raise ValueError(f"unknown feature {feature!r} (known: {known})")
        missing = [p for p in FEATURE_PLUGINS.get(feature, ()) if p not in have]
        if missing:
            out[feature] = missing
    return out


def parse_features(text: str | Sequence[str] | None) -> list[str]:
    """ "spread,affinity" (or a list) -> checked, de-duplicated, in FEATURES order.
    Nothing (make diff without FEATURES) is every feature, so that the whole default
    profile runs with nothing disabled; "none" is no feature."""
    if not text:
        return list(FEATURES)
    items = text.split(",") if isinstance(text, str) else list(text)
    wanted = {i.strip() for i in items if i.strip()} - {NO_FEATURES}
    known = (*FEATURES, *OPT_IN_FEATURES)
    unknown = sorted(wanted - set(known))
    if unknown:
        raise ValueError(f"unknown feature(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return [f for f in known if f in wanted]


def disabled_plugins(features: Iterable[str]) -> list[str]:
    """The default-profile plugins to disable in both schedulers: those of the
    features not selected. The plugins no feature covers always run: the generator
    makes nothing they act on (NodeDeclaredFeatures: no node declares features and no
    pod needs one, so it is a Skip) or they need nothing special."""
    on = {p for f in features for p in FEATURE_PLUGINS.get(f, ())}
    covered = {p for plugins in FEATURE_PLUGINS.values() for p in plugins}
    return [name for name, _ in KUBE_DEFAULT_PLUGINS if name in covered and name not in on]


def profile_config(profile: str, features: Iterable[str]) -> dict[str, Any]:
    """The profile (no schedulerName) for PROFILE with the features' plugins on."""
    body = copy.deepcopy(PROFILES[profile]())
    plugins = body.setdefault("plugins", {})
    multi = plugins.setdefault("multiPoint", {})
    disabled = multi.get("disabled", [])
    names = {d["name"] for d in disabled}
    disabled.extend({"name": n} for n in disabled_plugins(features) if n not in names)
    if disabled:  # with every feature on, the default profile has nothing disabled
        multi["disabled"] = disabled
    if "batching" in features and "PodTopologySpread" not in disabled_plugins(features):
        body.setdefault("pluginConfig", []).append(
            {"name": "PodTopologySpread", "args": {"defaultingType": "List"}}
        )
    return body


def scheduler_config(
    scenario: Mapping[str, Any],
    scheduler_name: str,
    kubeconfig: str = "",
    extender_urls: Sequence[str] = (),
) -> dict[str, Any]:
    """The KubeSchedulerConfiguration file both schedulers run with; EXTENDER_URLS:
    where the scenario's extenders are served (one each, in order), which only the
    run knows (harness/extenders.py)."""
    profile = {"schedulerName": scheduler_name, **copy.deepcopy(scenario["config"])}
    config: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
    if kubeconfig:
        config["clientConnection"] = {"kubeconfig": kubeconfig}
    specs = scenario.get("extenders") or []
    if specs:
        # Without their URLs the extenders cannot be called: leaving them out would
        # quietly schedule as if there were none.
        config["extenders"] = extender_configs(specs, extender_urls)
    return config
