"""pkg/scheduler/framework/plugins/helper/normalize_score.go."""

from __future__ import annotations

import numpy as np

from kubesched.framework.state.node_table import IntArray


def default_normalize_score(max_priority: int, reverse: bool, scores: IntArray) -> None:
    """Scale `scores` (in place) from [0, max(scores)] to [0, max_priority].

    As upstream: the maximum starts at 0, so when no score is positive nothing
    changes, except that with `reverse` every score becomes max_priority.
    Otherwise score = max_priority * score / max (Go integer division, which
    truncates toward zero), then max_priority - score when `reverse`.
    """
    max_count = max(int(scores.max()), 0) if len(scores) else 0
    if max_count == 0:
        if reverse:
            scores[:] = max_priority
        return
    product = np.int64(max_priority) * scores
    scaled = np.sign(product) * (np.abs(product) // max_count)
    if reverse:
        scaled = np.int64(max_priority) - scaled
    scores[:] = scaled
