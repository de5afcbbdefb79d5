"""The framework records its own metrics, as frameworkImpl does: every extension
point's duration once per run with the status it returned (PostFilter, Unreserve
and PostBind included), each plugin's duration in the cycles sampled for it (the
binding cycle's too), the plugins' evaluations; DefaultPreemption reports its
attempts and victims through the Handle. Without a recorder nothing is timed."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence

import pytest

from kubesched.api.objects import Node, Pod
from kubesched.framework import interfaces as ifc
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.profile import PluginRef, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.runtime import framework as runtime
from kubesched.framework.runtime import timing
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod


class Recorder:
    """An Observer that keeps every report, in order."""

    def __init__(self, *, sample: bool) -> None:
        self.sample = sample
        self.points: list[tuple[str, str]] = []
        self.plugins: list[tuple[str, str, str]] = []
        self.evaluations: Counter[tuple[str, str]] = Counter()
        self.attempts = 0
        self.victims: list[int] = []

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None: ...
    def observe_algorithm(self, seconds: float) -> None: ...
    def observe_pod_scheduled(self, attempts: int, seconds_since_first_attempt: float) -> None: ...

    def should_sample_plugins(self) -> bool:
        return self.sample

    def observe_extension_point(
        self, point: str, status: str, profile: str, seconds: float
    ) -> None:
        assert profile == "default-scheduler" and seconds >= 0
        self.points.append((point, status))

    def observe_plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        assert seconds >= 0
        self.plugins.append((point, plugin, status))

    def plugin_evaluation_counter(
        self, plugin: str, point: str, profile: str
    ) -> Callable[[float], None]:
        def count(n: float) -> None:
            self.evaluations[point, plugin] += int(n)

        return count

    def inc_preemption_attempts(self) -> None:
        self.attempts += 1

    def observe_preemption_victims(self, victims: int) -> None:
        self.victims.append(victims)

    def observe_batch_attempt(self, profile: str, result: str) -> None: ...
    def inc_batch_flush(self, profile: str, reason: str) -> None: ...
    def observe_node_hint(self, hinted: str, profile: str, seconds: float) -> None: ...
    def observe_store_results(self, profile: str, seconds: float) -> None: ...


GATE = "test-metrics-Gate"


@register
class Gate(ifc.ReservePlugin, ifc.PermitPlugin, ifc.PostBindPlugin):
    """Reserves every pod, then lets through at Permit all but those labelled deny."""

    name = GATE

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if pod.pod.metadata.labels.get("deny"):
            return Status.unschedulable("denied"), 0.0
        return Status(), 0.0

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass


BREAKS = "test-metrics-Breaks"


@register
class Breaks(ifc.PreFilterPlugin, ifc.FilterPlugin):
    """Raises at the extension point a pod's `breaks` label names."""

    name = BREAKS

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[ifc.PreFilterResult | None, Status]:
        if pod.pod.metadata.labels.get("breaks") == "PreFilter":
            raise RuntimeError("broken PreFilter")
        return None, Status()

    def filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> ifc.NodeVerdicts:
        if pod.pod.metadata.labels.get("breaks") == "Filter":
            raise RuntimeError("broken Filter")
        return ifc.NodeVerdicts.passing(len(rows))


def schedule(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    recorder: Recorder | None,
    *plugins: str,
) -> InMemoryCluster:
    profile = ProfileConfig.default()
    for name in plugins:
        profile.plugins["multiPoint"].enabled.append(PluginRef(name))
    cluster = InMemoryCluster(nodes={n.metadata.name: n for n in nodes})
    for p in pods:
        cluster.pods[p.key] = p
    clock = SimClock()
    sched = Scheduler([profile], cluster, clock=clock, seed=1, observer=recorder)
    cluster.watch(sched)
    asyncio.run(run_until_quiet(sched, clock))
    return cluster


def two_nodes() -> list[Node]:
    return [make_node("a", cpu="2"), make_node("b", cpu="2")]


def labelled(name: str, cpu: str, **labels: str) -> Pod:
    pod = make_pod(name, cpu=cpu)
    pod.metadata.labels = dict(labels)
    return pod


# --- extension points: once per run, with the status returned ------------------------------


def test_a_scheduled_pod_records_every_point_once_postbind_included() -> None:
    recorder = Recorder(sample=False)
    cluster = schedule(two_nodes(), [make_pod("p", cpu="1")], recorder, GATE)
    assert cluster.pods["default/p"].spec.node_name
    assert recorder.points == [
        ("Sign", "Success"),  # OpportunisticBatching (on by default) signs the pod
        ("PreFilter", "Success"),
        ("Filter", "Success"),
        ("PreScore", "Success"),
        ("Score", "Success"),
        ("Reserve", "Success"),
        ("Permit", "Success"),
        ("PreBind", "Success"),
        ("Bind", "Success"),
        ("PostBind", "Success"),
    ]


def test_a_pod_that_fits_nowhere_records_postfilter_with_its_status() -> None:
    recorder = Recorder(sample=False)
    schedule(two_nodes(), [make_pod("huge", cpu="64")], recorder)
    assert recorder.points == [
        ("Sign", "Success"),
        ("PreFilter", "Success"),
        ("Filter", "Success"),
        ("PostFilter", "Unschedulable"),
    ]
    # DefaultPreemption counted its attempt through the Handle; no candidate, no victims.
    assert recorder.attempts == 1
    assert recorder.victims == []


def test_a_permit_rejection_records_unreserve() -> None:
    recorder = Recorder(sample=True)
    cluster = schedule(two_nodes(), [labelled("p", "1", deny="yes")], recorder, GATE)
    assert not cluster.pods["default/p"].spec.node_name
    assert recorder.points[-3:] == [
        ("Reserve", "Success"),
        ("Permit", "Unschedulable"),
        ("Unreserve", "Success"),
    ]
    assert recorder.points.count(("Unreserve", "Success")) == 1
    assert ("Permit", GATE, "Unschedulable") in recorder.plugins
    assert ("Unreserve", GATE, "Success") in recorder.plugins


