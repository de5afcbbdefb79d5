"""DefaultPreemption and nominated pods: pods nominated with a higher priority hold
their room, also in the dry run; and PreFilterExtensions see the dry run's what-if
changes on a clone of the cycle state.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import FilterPlugin, FilterScope, NodeVerdicts
from kubesched.framework.registry import register
from kubesched.framework.state.node_table import CPU, NodeTable
from kubesched.framework.types import PodInfo
from kubesched.testing import make_node
from tests.plugins.defaultpreemption.test_defaultpreemption import (
    COUNT_KEY,
    _Blockers,
    _close_unrun_evictions,  # noqa: F401 (autouse: closes the evictions left unrun)
    pod,
    setup,
    victims_on,
)

# --- nominated pods ----------------------------------------------------------------------------


def test_nominated_pods_of_higher_priority_hold_their_room() -> None:
    waiting = PodInfo(pod("waiting", cpu="2", priority=50))
    env = setup([make_node("n", cpu="3")], [], nominated={"n": [waiting]})
    state = CycleState()
    lower = PodInfo(pod("lower", cpu="2", priority=10))
    env.fw.run_pre_filter(state, lower, env.table)
    feasible, diagnosis = env.fw.run_filters_with_nominated_pods(
        state, lower, env.table, env.table.order()
    )
    assert len(feasible) == 0 and diagnosis.reasons_of(0) == ["Insufficient cpu"]
    # The nominated pod itself, and pods of higher priority, are not held back by it.
    for name, priority in (("waiting", 50), ("higher", 60)):
        other = PodInfo(pod(name, cpu="2", priority=priority))
        env.fw.run_pre_filter(state, other, env.table)
        feasible, _ = env.fw.run_filters_with_nominated_pods(
            state, other, env.table, env.table.order()
        )
        assert len(feasible) == 1


@register
class _Peeks(FilterPlugin):
    """Notes, for each row it filters, the cpu it sees requested there and the cpu the
    live table has requested there at that moment."""

    name = "test-PeeksAtTheTables"
    scope: ClassVar[FilterScope] = FilterScope.CLUSTER
    live: ClassVar[NodeTable | None] = None
    seen: ClassVar[list[tuple[str, bool, int, int]]] = []

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        return _Peeks.scope

    def filter(self, state: CycleState, pod: PodInfo, nodes: Any, rows: Any) -> NodeVerdicts:
        live = _Peeks.live
        assert live is not None
        for row in rows.tolist():
            seen = int(nodes.requested[row, CPU])
            _Peeks.seen.append(
                (nodes.names[row], nodes is live, seen, int(live.requested[row, CPU]))
            )
        return NodeVerdicts.passing(len(rows))


@pytest.mark.parametrize("scope", [FilterScope.AMOUNTS, FilterScope.ROW, FilterScope.CLUSTER])
def test_nominated_pods_are_added_to_a_copy_never_to_the_live_table(scope: FilterScope) -> None:
    waiting = [PodInfo(pod(f"waiting{i}", cpu="1", priority=50)) for i in range(2)]
    env = setup(
        [make_node(f"n{i}", cpu="4") for i in range(3)],
        [pod("placed", cpu="1", node="n1")],
        nominated={"n0": [waiting[0]], "n1": [waiting[1]]},
        extra_plugins=["test-PeeksAtTheTables"],
    )
    _Peeks.scope, _Peeks.live, _Peeks.seen = scope, env.table, []
    lower = PodInfo(pod("lower", cpu="1", priority=10))
    state = CycleState()
    env.fw.run_pre_filter(state, lower, env.table)
    feasible, _ = env.fw.run_filters_with_nominated_pods(state, lower, env.table, env.table.order())
    assert len(feasible) == 3
    with_nominated = {(n, seen, live) for n, is_live, seen, live in _Peeks.seen if not is_live}
    # Each node with a nominated pod is filtered once with it, on a copy, while the
    # live table holds only the placed pods; then once more without it, on the table.
    assert with_nominated == {("n0", 1000, 0), ("n1", 2000, 1000)}
    on_live = sorted((n, seen) for n, is_live, seen, _ in _Peeks.seen if is_live)
    assert on_live == [("n0", 0), ("n1", 1000), ("n2", 0)]


def test_nominated_pods_count_in_the_dry_run() -> None:
    waiting = PodInfo(pod("waiting", cpu="2", priority=50))
    env = setup(
        [make_node("n", cpu="3")], [pod("v", cpu="2", node="n")], nominated={"n": [waiting]}
    )
    nominated, status = env.post_filter(pod("p", cpu="2", priority=10))
    # Evicting v frees 2 cpu, which the nominated pod needs: p cannot fit there.
    assert nominated == "" and status.message() == (
        "preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )


def test_prefilter_extensions_see_the_what_if_changes() -> None:
    env = setup(
        [make_node("n", cpu="4")],
        [pod("blocker", node="n", labels={"block": "true"}), pod("other", node="n")],
        extra_plugins=["test-CountBlockers"],
    )
    preemptor = pod("p", priority=10, labels={"wants-alone": "true"})
    names, _, status = victims_on(env, preemptor, "n")
    assert status.is_success() and names == ["blocker"]  # "other" was reprieved

    info = PodInfo(preemptor)
    state, diagnosis = env.diagnose(info)
    assert diagnosis.reasons_of(0) == ["node(s) had a blocker"]
    before = dict(state.read(COUNT_KEY, _Blockers).per_row)
    result, status = env.fw.run_post_filter(state, info, diagnosis)
    assert status.is_success() and result is not None and result.nominated_node_name == "n"
    assert state.read(COUNT_KEY, _Blockers).per_row == before  # dry runs work on clones
    env.evict()
    assert env.cluster.evicted == ["default/blocker"]
