"""`kubesched version`: kubesched's version and the Kubernetes version it follows, which
are the package's (pyproject.toml) and hack/k8s-version's."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

from click.testing import CliRunner

from kubesched.cli.main import main
from tests.packaging.venvs import REPO_ROOT


def test_version_prints_both_versions() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    kubernetes = (REPO_ROOT / "hack" / "k8s-version").read_text().strip()
    result = CliRunner().invoke(main, ["version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"kubesched {project['version']}\nKubernetes {kubernetes}\n"
    as_json = CliRunner().invoke(main, ["version", "-o", "json"])
    assert json.loads(as_json.output) == {
        "kubeschedVersion": project["version"],
        "kubernetesVersion": kubernetes,
    }


def test_python_dash_m_kubesched_is_the_same_command_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kubesched", "version", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (
        json.loads(result.stdout)["kubeschedVersion"]
        == tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    )
