"""Framework.run_filter_pass: the candidates in findNodesThatPassFilters' order from
`start`, a first part alone when it holds more than `enough` feasible nodes, else
all of them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.types import PodInfo
from kubesched.plugins.registry import default_registry
from kubesched.testing import make_node, make_pod, make_table


@settings(max_examples=150, deadline=None)
@given(
    fits=st.lists(st.booleans(), min_size=1, max_size=12),
    start=st.integers(0, 11),
    first=st.none() | st.integers(0, 14),
    enough=st.integers(0, 6),
)
def test_a_first_part_only_when_it_holds_enough(
    fits: list[bool], start: int, first: int | None, enough: int
) -> None:
    nodes = [make_node(f"n{i}", cpu="4" if fit else "1") for i, fit in enumerate(fits)]
    table = make_table(nodes, [])
    profile = ProfileConfig(
        "default-scheduler",
        {
            "multiPoint": PluginSet(
                [PluginRef(name) for name in ("PrioritySort", "NodeResourcesFit", "DefaultBinder")]
            )
        },
    )
    fw = Framework(profile, Handle(table), default_registry())
    pod = PodInfo(make_pod("p", cpu="2"))
    state = CycleState()
    _, status = fw.run_pre_filter(state, pod, table)
    assert status.is_success()
    candidates = table.order()
    start %= len(candidates)

    feasible, diagnosis, tried = fw.run_filter_pass(
        state, pod, table, candidates, start, first, enough
    )

    rotated = np.concatenate([candidates[start:], candidates[:start]]).tolist()
    fitting = [row for row in rotated if fits[row]]
    prefix = rotated[:first] if first is not None else rotated
    if first is not None and sum(fits[row] for row in prefix) > enough:
        assert tried.tolist() == prefix
    else:
        assert tried.tolist() == rotated
    assert feasible.tolist() == [row for row in tried.tolist() if fits[row]]
    assert feasible.tolist() == fitting[: len(feasible)]  # the same nodes, in order
    assert sorted(diagnosis.rows.tolist()) == sorted(r for r in tried.tolist() if not fits[r])
