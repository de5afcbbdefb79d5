"""The in-tree registry (plugins.NewInTreeRegistry upstream): every built-in plugin by
name, and the registry a scheduler uses unless it is given one."""

from __future__ import annotations

from collections.abc import Iterable

from kubesched.framework.interfaces import Plugin
from kubesched.framework.registry import Registry, installed_plugins, registered_in_code
from kubesched.plugins.coscheduling import Coscheduling
from kubesched.plugins.defaultbinder import DefaultBinder
from kubesched.plugins.defaultpreemption import DefaultPreemption
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.plugins.gangscheduling import GangScheduling
from kubesched.plugins.imagelocality import ImageLocality
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from kubesched.plugins.nodename import NodeName
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.noderesources import NodeResourcesBalancedAllocation, NodeResourcesFit
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.plugins.volumerestrictions import VolumeRestrictions
from kubesched.plugins.volumezone import VolumeZone

IN_TREE: tuple[type[Plugin], ...] = (
    PrioritySort,
    SchedulingGates,
    NodeUnschedulable,
    NodeName,
    TaintToleration,
    NodeAffinity,
    NodePorts,
    NodeResourcesFit,
    NodeResourcesBalancedAllocation,
    ImageLocality,
    DefaultBinder,
    VolumeBinding,
    VolumeZone,
    VolumeRestrictions,
    NodeVolumeLimits,
    DefaultPreemption,
    PodTopologySpread,
    InterPodAffinity,
    NodeDeclaredFeatures,
    DynamicResources,
    # kube-scheduler's GangScheduling (Workload API), off unless the GangScheduling
    # gate adds it to the default profile or a profile enables it.
    GangScheduling,
    # Not in kube-scheduler's tree: scheduler-plugins' Coscheduling, off unless a
    # profile enables it.
    Coscheduling,
)


def in_tree_registry() -> Registry:
    return Registry.of(IN_TREE)


def default_registry(extra: Iterable[type[Plugin]] = ()) -> Registry:
    """The built-in plugins, then the out-of-tree ones: registered in code, installed
    through entry points, and `extra` (loaded from --plugin). Upstream merges its
    out-of-tree registry into the in-tree one the same way; a name given twice is an
    error, except among the out-of-tree sources, where the later one wins (a class
    both installed and registered in code is one plugin)."""
    out_of_tree = installed_plugins().updated(registered_in_code()).updated(Registry.of(extra))
    return in_tree_registry().merged(out_of_tree)
