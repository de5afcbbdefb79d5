"""The default profile against kube-scheduler v1.36.3's (getDefaultPlugins with the
feature gates on by default, and its expansion in apis/config/testing/defaults)."""

from __future__ import annotations

from kubesched.framework.interfaces import EXTENSION_POINTS
from kubesched.framework.profile import DEFAULT_MULTI_POINT, ProfileConfig, resolve
from kubesched.plugins.registry import in_tree_registry
from tests.differential.generator.profiles import KUBE_DEFAULT_PLUGINS

NOT_BUILT: set[str] = set()

# PluginsV1: multiPoint, in order, with weights (0: none given).
V1_36_3_MULTI_POINT = [
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
    ("DynamicResources", 2),  # applyDynamicResources: just before DefaultPreemption
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    ("NodeDeclaredFeatures", 0),  # applyFeatureGates appends it
]

# ExpandedPluginsV1, per extension point kubesched has.
V1_36_3_EXPANDED = {
    "preEnqueue": ["SchedulingGates", "DynamicResources", "DefaultPreemption"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ],
    "filter": [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    "score": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeResourcesBalancedAllocation",
        "ImageLocality",
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "permit": [],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}


def test_multi_point_is_v1_36_3s_less_what_is_not_built() -> None:
    expected = [(n, w) for n, w in V1_36_3_MULTI_POINT if n not in NOT_BUILT]
    assert [(p.name, p.weight) for p in DEFAULT_MULTI_POINT] == expected
    # The differential harness's copy (from `kube-scheduler --write-config-to`) agrees.
    assert list(KUBE_DEFAULT_PLUGINS) == V1_36_3_MULTI_POINT


def test_expanded_extension_points_are_v1_36_3s() -> None:
    resolved = resolve(ProfileConfig.default(), EXTENSION_POINTS, in_tree_registry())
    expected = {
        point: [n for n in names if n not in NOT_BUILT] for point, names in V1_36_3_EXPANDED.items()
    }
    assert resolved.points == expected
    weights = {n: w for n, w in V1_36_3_MULTI_POINT if w}
    assert {n: resolved.weights[n] for n in resolved.points["score"]} == {
        n: weights.get(n, 1) for n in expected["score"]
    }
