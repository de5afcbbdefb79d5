"""The metrics `kubesched run` feeds besides the scheduling loop's own: plugin
evaluations (the framework) and preemption (DefaultPreemption, through the Handle),
Permit's waits, the scheduling algorithm's latency, unschedulable pods by plugin
and the cache's size. The runner's own wiring (new_scheduler, update_metrics) over
an in-memory cluster."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kubesched.api.objects import Node, Pod
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Listers
from kubesched.framework.interfaces import PermitPlugin
from kubesched.framework.profile import PluginRef, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.kube.runner import Runner, RunOptions, default_config
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod

PROFILE = "kubesched"


def runner_over(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    profile: ProfileConfig | None = None,
    *,
    metrics: bool = True,
) -> tuple[Runner, InMemoryCluster, SimClock]:
    """A Runner whose scheduler (built by `run`'s new_scheduler when METRICS, else
    with no metrics at all) schedules an in-memory cluster on simulated time."""
    config = default_config()
    if profile is not None:
        config.profiles = [profile]
    runner = Runner(RunOptions(seed=1), config)
    cluster = InMemoryCluster(nodes={n.metadata.name: n for n in nodes})
    for p in pods:
        cluster.pods[p.key] = p
    clock = SimClock()
    if metrics:
        runner.scheduler = runner.new_scheduler(cluster, clock, Listers())
    else:
        runner.scheduler = Scheduler(config.profiles, cluster, clock=clock, seed=1)
    cluster.watch(runner.scheduler)
    return runner, cluster, clock


def settle(runner: Runner, clock: SimClock) -> None:
    assert runner.scheduler is not None
    asyncio.run(run_until_quiet(runner.scheduler, clock))
    runner.update_metrics()


def pod(name: str, cpu: str, priority: int = 0, node: str = "") -> Pod:
    made = make_pod(name, cpu=cpu, priority=priority, node_name=node)
    made.metadata.uid = f"uid-{name}"
    made.spec.scheduler_name = PROFILE
    return made


def value(runner: Runner, name: str, **labels: str) -> float | None:
    return runner.metrics.value(name, labels)


def evaluations(runner: Runner, plugin: str, point: str) -> float | None:
    return value(
        runner,
        "scheduler_plugin_evaluation_total",
        plugin=plugin,
        extension_point=point,
        profile=PROFILE,
    )


# --- plugin_evaluation_total ---------------------------------------------------------------


def test_plugin_evaluations_are_counted_per_node_as_upstream() -> None:
    nodes = [make_node("small", cpu="2"), make_node("a", cpu="4"), make_node("b", cpu="4")]
    runner, cluster, clock = runner_over(nodes, [pod("p", "3")])
    settle(runner, clock)
    assert cluster.pods["default/p"].spec.node_name in {"a", "b"}
    # PreFilter and PreScore: one per call that does not skip.
    assert evaluations(runner, "NodeResourcesFit", "PreFilter") == 1
    assert evaluations(runner, "NodeResourcesFit", "PreScore") == 1
    assert evaluations(runner, "VolumeBinding", "PreFilter") == 0  # no claims: Skip
    # Filter: one per node the plugin saw; Score: one per feasible node.
    assert evaluations(runner, "TaintToleration", "Filter") == 3
    assert evaluations(runner, "NodeResourcesFit", "Filter") == 3
    assert evaluations(runner, "NodeResourcesFit", "Score") == 2
    assert evaluations(runner, "NodeResourcesFit", "Reserve") is None  # not counted there


def test_instrumented_plugins_schedule_as_the_plain_ones() -> None:
    nodes = [make_node(f"n{i}", cpu=str(2 + i % 3)) for i in range(6)]
    running = [pod(f"r{i}", "1", priority=(i % 3) * 10, node=f"n{i % 6}") for i in range(18)]
    pending = [pod(f"p{i}", f"{300 + 137 * i % 900}m", priority=(i % 4) * 10) for i in range(12)]
    pods = [*running, *pending, pod("big", "4", priority=100)]  # big preempts
    outcomes = []
    for metrics in (False, True):
        runner, cluster, clock = runner_over(nodes, pods, metrics=metrics)
        settle(runner, clock)
        placements = {k: p.spec.node_name for k, p in cluster.pods.items()}
        outcomes.append((placements, cluster.events, cluster.evicted))
    assert outcomes[0] == outcomes[1]
    assert outcomes[1][2]  # something was preempted


# --- preemption -----------------------------------------------------------------------------


def test_preemption_attempts_and_victims() -> None:
    node = make_node("n", cpu="2")
    runner, cluster, clock = runner_over(
        [node], [pod("low-a", "1", 0, "n"), pod("low-b", "1", 0, "n"), pod("high", "2", 100)]
    )
    settle(runner, clock)
    assert cluster.pods["default/high"].spec.node_name == "n"
    assert sorted(cluster.evicted) == ["default/low-a", "default/low-b"]
    assert value(runner, "scheduler_preemption_attempts_total") == 1
    assert value(runner, "scheduler_preemption_victims_count") == 1
    assert value(runner, "scheduler_preemption_victims_sum") == 2  # both, in one observation


def test_a_preemption_attempt_without_victims() -> None:
    runner, _, clock = runner_over([make_node("n", cpu="2")], [pod("huge", "64", 100)])
    settle(runner, clock)
    assert value(runner, "scheduler_preemption_attempts_total") == 1
    assert value(runner, "scheduler_preemption_victims_count") == 0


# --- the scheduling algorithm ------------------------------------------------------------


def test_algorithm_latency_is_observed_once_per_attempt() -> None:
    runner, _, clock = runner_over(
        [make_node("n", cpu="2")], [pod("fits", "1"), pod("huge", "64"), pod("also", "500m")]
    )
    settle(runner, clock)
    attempts = sum(
        value(runner, "scheduler_schedule_attempts_total", result=r, profile=PROFILE) or 0
        for r in ("scheduled", "unschedulable", "error")
    )
    assert attempts == 3
    assert value(runner, "scheduler_scheduling_algorithm_duration_seconds_count") == attempts


# --- Permit ---------------------------------------------------------------------------------


@register
class HoldsAtPermit(PermitPlugin):
    """Waits 5 s at most; pods labelled allow=later are allowed after 1 s."""

    name = "HoldsAtPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if pod.pod.metadata.labels.get("allow") == "later":
            handle, key = self.handle, pod.key

            def allow() -> None:
                waiting = handle.waiting_pods.get(key) if handle.waiting_pods else None
                if waiting is not None:
                    waiting.allow(self.name)

            handle.clock.call_at(handle.clock.now() + 1, allow)
        return Status.wait(), 5.0


def test_permit_waits_are_observed_with_their_result() -> None:
    profile = ProfileConfig.default(PROFILE)
    profile.plugins["multiPoint"].enabled.append(PluginRef("HoldsAtPermit"))
    allowed = pod("allowed", "1")
    allowed.metadata.labels = {"allow": "later"}
    runner, cluster, clock = runner_over(
        [make_node("n", cpu="4")], [allowed, pod("timed-out", "1")], profile
    )
    settle(runner, clock)
    assert cluster.pods["default/allowed"].spec.node_name == "n"
    assert not cluster.pods["default/timed-out"].spec.node_name
    success = {"result": "Success"}
    rejected = {"result": "Unschedulable"}
    assert runner.metrics.value("scheduler_permit_wait_duration_seconds_count", success) == 1
    assert runner.metrics.value("scheduler_permit_wait_duration_seconds_count", rejected) == 1


# --- extension points the framework records ---------------------------------------------


def test_postfilter_unreserve_and_postbind_durations_are_observed() -> None:
    profile = ProfileConfig.default(PROFILE)
    profile.plugins["multiPoint"].enabled.append(PluginRef("HoldsAtPermit"))
    allowed = pod("allowed", "1")
    allowed.metadata.labels = {"allow": "later"}
    runner, cluster, clock = runner_over(
        [make_node("n", cpu="4")], [allowed, pod("timed-out", "1"), pod("huge", "64")], profile
    )
    settle(runner, clock)
    assert cluster.pods["default/allowed"].spec.node_name == "n"

    def point(name: str, status: str) -> float | None:
        return value(
            runner,
            "scheduler_framework_extension_point_duration_seconds_count",
            extension_point=name,
            status=status,
            profile=PROFILE,
        )

    assert point("PostFilter", "Unschedulable") == 1  # "huge": preemption finds nothing
    assert point("Unreserve", "Success") == 1  # "timed-out", rejected at Permit's wait
    assert point("PostBind", "Success") == 1  # "allowed"
    assert point("Bind", "Success") == 1
    assert point("Permit", "Wait") == 2


# --- the queue and the cache, read once a second -----------------------------------------


def test_unschedulable_pods_by_plugin_and_cache_size() -> None:
    gated = make_pod(
        "gated", cpu="1", spec={"schedulerName": PROFILE, "schedulingGates": [{"name": "wait"}]}
    )
    runner, cluster, clock = runner_over(
        [make_node("n", cpu="2"), make_node("m", cpu="2")],
        [pod("running", "1", 0, "n"), pod("huge", "64"), pod("fits", "1"), gated],
    )
    settle(runner, clock)
    unschedulable = "scheduler_unschedulable_pods"
    assert value(runner, unschedulable, plugin="NodeResourcesFit", profile=PROFILE) == 1
    assert value(runner, unschedulable, plugin="SchedulingGates", profile=PROFILE) == 1
    assert value(runner, "scheduler_pending_pods", queue="gated") == 1
    assert value(runner, "scheduler_cache_size", type="nodes") == 2
    assert value(runner, "scheduler_cache_size", type="pods") == 2  # running, fits
    assert value(runner, "scheduler_cache_size", type="assumed_pods") == 0
    # The pod goes away: its plugin's count drops back to 0.
    assert runner.scheduler is not None
    cluster.remove_pod("default/huge")
    runner.update_metrics()
    assert value(runner, unschedulable, plugin="NodeResourcesFit", profile=PROFILE) == 0
