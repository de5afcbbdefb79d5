"""kube-scheduler's metrics: names, labels, help texts, buckets and the update methods."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from kubesched.framework.status import code_name
from kubesched.server.metrics import (
    PLUGIN_METRICS_SAMPLE_PERCENT,
    SchedulerMetrics,
    exponential_buckets,
)

PROFILE = "default-scheduler"


def families(m: SchedulerMetrics) -> dict[str, tuple[str, str]]:
    """Exposed name -> (type, help)."""
    out = {}
    for line in m.render().decode().splitlines():
        if line.startswith("# HELP "):
            name, help_text = line[len("# HELP ") :].split(" ", 1)
            out[name] = ("", help_text)
        elif line.startswith("# TYPE "):
            name, kind = line[len("# TYPE ") :].split(" ", 1)
            out[name] = (kind, out[name][1])
    return out


def test_names_types_and_help_match_kube_scheduler() -> None:
    fams = families(SchedulerMetrics())
    assert fams["scheduler_schedule_attempts_total"] == (
        "counter",
        "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a "
        "pod could not be scheduled, while 'error' means an internal scheduler problem.",
    )
    expected_types = {
        "scheduler_scheduling_attempt_duration_seconds": "histogram",
        "scheduler_scheduling_algorithm_duration_seconds": "histogram",
        "scheduler_pending_pods": "gauge",
        "scheduler_framework_extension_point_duration_seconds": "histogram",
        "scheduler_plugin_execution_duration_seconds": "histogram",
        "scheduler_queue_incoming_pods_total": "counter",
        "scheduler_pod_scheduling_sli_duration_seconds": "histogram",
        "scheduler_pod_scheduling_attempts": "histogram",
        "scheduler_preemption_attempts_total": "counter",
        "scheduler_preemption_victims": "histogram",
        "scheduler_unschedulable_pods": "gauge",
        "scheduler_plugin_evaluation_total": "counter",
        "scheduler_cache_size": "gauge",
        "scheduler_permit_wait_duration_seconds": "histogram",
    }
    for name, kind in expected_types.items():
        assert fams[name][0] == kind, name
    assert fams["scheduler_pending_pods"][1].startswith("[STABLE] Number of pending pods")
    assert fams["scheduler_unschedulable_pods"][1].startswith("[BETA] ")
    assert fams["scheduler_plugin_execution_duration_seconds"][1] == (
        "[ALPHA] Duration for running a plugin at a specific extension point."
    )
    # No "_created" series: the Go client has none.
    assert not any(name.endswith("_created") for name in fams)


def test_own_registry_not_the_global_one() -> None:
    a, b = SchedulerMetrics(), SchedulerMetrics()
    a.observe_attempt("scheduled", PROFILE, 0.01)
    labels = {"result": "scheduled", "profile": PROFILE}
    assert a.value("scheduler_schedule_attempts_total", labels) == 1.0
    assert b.value("scheduler_schedule_attempts_total", labels) is None
    assert REGISTRY.get_sample_value("scheduler_schedule_attempts_total", labels) is None


def test_buckets_are_gos_exponential_buckets() -> None:
    assert exponential_buckets(0.001, 2, 3) == [0.001, 0.002, 0.004]
    # Multiplied step by step, as Go does: the labels carry Go's float digits.
    assert exponential_buckets(0.00001, 1.5, 2) == [1e-05, 1.5000000000000002e-05]
    m = SchedulerMetrics()
    m.observe_plugin("NodeResourcesFit", "Filter", "Success", 0.00001)
    m.observe_attempt("scheduled", PROFILE, 0.003)
    m.observe_extension_point("Filter", "Success", PROFILE, 0.0001)
    m.observe_pod_scheduled(1, 0.02)
    m.observe_preemption_victims(3)
    text = m.render().decode()

    def les(metric: str) -> list[str]:
        out = []
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if s.name == metric + "_bucket":
                    out.append(s.labels["le"])
        return out

    assert len(les("scheduler_plugin_execution_duration_seconds")) == 21  # 20 + "+Inf"
    assert 'le="1.5000000000000002e-05"' in text
    assert les("scheduler_scheduling_attempt_duration_seconds")[:3] == ["0.001", "0.002", "0.004"]
    assert len(les("scheduler_scheduling_attempt_duration_seconds")) == 16
    assert len(les("scheduler_framework_extension_point_duration_seconds")) == 13
    assert les("scheduler_framework_extension_point_duration_seconds")[0] == "0.0001"
    assert les("scheduler_pod_scheduling_attempts") == ["1.0", "2.0", "4.0", "8.0", "16.0", "+Inf"]
    assert len(les("scheduler_pod_scheduling_sli_duration_seconds")) == 21
    assert les("scheduler_preemption_victims")[-2:] == ["64.0", "+Inf"]


def test_observe_attempt_and_extension_points() -> None:
    m = SchedulerMetrics()
    m.observe_attempt("scheduled", PROFILE, 0.01)
    m.observe_attempt("unschedulable", PROFILE, 0.02)
    m.observe_attempt("unschedulable", PROFILE, 0.02)
    m.observe_extension_point("Filter", "Unschedulable", PROFILE, 0.001)
    text = m.render().decode()
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0'
        in text
    )
    assert (
        'scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 2.0'
        in text
    )
    assert (
        m.value(
            "scheduler_scheduling_attempt_duration_seconds_count",
            {"result": "unschedulable", "profile": PROFILE},
        )
        == 2.0
    )
    assert (
        m.value(
            "scheduler_framework_extension_point_duration_seconds_sum",
            {"extension_point": "Filter", "status": "Unschedulable", "profile": PROFILE},
        )
        == 0.001
    )


def test_pending_pods_sets_every_queue() -> None:
    m = SchedulerMetrics()
    m.set_pending({"active": 3, "gated": 1})
    m.set_pending({"active": 2, "backoff": 4})
    got = {q: m.value("scheduler_pending_pods", {"queue": q}) for q in ("active", "backoff")}
    assert got == {"active": 2.0, "backoff": 4.0}
    assert m.value("scheduler_pending_pods", {"queue": "gated"}) == 0.0
    assert m.value("scheduler_pending_pods", {"queue": "unschedulable"}) == 0.0


def test_incoming_follows_cumulative_counts() -> None:
    m = SchedulerMetrics()
    counts = {("active", "PodAdd"): 2}
    m.set_incoming(counts)
    counts[("active", "PodAdd")] = 5
    counts[("backoff", "NodeAdd")] = 1
    m.set_incoming(counts)
    m.set_incoming(counts)  # nothing new
    labels = {"queue": "active", "event": "PodAdd"}
    assert m.value("scheduler_queue_incoming_pods_total", labels) == 5.0
    assert (
        m.value("scheduler_queue_incoming_pods_total", {"queue": "backoff", "event": "NodeAdd"})
        == 1.0
    )
    # A new queue starts from zero again: its counts are added whole.
    m.set_incoming({("active", "PodAdd"): 1})
    assert m.value("scheduler_queue_incoming_pods_total", labels) == 6.0


def test_pod_scheduled_sli_attempts_label_is_capped() -> None:
    m = SchedulerMetrics()
    m.observe_pod_scheduled(1, 0.5)
    m.observe_pod_scheduled(20, 30.0)
    assert m.value("scheduler_pod_scheduling_attempts_count") == 2.0
    assert m.value("scheduler_pod_scheduling_attempts_sum") == 21.0
    sli = "scheduler_pod_scheduling_sli_duration_seconds_sum"
    assert m.value(sli, {"attempts": "1"}) == 0.5
    assert m.value(sli, {"attempts": "15+"}) == 30.0


def test_unschedulable_cache_preemption_and_evaluations() -> None:
    m = SchedulerMetrics()
    m.set_unschedulable({("NodeResourcesFit", PROFILE): 2, ("TaintToleration", PROFILE): 1})
    m.set_unschedulable({("NodeResourcesFit", PROFILE): 1})
    assert (
        m.value("scheduler_unschedulable_pods", {"plugin": "NodeResourcesFit", "profile": PROFILE})
        == 1.0
    )
    assert (
        m.value("scheduler_unschedulable_pods", {"plugin": "TaintToleration", "profile": PROFILE})
        == 0.0
    )
    m.set_cache_size(nodes=3, pods=10, assumed_pods=1)
    assert m.value("scheduler_cache_size", {"type": "nodes"}) == 3.0
    assert m.value("scheduler_cache_size", {"type": "assumed_pods"}) == 1.0
    m.inc_preemption_attempts()
    m.observe_preemption_victims(2)
    assert m.value("scheduler_preemption_attempts_total") == 1.0
    assert m.value("scheduler_preemption_victims_count") == 1.0
    m.inc_plugin_evaluation("NodeAffinity", "Filter", PROFILE)
    m.inc_plugin_evaluation("NodeAffinity", "Filter", PROFILE, 4)
    assert (
        m.value(
            "scheduler_plugin_evaluation_total",
            {"plugin": "NodeAffinity", "extension_point": "Filter", "profile": PROFILE},
        )
        == 5.0
    )
    m.observe_permit_wait("Success", 0.2)
    assert m.value("scheduler_permit_wait_duration_seconds_count", {"result": "Success"}) == 1.0


def test_plugin_sampling_is_seeded_and_about_ten_percent() -> None:
    m1, m2 = SchedulerMetrics(seed=7), SchedulerMetrics(seed=7)
    draws = [m1.should_sample_plugins() for _ in range(2000)]
    assert draws == [m2.should_sample_plugins() for _ in range(2000)]
    share = sum(draws) / len(draws) * 100
    assert abs(share - PLUGIN_METRICS_SAMPLE_PERCENT) < 3
    never = SchedulerMetrics(plugin_sample_percent=0)
    assert not any(never.should_sample_plugins() for _ in range(100))


def test_status_label_is_upstream_code_string() -> None:
    assert [code_name(c) for c in range(7)] == [
        "Success",
        "Error",
        "Unschedulable",
        "UnschedulableAndUnresolvable",
        "Wait",
        "Skip",
        "Pending",
    ]


def test_render_parses_and_content_type() -> None:
    m = SchedulerMetrics()
    m.observe_attempt("error", PROFILE, 0.1)
    names = {fam.name for fam in text_string_to_metric_families(m.render().decode())}
    assert "scheduler_schedule_attempts" in names  # the parser drops "_total"
    assert m.content_type == "text/plain; version=0.0.4; charset=utf-8"


def test_attempt_duration_is_observed_after_the_bind() -> None:
    """As kube-scheduler's bindingCycle: a scheduled attempt's duration is observed
    once the pod is bound, so it includes the binding."""
    import asyncio

    from kubesched.framework.clock import SimClock
    from kubesched.framework.profile import ProfileConfig
    from kubesched.scheduler import Scheduler
    from kubesched.simulation.memory import InMemoryCluster
    from kubesched.simulation.simulator import run_until_quiet
    from kubesched.testing import make_node, make_pod

    order: list[str] = []

    class SlowBindCluster(InMemoryCluster):
        async def bind(self, pod: Any, node_name: str) -> None:
            await asyncio.sleep(0.05)
            order.append("bound")
            await super().bind(pod, node_name)

    class Recorder:
        def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
            order.append(f"attempt {result} {seconds >= 0.05}")

        def observe_algorithm(self, seconds: float) -> None: ...
        def observe_extension_point(self, *args: Any) -> None: ...
        def observe_plugin(self, *args: Any) -> None: ...
        def plugin_evaluation_counter(self, *args: Any) -> Any:
            return lambda n: None

        def inc_preemption_attempts(self) -> None: ...
        def observe_preemption_victims(self, victims: int) -> None: ...
        def observe_batch_attempt(self, *args: Any) -> None: ...
        def inc_batch_flush(self, *args: Any) -> None: ...
        def observe_node_hint(self, *args: Any) -> None: ...
        def observe_store_results(self, *args: Any) -> None: ...
        def should_sample_plugins(self) -> bool:
            return False

        def observe_pod_scheduled(self, attempts: int, seconds: float) -> None: ...

    cluster = SlowBindCluster(nodes={"n": make_node("n", cpu="2")})
    pod = make_pod("p", cpu="1")
    cluster.pods[pod.key] = pod
    clock = SimClock()
    sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=1, observer=Recorder())
    cluster.watch(sched)
    asyncio.run(run_until_quiet(sched, clock))
    assert order == ["bound", "attempt scheduled True"]
