"""The import-linter contract "independent-plugins" (pyproject.toml) names the package
of every in-tree plugin and nothing else: a plugin added to IN_TREE without its line
in the contract, which would leave it free to import the others, fails here."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from kubesched.framework.interfaces import Plugin
from kubesched.plugins.registry import IN_TREE

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
CONTRACT = "independent-plugins"


def contract(contract_id: str) -> dict[str, Any]:
    with PYPROJECT.open("rb") as f:
        config = tomllib.load(f)
    found = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == contract_id]
    assert len(found) == 1, f"pyproject.toml has {len(found)} contracts {contract_id!r}"
    return found[0]


def plugin_package(cls: type[Plugin]) -> str:
    """kubesched.plugins.<pkg> of the module defining `cls`."""
    parts = cls.__module__.split(".")
    assert parts[:2] == ["kubesched", "plugins"] and len(parts) > 2, cls.__module__
    return ".".join(parts[:3])


def test_the_independence_contract_names_each_in_tree_plugin_package() -> None:
    independent = contract(CONTRACT)
    assert independent["type"] == "independence"
    modules = independent["modules"]
    assert len(modules) == len(set(modules)), "a package named twice"
    assert sorted(modules) == sorted({plugin_package(cls) for cls in IN_TREE})
