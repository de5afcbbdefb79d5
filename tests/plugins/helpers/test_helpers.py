"""Tests of the shared helpers: selectors, tolerations, score normalization."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.objects import (
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
    Taint,
    Toleration,
)
from kubesched.api.taints import do_not_schedule_taints
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.plugins.helpers import (
    default_normalize_score,
    find_matching_untolerated_taint,
    match_node_selector,
    match_node_selector_terms,
    node_matches_terms,
    parse_int64,
    parse_preferred_terms,
    parse_terms,
    per_taint_set,
    required_node_affinity,
    tolerates,
    tolerations_tolerate_taint,
)
from kubesched.plugins.helpers.selectors import preferred_score_rows, required_affinity_rows
from kubesched.testing import make_node, make_pod, make_table

# --- builders ------------------------------------------------------------------------


def term(*exprs: tuple[str, str, list[str]], fields: Any = ()) -> NodeSelectorTerm:
    return msgspec.convert(
        {
            "matchExpressions": [{"key": k, "operator": o, "values": v} for k, o, v in exprs],
            "matchFields": [{"key": k, "operator": o, "values": v} for k, o, v in fields],
        },
        NodeSelectorTerm,
    )


def tol(key: str = "", operator: str = "", value: str = "", effect: str = "") -> Toleration:
    return Toleration(key=key, operator=operator, value=value, effect=effect)


def taint(key: str, effect: str, value: str = "") -> Taint:
    return Taint(key=key, effect=effect, value=value)


LABELS: dict[str, dict[str, str]] = {
    "n0": {"zone": "a", "gen": "3", "disk": "ssd"},
    "n1": {"zone": "b", "gen": "10"},
    "n2": {"zone": "c", "gen": "x"},
    "n3": {},
    "n4": {"gen": "1_0", "big": "9007199254740993"},
    "n5": {"gen": "99999999999999999999", "big": "9007199254740992"},
    "n6": {"gen": "-4", "zone": "a"},
}


@pytest.fixture()
def table() -> NodeTable:
    return make_table(make_node(name, labels=labels) for name, labels in LABELS.items())


def rows_of(table: NodeTable, names: list[str] | None = None) -> Rows:
    names = list(LABELS) if names is None else names
    return np.array([table.row_of(n) for n in names], dtype=np.intp)


def matching(table: NodeTable, terms: list[NodeSelectorTerm]) -> list[str]:
    names = list(LABELS)
    mask = match_node_selector_terms(table, rows_of(table, names), terms)
    vectorised = [n for n, m in zip(names, mask, strict=True) if m]
    one_by_one = [n for n in names if node_matches_terms(table.node(table.row_of(n) or 0), terms)]
    assert vectorised == one_by_one
    return vectorised


# --- node selector terms ---------------------------------------------------------------


def test_in(table: NodeTable) -> None:
    assert matching(table, [term(("zone", "In", ["a", "b"]))]) == ["n0", "n1", "n6"]
    assert matching(table, [term(("zone", "In", ["nowhere"]))]) == []
    assert matching(table, [term(("nokey", "In", ["a"]))]) == []


def test_not_in_matches_nodes_without_the_key(table: NodeTable) -> None:
    assert matching(table, [term(("zone", "NotIn", ["a", "b"]))]) == ["n2", "n3", "n4", "n5"]
    assert matching(table, [term(("nokey", "NotIn", ["a"]))]) == list(LABELS)


def test_exists_and_does_not_exist(table: NodeTable) -> None:
    assert matching(table, [term(("disk", "Exists", []))]) == ["n0"]
    assert matching(table, [term(("zone", "DoesNotExist", []))]) == ["n3", "n4", "n5"]
    assert matching(table, [term(("nokey", "Exists", []))]) == []
    assert matching(table, [term(("nokey", "DoesNotExist", []))]) == list(LABELS)


def test_gt_lt_parse_the_label_as_go_int64(table: NodeTable) -> None:
    # gen: 3, 10, "x" (not a number), absent, "1_0" (Go rejects the underscore),
    # 1e20 (out of int64 range), -4.
    assert matching(table, [term(("gen", "Gt", ["3"]))]) == ["n1"]
    assert matching(table, [term(("gen", "Lt", ["10"]))]) == ["n0", "n6"]
    assert matching(table, [term(("gen", "Gt", ["-5"]))]) == []  # "-5" is no label value
    assert matching(table, [term(("gen", "Lt", ["0"]))]) == ["n6"]
    assert matching(table, [term(("gen", "Gt", ["0"]))]) == ["n0", "n1"]
    # Exact int64 comparison beyond float precision.
    assert matching(table, [term(("big", "Gt", ["9007199254740992"]))]) == ["n4"]


def test_gt_lt_need_one_integer_value(table: NodeTable) -> None:
    assert matching(table, [term(("gen", "Gt", ["1", "2"]))]) == []
    assert matching(table, [term(("gen", "Gt", ["one"]))]) == []
    assert matching(table, [term(("gen", "Lt", []))]) == []


def test_expressions_of_a_term_are_anded(table: NodeTable) -> None:
    t = term(("zone", "In", ["a"]), ("gen", "Lt", ["5"]), ("disk", "Exists", []))
    assert matching(table, [t]) == ["n0"]


def test_terms_are_ored(table: NodeTable) -> None:
    terms = [term(("zone", "In", ["b"])), term(("disk", "In", ["ssd"]))]
    assert matching(table, terms) == ["n0", "n1"]


def test_empty_term_matches_nothing(table: NodeTable) -> None:
    assert matching(table, [term()]) == []
    assert matching(table, []) == []
    # An empty term does not stop another term from matching.
    assert matching(table, [term(), term(("zone", "In", ["c"]))]) == ["n2"]


def test_a_term_that_does_not_parse_matches_nothing(table: NodeTable) -> None:
    bad = [
        term(("zone", "Equals", ["a"])),  # unknown operator
        term(("zone", "In", [])),  # In needs values
        term(("zone", "Exists", ["a"])),  # Exists takes none
        term(("bad key!", "Exists", [])),  # invalid label key
        term(("zone", "In", ["not a label value"])),
        term(("zone", "In", ["a"]), fields=[("metadata.name", "In", ["n0", "n1"])]),
        term(fields=[("metadata.name", "Exists", [])]),
    ]
    for one in bad:
        assert matching(table, [one]) == []
        assert parse_terms([one])[0].errors
    # Lazy errors: the other terms still match.
    assert matching(table, [*bad, term(("zone", "In", ["b"]))]) == ["n1"]


def test_match_fields_metadata_name(table: NodeTable) -> None:
    assert matching(table, [term(fields=[("metadata.name", "In", ["n2"])])]) == ["n2"]
    assert matching(table, [term(fields=[("metadata.name", "In", ["gone"])])]) == []
    not_n2 = [n for n in LABELS if n != "n2"]
    assert matching(table, [term(fields=[("metadata.name", "NotIn", ["n2"])])]) == not_n2
    # Labels and fields of one term are ANDed.
    t = term(("zone", "In", ["a"]), fields=[("metadata.name", "NotIn", ["n0"])])
    assert matching(table, [t]) == ["n6"]
    # Other field keys read as "" (fields.Set has only metadata.name).
    assert matching(table, [term(fields=[("spec.unschedulable", "In", ["x"])])]) == []
    assert matching(table, [term(fields=[("other", "NotIn", ["x"])])]) == list(LABELS)


def test_subset_and_order_of_rows(table: NodeTable) -> None:
    rows = rows_of(table, ["n6", "n1", "n0"])
    mask = match_node_selector_terms(table, rows, [term(("zone", "In", ["a"]))])
    assert mask.tolist() == [True, False, True]
    empty = match_node_selector_terms(table, rows[:0], [term(("zone", "In", ["a"]))])
    assert empty.shape == (0,)


def test_match_node_selector(table: NodeTable) -> None:
    rows = rows_of(table)
    assert match_node_selector(table, rows, {}).all()
    got = match_node_selector(table, rows, {"zone": "a"})
    assert [n for n, m in zip(LABELS, got, strict=True) if m] == ["n0", "n6"]
    got = match_node_selector(table, rows, {"zone": "a", "disk": "ssd"})
    assert [n for n, m in zip(LABELS, got, strict=True) if m] == ["n0"]
    assert not match_node_selector(table, rows, {"zone": "q"}).any()
    assert not match_node_selector(table, rows, {"nokey": "a"}).any()


def test_required_node_affinity_needs_selector_and_terms(table: NodeTable) -> None:
    pod = make_pod(
        "p",
        spec={
            "nodeSelector": {"zone": "a"},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "gen", "operator": "Lt", "values": ["0"]}
                                ]
                            }
                        ]
                    }
                }
            },
        },
    )
    required = required_node_affinity(pod)
    mask = required_affinity_rows(required, table, rows_of(table))
    assert [n for n, m in zip(LABELS, mask, strict=True) if m] == ["n6"]
    assert required.matches(table.node(table.row_of("n6") or 0))
    assert not required.matches(table.node(table.row_of("n0") or 0))


def test_required_node_affinity_without_terms_matches_nothing(table: NodeTable) -> None:
    spec: dict[str, Any] = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
    }
    required = required_node_affinity(make_pod("p", spec=spec))
    assert not required_affinity_rows(required, table, rows_of(table)).any()
    assert required_affinity_rows(required_node_affinity(Pod()), table, rows_of(table)).all()


def test_preferred_terms_skip_weight_zero_and_raise_on_errors(table: NodeTable) -> None:
    def pref(weight: int, t: NodeSelectorTerm) -> PreferredSchedulingTerm:
        return PreferredSchedulingTerm(weight=weight, preference=t)

    terms = parse_preferred_terms(
        [
            pref(5, term(("zone", "In", ["a"]))),
            pref(0, term(("zone", "In", ["b"]))),
            pref(3, term()),
            pref(2, term(("gen", "Exists", []))),
        ]
    )
    assert len(terms.terms) == 2
    assert preferred_score_rows(terms, table, rows_of(table)).tolist() == [7, 2, 2, 0, 2, 2, 7]
    with pytest.raises(ValueError):
        parse_preferred_terms([pref(1, term(("zone", "Bogus", ["a"])))])


def test_parse_int64() -> None:
    assert parse_int64("42") == 42
    assert parse_int64("+7") == 7
    assert parse_int64("-9223372036854775808") == -(2**63)
    assert parse_int64("9223372036854775808") is None
    assert parse_int64("1_0") is None
    assert parse_int64(" 1") is None
    assert parse_int64("") is None
    assert parse_int64("١") is None  # not an ASCII digit


KEYS = ["a", "b", "c"]
VALUES = ["1", "2", "10", "x"]  # valid label values, for requirements
NODE_VALUES = [*VALUES, "-3"]  # node labels are not validated by the scheduler
requirement: st.SearchStrategy[tuple[str, str, list[str]]] = st.one_of(
    st.tuples(
        st.sampled_from(KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(VALUES), min_size=1, max_size=3),
    ),
    st.tuples(
        st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"]), st.just(list[str]())
    ),
    st.tuples(
        st.sampled_from(KEYS),
        st.sampled_from(["Gt", "Lt"]),
        st.lists(st.sampled_from(["0", "2", "5"]), min_size=1, max_size=1),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(
        st.dictionaries(st.sampled_from(KEYS), st.sampled_from(NODE_VALUES), max_size=3),
        min_size=1,
        max_size=8,
    ),
    terms=st.lists(st.lists(requirement, max_size=3), max_size=3),
)
def test_columnwise_matches_one_node_at_a_time(
    nodes: list[dict[str, str]], terms: list[list[tuple[str, str, list[str]]]]
) -> None:
    table = make_table(make_node(f"n{i}", labels=labels) for i, labels in enumerate(nodes))
    parsed = [term(*t) for t in terms]
    rows = np.array([table.row_of(f"n{i}") for i in range(len(nodes))], dtype=np.intp)[::-1]
    mask = match_node_selector_terms(table, rows, parsed)
    assert mask.tolist() == [node_matches_terms(table.node(int(r)), parsed) for r in rows]
    # An independent reading of the rules, label by label.
    for r, got in zip(rows, mask, strict=True):
        labels = table.node(int(r)).metadata.labels
        assert got == any(t and all(_reference(labels, *e) for e in t) for t in terms)


def _reference(labels: dict[str, str], key: str, op: str, values: list[str]) -> bool:
    value = labels.get(key)
    if op == "In":
        return value in values
    if op == "NotIn":
        return value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if value is None or not value.lstrip("-").isdigit():
        return False
    return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])


# --- tolerations -----------------------------------------------------------------------


def test_exists_with_empty_key_tolerates_every_taint() -> None:
    everything = tol(operator="Exists")
    for t in [
        taint("a", "NoSchedule", "v"),
        taint("b", "NoExecute"),
        taint("c", "PreferNoSchedule"),
    ]:
        assert tolerates(everything, t)
    # ...but an effect still restricts it.
    assert not tolerates(tol(operator="Exists", effect="NoSchedule"), taint("a", "NoExecute"))


def test_equal_compares_values_and_is_the_default_operator() -> None:
    t = taint("k", "NoSchedule", "v")
    assert tolerates(tol("k", "Equal", "v", "NoSchedule"), t)
    assert tolerates(tol("k", "", "v", "NoSchedule"), t)
    assert not tolerates(tol("k", "Equal", "w", "NoSchedule"), t)
    assert not tolerates(tol("k", "", "", "NoSchedule"), t)
    assert tolerates(tol("k", "", "", "NoSchedule"), taint("k", "NoSchedule"))


def test_exists_ignores_the_value() -> None:
    assert tolerates(tol("k", "Exists", effect="NoSchedule"), taint("k", "NoSchedule", "v"))
    assert not tolerates(tol("k", "Exists", effect="NoSchedule"), taint("j", "NoSchedule"))


def test_empty_effect_matches_every_effect() -> None:
    for effect in ["NoSchedule", "PreferNoSchedule", "NoExecute"]:
        assert tolerates(tol("k", "Equal", "v"), taint("k", effect, "v"))
    assert not tolerates(tol("k", "Equal", "v", "NoExecute"), taint("k", "NoSchedule", "v"))


def test_comparison_and_unknown_operators_tolerate_nothing() -> None:
    # TaintTolerationComparisonOperators is alpha and off by default.
    assert not tolerates(tol("k", "Gt", "1"), taint("k", "NoSchedule", "5"))
    assert not tolerates(tol("k", "Lt", "9"), taint("k", "NoSchedule", "5"))
    assert not tolerates(tol("k", "Bogus", "5"), taint("k", "NoSchedule", "5"))


def test_empty_key_matches_every_key_whatever_the_operator() -> None:
    # As upstream's code reads (validation forbids this pairing for real pods).
    assert tolerates(tol("", "Equal", "v"), taint("any", "NoSchedule", "v"))
    assert not tolerates(tol("", "Equal", "v"), taint("any", "NoSchedule", "w"))


def test_find_matching_untolerated_taint() -> None:
    taints = [
        taint("soft", "PreferNoSchedule"),
        taint("a", "NoSchedule"),
        taint("b", "NoExecute"),
    ]
    assert find_matching_untolerated_taint(taints, [], do_not_schedule_taints) == taints[1]
    tolerations = [tol("a", "Exists")]
    assert find_matching_untolerated_taint(taints, tolerations, do_not_schedule_taints) == taints[2]
    assert find_matching_untolerated_taint(taints, tolerations, None) == taints[0]
    tolerations.append(tol("b", "Exists", effect="NoExecute"))
    assert find_matching_untolerated_taint(taints, tolerations, do_not_schedule_taints) is None
    assert tolerations_tolerate_taint(tolerations, taints[2])
    assert not tolerations_tolerate_taint([], taints[2])


def test_per_taint_set_answers_every_row() -> None:
    nodes = [
        make_node("a", taints=[{"key": "x", "effect": "NoSchedule"}]),
        make_node("b"),
        make_node("c", taints=[{"key": "x", "effect": "NoSchedule"}]),
        make_node(
            "d", taints=[{"key": "y", "effect": "NoSchedule"}, {"key": "z", "effect": "NoSchedule"}]
        ),
    ]
    table = make_table(nodes)
    rows = np.array([table.row_of(n) for n in "dcba"], dtype=np.intp)
    counts = per_taint_set(table, rows, len)
    assert counts.tolist() == [2, 1, 0, 1]


# --- normalization ---------------------------------------------------------------------


def normalized(scores: list[int], reverse: bool, max_priority: int = 100) -> list[int]:
    array = np.array(scores, dtype=np.int64)
    default_normalize_score(max_priority, reverse, array)
    return [int(x) for x in array]


def test_normalize_scales_to_max_priority() -> None:
    assert normalized([1, 2, 4], False) == [25, 50, 100]
    assert normalized([3, 7, 0], False) == [42, 100, 0]  # 300 / 7 = 42 (integer division)
    assert normalized([1, 2, 4], True) == [75, 50, 0]
    assert normalized([3, 7, 0], True) == [58, 0, 100]
    assert normalized([5, 10], False, max_priority=10) == [5, 10]


def test_normalize_all_zero() -> None:
    assert normalized([0, 0, 0], False) == [0, 0, 0]
    assert normalized([0, 0, 0], True) == [100, 100, 100]
    assert normalized([], True) == []


def test_normalize_truncates_toward_zero_like_go() -> None:
    assert normalized([-1, 3], False) == [-33, 100]  # Go: -100 / 3 == -33
    assert normalized([-5, 0], False) == [-5, 0]  # the maximum starts at 0
    assert normalized([-5, 0], True) == [100, 100]
