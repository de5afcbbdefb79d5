"""Finding plugins: the registry is a value (in-tree plugins, plugins registered in
code, files and modules, entry points) handed to the scheduler that uses it."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from kubesched.framework import registry
from kubesched.framework.interfaces import FilterPlugin, Plugin
from kubesched.framework.profile import PluginRef, ProfileConfig
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.registry import default_registry, in_tree_registry
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster


def test_builtins_are_found_by_name() -> None:
    assert in_tree_registry()["NodePorts"] is NodePorts
    assert "NodeResourcesFit" in in_tree_registry()
    # kube-scheduler's 21 (with GangScheduling, which its gate adds to the profile), and
    # scheduler-plugins' Coscheduling (off unless a profile enables it)
    assert len(in_tree_registry()) == 22
    assert {"GangScheduling", "Coscheduling"} <= set(in_tree_registry())
    assert default_registry()["NodePorts"] is NodePorts


def test_unknown_names_say_so() -> None:
    with pytest.raises(registry.UnknownPluginError, match="unknown plugin 'Nope'"):
        default_registry()["Nope"]


def test_installed_packages_register_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(
        name="CheapestNode",
        value="examples.plugins.cheapest_node:CheapestNode",
        group=registry.ENTRY_POINT_GROUP,
    )
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep] if group == ep.group else [])
    cls = default_registry()["CheapestNode"]
    assert cls.name == "CheapestNode" and issubclass(cls, Plugin)


def test_a_plugin_file_can_be_loaded_by_path(tmp_path: Path) -> None:
    source = tmp_path / "mine.py"
    source.write_text(
        "from kubesched.framework.interfaces import FilterPlugin\n"
        "class Mine(FilterPlugin):\n    name = 'Mine'\n"
    )
    cls = registry.load_plugin_path(f"{source}:Mine")
    assert default_registry([cls])["Mine"] is cls
    # Loading is not registering: other registries do not see it.
    assert "Mine" not in default_registry()


def test_only_plugin_classes_are_accepted(tmp_path: Path) -> None:
    source = tmp_path / "notaplugin.py"
    source.write_text("class Thing:\n    name = 'Thing'\n")
    with pytest.raises(TypeError, match="not a kubesched Plugin class"):
        registry.load_plugin_path(f"{source}:Thing")
    with pytest.raises(ValueError, match="expected MODULE:CLASS"):
        registry.load_plugin_path("no-colon")


class ShadowPorts(FilterPlugin):
    name = "NodePorts"


def test_an_out_of_tree_plugin_cannot_take_a_builtin_name() -> None:
    with pytest.raises(registry.DuplicatePluginError, match="a plugin named NodePorts already"):
        default_registry([ShadowPorts])


class OnlyHere(FilterPlugin):
    name = "OnlyHere"


def test_each_scheduler_uses_the_registry_it_is_given() -> None:
    profile = ProfileConfig.default()
    profile.plugins["multiPoint"].enabled.append(PluginRef("OnlyHere"))
    with pytest.raises(registry.UnknownPluginError, match="OnlyHere"):
        Scheduler([profile], InMemoryCluster())
    sched = Scheduler([profile], InMemoryCluster(), registry=default_registry([OnlyHere]))
    assert any(isinstance(p, OnlyHere) for p in sched.frameworks["default-scheduler"].filter)
