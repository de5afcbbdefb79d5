"""freeze_after_sync: large clusters' long-lived objects leave the collector's walks."""

from __future__ import annotations

import gc

from kubesched.scheduler.scheduler import FREEZE_AFTER_SYNC_MIN_OBJECTS, freeze_after_sync


def test_small_clusters_are_not_frozen_large_ones_are() -> None:
    before = gc.get_freeze_count()
    try:
        assert not freeze_after_sync(FREEZE_AFTER_SYNC_MIN_OBJECTS - 1)
        assert gc.get_freeze_count() == before
        kept = [[] for _ in range(10)]  # tracked and alive now: frozen with the rest
        assert freeze_after_sync(FREEZE_AFTER_SYNC_MIN_OBJECTS)
        assert gc.get_freeze_count() >= before + len(kept)
    finally:
        gc.unfreeze()  # other tests' objects back under the collector
