"""kube-scheduler's Prometheus metrics (pkg/scheduler/metrics/metrics.go, v1.36.3).

Every metric has upstream's name, label names, buckets and help text, the help
text carrying the ``[STABLE]`` / ``[BETA]`` / ``[ALPHA]`` prefix that
component-base adds when it registers a metric, so ``/metrics`` reads like
kube-scheduler's. The metrics live in their own ``CollectorRegistry``: several
``SchedulerMetrics`` can coexist (tests, simulations) and nothing touches
prometheus_client's global registry.

prometheus_client appends ``_total`` to counter names, so counters are declared
without it. It would also add a ``<name>_created`` series to every counter and
histogram, which the Go client does not have; ``render`` leaves them out.

The scheduler calls plain methods; nothing here knows the framework types.
The status labels are ``framework.status.code_name``'s (upstream's Code.String()).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = [
    "EXTENSION_POINTS",
    "PLUGIN_METRICS_SAMPLE_PERCENT",
    "SchedulerMetrics",
    "exponential_buckets",
]

SUBSYSTEM = "scheduler"

_Metric = TypeVar("_Metric", Counter, Gauge, Histogram)

# schedule_one.go: pluginMetricsSamplePercent.
PLUGIN_METRICS_SAMPLE_PERCENT = 10

# metrics.go: ExtensionPoints, the values of the extension_point label.
EXTENSION_POINTS = (
    "PreFilter",
    "Filter",
    "PreFilterExtensionAddPod",
    "PreFilterExtensionRemovePod",
    "PostFilter",
    "PreScore",
    "Score",
    "ScoreExtensionNormalize",
    "PreBind",
    "PreBindPreFlight",
    "Bind",
    "PostBind",
    "Reserve",
    "Unreserve",
    "Permit",
    "Sign",
    "PlacementGenerate",
)

PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """client_golang's ExponentialBuckets, multiplying step by step as Go does,
    so the ``le`` labels come out digit for digit the same."""
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return buckets


def _help(stability: str, text: str) -> str:
    # component-base: annotateStabilityLevel -> "[%v] %v".
    return f"[{stability}] {text}"


class _WithoutCreated:
    """A collector view of a registry minus the ``_created`` samples."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        for metric in self._registry.collect():
            out = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            out.samples = [s for s in metric.samples if not s.name.endswith("_created")]
            yield out


