"""NodeUnschedulable: cordoned nodes, the toleration that lets pods in, queueing hints."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.nodeunschedulable import NodeUnschedulable
from kubesched.testing import make_node, make_pod, make_table

REASON = "node(s) were unschedulable"
KEY = "node.kubernetes.io/unschedulable"


def table() -> NodeTable:
    return make_table(
        [make_node("open"), make_node("cordoned", unschedulable=True), make_node("open2")]
    )


def verdicts(pod: PodInfo, nodes: NodeTable) -> dict[str, tuple[int, list[str]]]:
    rows = nodes.order()
    result = NodeUnschedulable().filter(CycleState(), pod, nodes, rows)
    out = {}
    for i, row in enumerate(rows):
        reasons = [r for r, mask in result.reasons if mask[i]]
        out[nodes.names[row]] = (int(result.codes[i]), reasons)
    return out


def pod_with(*tolerations: dict[str, Any]) -> PodInfo:
    return PodInfo(make_pod("p", spec={"tolerations": list(tolerations)}))


def test_cordoned_node_rejects_pod_without_toleration() -> None:
    got = verdicts(pod_with(), table())
    assert got == {
        "open": (Code.SUCCESS, []),
        "cordoned": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]),
        "open2": (Code.SUCCESS, []),
    }


def test_tolerations_of_the_unschedulable_taint() -> None:
    tolerating = [
        {"key": KEY, "operator": "Exists", "effect": "NoSchedule"},
        {"key": KEY, "operator": "Exists"},  # empty effect: every effect
        {"operator": "Exists"},  # empty key with Exists: every taint
        {"key": KEY, "operator": "Equal", "value": "", "effect": "NoSchedule"},  # the value is ""
        {"key": KEY, "effect": "NoSchedule"},  # operator defaults to Equal
    ]
    for toleration in tolerating:
        got = verdicts(pod_with(toleration), table())
        assert got["cordoned"] == (Code.SUCCESS, []), toleration

    not_tolerating = [
        {"key": KEY, "operator": "Exists", "effect": "NoExecute"},
        {"key": KEY, "operator": "Exists", "effect": "PreferNoSchedule"},
        {"key": KEY, "operator": "Equal", "value": "true"},
        {"key": "other", "operator": "Exists"},
    ]
    for toleration in not_tolerating:
        got = verdicts(pod_with(toleration), table())
        assert got["cordoned"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]), toleration


def test_no_cordoned_node_in_rows() -> None:
    nodes = table()
    rows = np.array([nodes.row_of("open"), nodes.row_of("open2")], dtype=np.intp)
    result = NodeUnschedulable().filter(CycleState(), pod_with(), nodes, rows)
    assert result.codes.tolist() == [0, 0]
    assert result.reasons == []


def test_a_taint_alone_does_not_cordon() -> None:
    # The plugin reads spec.unschedulable; the taint itself is TaintToleration's business.
    nodes = make_table([make_node("t", taints=[{"key": KEY, "effect": "NoSchedule"}])])
    assert verdicts(pod_with(), nodes) == {"t": (Code.SUCCESS, [])}


def test_events() -> None:
    events = NodeUnschedulable().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (Resource.POD, ActionType.UPDATE_POD_TOLERATION),
    ]
    assert all(e.hint is not None for e in events)


def test_node_hint() -> None:
    plugin = NodeUnschedulable()
    pod = pod_with()
    open_node, cordoned = make_node("n"), make_node("n", unschedulable=True)
    assert plugin.is_schedulable_after_node_change(pod, None, open_node)
    assert not plugin.is_schedulable_after_node_change(pod, None, cordoned)
    assert plugin.is_schedulable_after_node_change(pod, cordoned, open_node)
    assert not plugin.is_schedulable_after_node_change(pod, open_node, open_node)
    assert not plugin.is_schedulable_after_node_change(pod, open_node, cordoned)
    assert plugin.is_schedulable_after_node_change(pod, None, make_pod("x"))


def test_pod_toleration_hint() -> None:
    plugin = NodeUnschedulable()
    target = pod_with()
    now_tolerating = make_pod("p", spec={"tolerations": [{"key": KEY, "operator": "Exists"}]})
    unrelated = make_pod("p", spec={"tolerations": [{"key": "x", "operator": "Exists"}]})
    other_pod = make_pod("q", spec={"tolerations": [{"key": KEY, "operator": "Exists"}]})
    assert plugin.is_schedulable_after_pod_toleration_change(target, target.pod, now_tolerating)
    assert not plugin.is_schedulable_after_pod_toleration_change(target, target.pod, unrelated)
    assert not plugin.is_schedulable_after_pod_toleration_change(target, other_pod, other_pod)
