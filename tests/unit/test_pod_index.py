"""The pod index: label groups kept in step with the node table, selector queries,
pods with affinity, and the label-selector / affinity-term semantics it holds."""

from __future__ import annotations

import random

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.labels import EVERYTHING, NOTHING, SelectorError, label_selector_as_selector
from kubesched.api.objects import LabelSelector, PodAffinityTerm
from kubesched.framework.state.pod_index import (
    AffinityTerm,
    RowCounts,
    affinity_term,
    sparse_counts,
)
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node, make_pod, make_table


def selector(raw: object) -> LabelSelector:
    return msgspec.convert(raw, LabelSelector)


def test_groups_follow_adds_and_removes() -> None:
    web = {"app": "web"}
    table = make_table(
        [make_node("a"), make_node("b")],
        [
            make_pod("w1", labels=web, node_name="a"),
            make_pod("w2", labels=web, node_name="a"),
            make_pod("w3", labels=web, node_name="b"),
            make_pod("w4", labels=web, node_name="b", namespace="other"),
        ],
    )
    index = table.pod_index
    a, b = table.index["a"], table.index["b"]
    groups = index.matching_groups(
        ("default",), label_selector_as_selector(selector({"matchLabels": web}))
    )
    assert [g.rows for g in groups] == [{a: 2, b: 1}]
    assert len(index.groups) == 2  # one per namespace
    for pod in list(table.pods_on(b)):
        table.remove_pod(pod, b)
    assert [g.rows for g in index.groups.values()] == [{a: 2}]
    table.remove_node("a")
    assert not index.groups and not index.by_label and not index.by_key and not index.by_namespace


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.sampled_from([1, 1, 1, -1, -1]))))
def test_row_counts_arrays_equal_a_recount_after_any_bumps(
    bumps: list[tuple[int, int]],
) -> None:
    """The arrays kept in step with each bump hold what a full recount gives, and a
    snapshot taken earlier is not changed by later bumps."""
    counts = RowCounts()
    want: dict[int, int] = {}
    snapshots: list[tuple[tuple[np.ndarray, np.ndarray], dict[int, int]]] = []
    for row, delta in bumps:
        counts.bump(row, delta)
        if want.get(row, 0) + delta > 0:
            want[row] = want.get(row, 0) + delta
        else:
            want.pop(row, None)
        rows, values = counts.arrays()
        assert dict(zip(rows.tolist(), values.tolist(), strict=True)) == want
        assert len(set(rows.tolist())) == len(rows)  # each row once
        assert counts.rows == want
        snapshots.append(((rows, values), dict(want)))
    for (rows, values), then in snapshots:
        assert dict(zip(rows.tolist(), values.tolist(), strict=True)) == then


def test_terminating_pods_group_apart() -> None:
    gone = make_pod("x", labels={"app": "web"}, node_name="a")
    gone = msgspec.structs.replace(
        gone, metadata=msgspec.structs.replace(gone.metadata, deletion_timestamp="2026-01-01")
    )
    table = make_table(
        [make_node("a")], [gone, make_pod("y", labels={"app": "web"}, node_name="a")]
    )
    groups = table.pod_index.matching_groups(None, EVERYTHING)
    assert sorted(g.terminating for g in groups) == [False, True]
    _, counts = sparse_counts(groups, skip_terminating=True)
    assert counts.tolist() == [1]
    _, counts = sparse_counts(groups)
    assert int(counts.sum()) == 2


def test_queries_match_a_brute_force_scan() -> None:
    rng = random.Random(7)
    nodes = [make_node(f"n{i}") for i in range(6)]
    pods = []
    for j in range(200):
        labels = {k: rng.choice(["1", "2", "3"]) for k in ("a", "b", "c") if rng.random() < 0.6}
        pods.append(
            make_pod(
                f"p{j}", labels=labels, node_name=f"n{rng.randrange(6)}", namespace=rng.choice("xy")
            )
        )
    table = make_table(nodes, pods)
    operators = ["In", "NotIn", "Exists", "DoesNotExist"]
    for _ in range(300):
        exprs = []
        for _ in range(rng.randint(0, 3)):
            op = rng.choice(operators)
            values = rng.sample(["1", "2", "3"], rng.randint(1, 2)) if op in ("In", "NotIn") else []
            exprs.append({"key": rng.choice("abc"), "operator": op, "values": values})
        raw = {"matchExpressions": exprs}
        if rng.random() < 0.3:
            raw["matchLabels"] = {rng.choice("abc"): rng.choice(["1", "2"])}
        sel = label_selector_as_selector(selector(raw))
        namespace = rng.choice("xy")
        rows, counts = sparse_counts(table.pod_index.matching_groups((namespace,), sel))
        got = np.bincount(rows, weights=counts, minlength=table.capacity).astype(int)
        want = np.zeros(table.capacity, dtype=int)
        for pod in pods:
            if pod.metadata.namespace == namespace and sel.matches(pod.metadata.labels):
                want[table.index[pod.spec.node_name]] += 1
        assert got.tolist() == want.tolist(), raw


