"""The scheduler does not load the heavy optional libraries until they are used:
OR-Tools (with pandas, ~60 MB) only for a batch window or `simulate --optimize`
(tests/unit/test_batch_*.py use it), CEL (~25 MB) only for a DeviceClass or
claim selector (tests/plugins/dynamicresources/structured/upstream). The check runs in a fresh
interpreter, since this one has imported everything already."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def loaded_after(code: str) -> set[str]:
    """The top-level modules among ortools, pandas and cel loaded after `code`."""
    script = (
        code
        + "\nimport sys\nprint(' '.join(sorted({'ortools', 'pandas', 'cel'} & set(sys.modules))))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    return set(out.stdout.split())


def test_scheduler_and_cli_import_neither_solver_nor_cel() -> None:
    assert loaded_after("import kubesched.scheduler, kubesched.cli.main") == set()
