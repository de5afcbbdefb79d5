"""The fuzz target at smoke size (`make fuzz N=10000` is the full run): a few dozen
mutated real manifests through loader -> simulate -> report, each in a worker
subprocess, give no traceback, crash, hang or MemoryError."""

from __future__ import annotations

import pytest

from tests.fuzz.run import fuzz


@pytest.mark.timeout(300)
def test_mutated_manifests_give_no_traceback_crash_hang_or_memory_error() -> None:
    tally = fuzz(n=30, timeout=60, seed=0)
    assert tally.cases == 30
    assert tally.counts == {"traceback": 0, "crash": 0, "hang": 0, "memory": 0}, tally.examples
