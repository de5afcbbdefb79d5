"""Fresh virtual environments for the packaging tests, built offline.

A test that installs a package must not reach a package index (CI may have none, and it
would be slow), so a fresh venv sees the dependencies of the environment running the
tests: a `.pth` file in it runs `site.addsitedir` on this environment's site-packages
(which also processes their `.pth` files, e.g. an editable kubesched). What is then
installed into the venv itself, without an index and without build isolation, comes
first on its sys.path, as it would in a venv of its own.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN_PACKAGE = REPO_ROOT / "examples" / "plugin-package"


def venv_python(root: Path) -> Path:
    return root / "bin" / "python"


def make_venv(root: Path, *, see_host: bool = True) -> Path:
    """A venv at `root` (no pip of its own); with `see_host`, this environment's
    site-packages come after its own. Returns its python."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    python = venv_python(root)
    if see_host:
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        host = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
        lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in dict.fromkeys(host))
        Path(purelib, "zz_host_site_packages.pth").write_text(lines)
    return python


def source_copy(project: Path, into: Path) -> Path:
    """A copy of `project` to build from: setuptools writes its egg-info next to the
    sources, and one left in the repository would register the plugins for every test."""
    return Path(
        shutil.copytree(
            project, into / project.name, ignore=shutil.ignore_patterns("*.egg-info", "build")
        )
    )


def pip_install(python: Path, *targets: str | Path) -> None:
    """pip (this environment's) installs `targets` into the venv of `python`: no index,
    no dependencies (the host has them), no build isolation (the host's setuptools).
    Build from `source_copy`s."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            *map(str, targets),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_NO_CACHE_DIR": "1"},
    )