class _Count:
    """One labelled series of a _PlainCounter: a float bumped without a lock."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1) -> None:
        self.value += amount


class _PlainCounter(Collector):
    """A counter family whose series are plain floats, for counts bumped on every
    plugin call (plugin_evaluation_total): prometheus_client's Counter takes a lock
    on each inc, which was about 1.5 % of `kubesched run`'s CPU in a backlog drain
    (Go's counters are atomics). The series are bumped on the event loop's thread
    and read at scrape time; a scrape that races a bump sees the value before or
    after it, as with Go's atomic counters."""

    def __init__(
        self, name: str, documentation: str, labelnames: list[str], registry: CollectorRegistry
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = labelnames
        self._series: dict[tuple[str, ...], _Count] = {}
        registry.register(self)

    def labels(self, *values: str) -> _Count:
        if len(values) != len(self._labelnames):
            raise ValueError(f"{self._name}: expected labels {self._labelnames}, got {values}")
        series = self._series.get(values)
        if series is None:
            series = self._series[values] = _Count()
        return series

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        # list(): a copy taken under the GIL, as the loop may add a series meanwhile.
        for values, series in list(self._series.items()):
            family.add_metric(list(values), series.value)
        return [family]


class _ReadCounter(Collector):
    """A counter family whose values are read at scrape time (READ: label value to
    value), for totals another part keeps, such as CPU seconds."""

    def __init__(
        self,
        name: str,
        documentation: str,
        label: str,
        read: Callable[[], Mapping[str, float]],
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._label = label
        self._read = read

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self._name, self._documentation, labels=[self._label])

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for value, seconds in self._read().items():
            family.add_metric([value], seconds)
        return [family]


class SchedulerMetrics:
    """kube-scheduler's metrics in a registry of their own.

    ``seed`` seeds the generator behind ``should_sample_plugins``;
    ``plugin_sample_percent`` is upstream's pluginMetricsSamplePercent.
    """

    content_type = CONTENT_TYPE_PLAIN_0_0_4

    def __init__(
        self, *, seed: int | None = 0, plugin_sample_percent: int = PLUGIN_METRICS_SAMPLE_PERCENT
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.plugin_sample_percent = plugin_sample_percent
        self._rng = random.Random(seed)
        self._incoming_seen: dict[tuple[str, str], int] = {}
        self._unschedulable_seen: set[tuple[str, str]] = set()
        # The labelled children already looked up (_labels), by metric and values.
        self._children: dict[tuple[object, tuple[str, ...]], Any] = {}
        r = self.registry
        self.pod_group_attempts: Counter | None = None
        self.pod_group_attempt_duration: Histogram | None = None
        self.pod_group_algorithm_duration: Histogram | None = None

        self.schedule_attempts = Counter(
            f"{SUBSYSTEM}_schedule_attempts",
            _help(
                "STABLE",
                "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
                "could not be scheduled, while 'error' means an internal scheduler problem.",
            ),
            ["result", "profile"],
            registry=r,
        )
        self.scheduling_attempt_duration = Histogram(
            f"{SUBSYSTEM}_scheduling_attempt_duration_seconds",
            _help(
                "STABLE", "Scheduling attempt latency in seconds (scheduling algorithm + binding)"
            ),
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.scheduling_algorithm_duration = Histogram(
            f"{SUBSYSTEM}_scheduling_algorithm_duration_seconds",
            _help("ALPHA", "Scheduling algorithm latency in seconds"),
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.preemption_victims = Histogram(
            f"{SUBSYSTEM}_preemption_victims",
            _help("STABLE", "Number of selected preemption victims"),
            buckets=exponential_buckets(1, 2, 7),
            registry=r,
        )
        self.preemption_attempts = Counter(
            f"{SUBSYSTEM}_preemption_attempts",
            _help("STABLE", "Total preemption attempts in the cluster till now"),
            registry=r,
        )
        self.pending_pods = Gauge(
            f"{SUBSYSTEM}_pending_pods",
            _help(
                "STABLE",
                "Number of pending pods, by the queue type. 'active' means number of pods in "
                "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means "
                "number of pods in unschedulablePods that the scheduler attempted to schedule and "
                "failed; 'gated' is the number of unschedulable pods that the scheduler never "
                "attempted to schedule because they are gated.",
            ),
            ["queue"],
            registry=r,
        )
        self.pod_scheduling_sli_duration = Histogram(
            f"{SUBSYSTEM}_pod_scheduling_sli_duration_seconds",
            _help(
                "BETA",
                "E2e latency for a pod being scheduled, from the time the pod enters the "
                "scheduling queue and might involve multiple scheduling attempts.",
            ),
            ["attempts"],
            buckets=exponential_buckets(0.01, 2, 20),
            registry=r,
        )
        self.pod_scheduling_attempts = Histogram(
            f"{SUBSYSTEM}_pod_scheduling_attempts",
            _help("STABLE", "Number of attempts to successfully schedule a pod."),
            buckets=exponential_buckets(1, 2, 5),
            registry=r,
        )
        self.framework_extension_point_duration = Histogram(
            f"{SUBSYSTEM}_framework_extension_point_duration_seconds",
            _help("STABLE", "Latency for running all plugins of a specific extension point."),
            ["extension_point", "status", "profile"],
            buckets=exponential_buckets(0.0001, 2, 12),
            registry=r,
        )
        self.plugin_execution_duration = Histogram(
            f"{SUBSYSTEM}_plugin_execution_duration_seconds",
            _help("ALPHA", "Duration for running a plugin at a specific extension point."),
            ["plugin", "extension_point", "status"],
            buckets=exponential_buckets(0.00001, 1.5, 20),
            registry=r,
        )
        self.queue_incoming_pods = Counter(
            f"{SUBSYSTEM}_queue_incoming_pods",
            _help("STABLE", "Number of pods added to scheduling queues by event and queue type."),
            ["queue", "event"],
            registry=r,
        )
        self.permit_wait_duration = Histogram(
            f"{SUBSYSTEM}_permit_wait_duration_seconds",
            _help("BETA", "Duration of waiting on permit."),
            ["result"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.cache_size = Gauge(
            f"{SUBSYSTEM}_cache_size",
            _help(
                "ALPHA",
                "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ),
            ["type"],
            registry=r,
        )
        # kubesched's own (no kube-scheduler counterpart): the client's adaptive
        # limit on API requests in flight (kube/inflight.py).
        self.api_inflight_limit = Gauge(
            "kubesched_api_requests_inflight_limit",
            "The current limit on API requests in flight, adapted to the apiserver's answers.",
            registry=r,
        )
        self.unschedulable_pods = Gauge(
            f"{SUBSYSTEM}_unschedulable_pods",
            _help(
                "BETA",
                "The number of unschedulable pods broken down by plugin name. A pod will "
                "increment the gauge for all plugins that caused it to not schedule and so this "
                "metric have meaning only when broken down by plugin.",
            ),
            ["plugin", "profile"],
            registry=r,
        )
        self.plugin_evaluation = _PlainCounter(
            f"{SUBSYSTEM}_plugin_evaluation",
            _help(
                "BETA",
                "Number of attempts to schedule pods by each plugin and the extension point "
                "(available only in PreFilter, Filter, PreScore, and Score).",
            ),
            ["plugin", "extension_point", "profile"],
            registry=r,
        )
        # kubesched's own (not kube-scheduler's): `run --batch-window`.
        self.batch_placements = Counter(
            "kubesched_batch_placements",
            _help(
                "ALPHA",
                "Number of batch placements the engine ran, by the result: 'engine' means its "
                "placement was handed to the scheduling cycle, 'greedy' that the scheduler's "
                "own was kept, 'error' that the engine failed.",
            ),
            ["result"],
            registry=r,
        )
        self.batch_pods_beyond_greedy = Counter(
            "kubesched_batch_pods_beyond_greedy",
            _help(
                "ALPHA",
                "Number of pods the batch placements placed beyond what the scheduler's "
                "one-at-a-time placement did.",
            ),
            registry=r,
        )

        # --- scheduling cycles -----------------------------------------------------
        # Opportunistic batching (batch.go), all ALPHA upstream.
        self.batch_attempts = Counter(
            f"{SUBSYSTEM}_batch_attempts",
            _help("ALPHA", "Counts of results when we attempt to use batching."),
            ["profile", "result"],
            registry=r,
        )
        self.batch_cache_flushed = Counter(
            f"{SUBSYSTEM}_batch_cache_flushed",
            _help("ALPHA", "Counts of cache flushes by reason."),
            ["profile", "reason"],
            registry=r,
        )
        # Both start at 0.01 ms, the last bucket being [~200ms, Inf); upstream's
        # help text of the second is as it is there.
        self.get_node_hint_duration = Histogram(
            f"{SUBSYSTEM}_get_node_hint_duration_seconds",
            _help("ALPHA", "Latency for getting a node hint."),
            ["hinted", "profile"],
            buckets=exponential_buckets(0.00001, 2, 12),
            registry=r,
        )
        self.store_schedule_results_duration = Histogram(
            f"{SUBSYSTEM}_store_schedule_results_duration_seconds",
            _help("ALPHA", "Latency for getting a no."),
            ["profile"],
            buckets=exponential_buckets(0.00001, 2, 12),
            registry=r,
        )

    def _labels(self, metric: _Metric, *values: str) -> _Metric:
        """metric.labels(*values), each child looked up once: labels() checks its
        arguments and takes the metric's lock on every call, which was ~4 % of
        `kubesched run`'s CPU with a few calls per pod. Nothing here removes a
        child, so a kept one stays the metric's."""
        key = (metric, values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return cast(_Metric, child)

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt ended: result is scheduled, unschedulable or error
        (profile_metrics.go: observeScheduleAttemptAndLatency)."""
        self._labels(self.scheduling_attempt_duration, result, profile).observe(seconds)
        self._labels(self.schedule_attempts, result, profile).inc()

    def enable_pod_group_metrics(self) -> None:
        """The pod group metrics, which upstream registers only with GenericWorkload on
        (metrics.go: podGroupScheduleAttempts, podGroupSchedulingLatency,
        PodGroupSchedulingAlgorithmLatency)."""
        r = self.registry
        self.pod_group_attempts = Counter(
            f"{SUBSYSTEM}_podgroup_schedule_attempts",
            _help(
                "ALPHA",
                "Number of attempts to schedule pod group, by the result. 'unschedulable' "
                "means a pod group could not be scheduled, while 'error' means an internal "
                "scheduler problem.",
            ),
            ["result", "profile"],
            registry=r,
        )
        self.pod_group_attempt_duration = Histogram(
            f"{SUBSYSTEM}_podgroup_scheduling_attempt_duration_seconds",
            _help(
                "ALPHA",
                "Pod group scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ),
            ["result", "profile"],
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )
        self.pod_group_algorithm_duration = Histogram(
            f"{SUBSYSTEM}_podgroup_scheduling_algorithm_duration_seconds",
            _help("ALPHA", "Pod group scheduling algorithm latency in seconds"),
            buckets=exponential_buckets(0.001, 2, 15),
            registry=r,
        )

    def observe_pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        """observePodGroupScheduleAttemptAndLatency; nothing unless enabled."""
        if self.pod_group_attempts is None or self.pod_group_attempt_duration is None:
            return
        self._labels(self.pod_group_attempt_duration, result, profile).observe(seconds)
        self._labels(self.pod_group_attempts, result, profile).inc()

    def observe_pod_group_algorithm(self, seconds: float) -> None:
        if self.pod_group_algorithm_duration is not None:
            self.pod_group_algorithm_duration.observe(seconds)

    def observe_algorithm(self, seconds: float) -> None:
        """SchedulingAlgorithmLatency: the scheduling algorithm alone (filter + score)."""
        self.scheduling_algorithm_duration.observe(seconds)

    def observe_extension_point(
        self, point: str, status: str, profile: str, seconds: float
    ) -> None:
        """All plugins of one extension point ran: point "Filter", status "Success", ..."""
        self._labels(self.framework_extension_point_duration, point, status, profile).observe(
            seconds
        )

    def should_sample_plugins(self) -> bool:
        """Whether this cycle records plugin_execution_duration_seconds:
        ``rand.Intn(100) < pluginMetricsSamplePercent`` upstream."""
        return self._rng.randrange(100) < self.plugin_sample_percent

    def observe_plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        """One plugin ran at one extension point (call it in sampled cycles only)."""
        self._labels(self.plugin_execution_duration, plugin, point, status).observe(seconds)

    def inc_plugin_evaluation(self, plugin: str, point: str, profile: str, n: int = 1) -> None:
        """A plugin was evaluated (PreFilter, Filter, PreScore, Score; not skipped)."""
        self.plugin_evaluation.labels(plugin, point, profile).inc(n)

    def plugin_evaluation_counter(
        self, plugin: str, point: str, profile: str
    ) -> Callable[[float], None]:
        """inc_plugin_evaluation for one (plugin, point, profile), the label lookup done
        once (upstream's setInstrumentedPlugins caches the metric stream likewise): it
        runs on every Filter and Score call."""
        return self.plugin_evaluation.labels(plugin, point, profile).inc

    def observe_permit_wait(self, result: str, seconds: float) -> None:
        """A pod's wait on Permit ended; result is the status string (Success, ...)."""
        self._labels(self.permit_wait_duration, result).observe(seconds)

    def observe_batch_attempt(self, profile: str, result: str) -> None:
        self._labels(self.batch_attempts, profile, result).inc()

    def inc_batch_flush(self, profile: str, reason: str) -> None:
        self._labels(self.batch_cache_flushed, profile, reason).inc()

    def observe_node_hint(self, hinted: str, profile: str, seconds: float) -> None:
        self._labels(self.get_node_hint_duration, hinted, profile).observe(seconds)

    def observe_store_results(self, profile: str, seconds: float) -> None:
        self._labels(self.store_schedule_results_duration, profile).observe(seconds)

    def observe_pod_scheduled(self, attempts: int, seconds_since_first_attempt: float) -> None:
        """A pod was bound: attempts it took, and the time since its first attempt
        (the SLI histogram's ``attempts`` label is capped at "15+", as upstream)."""
        self.pod_scheduling_attempts.observe(attempts)
        label = "15+" if attempts >= 15 else str(attempts)
        self._labels(self.pod_scheduling_sli_duration, label).observe(seconds_since_first_attempt)

    # --- preemption ------------------------------------------------------------

    def inc_preemption_attempts(self) -> None:
        """DefaultPreemption's PostFilter tried to preempt."""
        self.preemption_attempts.inc()

    def observe_preemption_victims(self, victims: int) -> None:
        """A preemption candidate was chosen with this many victims."""
        self.preemption_victims.observe(victims)

    # --- batch mode (`run --batch-window`) ---------------------------------------

    def observe_batch(self, result: str, beyond_greedy: int) -> None:
        """A batch placement ran: its result, and the pods it placed beyond greedy."""
        self._labels(self.batch_placements, result).inc()
        if beyond_greedy > 0:
            self.batch_pods_beyond_greedy.inc(beyond_greedy)

    # --- queue and cache -------------------------------------------------------

    def set_pending(self, counts: Mapping[str, int]) -> None:
        """Pods per queue: active, backoff, unschedulable, gated (missing ones are 0)."""
        for queue in PENDING_QUEUES:
            self._labels(self.pending_pods, queue).set(counts.get(queue, 0))
        for queue, n in counts.items():
            if queue not in PENDING_QUEUES:
                self._labels(self.pending_pods, queue).set(n)

    def set_incoming(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Mirror the queue's cumulative (queue, event) -> count into the counter by
        adding what grew since the previous call. A count that went down means a new
        queue started from zero: its whole value is added."""
        for key, total in counts.items():
            seen = self._incoming_seen.get(key, 0)
            delta = total - seen if total >= seen else total
            if delta > 0:
                self._labels(self.queue_incoming_pods, *key).inc(delta)
            self._incoming_seen[key] = total

    def set_unschedulable(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Unschedulable pods per (plugin, profile); pairs gone since the last call drop to 0."""
        for key in self._unschedulable_seen - counts.keys():
            self._labels(self.unschedulable_pods, *key).set(0)
        for key, n in counts.items():
            self._labels(self.unschedulable_pods, *key).set(n)
        self._unschedulable_seen = set(counts)

    def set_cache_size(self, *, nodes: int, pods: int, assumed_pods: int) -> None:
        """The scheduler cache's nodes, pods and assumed pods (cache.go: updateMetrics)."""
        self._labels(self.cache_size, "assumed_pods").set(assumed_pods)
        self._labels(self.cache_size, "pods").set(pods)
        self._labels(self.cache_size, "nodes").set(nodes)

    def set_api_inflight_limit(self, limit: int) -> None:
        """The API client's in-flight limit (kube/inflight.py)."""
        self.api_inflight_limit.set(limit)

    def set_cpu_budget(self, read: Callable[[], Mapping[str, float]]) -> None:
        """kubesched_cpu_seconds_total{stage}: kubesched's own (kube-scheduler has no
        such metric), the CPU of `run` by stage (kube/cpu_budget.py), read at scrape."""
        self.registry.register(
            _ReadCounter(
                "kubesched_cpu_seconds",
                _help(
                    "ALPHA",
                    "CPU seconds kubesched has spent, by stage: the scheduling thread's "
                    "timed stages and its rest, other threads, and the API worker process.",
                ),
                "stage",
                read,
            )
        )

    def enable_extender_server_metrics(self) -> None:
        """kubesched's own metrics of `kubesched extender` (kube-scheduler serves no
        extender verbs): each verb's request latency, by HTTP code, and its errors,
        by reason (bad_request, too_large, not_ready, plugin_error, internal)."""
        self.extender_request_duration = Histogram(
            "kubesched_extender_request_duration_seconds",
            _help("ALPHA", "Latency of extender verb requests, by verb and HTTP code."),
            ["verb", "code"],
            buckets=(0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0),
            registry=self.registry,
        )
        self.extender_request_errors = Counter(
            "kubesched_extender_request_errors",
            _help("ALPHA", "Extender verb requests that failed, by verb and reason."),
            ["verb", "reason"],
            registry=self.registry,
        )

    def observe_extender_request(self, verb: str, code: int, seconds: float, error: str) -> None:
        """One extender verb request answered with CODE in SECONDS; ERROR is the
        reason it failed ("" if it did not)."""
        self._labels(self.extender_request_duration, verb, str(code)).observe(seconds)
        if error:
            self._labels(self.extender_request_errors, verb, error).inc()

    # --- exposition ------------------------------------------------------------

    def render(self) -> bytes:
        """The Prometheus text exposition (format 0.0.4) of every metric."""
        return generate_latest(_WithoutCreated(self.registry))

    def value(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """One sample's value by its exposed name, e.g. ``scheduler_pending_pods``."""
        return self.registry.get_sample_value(name, dict(labels) if labels else None)
