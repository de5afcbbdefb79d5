"""NodeName: spec.nodeName pins a pod to one node."""

from __future__ import annotations

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.nodename import NodeName
from kubesched.testing import make_node, make_pod, make_table

REASON = "node(s) didn't match the requested node name"


def verdicts(node_name: str, nodes: NodeTable) -> dict[str, tuple[int, list[str]]]:
    rows = nodes.order()
    pod = PodInfo(make_pod("p", node_name=node_name))
    result = NodeName().filter(CycleState(), pod, nodes, rows)
    return {
        nodes.names[row]: (int(result.codes[i]), [r for r, mask in result.reasons if mask[i]])
        for i, row in enumerate(rows)
    }


def table() -> NodeTable:
    return make_table([make_node("n1"), make_node("n2"), make_node("n3")])


def test_pod_without_node_name_fits_everywhere() -> None:
    assert verdicts("", table()) == {n: (Code.SUCCESS, []) for n in ["n1", "n2", "n3"]}


def test_node_name_selects_one_node() -> None:
    fail = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON])
    assert verdicts("n2", table()) == {"n1": fail, "n2": (Code.SUCCESS, []), "n3": fail}


def test_unknown_node_name_fails_everywhere() -> None:
    fail = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON])
    assert verdicts("gone", table()) == {n: fail for n in ["n1", "n2", "n3"]}


def test_rows_subset() -> None:
    nodes = table()
    rows = np.array([nodes.row_of("n3"), nodes.row_of("n1")], dtype=np.intp)
    result = NodeName().filter(CycleState(), PodInfo(make_pod("p", node_name="n1")), nodes, rows)
    assert result.codes.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS]


def test_events() -> None:
    events = NodeName().events_to_register()
    assert [(e.event.resource, e.event.action, e.hint) for e in events] == [
        (Resource.NODE, ActionType.ADD, None)
    ]
