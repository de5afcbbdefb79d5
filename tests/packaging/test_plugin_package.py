"""examples/plugin-package: built and installed into a fresh venv next to kubesched,
its plugins are found through their `kubesched.plugins` entry points and enabled from a
KubeSchedulerConfiguration file; `--plugin` loads the same classes without installing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubesched.cli.main import main
from tests.packaging.venvs import PLUGIN_PACKAGE, make_venv, pip_install, source_copy

EXAMPLE = PLUGIN_PACKAGE / "example"
CLUSTER = EXAMPLE / "cluster.yaml"
CONFIG = EXAMPLE / "scheduler-config.yaml"
SIMULATE = ["simulate", "-f", str(CLUSTER), "--config", str(CONFIG), "-o", "json", "--seed", "1"]
PLACED = {"default/batch": "spot", "default/intruder": None}
REFUSED = "1 node(s) were dedicated to another team"


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the plugin package installed (kubesched from this environment)."""
    root = tmp_path_factory.mktemp("plugin-venv")
    python = make_venv(root / "venv")
    pip_install(python, source_copy(PLUGIN_PACKAGE, root))
    return python


def check(document: dict[str, Any]) -> None:
    assert document["placements"] == PLACED
    assert REFUSED in document["reasons"]["default/intruder"]


def test_installed_package_is_enabled_from_the_configuration_file(plugin_venv: Path) -> None:
    done = subprocess.run(
        [plugin_venv, "-m", "kubesched.cli.main", *SIMULATE], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    check(json.loads(done.stdout))


def test_plugin_option_loads_the_same_classes_without_installing() -> None:
    result = CliRunner().invoke(
        main,
        [
            *SIMULATE,
            "--plugin",
            "kubesched_team_plugins.team_nodes:TeamNodes",
            "--plugin",
            "kubesched_team_plugins:PreferNodeLabel",
        ],
    )
    assert result.exit_code == 0, result.output
    check(json.loads(result.stdout))


def test_a_plugin_neither_installed_nor_loaded_is_refused() -> None:
    """Without the package (this environment has not installed it), the configuration
    that enables its plugins is refused, naming the profile and the plugin."""
    result = CliRunner().invoke(main, SIMULATE)
    assert result.exit_code == 2
    assert "Invalid value for --config: " in result.output
    assert ": profile 'kubesched': 'TeamNodes' does not exist" in result.output
