"""TaintToleration: filter verdicts and message, PreferNoSchedule scores, hints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.tainttoleration import TaintToleration
from kubesched.testing import make_node, make_pod, make_table

REASON = "node(s) had untolerated taint(s)"
FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON])
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])

NODES = {
    "clean": [],
    "nosched": [{"key": "k1", "value": "v1", "effect": "NoSchedule"}],
    "noexec": [{"key": "k2", "effect": "NoExecute"}],
    "soft": [
        {"key": "p1", "effect": "PreferNoSchedule"},
        {"key": "p2", "effect": "PreferNoSchedule"},
    ],
    "mixed": [
        {"key": "p1", "effect": "PreferNoSchedule"},
        {"key": "k1", "value": "v1", "effect": "NoSchedule"},
    ],
}


def table() -> NodeTable:
    return make_table(make_node(name, taints=taints) for name, taints in NODES.items())


def pod_with(*tolerations: dict[str, Any]) -> PodInfo:
    return PodInfo(make_pod("p", spec={"tolerations": list(tolerations)}))


def verdicts(pod: PodInfo) -> dict[str, tuple[int, list[str]]]:
    nodes = table()
    rows = nodes.order()
    result = TaintToleration().filter(CycleState(), pod, nodes, rows)
    return {
        nodes.names[row]: (int(result.codes[i]), [r for r, mask in result.reasons if mask[i]])
        for i, row in enumerate(rows)
    }


def scores(pod: PodInfo) -> tuple[dict[str, int], dict[str, int]]:
    """(raw scores, normalized scores) by node name."""
    nodes = table()
    rows = nodes.order()
    plugin, state = TaintToleration(), CycleState()
    assert plugin.pre_score(state, pod, nodes, rows).code == Code.SUCCESS
    raw = plugin.score(state, pod, nodes, rows)
    names = [nodes.names[r] for r in rows]
    before = dict(zip(names, raw.tolist(), strict=True))
    plugin.normalize_scores(state, pod, raw)
    return before, dict(zip(names, raw.tolist(), strict=True))


# --- filter ----------------------------------------------------------------------------


def test_no_tolerations() -> None:
    assert verdicts(pod_with()) == {
        "clean": PASS,
        "nosched": FAIL,
        "noexec": FAIL,
        "soft": PASS,  # PreferNoSchedule never filters
        "mixed": FAIL,
    }


def test_equal_toleration_with_value() -> None:
    got = verdicts(
        pod_with({"key": "k1", "operator": "Equal", "value": "v1", "effect": "NoSchedule"})
    )
    assert got == {"clean": PASS, "nosched": PASS, "noexec": FAIL, "soft": PASS, "mixed": PASS}
    wrong_value = pod_with({"key": "k1", "operator": "Equal", "value": "v2"})
    assert verdicts(wrong_value)["nosched"] == FAIL
    default_operator = pod_with({"key": "k1", "value": "v1"})
    assert verdicts(default_operator)["nosched"] == PASS


def test_exists_with_empty_key_tolerates_everything() -> None:
    got = verdicts(pod_with({"operator": "Exists"}))
    assert all(v == PASS for v in got.values())


def test_effect_must_match_unless_empty() -> None:
    only_noschedule = pod_with({"key": "k2", "operator": "Exists", "effect": "NoSchedule"})
    assert verdicts(only_noschedule)["noexec"] == FAIL
    any_effect = pod_with({"key": "k2", "operator": "Exists"})
    assert verdicts(any_effect)["noexec"] == PASS
    noexecute = pod_with({"key": "k2", "operator": "Exists", "effect": "NoExecute"})
    assert verdicts(noexecute)["noexec"] == PASS


def test_every_filtered_taint_must_be_tolerated() -> None:
    pod = pod_with(
        {"key": "k1", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "k2", "operator": "Exists", "effect": "NoExecute"},
    )
    assert all(v == PASS for v in verdicts(pod).values())


def test_nodes_sharing_a_taint_set_in_any_order() -> None:
    nodes = make_table(
        [
            make_node(
                "a",
                taints=[{"key": "x", "effect": "NoSchedule"}, {"key": "y", "effect": "NoExecute"}],
            ),
            make_node(
                "b",
                taints=[{"key": "y", "effect": "NoExecute"}, {"key": "x", "effect": "NoSchedule"}],
            ),
            make_node("c"),
        ]
    )
    rows = np.array([nodes.row_of(n) for n in "cba"], dtype=np.intp)
    pod = pod_with({"key": "x", "operator": "Exists"})
    result = TaintToleration().filter(CycleState(), pod, nodes, rows)
    assert result.codes.tolist() == [0, FAIL[0], FAIL[0]]
    assert [reason for reason, _ in result.reasons] == [REASON]


# --- score -----------------------------------------------------------------------------


def test_score_counts_untolerated_prefer_no_schedule_taints() -> None:
    raw, normalized = scores(pod_with())
    assert raw == {"clean": 0, "nosched": 0, "noexec": 0, "soft": 2, "mixed": 1}
    # Reversed: 100 - 100 * count / max(count).
    assert normalized == {"clean": 100, "nosched": 100, "noexec": 100, "soft": 0, "mixed": 50}


def test_prefer_no_schedule_toleration_lowers_the_count() -> None:
    raw, normalized = scores(
        pod_with({"key": "p1", "operator": "Exists", "effect": "PreferNoSchedule"})
    )
    assert raw == {"clean": 0, "nosched": 0, "noexec": 0, "soft": 1, "mixed": 0}
    assert normalized == {"clean": 100, "nosched": 100, "noexec": 100, "soft": 0, "mixed": 100}


def test_empty_effect_toleration_counts_for_scoring() -> None:
    raw, _ = scores(pod_with({"key": "p2", "operator": "Exists"}))
    assert raw["soft"] == 1
    raw, normalized = scores(pod_with({"operator": "Exists"}))
    assert set(raw.values()) == {0}
    assert set(normalized.values()) == {100}  # all zero, reversed: everyone gets the maximum


def test_tolerations_of_other_effects_do_not_count_for_scoring() -> None:
    raw, _ = scores(
        pod_with(
            {"key": "p1", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "p2", "operator": "Exists", "effect": "NoExecute"},
        )
    )
    assert raw == {"clean": 0, "nosched": 0, "noexec": 0, "soft": 2, "mixed": 1}


def test_score_without_pre_score_is_an_error() -> None:
    nodes = table()
    with pytest.raises(KeyError):
        TaintToleration().score(CycleState(), pod_with(), nodes, nodes.order())


# --- queueing --------------------------------------------------------------------------


def test_events() -> None:
    events = TaintToleration().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (Resource.POD, ActionType.UPDATE_POD_TOLERATION),
    ]
    assert all(e.hint is not None for e in events)


def test_node_hint() -> None:
    plugin = TaintToleration()
    pod = pod_with({"key": "ok", "operator": "Exists"})
    clean = make_node("n")
    tainted = make_node("n", taints=[{"key": "bad", "effect": "NoSchedule"}])
    tolerated = make_node("n", taints=[{"key": "ok", "effect": "NoSchedule"}])
    soft = make_node("n", taints=[{"key": "bad", "effect": "PreferNoSchedule"}])
    assert plugin.is_schedulable_after_node_change(pod, None, clean)
    assert plugin.is_schedulable_after_node_change(pod, None, tolerated)
    assert plugin.is_schedulable_after_node_change(pod, None, soft)
    assert not plugin.is_schedulable_after_node_change(pod, None, tainted)
    assert plugin.is_schedulable_after_node_change(pod, tainted, clean)
    assert not plugin.is_schedulable_after_node_change(pod, clean, tolerated)  # was fine already
    assert not plugin.is_schedulable_after_node_change(pod, clean, tainted)


def test_pod_toleration_hint() -> None:
    plugin = TaintToleration()
    target = pod_with()
    assert plugin.is_schedulable_after_pod_toleration_change(target, target.pod, make_pod("p"))
    assert not plugin.is_schedulable_after_pod_toleration_change(target, None, make_pod("q"))
