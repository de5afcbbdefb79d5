"""select_host: a highest total, ties broken by one draw from the scheduler's random
source, and no draw without a tie, so that seeded runs place pods as before."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.scheduler.schedule_one import select_host


def reference(totals: np.ndarray, rng: np.random.Generator) -> int:
    best = np.flatnonzero(totals == totals.max())
    return int(best[rng.integers(len(best))]) if len(best) > 1 else int(best[0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=40), st.integers(0, 2**32 - 1))
def test_select_host_picks_and_draws_as_the_reference(totals: list[int], seed: int) -> None:
    array = np.array(totals, dtype=np.int64)
    ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(3):  # the sources stay in step over several picks
        assert select_host(array, ours) == reference(array, theirs)
    assert ours.integers(1 << 30) == theirs.integers(1 << 30)
