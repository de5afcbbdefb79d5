"""The built-in plugins' pluginConfig args, decoded and validated when the file is read.

validatePluginConfig upstream: each pluginConfig entry of a profile whose
plugin has an args type is checked, under the entry's path
("profiles[0].pluginConfig[2].args"), whether the profile enables the plugin or
not. The plugins check their args again when built (as upstream's factories
do), with the same functions, so a file that passes here builds.

Upstream's validation map names NodeResourcesFit "NodeResourcesFitArgs", so its
args are only refused when the profile is built (NewFit validates them); here
they are refused with the file, like the others'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubesched.plugins.coscheduling.args import coscheduling_args
from kubesched.plugins.defaultpreemption.args import default_preemption_args
from kubesched.plugins.dynamicresources.args import dynamic_resources_args
from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.interpodaffinity.args import inter_pod_affinity_args
from kubesched.plugins.nodeaffinity.args import node_affinity_args
from kubesched.plugins.noderesources.args import balanced_allocation_args, node_resources_fit_args
from kubesched.plugins.podtopologyspread.args import pod_topology_spread_args
from kubesched.plugins.volumebinding.args import volume_binding_args

# (args in API spelling, the field path of the args) -> the typed args; raises ArgsError.
ArgsDecoder = Callable[[Mapping[str, Any], str], object]

BUILTIN_ARGS: dict[str, ArgsDecoder] = {
    "Coscheduling": coscheduling_args,
    "DefaultPreemption": default_preemption_args,
    "DynamicResources": dynamic_resources_args,
    "InterPodAffinity": inter_pod_affinity_args,
    "NodeAffinity": node_affinity_args,
    "NodeResourcesBalancedAllocation": balanced_allocation_args,
    "NodeResourcesFit": node_resources_fit_args,
    "PodTopologySpread": pod_topology_spread_args,
    "VolumeBinding": volume_binding_args,
}


def plugin_args_errors(name: str, args: Mapping[str, Any], path: str) -> list[str]:
    """The field errors of plugin `name`'s args at `path`; none for a plugin
    without an args type (out-of-tree plugins read their args themselves)."""
    decode = BUILTIN_ARGS.get(name)
    if decode is None:
        return []
    try:
        decode(args, path)
    except ArgsError as err:
        return list(err.errors)
    return []
