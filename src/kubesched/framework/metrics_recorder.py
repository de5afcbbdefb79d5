"""MetricsRecorder: what the framework and its plugins report to metrics.

Upstream's framework and plugins write to the scheduler's metrics package
directly: frameworkImpl's RunXPlugins observe FrameworkExtensionPointDuration,
its metricsRecorder (a MetricAsyncRecorder) the sampled per-plugin durations,
the instrumented plugins that NewFramework sets up (setInstrumentedPlugins)
count PluginEvaluationTotal, and DefaultPreemption's Evaluator counts
PreemptionAttempts and observes PreemptionVictims, and the OpportunisticBatch
counts BatchAttemptStats and BatchCacheFlushed and times GetNodeHint and
StoreScheduleResults. Here the framework and the
plugins see only this Protocol, on the Handle (`Handle.metrics`); the
scheduler's Observer (kubesched.server.metrics.SchedulerMetrics in `kubesched run`)
implements it. Without one, the Handle holds NO_METRICS, and the framework
times nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class MetricsRecorder(Protocol):
    """The metrics the framework and its plugins feed (kube-scheduler's names)."""

    def observe_extension_point(
        self, point: str, status: str, profile: str, seconds: float
    ) -> None:
        """framework_extension_point_duration_seconds: one run of every plugin of a point."""
        ...

    def observe_plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        """plugin_execution_duration_seconds: one plugin at one point, in sampled cycles."""
        ...

    def plugin_evaluation_counter(
        self, plugin: str, point: str, profile: str
    ) -> Callable[[float], None]:
        """plugin_evaluation_total for one (plugin, point, profile): the function that
        adds to it, looked up once as setInstrumentedPlugins caches the metric stream."""
        ...

    def inc_preemption_attempts(self) -> None:
        """preemption_attempts_total: DefaultPreemption's PostFilter ran."""
        ...

    def observe_preemption_victims(self, victims: int) -> None:
        """preemption_victims: the victims of the candidate preemption acts on."""
        ...

    def observe_batch_attempt(self, profile: str, result: str) -> None:
        """batch_attempts_total: a hint was used, not used, or not given."""
        ...

    def inc_batch_flush(self, profile: str, reason: str) -> None:
        """batch_cache_flushed_total: the batch's ranking was dropped, and why."""
        ...

    def observe_node_hint(self, hinted: str, profile: str, seconds: float) -> None:
        """get_node_hint_duration_seconds."""
        ...

    def observe_store_results(self, profile: str, seconds: float) -> None:
        """store_schedule_results_duration_seconds."""
        ...


def _ignore(n: float) -> None:
    pass


class NoMetrics:
    """The MetricsRecorder of a scheduler without metrics (`simulate`, the in-process
    bench): every report is dropped, and the framework, seeing it, times nothing."""

    def observe_extension_point(
        self, point: str, status: str, profile: str, seconds: float
    ) -> None:
        pass

    def observe_plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        pass

    def plugin_evaluation_counter(
        self, plugin: str, point: str, profile: str
    ) -> Callable[[float], None]:
        return _ignore

    def inc_preemption_attempts(self) -> None:
        pass

    def observe_preemption_victims(self, victims: int) -> None:
        pass

    def observe_batch_attempt(self, profile: str, result: str) -> None:
        pass

    def inc_batch_flush(self, profile: str, reason: str) -> None:
        pass

    def observe_node_hint(self, hinted: str, profile: str, seconds: float) -> None:
        pass

    def observe_store_results(self, profile: str, seconds: float) -> None:
        pass


NO_METRICS = NoMetrics()


def records(metrics: MetricsRecorder) -> bool:
    """Whether reports to `metrics` are kept, so worth timing."""
    return not isinstance(metrics, NoMetrics)
