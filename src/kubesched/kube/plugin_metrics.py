"""The metrics kube-scheduler takes inside its plugins, taken around ours in `kubesched run`.

Upstream wraps every PreFilter, Filter, PreScore and Score plugin of a
framework in an instrumented plugin that counts its evaluations
(framework/runtime/instrumented_plugins.go, set up by setInstrumentedPlugins),
and DefaultPreemption counts its own attempts and victims (the deferred
PreemptionAttempts.Inc in its PostFilter; PreemptionVictims in
Executor.prepareCandidateAsync). Our plugins know nothing of metrics (they
import only api, framework and plugins.helpers), so `run` wraps the methods of
each plugin instance instead. The instance keeps its class: what looks at a
plugin's type (isinstance, the framework's row-local filters) sees no change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    FilterPlugin,
    NodeVerdicts,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.framework.node_table import IntArray, NodeTable, Rows
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption import Candidate, DefaultPreemption


class PluginObserver(Protocol):
    """What the wrapped plugins report (kubesched.metrics.SchedulerMetrics)."""

    def plugin_evaluation_counter(
        self, plugin: str, point: str, profile: str
    ) -> Callable[[float], None]: ...
    def inc_preemption_attempts(self) -> None: ...
    def observe_preemption_victims(self, victims: int) -> None: ...


def instrument_plugins(frameworks: Iterable[Framework], observer: PluginObserver) -> None:
    """Wrap the plugins of every framework (call once, before scheduling starts)."""
    for fw in frameworks:
        profile = fw.profile_name
        for pre_filter in fw.pre_filter:
            _count_pre_filter(pre_filter, observer, profile)
        for filter_plugin in fw.filter:
            _count_filter(filter_plugin, observer, profile)
        for pre_score in fw.pre_score:
            _count_pre_score(pre_score, observer, profile)
        for score in fw.score:
            _count_score(score, observer, profile)
        for post_filter in fw.post_filter:
            if isinstance(post_filter, DefaultPreemption):
                _count_preemption(post_filter, observer)


# instrumentedPreFilterPlugin and instrumentedPreScorePlugin count a call unless the
# plugin skips; instrumentedFilterPlugin and instrumentedScorePlugin count every
# call, and upstream calls them once per node: ours see the nodes as rows at once.


def _count_pre_filter(plugin: PreFilterPlugin, observer: PluginObserver, profile: str) -> None:
    run = plugin.pre_filter
    count = observer.plugin_evaluation_counter(plugin.name, "PreFilter", profile)

    def pre_filter(
        state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        result, status = run(state, pod, nodes)
        if not status.is_skip():
            count(1)
        return result, status

    setattr(plugin, "pre_filter", pre_filter)  # noqa: B010 (a method, replaced on the instance)


def _count_filter(plugin: FilterPlugin, observer: PluginObserver, profile: str) -> None:
    run = plugin.filter
    count = observer.plugin_evaluation_counter(plugin.name, "Filter", profile)

    def filter_rows(state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        count(len(rows))
        return run(state, pod, nodes, rows)

    setattr(plugin, "filter", filter_rows)  # noqa: B010


def _count_pre_score(plugin: PreScorePlugin, observer: PluginObserver, profile: str) -> None:
    run = plugin.pre_score
    count = observer.plugin_evaluation_counter(plugin.name, "PreScore", profile)

    def pre_score(state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        status = run(state, pod, nodes, rows)
        if not status.is_skip():
            count(1)
        return status

    setattr(plugin, "pre_score", pre_score)  # noqa: B010


def _count_score(plugin: ScorePlugin, observer: PluginObserver, profile: str) -> None:
    run = plugin.score
    count = observer.plugin_evaluation_counter(plugin.name, "Score", profile)

    def score(state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        count(len(rows))
        return run(state, pod, nodes, rows)

    setattr(plugin, "score", score)  # noqa: B010


def _count_preemption(plugin: DefaultPreemption, observer: PluginObserver) -> None:
    post_filter = plugin.post_filter
    prepare = plugin.prepare_candidate_async

    def counted_post_filter(
        state: CycleState, pod: PodInfo, diagnosis: Any
    ) -> tuple[PostFilterResult | None, Status]:
        # DefaultPreemption.PostFilter: `defer metrics.PreemptionAttempts.Inc()`, every call.
        try:
            return post_filter(state, pod, diagnosis)
        finally:
            observer.inc_preemption_attempts()

    def observed_prepare(candidate: Candidate, preemptor: PodInfo) -> None:
        # prepareCandidateAsync observes all of the candidate's victims, once some of
        # them are to be deleted (not all already terminating).
        if any(v.pod.metadata.deletion_timestamp is None for v in candidate.victims):
            observer.observe_preemption_victims(len(candidate.victims))
        prepare(candidate, preemptor)

    setattr(plugin, "post_filter", counted_post_filter)  # noqa: B010
    setattr(plugin, "prepare_candidate_async", observed_prepare)  # noqa: B010
