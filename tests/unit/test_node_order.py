"""NodeTable.order: the node list of kube-scheduler's nodeTree (node_tree.go), kept
as nodes come, change zone and go."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.state.node_table import NodeTable
from kubesched.testing import make_node

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


class NodeTree:
    """node_tree.go, step by step: the reference the table's order must agree with."""

    def __init__(self) -> None:
        self.tree: dict[str, list[str]] = {}
        self.zones: list[str] = []

    def add(self, name: str, zone: str) -> None:
        if zone not in self.tree:
            self.zones.append(zone)
            self.tree[zone] = []
        self.tree[zone].append(name)

    def remove(self, name: str, zone: str) -> None:
        self.tree[zone].remove(name)
        if not self.tree[zone]:
            del self.tree[zone]
            self.zones.remove(zone)

    def list(self) -> list[str]:
        out: list[str] = []
        depth = max((len(v) for v in self.tree.values()), default=0)
        for i in range(depth):
            out.extend(self.tree[z][i] for z in self.zones if i < len(self.tree[z]))
        return out


def _labels(region: str, zone: str) -> dict[str, str]:
    labels = {}
    if region:
        labels[REGION] = region
    if zone:
        labels[ZONE] = zone
    return labels


def _key(region: str, zone: str) -> str:
    return f"{region}:\x00:{zone}" if region or zone else ""


def test_a_zone_emptied_and_filled_again_comes_last() -> None:
    table = NodeTable()
    for name, zone in [("a1", "a"), ("b1", "b"), ("c1", "c"), ("a2", "a")]:
        table.upsert_node(make_node(name, labels={ZONE: zone}))
    table.remove_node("b1")
    table.upsert_node(make_node("b2", labels={ZONE: "b"}))
    assert [table.names[r] for r in table.order()] == ["a1", "c1", "b2", "a2"]


def test_a_node_that_changes_zone_goes_to_the_end_of_its_new_zone() -> None:
    table = NodeTable()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")]:
        table.upsert_node(make_node(name, labels={ZONE: zone}))
    table.upsert_node(make_node("a1", labels={ZONE: "b"}))
    assert [table.names[r] for r in table.order()] == ["a2", "b1", "b2", "a1"]
    # A change of anything but the zone keeps its place.
    table.upsert_node(make_node("b1", labels={ZONE: "b", "x": "y"}))
    assert [table.names[r] for r in table.order()] == ["a2", "b1", "b2", "a1"]


nodes = st.sampled_from([f"n{i}" for i in range(12)])
places = st.tuples(st.sampled_from(["", "r1", "r2"]), st.sampled_from(["", "z1", "z2", "z3"]))
steps = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), nodes, places),
        st.tuples(st.just("remove"), nodes, st.just(("", ""))),
        st.tuples(st.just("order"), st.just(""), st.just(("", ""))),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_order_follows_the_node_tree(script: list[tuple[str, str, tuple[str, str]]]) -> None:
    table = NodeTable(capacity=4)  # rows are reused and the table grows on the way
    tree = NodeTree()
    zone_of: dict[str, str] = {}
    for op, name, (region, zone) in script:
        if op == "upsert":
            key = _key(region, zone)
            if name in zone_of and zone_of[name] != key:
                tree.remove(name, zone_of[name])
            if zone_of.get(name) != key:
                tree.add(name, key)
            zone_of[name] = key
            table.upsert_node(make_node(name, labels=_labels(region, zone)))
        elif op == "remove" and name in zone_of:
            tree.remove(name, zone_of.pop(name))
            table.remove_node(name)
        assert [table.names[r] for r in table.order()] == tree.list()
