"""Taints and tolerations: v1.Toleration.ToleratesTaint and component-helpers' helpers.

Column-wise use goes through the table's taint sets: a cluster has few distinct
sets of taints, so a question about a pod's tolerations is answered once per
set and then spread over the rows with one fancy-indexing step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import Taint, Toleration
from kubesched.cache.node_table import NodeTable, Rows

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

EQUAL, EXISTS = "Equal", "Exists"

TaintFilter = Callable[[Taint], bool]

# Up to this many distinct taint sets, per_taint_set asks about each of them
# rather than first finding which ones the rows have.
_FEW_TAINT_SETS = 8


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint, with the TaintTolerationComparisonOperators gate off.

    An empty effect matches every effect and an empty key every key; the operator
    defaults to Equal (values compared); Exists ignores the value. Lt and Gt are
    alpha (off by default through v1.36) and then tolerate nothing, like any
    other unknown operator.
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", EQUAL):
        return toleration.value == taint.value
    return toleration.operator == EXISTS


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def do_not_schedule_taints(taint: Taint) -> bool:
    """helper.DoNotScheduleTaintsFilterFunc: the effects Filter cares about."""
    return taint.effect in (NO_SCHEDULE, NO_EXECUTE)


def find_matching_untolerated_taint(
    taints: Iterable[Taint], tolerations: Iterable[Toleration], inclusion: TaintFilter | None
) -> Taint | None:
    """The first taint passing `inclusion` that no toleration tolerates (None: all tolerated)."""
    tolerations = list(tolerations)
    for taint in taints:
        if inclusion is not None and not inclusion(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


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
