"""What the scheduler tells about its work, to whoever listens: one object in place
of three optional observers checked at every call site.

Three kinds of listener, each optional:

- metrics (Observer: kubesched.server.metrics.SchedulerMetrics in `run`): the attempt,
  algorithm and pod-scheduled metrics of ScheduleOne, the Sign extension point's
  duration, and the pod group metrics when the recorder has them;
- outcomes (OutcomeObserver: the simulator's OutcomeRecorder): what becomes of each
  pod, for a per-pod report;
- explanations (ExplainObserver: `kubesched explain`, `run --explain`): the
  attempts of the pods it asks about.

The scheduler calls SchedulingListeners' methods unconditionally; each does
nothing for a listener that is absent. Upstream has only the metrics (package
metrics, called directly); the other two are kubesched's.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

from kubesched.framework.explain import Explanation
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.metrics_recorder import MetricsRecorder


class Observer(MetricsRecorder, Protocol):
    """What the scheduler reports to metrics (kubesched.server.metrics.SchedulerMetrics):
    what its own loop observes, and, through the Handle it builds, what the
    framework and the plugins do (MetricsRecorder)."""

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None: ...
    def observe_algorithm(self, seconds: float) -> None: ...
    def should_sample_plugins(self) -> bool:
        """Whether this cycle's plugin durations are observed (ScheduleOne's
        `rand.Intn(100) < pluginMetricsSamplePercent`)."""
        ...

    def observe_pod_scheduled(self, attempts: int, seconds_since_first_attempt: float) -> None: ...


@runtime_checkable
class PodGroupMetrics(Protocol):
    """The pod group metrics (podgroup_schedule_attempts_total and the two latency
    histograms), which upstream registers only with GenericWorkload on."""

    def observe_pod_group_attempt(self, result: str, profile: str, seconds: float) -> None: ...
    def observe_pod_group_algorithm(self, seconds: float) -> None: ...


class OutcomeObserver(Protocol):
    """Told what becomes of each pod, for a per-pod report (the simulator's
    OutcomeRecorder). The scheduler keeps no such record itself: in `kubesched run`
    nothing per pod may outlive the pod."""

    def pod_pending(self, key: str) -> None: ...
    def pod_attempted(self, key: str, attempts: int) -> None: ...
    def pod_scheduled(self, key: str, node: str) -> None: ...
    def pod_failed(
        self, key: str, reason: str, message: str, diagnosis: Diagnosis | None
    ) -> None: ...


class ExplainObserver(Protocol):
    """Asks for explanations of some pods' attempts and is handed each one when the
    attempt's scheduling cycle ends (`kubesched explain`, `run --explain`). The
    scheduler asks `wants` once per attempt; with no ExplainObserver it asks nothing
    and captures nothing."""

    def wants(self, key: str) -> bool: ...
    def explained(self, explanation: Explanation) -> None: ...


class SchedulingListeners:
    """The scheduler's listeners; every method is a no-op for an absent one."""

    __slots__ = ("explain", "group_metrics", "metrics", "outcomes")

    def __init__(
        self,
        metrics: Observer | None = None,
        outcomes: OutcomeObserver | None = None,
        explain: ExplainObserver | None = None,
    ) -> None:
        self.metrics = metrics
        self.outcomes = outcomes
        self.explain = explain
        self.group_metrics = metrics if isinstance(metrics, PodGroupMetrics) else None

    # --- metrics ---------------------------------------------------------------------

    def sample_plugins(self) -> bool:
        """Whether this cycle's plugin durations are observed (a metrics listener
        samples; without one nothing is)."""
        return self.metrics is not None and self.metrics.should_sample_plugins()

    @property
    def times_extension_points(self) -> bool:
        """Whether the scheduler's own extension points (Sign) are timed at all."""
        return self.metrics is not None

    def attempt(self, result: str, profile: str, started: float) -> None:
        """schedule_attempts_total and scheduling_attempt_duration_seconds, for an
        attempt that began at STARTED (perf_counter)."""
        if self.metrics is not None:
            self.metrics.observe_attempt(result, profile, time.perf_counter() - started)

    def algorithm(self, started: float) -> None:
        """schedulingAlgorithm's deferred SchedulingAlgorithmLatency: from the cycle's
        start through Filter and Score or, for a pod that fits nowhere, PostFilter."""
        if self.metrics is not None:
            self.metrics.observe_algorithm(time.perf_counter() - started)

    def extension_point(self, point: str, status: str, profile: str, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_extension_point(point, status, profile, seconds)

    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        if self.group_metrics is not None:
            self.group_metrics.observe_pod_group_attempt(result, profile, seconds)

    def pod_group_algorithm(self, seconds: float) -> None:
        if self.group_metrics is not None:
            self.group_metrics.observe_pod_group_algorithm(seconds)

    # --- outcomes --------------------------------------------------------------------

    def pod_pending(self, key: str) -> None:
        if self.outcomes is not None:
            self.outcomes.pod_pending(key)

    def pod_attempted(self, key: str, attempts: int) -> None:
        if self.outcomes is not None:
            self.outcomes.pod_attempted(key, attempts)

    def pod_bound(
        self, key: str, node: str, attempts: int, since_first_attempt: float | None
    ) -> None:
        """The pod is bound: its outcome, and pod_scheduling_sli_duration_seconds /
        pod_scheduling_attempts (SINCE_FIRST_ATTEMPT: None when not known)."""
        if self.outcomes is not None:
            self.outcomes.pod_scheduled(key, node)
        if self.metrics is not None and since_first_attempt is not None:
            self.metrics.observe_pod_scheduled(attempts, since_first_attempt)

    def pod_failed(self, key: str, reason: str, message: str, diagnosis: Diagnosis | None) -> None:
        if self.outcomes is not None:
            self.outcomes.pod_failed(key, reason, message, diagnosis)

    # --- explanations ----------------------------------------------------------------

    def wants_explanation(self, key: str) -> bool:
        return self.explain is not None and self.explain.wants(key)

    def explaining(self) -> bool:
        return self.explain is not None

    def explained(self, explanation: Explanation) -> None:
        if self.explain is not None:
            self.explain.explained(explanation)