def test_a_plugin_that_raises_is_recorded_as_an_error_of_its_point() -> None:
    recorder = Recorder(sample=False)
    schedule(two_nodes(), [labelled("p", "1", breaks="PreFilter")], recorder, BREAKS)
    assert recorder.points == [("Sign", "Success"), ("PreFilter", "Error")]
    recorder = Recorder(sample=False)
    schedule(two_nodes(), [labelled("p", "1", breaks="Filter")], recorder, BREAKS)
    assert recorder.points == [("Sign", "Success"), ("PreFilter", "Success"), ("Filter", "Error")]


def test_filter_is_recorded_once_per_pass_even_when_the_pass_filters_twice() -> None:
    # 200 nodes, every other one cordoned: the first batch of the rotated order holds
    # too few feasible nodes, so the pass filters all of them again.
    nodes = [make_node(f"n{i:03d}", unschedulable=i % 2 == 1) for i in range(200)]
    recorder = Recorder(sample=False)
    schedule(nodes, [make_pod("p", cpu="1")], recorder)
    assert recorder.evaluations["Filter", "NodeUnschedulable"] > 200  # two filterings
    assert recorder.points.count(("Filter", "Success")) == 1


# --- plugin durations: in sampled cycles, the binding cycle's too ---------------------------


def test_plugin_durations_from_reserve_to_postbind_in_sampled_cycles() -> None:
    recorder = Recorder(sample=True)
    schedule(two_nodes(), [make_pod("p", cpu="1")], recorder, GATE)
    seen = {(point, plugin) for point, plugin, _ in recorder.plugins}
    for point, plugin in [
        ("PreFilter", "NodeResourcesFit"),
        ("Filter", "NodeResourcesFit"),
        ("PreScore", "NodeResourcesFit"),
        ("Score", "NodeResourcesFit"),
        ("Reserve", GATE),
        ("Reserve", "VolumeBinding"),
        ("Permit", GATE),
        ("PreBind", "VolumeBinding"),
        ("Bind", "DefaultBinder"),
        ("PostBind", GATE),
    ]:
        assert (point, plugin) in seen, (point, plugin)
    assert ("Bind", "DefaultBinder", "Success") in recorder.plugins
    assert ("PostBind", GATE, "Success") in recorder.plugins


def test_no_plugin_durations_in_cycles_not_sampled() -> None:
    recorder = Recorder(sample=False)
    schedule(two_nodes(), [make_pod("p", cpu="1"), labelled("q", "1", deny="y")], recorder, GATE)
    assert recorder.plugins == []
    assert ("Unreserve", "Success") in recorder.points  # the points all the same


def test_the_sample_decision_travels_with_the_cycle_state() -> None:
    state = CycleState()
    assert not state.record_plugin_metrics
    state.record_plugin_metrics = True
    assert state.clone().record_plugin_metrics


# --- evaluations and preemption -------------------------------------------------------------


def test_evaluations_counted_by_the_framework() -> None:
    recorder = Recorder(sample=False)
    nodes = [make_node("small", cpu="2"), make_node("a", cpu="4"), make_node("b", cpu="4")]
    schedule(nodes, [make_pod("p", cpu="3")], recorder)
    assert recorder.evaluations["PreFilter", "NodeResourcesFit"] == 1
    assert recorder.evaluations["PreFilter", "VolumeBinding"] == 0  # skipped
    assert recorder.evaluations["Filter", "NodeResourcesFit"] == 3
    assert recorder.evaluations["PreScore", "NodeResourcesFit"] == 1
    assert recorder.evaluations["Score", "NodeResourcesFit"] == 2


def test_preemption_reports_its_attempt_and_victims_through_the_handle() -> None:
    node = make_node("n", cpu="2")
    running = [make_pod(f"low-{x}", cpu="1", node_name="n") for x in "ab"]
    high = make_pod("high", cpu="2", priority=100)
    recorder = Recorder(sample=True)
    cluster = schedule([node], [*running, high], recorder)
    assert cluster.pods["default/high"].spec.node_name == "n"
    assert recorder.attempts == 1
    assert recorder.victims == [2]
    assert ("PostFilter", "Success") in recorder.points
    assert ("PostFilter", "DefaultPreemption", "Success") in recorder.plugins


# --- without a recorder ---------------------------------------------------------------------


def test_without_a_recorder_the_framework_reads_no_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []

    def clock() -> float:
        reads.append("read")
        return 0.0

    monkeypatch.setattr(runtime, "perf_counter", clock)
    monkeypatch.setattr(timing, "perf_counter", clock)
    pods = [
        make_pod("low", cpu="1", node_name="n"),
        make_pod("high", cpu="2", priority=100),  # fits nowhere: preempts "low"
        labelled("denied", "1", deny="y"),  # Reserve, Permit, Unreserve
        make_pod("huge", cpu="64"),  # PostFilter finds nothing
        make_pod("fits", cpu="100m"),  # Score, PreBind, Bind, PostBind
    ]
    nodes = [make_node("n", cpu="2"), make_node("m", cpu="1")]
    cluster = schedule(nodes, pods, None, GATE)
    assert cluster.evicted == ["default/low"]
    assert cluster.pods["default/high"].spec.node_name == "n"
    assert cluster.pods["default/fits"].spec.node_name
    assert reads == []
    # The same run with a recorder does read it (the patch is where the framework looks).
    schedule(nodes, pods, Recorder(sample=True), GATE)
    assert reads
