"""Taints and tolerations over the node table's taint sets.

A cluster has few distinct sets of taints, so a question about a pod's
tolerations (api/taints) is answered once per set and then spread over the
rows with one fancy-indexing step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Taint
from kubesched.framework.state.node_table import NodeTable, Rows

# Up to this many distinct taint sets, per_taint_set asks about each of them
# rather than first finding which ones the rows have.
_FEW_TAINT_SETS = 8


def per_taint_set(
    table: NodeTable,
    rows: Rows,
    fn: Callable[[tuple[Taint, ...]], int],
    dtype: type[np.generic] = np.int64,
) -> npt.NDArray[np.generic]:
    """fn(taints of the node) for every row, calling fn once per distinct taint set
    (`fn` must not have side effects: it may be asked about sets no row has)."""
    if table.num_tainted == 0:
        # No live node has taints: every row has the empty set.
        return np.full(len(rows), fn(()), dtype=dtype)
    sets = table.taint_sets
    if len(sets) <= _FEW_TAINT_SETS:
        per_set = np.array([fn(taints) for taints in sets], dtype=dtype)
        if not per_set.any():
            return np.zeros(len(rows), dtype=dtype)
        return per_set[table.taint_set[rows]]
    ids = table.taint_set[rows]
    present = np.zeros(len(sets), dtype=np.bool_)
    present[ids] = True
    per_set = np.zeros(len(sets), dtype=dtype)
    for set_id in np.flatnonzero(present):
        per_set[set_id] = fn(sets[set_id])
    return per_set[ids]