def test_pods_with_affinity_share_their_parsed_terms() -> None:
    def anti(app: str) -> dict[str, object]:
        return {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": app}}}
                    ]
                }
            }
        }

    keyed = {
        "affinity": {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 3,
                        "podAffinityTerm": {
                            "topologyKey": "zone",
                            "labelSelector": {},
                            "matchLabelKeys": ["version"],
                        },
                    }
                ]
            }
        }
    }
    table = make_table(
        [make_node("a"), make_node("b")],
        [
            make_pod("x1", node_name="a", spec=anti("x")),
            make_pod("x2", node_name="a", spec=anti("x")),
            make_pod("x3", node_name="b", spec=anti("x")),
            make_pod("x4", node_name="b", spec=anti("x"), namespace="other"),
            make_pod("y", node_name="b", spec=anti("y")),
            make_pod("v1", node_name="a", spec=keyed, labels={"version": "1"}),
            make_pod("v2", node_name="a", spec=keyed, labels={"version": "2"}),
            make_pod("plain", node_name="a"),
        ],
    )
    index = table.pod_index
    a, b = table.index["a"], table.index["b"]
    # x in default, x in other (terms default to the pod's namespace), y, and the two
    # label values matchLabelKeys reads.
    assert sorted(sum(s.rows.values()) for s in index.affinity_sets.values()) == [1, 1, 1, 1, 3]
    assert sorted(index.with_affinity[a]) == [
        "default/v1",
        "default/v2",
        "default/x1",
        "default/x2",
    ]
    x1 = next(p for p in table.pods_on(a) if p.name == "x1")
    shared = index.affinity_sets[index.with_affinity[a]["default/x1"]]
    assert shared.rows == {a: 2, b: 1}
    assert index.terms_of(x1) is shared.terms
    # The same pod placed again (an update) without affinity leaves its set.
    table.add_pod(PodInfo(make_pod("x1", node_name="a")), a)
    assert shared.rows == {a: 1, b: 1}
    for pod in list(table.pods_on(a)) + list(table.pods_on(b)):
        table.remove_pod(pod, table.index[pod.node_name])
    assert not index.affinity_sets and not index.with_affinity


def test_label_selector_semantics() -> None:
    assert label_selector_as_selector(None) == NOTHING
    assert label_selector_as_selector(selector({})) == EVERYTHING
    assert EVERYTHING.empty() and not NOTHING.empty()
    assert EVERYTHING.matches({}) and not NOTHING.matches({"a": "b"})
    sel = label_selector_as_selector(
        selector(
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "tier", "operator": "NotIn", "values": ["db"]},
                    {"key": "gone", "operator": "DoesNotExist"},
                ],
            }
        )
    )
    assert sel.matches({"app": "web"})
    assert sel.matches({"app": "web", "tier": "fe"})
    assert not sel.matches({"app": "web", "tier": "db"})
    assert not sel.matches({"app": "web", "gone": ""})
    assert not sel.matches({"tier": "fe"})
    with pytest.raises(SelectorError, match='"Gt" is not a valid label selector operator'):
        label_selector_as_selector(selector({"matchExpressions": [{"key": "a", "operator": "Gt"}]}))
    with pytest.raises(SelectorError, match="values set can't be empty"):
        label_selector_as_selector(
            selector({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
        )


def test_affinity_term_namespaces_and_label_keys() -> None:
    owner = make_pod("o", namespace="team", labels={"version": "v2", "app": "web"})

    def parsed(raw: dict[str, object]) -> AffinityTerm:
        return affinity_term(
            owner, msgspec.convert({"topologyKey": "zone", **raw}, PodAffinityTerm)
        )

    own_namespace = parsed({"labelSelector": {}})
    assert own_namespace.namespaces == {"team"}
    all_namespaces = parsed({"labelSelector": {}, "namespaceSelector": {}})
    assert all_namespaces.matches("elsewhere", {}, {})
    by_label = parsed({"labelSelector": {}, "namespaceSelector": {"matchLabels": {"t": "x"}}})
    assert by_label.matches("elsewhere", {}, {"t": "x"})
    assert not by_label.matches("team", {}, {})
    keyed = parsed(
        {
            "labelSelector": {"matchLabels": {"app": "web"}},
            "matchLabelKeys": ["version"],
            "mismatchLabelKeys": ["app", "absent"],
        }
    )
    # app=web AND version in (v2) AND app notin (web): matches nothing, as upstream
    assert not keyed.matches("team", {"app": "web", "version": "v2"}, {})
    same_version = parsed({"labelSelector": {}, "matchLabelKeys": ["version"]})
    assert same_version.matches("team", {"version": "v2"}, {})
    assert not same_version.matches("team", {"version": "v1"}, {})
    nil_selector = parsed({"matchLabelKeys": ["version"]})
    assert not nil_selector.matches("team", {"version": "v2"}, {})
