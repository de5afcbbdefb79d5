"""TableCopy: pods tried on a copy of the node table give the rows the live table
would have with them, and the live table never changes."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.framework.state.node_table import CPU, NodeTable
from kubesched.framework.state.table_copy import TableCopy
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node, make_pod

# node, cpu, host port, claim, extended resource no node has
_drawn = st.tuples(
    st.integers(0, 3),
    st.sampled_from(["0", "250m", "1"]),
    st.sampled_from([0, 0, 80, 443]),
    st.sampled_from(["", "", "data", "logs"]),
    st.booleans(),
)


def _pod(name: str, drawn: tuple[int, str, int, str, bool]) -> PodInfo:
    _, cpu, port, claim, gadget = drawn
    requests: dict[str, str | int] = {"cpu": cpu}
    if gadget:
        requests["example.com/gadget"] = 1
    spec: dict[str, Any] = {}
    container: dict[str, Any] = {"name": "c", "resources": {"requests": requests}}
    if port:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    spec["containers"] = [container]
    if claim:
        spec["volumes"] = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]
    return PodInfo(make_pod(name, spec=spec, labels={"app": name}))


def _rows_seen_by_filters(table: NodeTable) -> Any:
    """Everything of the table a filter reads about a row's pods, row by row."""
    width = len(table.resources)
    out = {}
    for name, row in table.index.items():
        node_row = table.rows[row]
        assert node_row is not None
        out[name] = (
            list(node_row.pods),
            sorted(node_row.host_ports.items(), key=repr),
            sorted(node_row.volume_pods),
            table.requested[row, :width].tolist(),
            table.free[row, :width].tolist(),
            table.non_zero_requested[row].tolist(),
            sorted((key, users[row]) for key, users in table.ports.items() if users.get(row)),
            sorted((key, refs[row]) for key, refs in table.pvc_refs.items() if refs.get(row)),
        )
    return out, list(table.resources)


def _everything(table: NodeTable) -> Any:
    index = table.pod_index
    return (
        _rows_seen_by_filters(table),
        {key: dict(group.rows) for key, group in index.groups.items()},
        {key: dict(users) for key, users in table.ports.items()},
        {key: dict(refs) for key, refs in table.pvc_refs.items()},
        table.allocatable.tolist(),
        table.generation,
    )


def _table(placed: list[tuple[int, str, int, str, bool]]) -> NodeTable:
    table = NodeTable(capacity=4)
    for i in range(4):
        table.upsert_node(make_node(f"n{i}", cpu="4"))
    for i, drawn in enumerate(placed):
        table.add_pod(_pod(f"placed{i}", drawn), drawn[0])
    return table


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(placed=st.lists(_drawn, max_size=8), tried=st.lists(_drawn, min_size=1, max_size=8))
def test_pods_on_a_copy_are_the_live_tables_pods_and_undo_forgets_them(
    placed: list[tuple[int, str, int, str, bool]], tried: list[tuple[int, str, int, str, bool]]
) -> None:
    live = _table(placed)
    before = _everything(live)
    expected = _table(placed)  # the same table, with the pods added for real
    copy = TableCopy.of(live)
    for i, drawn in enumerate(tried):
        # A tried pod may be a placed pod again (on its row or on another one).
        name = f"placed{i}" if i < len(placed) and drawn[2] == 443 else f"tried{i}"
        pod = _pod(name, drawn)
        for table in (copy, expected):
            for row in range(4):
                node_row = table.rows[row]
                assert node_row is not None
                if name in node_row.pods:
                    table.remove_pod(node_row.pods[name], row)
            table.add_pod(pod, drawn[0])
    assert _rows_seen_by_filters(copy) == _rows_seen_by_filters(expected)
    assert copy.pod_index is live.pod_index  # the cluster-wide lists stay the snapshot's
    assert _everything(live) == before
    copy.undo()
    assert _rows_seen_by_filters(copy) == _rows_seen_by_filters(live)
    assert _everything(live) == before


def test_shifted_amounts_stay_in_the_copy_until_undone() -> None:
    live = _table([(0, "1", 0, "", False)])
    before = _everything(live)
    copy = TableCopy.of(live)
    row = live.row_of("n0")
    assert row is not None
    delta = np.zeros((1, copy.requested.shape[1]), dtype=np.int64)
    delta[0, CPU] = 1500
    copy.shift_requested(np.array([row], dtype=np.intp), delta)
    assert copy.requested[row, CPU] == live.requested[row, CPU] + 1500
    assert copy.free[row, CPU] == live.free[row, CPU] - 1500
    assert copy.generation != live.generation
    assert _everything(live) == before
    # Then a pod onto another row: the copy takes its own rows and scoring amounts.
    other = live.row_of("n1")
    assert other is not None
    copy.add_pod(_pod("more", (1, "250m", 80, "data", False)), other)
    assert copy.non_zero_requested[other, 0] == live.non_zero_requested[other, 0] + 250
    assert copy.rows[other] is not live.rows[other]
    assert _everything(live) == before
    copy.undo()
    assert _rows_seen_by_filters(copy) == _rows_seen_by_filters(live)
    assert copy.requested.tolist() == live.requested.tolist()
    assert copy.free.tolist() == live.free.tolist()
