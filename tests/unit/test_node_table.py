"""The columnar node table: incremental updates keep every column right."""

from __future__ import annotations

from kubesched.cache.cache import Cache
from kubesched.framework.state.node_table import CPU, MEMORY, PODS, NodeTable, normalized_image_name
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node, make_pod

GI = 1024**3


def test_rows_grow_and_removed_rows_are_reused() -> None:
    table = NodeTable(capacity=2)
    for i in range(5):
        table.upsert_node(make_node(f"n{i}", cpu="2"))
    assert len(table) == 5 and table.capacity >= 5
    assert table.allocatable[table.row_of("n4"), CPU] == 2000
    row = table.row_of("n1")
    table.remove_node("n1")
    assert "n1" not in table and not table.alive[row]
    table.upsert_node(make_node("n9"))
    assert table.row_of("n9") == row


def test_extended_resources_get_columns_on_the_fly() -> None:
    table = NodeTable()
    table.upsert_node(make_node("plain"))
    table.upsert_node(make_node("gpu", extra={"nvidia.com/gpu": 4}))
    col = table.resource_index["nvidia.com/gpu"]
    assert table.allocatable[table.row_of("gpu"), col] == 4
    assert table.allocatable[table.row_of("plain"), col] == 0
    table.add_pod(
        PodInfo(make_pod("p", requests={"nvidia.com/gpu": 1, "example.com/foo": 2})),
        table.row_of("gpu"),
    )  # type: ignore[arg-type]
    assert table.requested[table.row_of("gpu"), col] == 1


def test_amounts_of_follows_new_resource_columns() -> None:
    """amounts_of keeps what it worked out per PodInfo; a column added later (a node
    with a new extended resource) makes it work the amounts out again, wider."""
    table = NodeTable()
    row = table.upsert_node(make_node("n", cpu="4"))
    plain = PodInfo(make_pod("plain", cpu="500m"))
    gpu = PodInfo(make_pod("gpu", requests={"nvidia.com/gpu": 2}))
    first = table.amounts_of(plain)
    assert first is not None and first[CPU] == 500 and first[PODS] == 1
    assert table.amounts_of(plain) is first  # kept
    assert table.amounts_of(gpu) is None  # no column for it yet: not amounts alone
    table.upsert_node(make_node("g", extra={"nvidia.com/gpu": 4}))
    col = table.resource_index["nvidia.com/gpu"]
    wider = table.amounts_of(plain)
    assert wider is not None and len(wider) == table.requested.shape[1] and wider[col] == 0
    gpu_amounts = table.amounts_of(gpu)
    assert gpu_amounts is not None and gpu_amounts[col] == 2
    delta = table.added_amounts({row: [plain, gpu]})
    assert delta is not None and delta[0, CPU] == 500 and delta[0, col] == 2
    assert delta[0, PODS] == 2


def test_pods_add_and_remove_their_requests() -> None:
    table = NodeTable()
    row = table.upsert_node(make_node("n"))
    pod = PodInfo(make_pod("p", cpu="500m", memory="1Gi"))
    empty = PodInfo(make_pod("e"))
    table.add_pod(pod, row)
    table.add_pod(empty, row)
    assert table.requested[row, CPU] == 500 and table.requested[row, MEMORY] == GI
    assert table.requested[row, PODS] == 2
    assert table.non_zero_requested[row].tolist() == [600, GI + 200 * 1024**2]
    table.remove_pod(pod, row)
    table.remove_pod(empty, row)
    assert table.requested[row].tolist() == [0] * len(table.resources)
    assert table.non_zero_requested[row].tolist() == [0, 0]


def test_label_updates_clear_removed_keys() -> None:
    table = NodeTable()
    row = table.upsert_node(make_node("n", labels={"a": "1", "b": "2"}))
    table.upsert_node(make_node("n", labels={"a": "3"}))
    assert table.label_value(row, "a") == "3"
    assert table.label_value(row, "b") is None


def test_taint_sets_are_shared() -> None:
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    table = NodeTable()
    a = table.upsert_node(make_node("a", taints=[taint]))
    b = table.upsert_node(make_node("b", taints=[taint]))
    c = table.upsert_node(make_node("c"))
    assert table.taint_set[a] == table.taint_set[b] != table.taint_set[c] == 0


