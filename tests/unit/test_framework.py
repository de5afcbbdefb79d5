"""The framework runner and scheduler: every extension point with small test plugins."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import numpy as np
import pytest

from kubesched.framework import interfaces as ifc
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis, fit_error_message
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet, simulate
from kubesched.testing import make_node, make_pod

CALLS: list[str] = []


@register
class OnlyEven(ifc.FilterPlugin):
    """Rejects nodes whose name ends in an odd digit."""

    name = "test-OnlyEven"

    def filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> ifc.NodeVerdicts:
        odd = np.array([int(nodes.names[r][-1]) % 2 == 1 for r in rows], dtype=bool)
        return ifc.NodeVerdicts.failing(len(rows), [("node(s) were odd", odd)])


@register
class Boom(ifc.FilterPlugin):
    name = "test-Boom"

    def filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> ifc.NodeVerdicts:
        if pod.pod.metadata.labels.get("boom"):
            raise ValueError("kaboom")
        return ifc.NodeVerdicts.passing(len(rows))


@register
class PreferLast(ifc.ScorePlugin):
    name = "test-PreferLast"

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        return np.array([int(nodes.names[r][-1]) * 10 for r in rows], dtype=np.int64)


@register
class TooHigh(ifc.ScorePlugin):
    name = "test-TooHigh"

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        return np.full(len(rows), 101, dtype=np.int64)


@register
class Flat(ifc.ScorePlugin):
    name = "test-Flat"

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        return np.zeros(len(rows), dtype=np.int64)


@register
class PickNodes(ifc.PreFilterPlugin):
    name = "test-PickNodes"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[ifc.PreFilterResult | None, Status]:
        wanted = pod.pod.metadata.annotations.get("nodes")
        if wanted is None:
            return None, Status.skip()
        return ifc.PreFilterResult(set(wanted.split(",")) - {""}), Status()


@register
class Recorder(ifc.ReservePlugin, ifc.PermitPlugin, ifc.PreBindPlugin, ifc.PostBindPlugin):
    name = "test-Recorder"

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        CALLS.append(f"reserve {pod.name} {node_name}")
        if pod.pod.metadata.labels.get("reserve") == "fail":
            return Status.unschedulable("no room in the reservation book")
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        CALLS.append(f"unreserve {pod.name} {node_name}")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        mode = pod.pod.metadata.labels.get("permit")
        if mode == "wait":
            return Status.wait(), 30.0
        if mode == "reject":
            return Status.unschedulable("permit says no"), 0.0
        return Status(), 0.0

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        CALLS.append(f"prebind {pod.name} {node_name}")
        return Status()

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        CALLS.append(f"postbind {pod.name} {node_name}")


def profile(*names: str, name: str = "default-scheduler", **weights: int) -> ProfileConfig:
    refs = [PluginRef("PrioritySort"), PluginRef("DefaultBinder")]
    refs += [PluginRef(n, weights.get(n.replace("-", "_"), 0)) for n in names]
    return ProfileConfig(name, {"multiPoint": PluginSet(refs)})


NODES = [make_node(f"node-{i}") for i in range(1, 5)]


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


def test_filter_verdicts_and_fit_error_message() -> None:
    result = simulate(NODES, [make_pod("p")], [profile("test-OnlyEven")], seed=1)
    assert result.placements["default/p"] in {"node-2", "node-4"}
    lonely = [make_node("node-1"), make_node("node-3")]
    result = simulate(lonely, [make_pod("p")], [profile("test-OnlyEven")], seed=1)
    assert result.placements["default/p"] is None
    assert result.reasons["default/p"] == "0/2 nodes are available: 2 node(s) were odd."


def test_score_picks_the_best_node_and_weights_multiply() -> None:
    result = simulate(NODES, [make_pod("p")], [profile("test-PreferLast")], seed=1)
    assert result.placements["default/p"] == "node-4"


def test_ties_are_broken_at_random_but_reproducibly_with_a_seed() -> None:
    pods = [make_pod(f"p{i}") for i in range(40)]

    def run(seed: int) -> dict[str, str | None]:
        return simulate(NODES, pods, [profile("test-Flat")], seed=seed).placements

    assert run(7) == run(7)
    assert len(set(run(7).values())) > 1  # ties spread over several nodes
    assert run(7) != run(8)


def test_score_out_of_range_is_a_scheduler_error_and_the_scheduler_goes_on() -> None:
    result = simulate(NODES, [make_pod("p")], [profile("test-TooHigh")], seed=1)
    assert result.placements["default/p"] is None
    assert "invalid score 101" in result.reasons["default/p"]
    assert result.outcomes["default/p"].reason == "SchedulerError"


def test_a_raising_filter_fails_only_that_pod() -> None:
    pods = [make_pod("bad", labels={"boom": "1"}), make_pod("good")]
    result = simulate(NODES, pods, [profile("test-Boom")], seed=1)
    assert result.placements["default/good"] is not None
    assert result.placements["default/bad"] is None
    assert result.reasons["default/bad"] == 'running "test-Boom" filter plugin: kaboom'
    # An error sends the pod to backoff. It is retried once after "good" changed
    # the cluster, then the simulator stops: a third try would meet the same cluster.
    assert result.outcomes["default/bad"].attempts == 2
    # (the 1 s backoff ends in the window [1, 2), flushed at 2.0)
    assert result.simulated_seconds == 2.0


def test_prefilter_node_set_limits_candidates_and_names_the_absent_nodes() -> None:
    pod = make_pod("p")
    pod.metadata.annotations = {"nodes": "node-3,node-9"}
    result = simulate(NODES, [pod], [profile("test-PickNodes", "test-OnlyEven")], seed=1)
    assert result.placements["default/p"] is None
    assert result.reasons["default/p"] == (
        "0/4 nodes are available: 1 node(s) were odd, "
        "3 node(s) didn't satisfy plugin(s) [test-PickNodes]."
    )
    pod.metadata.annotations = {"nodes": ""}
    result = simulate(NODES, [pod], [profile("test-PickNodes")], seed=1)
    assert result.reasons["default/p"] == (
        "0/4 nodes are available: node(s) didn't satisfy plugin test-PickNodes."
    )


def test_reserve_failure_unreserves_and_forgets() -> None:
    result = simulate(
        NODES[:1], [make_pod("p", labels={"reserve": "fail"})], [profile("test-Recorder")]
    )
    assert result.placements["default/p"] is None
    assert result.reasons["default/p"] == "no room in the reservation book"
    assert CALLS == ["reserve p node-1", "unreserve p node-1"]
    assert result.nodes[0].pods == 0  # the assumed pod was forgotten


def test_permit_reject_and_successful_binding_cycle() -> None:
    result = simulate(
        NODES[:1],
        [make_pod("no", labels={"permit": "reject"}), make_pod("yes")],
        [profile("test-Recorder")],
    )
    assert result.reasons["default/no"] == "permit says no"
    assert result.placements["default/yes"] == "node-1"
    assert CALLS[-3:] == ["reserve yes node-1", "prebind yes node-1", "postbind yes node-1"]


def test_permit_wait_times_out_in_simulated_time() -> None:
    result = simulate(
        NODES[:1], [make_pod("p", labels={"permit": "wait"})], [profile("test-Recorder")]
    )
    assert result.placements["default/p"] is None
    assert (
        result.reasons["default/p"]
        == "rejected due to timeout after waiting 30s at plugin test-Recorder"
    )
    assert result.simulated_seconds >= 30


def test_permit_wait_then_allow_binds() -> None:
    async def scenario() -> tuple[str, list[str]]:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"node-1": NODES[0]})
        pod = make_pod("p", labels={"permit": "wait"})
        cluster.pods[pod.key] = pod
        sched = Scheduler([profile("test-Recorder")], cluster, clock=clock)
        cluster.watch(sched)
        sched.schedule_one(sched.queue.pop_nowait())  # type: ignore[arg-type]
        await asyncio.sleep(0)
        waiting = sched.waiting_pods.get("default/p")
        assert waiting is not None and cluster.pods["default/p"].spec.node_name == ""
        waiting.allow("test-Recorder")
        await run_until_quiet(sched, clock)
        return cluster.pods["default/p"].spec.node_name, [e.reason for e in cluster.events]

    node, events = asyncio.run(scenario())
    assert node == "node-1"
    assert events == ["Scheduled"]


def test_profiles_are_chosen_by_scheduler_name() -> None:
    pods = [
        make_pod("a", spec={"schedulerName": "even"}),
        make_pod("b", spec={"schedulerName": "last"}),
        make_pod("c", spec={"schedulerName": "someone-else"}),
    ]
    result = simulate(
        NODES,
        pods,
        [profile("test-OnlyEven", name="even"), profile("test-PreferLast", name="last")],
        seed=3,
    )
    assert result.placements["default/a"] in {"node-2", "node-4"}
    assert result.placements["default/b"] == "node-4"
    assert result.placements["default/c"] is None
    assert result.unhandled["default/c"] == 'no profile for schedulerName "someone-else"'


def test_fit_error_sorts_reasons_as_strings() -> None:
    d = Diagnosis.empty()
    d.reasons = [
        ("Insufficient cpu", np.arange(2)),
        ("node(s) were unschedulable", np.arange(1)),
        ("node(s) had untolerated taint {dedicated: gpu}", np.arange(1)),
        ("Too many pods", np.arange(10)),
    ]
    assert fit_error_message(14, d) == (
        "0/14 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "1 node(s) were unschedulable, 10 Too many pods, 2 Insufficient cpu."
    )


def test_no_nodes_at_all() -> None:
    result = simulate([], [make_pod("p")], [profile()], seed=1)
    assert result.reasons["default/p"] == "no nodes available to schedule pods"


class _Args:
    seen: ClassVar[list[Any]] = []


def test_plugin_args_reach_the_plugin() -> None:
    @register
    class WithArgs(ifc.FilterPlugin):
        name = "test-WithArgs"

        def filter(
            self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
        ) -> ifc.NodeVerdicts:
            _Args.seen.append(self.args.get("x"))
            return ifc.NodeVerdicts.passing(len(rows))

    p = profile("test-WithArgs")
    p.plugin_config["test-WithArgs"] = {"x": 42}
    simulate(NODES, [make_pod("p")], [p])
    assert _Args.seen == [42]


def test_status_codes() -> None:
    assert Status.unschedulable("a").is_rejected()
    assert Status.unresolvable("a").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert Status.pending("a").is_rejected()
    assert not Status.skip().is_rejected()


@pytest.mark.parametrize(
    ("num_nodes", "percentage", "expected"),
    [
        (50, 0, 50),  # fewer than 100 nodes: all of them
        (200, 0, 100),  # 48% of 200 is 96, raised to the minimum of 100
        (1000, 0, 420),  # adaptive: 50 - 1000/125 = 42%
        (5000, 0, 500),  # 50 - 40 = 10%
        (10000, 0, 500),  # 50 - 80 < 5: floored at 5%
        (1000, 30, 300),
        (1000, 5, 100),
    ],
)
def test_adaptive_percentage_of_nodes_to_score(
    num_nodes: int, percentage: int, expected: int
) -> None:
    sched = Scheduler([profile()], InMemoryCluster(), percentage_of_nodes_to_score=percentage)
    fw = sched.frameworks["default-scheduler"]
    assert sched.num_feasible_nodes_to_find(fw, num_nodes) == expected


def test_only_enough_nodes_are_scored_and_the_start_rotates() -> None:
    nodes = [make_node(f"node-{i:03d}") for i in range(200)]

    @register
    class ByNumber(ifc.ScorePlugin):
        name = "test-ByNumber"

        def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
            return np.array([int(nodes.names[r][-3:]) % 100 for r in rows], dtype=np.int64)

    pods = [make_pod(f"p{i}") for i in range(3)]
    result = simulate(nodes, pods, [profile("test-ByNumber")], seed=1)
    # 200 nodes: 100 are evaluated per pod, starting where the last pod stopped,
    # so the three pods see nodes 0-99, 100-199, 0-99 and each takes the best it saw.
    placed = [result.placements[f"default/p{i}"] for i in range(3)]
    assert placed == ["node-099", "node-199", "node-099"]


def test_prefilter_unschedulable_lets_the_other_prefilters_run() -> None:
    seen: list[str] = []

    @register
    class Refuse(ifc.PreFilterPlugin):
        name = "test-Refuse"

        def pre_filter(
            self, state: CycleState, pod: PodInfo, nodes: NodeTable
        ) -> tuple[ifc.PreFilterResult | None, Status]:
            seen.append(self.name)
            code = pod.pod.metadata.labels["code"]
            if code == "unresolvable":
                return None, Status.unresolvable("never here")
            return None, Status.unschedulable("not now")

    @register
    class Watch(ifc.PreFilterPlugin):
        name = "test-Watch"

        def pre_filter(
            self, state: CycleState, pod: PodInfo, nodes: NodeTable
        ) -> tuple[ifc.PreFilterResult | None, Status]:
            seen.append(self.name)
            return None, Status()

    p = profile("test-Refuse", "test-Watch")
    result = simulate(NODES, [make_pod("a", labels={"code": "unschedulable"})], [p])
    assert seen == ["test-Refuse", "test-Watch"]
    assert result.reasons["default/a"] == "0/4 nodes are available: not now."
    seen.clear()
    result = simulate(NODES, [make_pod("b", labels={"code": "unresolvable"})], [p])
    assert seen == ["test-Refuse"]
    assert result.reasons["default/b"] == "0/4 nodes are available: never here."


def test_a_pod_deleted_while_binding_is_not_retried() -> None:
    async def scenario() -> tuple[int, list[str]]:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"node-1": NODES[0]})
        pod = make_pod("p")
        cluster.pods[pod.key] = pod
        sched = Scheduler([profile()], cluster, clock=clock)
        cluster.watch(sched)
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        # The pod disappears between the scheduling cycle and the bind, without
        # the watch event having arrived yet (the API answers 404 / 409).
        del cluster.pods["default/p"]
        sched.schedule_one(qpi)
        await run_until_quiet(sched, clock)
        table_pods = int(sched.table.requested[sched.table.row_of("node-1"), 3])  # type: ignore[index]
        return table_pods, [e.reason for e in cluster.events]

    pods_on_node, events = asyncio.run(scenario())
    assert pods_on_node == 0  # the assumed pod was forgotten
    assert events == []  # and nothing was retried or reported
