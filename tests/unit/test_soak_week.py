"""`make soak` (tests/chaos/soak_week.py) at a smoke size: a day and a half of
node and pod churn in simulated time, fast node swaps on 40 nodes."""

from __future__ import annotations

import re

import pytest

from kubesched.framework.node_table import NodeTable
from tests.chaos import soak_week

SMOKE = [
    "--days", "1.5", "--warmup", "0.5", "--nodes", "40",
    "--pods-per-minute", "2", "--node-every", "0.5", "--lifetime", "60",
]  # fmt: skip


def test_a_churned_scheduler_keeps_flat(capsys: pytest.CaptureFixture[str]) -> None:
    assert soak_week.main(SMOKE) == 0
    out = capsys.readouterr().out
    assert "objects slope (% per day)" in out
    assert re.search(r"nodes start / end\s+40 / 40", out)


def test_the_soak_catches_what_the_table_kept_for_gone_nodes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the node table's compaction off, the label values and taint sets of
    removed nodes pile up: the soak must see it."""
    monkeypatch.setattr(NodeTable, "_maybe_compact", lambda self: None)
    assert soak_week.main(SMOKE) == 1
    assert "memory grows" in capsys.readouterr().err
