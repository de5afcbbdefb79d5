"""The plugin registry: built-ins, plugins registered in code, and installed entry points.

A custom plugin is found by the name a profile uses. Packages make theirs
known through the `kubesched.plugins` entry-point group, e.g. in pyproject:

    [project.entry-points."kubesched.plugins"]
    AppPool = "mypackage.plugins:AppPool"
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import TypeVar

from kubesched.framework.interfaces import Plugin

P = TypeVar("P", bound=type[Plugin])

ENTRY_POINT_GROUP = "kubesched.plugins"

# name -> "module:Class" of the built-ins, imported on first use.
_BUILTINS = {
    "PrioritySort": "kubesched.plugins.prioritysort:PrioritySort",
    "SchedulingGates": "kubesched.plugins.schedulinggates:SchedulingGates",
    "NodeUnschedulable": "kubesched.plugins.nodeunschedulable:NodeUnschedulable",
    "NodeName": "kubesched.plugins.nodename:NodeName",
    "TaintToleration": "kubesched.plugins.tainttoleration:TaintToleration",
    "NodeAffinity": "kubesched.plugins.nodeaffinity:NodeAffinity",
    "NodePorts": "kubesched.plugins.nodeports:NodePorts",
    "NodeResourcesFit": "kubesched.plugins.noderesources:NodeResourcesFit",
    "NodeResourcesBalancedAllocation": (
        "kubesched.plugins.noderesources:NodeResourcesBalancedAllocation"
    ),
    "ImageLocality": "kubesched.plugins.imagelocality:ImageLocality",
    "DefaultBinder": "kubesched.plugins.defaultbinder:DefaultBinder",
    "VolumeBinding": "kubesched.plugins.volumebinding:VolumeBinding",
    "VolumeZone": "kubesched.plugins.volumezone:VolumeZone",
    "VolumeRestrictions": "kubesched.plugins.volumerestrictions:VolumeRestrictions",
    "NodeVolumeLimits": "kubesched.plugins.nodevolumelimits:NodeVolumeLimits",
    "DefaultPreemption": "kubesched.plugins.defaultpreemption:DefaultPreemption",
    "PodTopologySpread": "kubesched.plugins.podtopologyspread:PodTopologySpread",
    "InterPodAffinity": "kubesched.plugins.interpodaffinity:InterPodAffinity",
}

_registered: dict[str, type[Plugin]] = {}


class UnknownPluginError(KeyError):
    def __str__(self) -> str:
        return f"unknown plugin {self.args[0]!r}: not built in, not registered, no entry point"


def register(cls: P) -> P:
    """Class decorator: make a plugin known by its `name`."""
    if not cls.name:
        raise ValueError(f"plugin class {cls.__qualname__} has no `name`")
    _registered[cls.name] = cls
    return cls


def _load(target: str) -> type[Plugin]:
    module_name, _, attr = target.rpartition(":")
    if not module_name or not attr:
        raise ValueError(f"{target!r}: expected MODULE:CLASS or path/to/file.py:CLASS")
    if module_name.endswith(".py"):
        path = Path(module_name)
        spec = importlib.util.spec_from_file_location(f"kubesched_user_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    cls = getattr(module, attr)
    if not (isinstance(cls, type) and issubclass(cls, Plugin)):
        raise TypeError(f"{target} is not a kubesched Plugin class")
    return cls


def load_plugin_path(target: str) -> type[Plugin]:
    """Register a plugin given as "module:Class" (the CLI's --plugin)."""
    return register(_load(target))


def lookup(name: str) -> type[Plugin]:
    if name in _registered:
        return _registered[name]
    if name in _BUILTINS:
        cls = _load(_BUILTINS[name])
        _registered[name] = cls
        return cls
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, Plugin)):
                raise TypeError(f"entry point {ep.value} is not a kubesched Plugin class")
            _registered[name] = cls
            return cls
    raise UnknownPluginError(name)


def builtin_names() -> list[str]:
    return list(_BUILTINS)
