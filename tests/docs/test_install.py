"""docs/index.md's `pip install .` from a clone gives a working `kubesched`.

Offline, as the packaging tests are (tests/packaging/venvs.py): the fresh venv sees
this environment's dependencies, and pip builds kubesched from a copy of the
sources without reaching an index.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.docs.doc_commands import copy_clone
from tests.packaging.venvs import make_venv, pip_install


def test_pip_install_from_a_clone(tmp_path: Path) -> None:
    # What a clone has (an egg-info or build/ left in the working tree must not
    # stand in for the build).
    clone = copy_clone(tmp_path / "clone")
    python = make_venv(tmp_path / "venv")
    pip_install(python, clone)  # pip install . in the clone
    where = subprocess.run(
        [python, "-c", "import kubesched; print(kubesched.__file__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # The venv's own copy, not the editable install of the environment running the tests.
    assert where.startswith(str(tmp_path / "venv")), where
    result = subprocess.run(
        [tmp_path / "venv" / "bin" / "kubesched", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "simulate" in result.stdout
