"""NodeAffinity: PreFilter, Filter (selector AND required terms, addedAffinity), Score, hints."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.nodeaffinity import NodeAffinity
from kubesched.testing import make_node, make_pod, make_table

POD_REASON = "node(s) didn't match Pod's node affinity/selector"
ENFORCED_REASON = "node(s) didn't match scheduler-enforced node affinity"
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])
POD_FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [POD_REASON])
ENFORCED_FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [ENFORCED_REASON])

LABELS = {
    "n1": {"zone": "a", "gen": "3", "disk": "ssd"},
    "n2": {"zone": "b", "gen": "10"},
    "n3": {"zone": "c"},
    "n4": {},
    "n5": {"zone": "a", "gen": "7"},
}


def table() -> NodeTable:
    return make_table(make_node(name, labels=labels) for name, labels in LABELS.items())


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def preferred(*weighted: tuple[int, dict[str, Any]]) -> dict[str, Any]:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": w, "preference": t} for w, t in weighted
        ]
    }


def pod(
    node_selector: dict[str, str] | None = None, node_affinity: dict[str, Any] | None = None
) -> PodInfo:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if node_affinity is not None:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return PodInfo(make_pod("p", spec=spec))


def run_filter(
    p: PodInfo, plugin: NodeAffinity | None = None, pre_filter: bool = True
) -> dict[str, tuple[int, list[str]]]:
    plugin = plugin or NodeAffinity()
    nodes, state = table(), CycleState()
    if pre_filter:
        _, status = plugin.pre_filter(state, p, nodes)
        assert status.code in (Code.SUCCESS, Code.SKIP)
    rows = nodes.order()
    result = plugin.filter(state, p, nodes, rows)
    return {
        nodes.names[row]: (int(result.codes[i]), [r for r, mask in result.reasons if mask[i]])
        for i, row in enumerate(rows)
    }


def passing(verdicts: dict[str, tuple[int, list[str]]]) -> list[str]:
    return [name for name, v in verdicts.items() if v == PASS]


def run_score(
    p: PodInfo, plugin: NodeAffinity | None = None
) -> tuple[int, dict[str, int], dict[str, int]]:
    """(PreScore code, raw scores, normalized scores)."""
    plugin = plugin or NodeAffinity()
    nodes, state = table(), CycleState()
    rows = nodes.order()
    code = plugin.pre_score(state, p, nodes, rows).code
    raw = plugin.score(state, p, nodes, rows)
    names = [nodes.names[r] for r in rows]
    before = dict(zip(names, raw.tolist(), strict=True))
    plugin.normalize_scores(state, p, raw)
    return code, before, dict(zip(names, raw.tolist(), strict=True))


# --- PreFilter -------------------------------------------------------------------------


def test_pre_filter_skips_pods_without_selector_or_required_affinity() -> None:
    result, status = NodeAffinity().pre_filter(CycleState(), pod(), table())
    assert (result, status.code) == (None, Code.SKIP)
    only_preferred = pod(
        node_affinity=preferred((1, {"matchExpressions": [expr("zone", "Exists")]}))
    )
    _, status = NodeAffinity().pre_filter(CycleState(), only_preferred, table())
    assert status.code == Code.SKIP


def test_pre_filter_runs_for_selector_or_added_affinity() -> None:
    result, status = NodeAffinity().pre_filter(CycleState(), pod({"zone": "a"}), table())
    assert (result, status.code) == (None, Code.SUCCESS)
    added = NodeAffinity(
        {"addedAffinity": required({"matchExpressions": [expr("zone", "Exists")]})}
    )
    result, status = added.pre_filter(CycleState(), pod(), table())
    assert (result, status.code) == (None, Code.SUCCESS)


def test_pre_filter_narrows_to_named_nodes() -> None:
    p = pod(
        node_affinity=required(
            {"matchFields": [expr("metadata.name", "In", "n1")]},
            {"matchFields": [expr("metadata.name", "In", "n2")]},
        )
    )
    result, status = NodeAffinity().pre_filter(CycleState(), p, table())
    assert status.code == Code.SUCCESS
    assert result is not None and result.node_names == {"n1", "n2"}


def test_pre_filter_intersects_names_within_a_term() -> None:
    p = pod(
        node_affinity=required(
            {
                "matchExpressions": [expr("zone", "Exists")],
                "matchFields": [
                    expr("metadata.name", "In", "n1", "n2"),
                    expr("metadata.name", "In", "n2", "n3"),
                ],
            }
        )
    )
    result, _ = NodeAffinity().pre_filter(CycleState(), p, table())
    assert result is not None and result.node_names == {"n2"}


def test_pre_filter_gives_no_node_set_when_a_term_names_no_node() -> None:
    p = pod(
        node_affinity=required(
            {"matchFields": [expr("metadata.name", "In", "n1")]},
            {"matchExpressions": [expr("zone", "In", "b")]},
        )
    )
    result, status = NodeAffinity().pre_filter(CycleState(), p, table())
    assert (result, status.code) == (None, Code.SUCCESS)
    not_in = pod(node_affinity=required({"matchFields": [expr("metadata.name", "NotIn", "n1")]}))
    result, _ = NodeAffinity().pre_filter(CycleState(), not_in, table())
    assert result is None


def test_pre_filter_conflicting_names() -> None:
    p = pod(
        node_affinity=required(
            {
                "matchFields": [
                    expr("metadata.name", "In", "n1"),
                    expr("metadata.name", "In", "n2"),
                ]
            }
        )
    )
    result, status = NodeAffinity().pre_filter(CycleState(), p, table())
    assert result is None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "pod affinity terms conflict"


# --- Filter ----------------------------------------------------------------------------


def test_node_selector_and_required_terms_must_both_hold() -> None:
    p = pod({"zone": "a"}, required({"matchExpressions": [expr("gen", "Lt", "5")]}))
    got = run_filter(p)
    assert got == {"n1": PASS, "n2": POD_FAIL, "n3": POD_FAIL, "n4": POD_FAIL, "n5": POD_FAIL}


def test_node_selector_alone() -> None:
    assert passing(run_filter(pod({"zone": "a"}))) == ["n1", "n5"]
    assert passing(run_filter(pod({"zone": "a", "disk": "ssd"}))) == ["n1"]
    assert passing(run_filter(pod({"zone": "nowhere"}))) == []


def test_required_terms_are_ored() -> None:
    p = pod(
        node_affinity=required(
            {"matchExpressions": [expr("zone", "In", "b")]},
            {"matchExpressions": [expr("disk", "Exists")]},
        )
    )
    assert passing(run_filter(p)) == ["n1", "n2"]


def test_not_in_matches_a_node_without_the_key() -> None:
    p = pod(node_affinity=required({"matchExpressions": [expr("zone", "NotIn", "a", "b")]}))
    assert passing(run_filter(p)) == ["n3", "n4"]
    p = pod(node_affinity=required({"matchExpressions": [expr("zone", "DoesNotExist")]}))
    assert passing(run_filter(p)) == ["n4"]


def test_gt_and_lt() -> None:
    p = pod(node_affinity=required({"matchExpressions": [expr("gen", "Gt", "4")]}))
    assert passing(run_filter(p)) == ["n2", "n5"]
    p = pod(
        node_affinity=required(
            {"matchExpressions": [expr("gen", "Gt", "4"), expr("gen", "Lt", "8")]}
        )
    )
    assert passing(run_filter(p)) == ["n5"]


def test_match_fields() -> None:
    p = pod(node_affinity=required({"matchFields": [expr("metadata.name", "In", "n3")]}))
    assert passing(run_filter(p)) == ["n3"]
    p = pod(node_affinity=required({"matchFields": [expr("metadata.name", "NotIn", "n3")]}))
    assert passing(run_filter(p)) == ["n1", "n2", "n4", "n5"]


def test_required_affinity_without_terms_matches_nothing() -> None:
    p = pod(
        node_affinity={"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    )
    assert all(v == POD_FAIL for v in run_filter(p).values())
    p = pod(node_affinity=required({}))  # one empty term
    assert passing(run_filter(p)) == []


def test_invalid_term_matches_nothing_but_others_count() -> None:
    p = pod(
        node_affinity=required(
            {"matchExpressions": [expr("zone", "Gt", "a")]},
            {"matchExpressions": [expr("zone", "In", "c")]},
        )
    )
    assert passing(run_filter(p)) == ["n3"]


def test_filter_without_pre_filter_state() -> None:
    p = pod({"zone": "a"}, required({"matchExpressions": [expr("gen", "Lt", "5")]}))
    assert run_filter(p, pre_filter=False) == run_filter(p)


def test_added_affinity_is_enforced_first() -> None:
    plugin = NodeAffinity(
        {"addedAffinity": required({"matchExpressions": [expr("zone", "In", "a", "b")]})}
    )
    got = run_filter(pod({"disk": "ssd"}), plugin)
    # A node failing the added affinity carries only the enforced reason.
    assert got == {
        "n1": PASS,
        "n2": POD_FAIL,
        "n3": ENFORCED_FAIL,
        "n4": ENFORCED_FAIL,
        "n5": POD_FAIL,
    }
    # Pods with nothing of their own are still filtered by the added affinity.
    assert passing(run_filter(pod(), plugin)) == ["n1", "n2", "n5"]


def test_added_affinity_without_terms_rejects_every_node() -> None:
    plugin = NodeAffinity(
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}
            }
        }
    )
    assert all(v == ENFORCED_FAIL for v in run_filter(pod(), plugin).values())


def test_invalid_added_affinity_fails_to_build() -> None:
    with pytest.raises(ValueError, match=r"addedAffinity\.requiredDuringScheduling"):
        NodeAffinity({"addedAffinity": required({"matchExpressions": [expr("zone", "Near", "a")]})})
    with pytest.raises(ValueError, match=r"addedAffinity\.preferredDuringScheduling"):
        NodeAffinity(
            {"addedAffinity": preferred((1, {"matchExpressions": [expr("gen", "Gt", "1", "2")]}))}
        )


# --- Score -----------------------------------------------------------------------------


def test_pre_score_skips_without_preferred_terms() -> None:
    nodes = table()
    status = NodeAffinity().pre_score(CycleState(), pod({"zone": "a"}), nodes, nodes.order())
    assert status.code == Code.SKIP


def test_preferred_weights_and_normalization() -> None:
    p = pod(
        node_affinity=preferred(
            (10, {"matchExpressions": [expr("zone", "In", "a")]}),
            (3, {"matchExpressions": [expr("gen", "Exists")]}),
            (0, {"matchExpressions": [expr("zone", "Exists")]}),  # weight 0: ignored
        )
    )
    code, raw, normalized = run_score(p)
    assert code == Code.SUCCESS
    assert raw == {"n1": 13, "n2": 3, "n3": 0, "n4": 0, "n5": 13}
    # 100 * score / 13, integer division.
    assert normalized == {"n1": 100, "n2": 23, "n3": 0, "n4": 0, "n5": 100}


def test_added_preferred_terms_add_to_every_pod() -> None:
    plugin = NodeAffinity(
        {"addedAffinity": preferred((5, {"matchExpressions": [expr("disk", "Exists")]}))}
    )
    p = pod(
        node_affinity=preferred(
            (10, {"matchExpressions": [expr("zone", "In", "a")]}),
            (3, {"matchExpressions": [expr("gen", "Exists")]}),
        )
    )
    _, raw, normalized = run_score(p, plugin)
    assert raw == {"n1": 18, "n2": 3, "n3": 0, "n4": 0, "n5": 13}
    assert normalized == {"n1": 100, "n2": 16, "n3": 0, "n4": 0, "n5": 72}
    # A pod without preferences is scored by the added terms alone (not skipped).
    code, raw, normalized = run_score(pod(), plugin)
    assert code == Code.SUCCESS
    assert raw == {"n1": 5, "n2": 0, "n3": 0, "n4": 0, "n5": 0}
    assert normalized == {"n1": 100, "n2": 0, "n3": 0, "n4": 0, "n5": 0}


def test_all_zero_scores_stay_zero() -> None:
    p = pod(node_affinity=preferred((4, {"matchExpressions": [expr("zone", "In", "zz")]})))
    _, raw, normalized = run_score(p)
    assert set(raw.values()) == {0}
    assert set(normalized.values()) == {0}


def test_preferred_match_fields() -> None:
    p = pod(node_affinity=preferred((7, {"matchFields": [expr("metadata.name", "In", "n4")]})))
    _, raw, normalized = run_score(p)
    assert raw == {"n1": 0, "n2": 0, "n3": 0, "n4": 7, "n5": 0}
    assert normalized["n4"] == 100


def test_pre_score_error_on_invalid_preferred_term() -> None:
    nodes = table()
    p = pod(node_affinity=preferred((1, {"matchExpressions": [expr("zone", "Gt", "a")]})))
    status = NodeAffinity().pre_score(CycleState(), p, nodes, nodes.order())
    assert status.code == Code.ERROR


# --- queueing --------------------------------------------------------------------------


def test_events() -> None:
    events = NodeAffinity().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
    ]
    assert events[0].hint is not None


def test_node_hint() -> None:
    plugin = NodeAffinity()
    p = pod({"zone": "a"})
    in_a = make_node("n", labels={"zone": "a"})
    in_a_more = make_node("n", labels={"zone": "a", "x": "y"})
    in_b = make_node("n", labels={"zone": "b"})
    assert plugin.is_schedulable_after_node_change(p, None, in_a)
    assert not plugin.is_schedulable_after_node_change(p, None, in_b)
    assert plugin.is_schedulable_after_node_change(p, in_b, in_a)
    assert not plugin.is_schedulable_after_node_change(p, in_a, in_a_more)
    assert not plugin.is_schedulable_after_node_change(p, in_a, in_b)
    enforcing = NodeAffinity(
        {"addedAffinity": required({"matchExpressions": [expr("x", "Exists")]})}
    )
    assert not enforcing.is_schedulable_after_node_change(p, None, in_a)
    assert enforcing.is_schedulable_after_node_change(p, None, in_a_more)
