"""`make soak` (tests/chaos/soak_week.py) at a smoke size: a day and a half of
node and pod churn in simulated time, fast node swaps on 40 nodes. In a process
of its own: the objects it counts are the process's."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.packaging.venvs import REPO_ROOT

SMOKE = [
    "--days", "1.5", "--warmup", "0.5", "--nodes", "40",
    "--pods-per-minute", "2", "--node-every", "0.5", "--lifetime", "60",
]  # fmt: skip


def _soak(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tests.chaos.soak_week", *SMOKE, *extra],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_churned_scheduler_keeps_flat() -> None:
    done = _soak()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "objects slope (% per day)" in done.stdout
    assert re.search(r"nodes start / end\s+40 / 40", done.stdout)


def test_the_soak_catches_what_the_table_kept_for_gone_nodes() -> None:
    """With the node table's compaction off, the label values and taint sets of
    removed nodes pile up: the soak must see it."""
    done = _soak("--without-compaction")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "memory grows" in done.stderr
