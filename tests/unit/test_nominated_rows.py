"""The nominated pods by row (kubesched/framework/state/nominated.py): built once per version
of the nominations, they give each pod what building them afresh gives, and the
scheduler's version changes whenever its answers may."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubesched.framework.clock import SimClock
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.state.nominated import nominated_by_row
from kubesched.framework.types import PodInfo
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.testing import make_node, make_pod, make_table

NODES = [f"n{i}" for i in range(5)]


class Nominations:
    """Node -> nominated pods, with a log of the nodes changed; VERSIONED says whether
    it tells its version."""

    def __init__(self, versioned: bool) -> None:
        self.by_node: dict[str, list[PodInfo]] = {}
        self.versioned = versioned
        self.touched: list[str] = []

    def nominated_nodes(self) -> list[str]:
        return list(self.by_node)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.by_node.get(node_name, []))

    def version(self) -> int | None:
        return len(self.touched) if self.versioned else None

    def changed_since(self, version: int) -> list[str] | None:
        return self.touched[version:] if version >= 3 else None  # older: forgotten

    def nominate(self, pod: PodInfo, node: str | None) -> None:
        for name, pods in self.by_node.items():
            if any(p.key == pod.key for p in pods):
                pods[:] = [p for p in pods if p.key != pod.key]
                self.touched.append(name)
        self.by_node = {n: pods for n, pods in self.by_node.items() if pods}
        if node is not None:
            self.by_node.setdefault(node, []).append(pod)
            self.touched.append(node)


def pod_info(i: int, priority: int, cpu: int) -> PodInfo:
    return PodInfo(make_pod(f"p{i}", cpu=f"{cpu}m", priority=priority))


step = st.one_of(
    # nominate pod i (priority, cpu) to a node, or take its nomination away
    st.tuples(
        st.just("nominate"),
        st.integers(0, 7),
        st.integers(0, 2),
        st.integers(1, 900),
        st.sampled_from([*NODES, None]),
    ),
    # ask for pod i of a priority, on a subset of the rows (None: all)
    st.tuples(
        st.just("ask"),
        st.integers(0, 9),
        st.integers(0, 2),
        st.none() | st.lists(st.integers(0, len(NODES) - 1), unique=True),
    ),
    st.tuples(st.just("drop node"), st.sampled_from(NODES)),
    st.tuples(st.just("add node"), st.sampled_from(NODES)),  # or update it
)


@settings(max_examples=600, deadline=None)
@given(st.lists(step, max_size=25))
# Asking about some rows, with the pod itself nominated to one of them.
@example([("nominate", 0, 0, 1, "n1"), ("nominate", 1, 0, 1, "n0"), ("ask", 0, 0, [1])])
def test_kept_rows_answer_as_rows_built_afresh(steps: list[tuple[object, ...]]) -> None:
    table = make_table([make_node(n, cpu="4") for n in NODES])
    kept, fresh = Nominations(versioned=True), Nominations(versioned=False)
    for action, *args in steps:
        if action == "nominate":
            i, priority, cpu, node = args
            assert isinstance(i, int) and isinstance(priority, int) and isinstance(cpu, int)
            assert node is None or isinstance(node, str)
            for nominations in (kept, fresh):
                nominations.nominate(pod_info(i, priority, cpu), node)
        elif action == "drop node":
            (node,) = args
            assert isinstance(node, str)
            if node in table:
                table.remove_node(node)
        elif action == "add node":
            (node,) = args
            assert isinstance(node, str)
            table.upsert_node(make_node(node, cpu="4", labels={"seen": str(len(steps))}))
        else:
            i, priority, subset = args
            assert isinstance(i, int) and isinstance(priority, int)
            asking = pod_info(i, priority, 1)
            rows = None
            if subset is not None:
                assert isinstance(subset, list)
                rows = np.array(
                    [r for r in (table.row_of(NODES[k]) for k in subset) if r is not None],
                    dtype=np.intp,
                )
            got = nominated_by_row(kept, asking, table, rows)
            want = nominated_by_row(fresh, asking, table, rows)
            # The same pods in the same order on each row; the rows' order may differ.
            assert {r: [p.key for p in ps] for r, ps in got.items()} == {
                r: [p.key for p in ps] for r, ps in want.items()
            }
            every = got.rows()
            assert_same_amounts(table, got.amounts(table), want.amounts(table, every))
            some = every[::2]
            assert_same_amounts(table, got.amounts(table, some), want.amounts(table, some))


def assert_same_amounts(table: NodeTable, a: object, b: object) -> None:
    if a is None or b is None:
        assert a is b
    else:
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
        assert a.shape == b.shape and (a == b).all()


def test_the_pod_itself_is_left_out_of_its_row_and_of_its_amounts() -> None:
    table = make_table([make_node("n0", cpu="4")])
    nominations = Nominations(versioned=True)
    for i, cpu in ((1, 300), (2, 500)):
        nominations.nominate(pod_info(i, 5, cpu), "n0")
    row = table.row_of("n0")
    assert row is not None
    everyone = nominated_by_row(nominations, pod_info(9, 5, 1), table)
    itself = nominated_by_row(nominations, pod_info(1, 5, 1), table)
    assert [p.key for p in everyone[row]] == ["default/p1", "default/p2"]
    assert [p.key for p in itself[row]] == ["default/p2"]
    cpu = table.resource_column("cpu")
    everyone_amounts, itself_amounts = everyone.amounts(table), itself.amounts(table)
    assert everyone_amounts is not None and itself_amounts is not None
    assert everyone_amounts[0, cpu] == 800 and itself_amounts[0, cpu] == 500
    # Higher priority pods do not make room for lower ones.
    assert not nominated_by_row(nominations, pod_info(9, 6, 1), table)


def test_the_schedulers_version_changes_with_the_nominator_and_with_pods_in_flight() -> None:
    cluster = InMemoryCluster(nodes={"n": make_node("n", cpu="2")})
    sched = Scheduler([ProfileConfig.default()], cluster, clock=SimClock(), seed=1)
    cluster.watch(sched)
    nominated = sched.handle.nominated
    before = nominated.version()
    high = make_pod("high", cpu="2", priority=100)
    high.status.nominated_node_name = "n"  # a nomination made before a restart
    sched.on_pod_add(high)
    assert sched.nominator.node_of("default/high") == "n"
    after = nominated.version()
    assert after != before
    asker = PodInfo(make_pod("asker", cpu="1", priority=100))
    row = sched.handle.nodes.row_of("n")
    found = nominated_by_row(nominated, asker, sched.handle.nodes)
    assert [p.key for p in found[row]] == ["default/high"]
    assert found[row][0].requests  # the queue's copy, with its requests
    # Popped, the nominated pod is only a name (priority 0) until it comes back.
    popped = sched.queue.pop_nowait()
    assert popped is not None and popped.pod_info.key == "default/high"
    assert nominated.version() != after
    assert not nominated_by_row(nominated, asker, sched.handle.nodes)
    lowly = PodInfo(make_pod("lowly", cpu="1", priority=0))
    names = nominated_by_row(nominated, lowly, sched.handle.nodes)
    assert [p.key for p in names[row]] == ["default/high"] and not names[row][0].requests
