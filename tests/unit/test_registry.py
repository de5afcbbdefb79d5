"""Finding plugins: built-ins, registered classes, files, modules and entry points."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from kubesched.framework import registry
from kubesched.framework.interfaces import Plugin
from kubesched.plugins.nodeports import NodePorts


def test_builtins_are_found_by_name() -> None:
    assert registry.lookup("NodePorts") is NodePorts
    assert "NodeResourcesFit" in registry.builtin_names()


def test_unknown_names_say_so() -> None:
    with pytest.raises(registry.UnknownPluginError, match="unknown plugin 'Nope'"):
        registry.lookup("Nope")


def test_installed_packages_register_through_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(
        name="CheapestNode",
        value="examples.plugins.cheapest_node:CheapestNode",
        group=registry.ENTRY_POINT_GROUP,
    )
    monkeypatch.setattr(registry, "entry_points", lambda group: [ep] if group == ep.group else [])
    monkeypatch.delitem(registry._registered, "CheapestNode", raising=False)
    cls = registry.lookup("CheapestNode")
    assert cls.name == "CheapestNode" and issubclass(cls, Plugin)


def test_a_plugin_file_can_be_loaded_by_path(tmp_path: Path) -> None:
    source = tmp_path / "mine.py"
    source.write_text(
        "from kubesched.framework.interfaces import FilterPlugin\n"
        "class Mine(FilterPlugin):\n    name = 'Mine'\n"
    )
    cls = registry.load_plugin_path(f"{source}:Mine")
    assert registry.lookup("Mine") is cls


def test_only_plugin_classes_are_accepted(tmp_path: Path) -> None:
    source = tmp_path / "notaplugin.py"
    source.write_text("class Thing:\n    name = 'Thing'\n")
    with pytest.raises(TypeError, match="not a kubesched Plugin class"):
        registry.load_plugin_path(f"{source}:Thing")
    with pytest.raises(ValueError, match="expected MODULE:CLASS"):
        registry.load_plugin_path("no-colon")
