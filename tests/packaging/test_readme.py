"""The README's status section lists exactly the plugins of the registry."""

from __future__ import annotations

from kubesched.framework.profile import DEFAULT_MULTI_POINT
from kubesched.plugins.registry import in_tree_registry
from tests.packaging.readme_plugins import README, current, render


def test_readme_plugin_table_is_the_registry() -> None:
    block = current(README.read_text())
    assert block, "README.md has no generated plugin table"
    assert block == render(), "README.md's plugin table is stale: run `make readme`"


def test_readme_counts_the_default_profile() -> None:
    """The sentence above the table states how many plugins the default profile has."""
    count = len([ref for ref in DEFAULT_MULTI_POINT if ref.name in in_tree_registry()])
    assert f"the {count} plugins of kube-scheduler" in README.read_text()
