"""The plugins alone, on a node table built by kubesched's test helpers."""

from __future__ import annotations

import pytest
from kubesched_team_plugins import PreferNodeLabel, TeamNodes
from kubesched_team_plugins.team_nodes import REASON

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node, make_pod, make_table

NODES = [
    make_node("shared", labels={"example.com/capacity-type": "spot"}),
    make_node("red", labels={"example.com/team": "red", "example.com/capacity-type": "on-demand"}),
    make_node("blue", labels={"example.com/team": "blue"}),
]


def passing(pod: PodInfo) -> set[str]:
    table = make_table(NODES)
    rows = table.order()
    verdicts = TeamNodes().filter(CycleState(), pod, table, rows)
    for reason, _ in verdicts.reasons:
        assert reason == REASON
    return {table.names[r] for r in rows[verdicts.passed()]}


def test_team_nodes_take_only_their_team() -> None:
    assert passing(PodInfo(make_pod("p", labels={"example.com/team": "red"}))) == {
        "shared",
        "red",
    }
    assert passing(PodInfo(make_pod("p"))) == {"shared"}


def test_prefer_node_label_scores_by_value() -> None:
    table = make_table(NODES)
    rows = table.order()
    plugin = PreferNodeLabel({"scores": {"spot": 100, "on-demand": 30}})
    scores = plugin.score(CycleState(), PodInfo(make_pod("p")), table, rows)
    by_node = dict(zip((table.names[r] for r in rows), scores.tolist(), strict=True))
    assert by_node == {"shared": 100, "red": 30, "blue": 0}


@pytest.mark.parametrize(
    ("args", "field"),
    [({"label": ""}, "args.label"), ({"scores": {"spot": 101}}, "args.scores['spot']")],
)
def test_prefer_node_label_refuses_bad_args(args: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field.replace("[", r"\[")):
        PreferNodeLabel(args)
