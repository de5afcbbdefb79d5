"""Taints and tolerations: v1.Toleration.ToleratesTaint and component-helpers' helpers.

The one implementation of toleration matching in kubesched; the plugins ask
it per distinct taint set of the node table (plugins/helpers/taints), the
manifest loader per node for DaemonSet placement.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubesched.api.objects import Taint, Toleration

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

EQUAL, EXISTS = "Equal", "Exists"

TaintFilter = Callable[[Taint], bool]


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
