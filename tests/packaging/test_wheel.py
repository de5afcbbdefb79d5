"""The wheel ships kubesched and nothing of its tests: built offline from a copy of
the sources, as `pip wheel` would for a release, and listed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.packaging.venvs import REPO_ROOT


def build_wheel(into: Path) -> Path:
    source = into / "kubesched-src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO_ROOT / name, source / name)
    shutil.copytree(
        REPO_ROOT / "src",
        source / "src",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    out = into / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = out.glob("kubesched-*.whl")
    return wheel


def test_the_wheel_holds_no_test_module(tmp_path: Path) -> None:
    with zipfile.ZipFile(build_wheel(tmp_path)) as wheel:
        names = wheel.namelist()
    modules = [n for n in names if n.endswith(".py")]
    tests = [
        n
        for n in modules
        if Path(n).name.startswith("test_") or Path(n).name == "conftest.py" or "/tests/" in n
    ]
    assert tests == []
    # What it must hold: the package, every plugin, the report's templates, and the
    # builders documented for plugin authors' own tests.
    assert "kubesched/__init__.py" in modules
    assert "kubesched/testing.py" in modules
    assert "kubesched/plugins/noderesources/fit.py" in modules
    assert any(n.startswith("kubesched/cli/html/templates/") for n in names)
    assert "kubesched/cluster/validation/field_schemas.json.gz" in names
    sources = {str(p.relative_to(REPO_ROOT / "src")) for p in (REPO_ROOT / "src").rglob("*.py")}
    assert set(modules) == sources
