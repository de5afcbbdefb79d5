"""Profiles: which plugins run at which extension point, as KubeSchedulerConfiguration says."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubesched.framework.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.registry import Registry

DEFAULT_SCHEDULER_NAME = "default-scheduler"


@dataclass(frozen=True, slots=True)
class PluginRef:
    name: str
    weight: int = 0


@dataclass(slots=True)
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[PluginRef] = field(default_factory=list)

    def disables(self, name: str) -> bool:
        return any(p.name in (name, "*") for p in self.disabled)


# kube-scheduler v1.36.3's default profile (apis/config/v1 getDefaultPlugins, then
# applyFeatureGates), in its order: NodeDeclaredFeatures (beta, on) is appended at the
# end, and DynamicResources (DynamicResourceAllocation, locked on; weight 2) sits just
# before DefaultPreemption.
DEFAULT_MULTI_POINT: tuple[PluginRef, ...] = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DynamicResources", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
    PluginRef("NodeDeclaredFeatures"),
)


def default_multi_point(gates: FeatureGates = DEFAULT_GATES) -> list[PluginRef]:
    """getDefaultPlugins with applyFeatureGates for the gates kubesched follows:
    GangScheduling appends its plugin to multiPoint (applyGangScheduling)."""
    plugins = list(DEFAULT_MULTI_POINT)
    if gates.gang_scheduling:
        plugins.append(PluginRef("GangScheduling"))
    return plugins


@dataclass(slots=True)
class ProfileConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    # "multiPoint" and each extension point's name -> its enabled/disabled plugins
    plugins: dict[str, PluginSet] = field(default_factory=dict)
    # plugin name -> what the plugin is built with: the typed args its args_decoder
    # returned (the config file decodes a built-in plugin's args), else its
    # pluginConfig args as a mapping in API spelling. A plugin with an
    # args_decoder takes either.
    plugin_config: dict[str, object] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None

    @classmethod
    def default(
        cls, scheduler_name: str = DEFAULT_SCHEDULER_NAME, gates: FeatureGates = DEFAULT_GATES
    ) -> ProfileConfig:
        return cls(scheduler_name, {"multiPoint": PluginSet(default_multi_point(gates))})


@dataclass(slots=True)
class ResolvedProfile:
    """Plugin names per extension point, in run order, and score weights."""

    points: dict[str, list[str]]
    weights: dict[str, int]


def resolve(
    profile: ProfileConfig, extension_points: Mapping[str, type], registry: Registry
) -> ResolvedProfile:
    """Expand multiPoint into the extension points, as kube-scheduler orders them:
    first the plugins a point names that multiPoint also has (in the point's order),
    then the rest of multiPoint, then the other plugins the point names."""
    multi = profile.plugins.get("multiPoint", PluginSet())
    points: dict[str, list[str]] = {}
    weights: dict[str, int] = {}
    for point, base in extension_points.items():
        specific = profile.plugins.get(point, PluginSet())
        specific_names = [p.name for p in specific.enabled]
        multi_names = []
        for ref in multi.enabled:
            skipped = multi.disables(ref.name) or specific.disables(ref.name)
            if skipped or ref.name in specific_names:
                continue
            if issubclass(registry[ref.name], base):
                multi_names.append(ref.name)
        multi_set = {r.name for r in multi.enabled}
        overrides = [n for n in specific_names if n in multi_set]
        others = [n for n in specific_names if n not in multi_set]
        names = [*overrides, *multi_names, *others]
        points[point] = list(dict.fromkeys(names))
        if point == "score":
            for ref in multi.enabled:
                weights[ref.name] = ref.weight or 1
            for ref in specific.enabled:
                weights[ref.name] = ref.weight or weights.get(ref.name, 1) or 1
    return ResolvedProfile(points, weights)