def test_order_interleaves_zones() -> None:
    table = NodeTable()
    for name, zone in [
        ("a1", "a"),
        ("a2", "a"),
        ("a3", "a"),
        ("b1", "b"),
        ("c1", "c"),
        ("c2", "c"),
    ]:
        table.upsert_node(make_node(name, labels={"topology.kubernetes.io/zone": zone}))
    assert [table.names[r] for r in table.order()] == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_image_index_and_normalized_names() -> None:
    assert normalized_image_name("nginx") == "nginx:latest"
    assert normalized_image_name("registry:5000/app") == "registry:5000/app:latest"
    assert normalized_image_name("app:1.0") == "app:1.0"
    table = NodeTable()
    table.upsert_node(make_node("n", images=[(["nginx", "nginx:1.27"], 100)]))
    # Kept as the node reports them: a node's bare "nginx" is not "nginx:latest".
    assert table.images["nginx"] == {table.row_of("n"): 100}
    assert "nginx:latest" not in table.images
    table.remove_node("n")
    assert "nginx" not in table.images and "nginx:1.27" not in table.images


def test_cache_assume_forget_and_confirm() -> None:
    cache = Cache()
    cache.add_node(make_node("n"))
    row = cache.table.row_of("n")
    pod = PodInfo(make_pod("p", cpu="1"))
    cache.assume_pod(pod, "n")
    assert cache.is_assumed("default/p") and cache.table.requested[row, CPU] == 1000
    cache.forget_pod(pod)
    assert cache.table.requested[row, CPU] == 0
    cache.assume_pod(pod, "n")
    cache.add_pod(PodInfo(make_pod("p", cpu="1", node_name="n")))  # the bind came back
    assert not cache.is_assumed("default/p") and cache.table.requested[row, CPU] == 1000


def test_pods_of_a_node_not_yet_seen_count_when_it_arrives() -> None:
    cache = Cache()
    cache.add_pod(PodInfo(make_pod("p", cpu="1", node_name="late")))
    cache.add_node(make_node("late"))
    assert cache.table.requested[cache.table.row_of("late"), CPU] == 1000


def test_node_churn_keeps_label_values_and_taint_sets_bounded() -> None:
    """Nodes that come and go, each with its own hostname, a label of its own key
    and a taint whose value is a timestamp (cluster-autoscaler's ToBeDeleted...):
    what the table keeps stays proportional to the live nodes, and every live
    node's labels and taints still read back."""
    table = NodeTable()
    live: list[str] = []
    for i in range(20_000):
        name = f"node-{i}"
        taint = {"key": "ToBeDeletedByClusterAutoscaler", "value": str(i), "effect": "NoSchedule"}
        table.upsert_node(
            make_node(
                name,
                labels={"kubernetes.io/hostname": name, f"own-{i}": "x", "zone": f"z{i % 3}"},
                taints=[taint] if i % 2 else [],
            )
        )
        live.append(name)
        if len(live) > 50:
            table.remove_node(live.pop(0))
    hostname = table.labels["kubernetes.io/hostname"]
    assert len(hostname.values) <= 2 * 1024
    assert len(table.labels) <= 1024 + 2
    assert len(table.taint_sets) <= 1024 + 1
    for name in live:
        row = table.row_of(name)
        assert row is not None
        i = int(name.removeprefix("node-"))
        assert table.label_value(row, "kubernetes.io/hostname") == name
        assert table.label_value(row, f"own-{i}") == "x"
        assert table.label_value(row, "zone") == f"z{i % 3}"
        taints = table.taint_sets[table.taint_set[row]]
        assert [t.value for t in taints] == ([str(i)] if i % 2 else [])
    # A label value no node holds any more is not found (an In selector on it
    # matches nothing), while a live one is.
    assert "node-0" not in hostname.vocab
    assert live[-1] in hostname.vocab


def test_compact_drops_values_of_removed_nodes_and_renumbers() -> None:
    table = NodeTable()
    for i in range(40):
        table.upsert_node(make_node(f"n{i}", labels={"h": f"n{i}", "k": "same"}))
    for i in range(30):
        table.remove_node(f"n{i}")
    before = table.labels["h"]
    generation = table.node_generation
    table.compact()
    after = table.labels["h"]
    assert after is not before  # caches keyed by the column object start again
    assert after.values == [f"n{i}" for i in range(30, 40)]
    assert table.node_generation > generation
    for i in range(30, 40):
        row = table.row_of(f"n{i}")
        assert row is not None
        assert table.label_value(row, "h") == f"n{i}"
        assert table.label_value(row, "k") == "same"
