"""The framework runtime: one per profile, it runs the plugins of each extension point.

Filter runs plugin by plugin over all candidate nodes at once: each plugin sees
only the nodes every earlier plugin let through, which gives the same verdicts
as kube-scheduler's node-by-node loop that stops at the first failing plugin.

The metrics of the extension points are taken here, as frameworkImpl takes them
(framework/runtime/framework.go): each run_X records its point's duration once
(FrameworkExtensionPointDuration, in a deferred function upstream, so also when
it fails), each plugin's duration in the cycles sampled for it
(metricsRecorder.ObservePluginDurationAsync when state.ShouldRecordPluginMetrics),
and PreFilter, Filter, PreScore and Score count the plugins' evaluations (the
instrumented plugins of setInstrumentedPlugins). Filter's duration is the one
taken outside a run_X upstream: see run_filter_pass. Without a recorder
(Handle.metrics is NO_METRICS) nothing is timed: one flag is checked per run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from time import perf_counter
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from kubesched.framework import interfaces as ifc
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.explain import CycleCapture, ScoreCapture
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.metrics_recorder import records
from kubesched.framework.profile import ProfileConfig, resolve
from kubesched.framework.registry import Registry
from kubesched.framework.runtime import timing
from kubesched.framework.runtime.batch import OpportunisticBatch
from kubesched.framework.runtime.errors import (
    PluginError,
    score_range_error,
    wrapped_error,
)
from kubesched.framework.runtime.timing import TimedBlock, async_extension_point, extension_point
from kubesched.framework.signature import PodSigner
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.state.nominated import NominatedRows, nominated_by_row
from kubesched.framework.state.table_copy import TableCopy
from kubesched.framework.status import CODE_NAMES, Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo

P = TypeVar("P", bound=ifc.Plugin)
C = TypeVar("C", bound=Callable[..., Any])  # a plugin's method
R = TypeVar("R")


_SUCCESS = int(Code.SUCCESS)
_SKIP = int(Code.SKIP)
_MAX_U64 = np.maximum.reduce
_ERROR = int(Code.ERROR)
_PENDING = int(Code.PENDING)

# How a sampled cycle observes a plugin that raises: as what the run method turns it
# into, an Error status or, where upstream's point cannot fail (Unreserve, PostBind),
# a logged error and Success. Elsewhere it raises PluginError: the cycle ends, unobserved.
_RAISED_AS = dict.fromkeys(["PostFilter", "Reserve", "Permit", "PreBind", "Bind"], _ERROR)
_RAISED_AS |= dict.fromkeys(["Unreserve", "PostBind"], _SUCCESS)


class Framework:
    """The plugins of one profile, ready to run."""

    def __init__(self, profile: ProfileConfig, handle: Handle, registry: Registry) -> None:
        self.profile_name = profile.scheduler_name
        # This profile's handle: the shared one with this framework as its runner
        # (upstream's frameworkImpl is the Handle its plugins get).
        handle = self.handle = dataclasses.replace(handle, framework=self)
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        resolved = resolve(profile, ifc.EXTENSION_POINTS, registry)
        self.instances: dict[str, ifc.Plugin] = {}
        for names in resolved.points.values():
            for name in names:
                if name not in self.instances:
                    cls = registry[name]
                    args = profile.plugin_config.get(name)
                    self.instances[name] = cls(args, handle)
        self.points = resolved.points
        self.weights = resolved.weights
        self.metrics = handle.metrics
        # Whether anyone keeps the figures: if not, nothing is timed or counted.
        self.recording = records(handle.metrics)

        def plugins(point: str, kind: type[P]) -> list[P]:
            found = [self.instances[n] for n in self.points[point]]
            return [p for p in found if isinstance(p, kind)]

        self.queue_sort = plugins("queueSort", ifc.QueueSortPlugin)
        if len(self.queue_sort) != 1:
            raise ValueError(
                f"profile {self.profile_name!r}: exactly one queueSort plugin must be enabled, "
                f"found {len(self.queue_sort)}"
            )
        if not self.points["bind"]:
            raise ValueError(f"profile {self.profile_name!r}: at least one bind plugin is needed")
        self.pre_enqueue = plugins("preEnqueue", ifc.PreEnqueuePlugin)
        self.pre_filter = plugins("preFilter", ifc.PreFilterPlugin)
        self.filter = plugins("filter", ifc.FilterPlugin)
        self.post_filter = plugins("postFilter", ifc.PostFilterPlugin)
        self.pre_score = plugins("preScore", ifc.PreScorePlugin)
        self.score = plugins("score", ifc.ScorePlugin)
        self.reserve = plugins("reserve", ifc.ReservePlugin)
        self.permit = plugins("permit", ifc.PermitPlugin)
        self.pre_bind = plugins("preBind", ifc.PreBindPlugin)
        self.bind = plugins("bind", ifc.BindPlugin)
        self.post_bind = plugins("postBind", ifc.PostBindPlugin)
        # setInstrumentedPlugins: each plugin's plugin_evaluation_total, looked up once.
        self._pre_filter_evaluations = self._evaluation_counters("PreFilter", self.pre_filter)
        self._filter_evaluations = self._evaluation_counters("Filter", self.filter)
        self._pre_score_evaluations = self._evaluation_counters("PreScore", self.pre_score)
        self._score_evaluations = self._evaluation_counters("Score", self.score)
        # Each point's plugins with their method there, bound once (_bound_calls).
        calls = self._bound_calls
        self._pre_filter_calls = calls("PreFilter", self.pre_filter, lambda p: p.pre_filter)
        exts = [p for p in self.pre_filter if isinstance(p, ifc.PreFilterExtensions)]
        self._add_pod_calls = calls("PreFilterExtensionAddPod", exts, lambda p: p.add_pod)
        self._remove_pod_calls = calls("PreFilterExtensionRemovePod", exts, lambda p: p.remove_pod)
        self._filter_calls = calls("Filter", self.filter, lambda p: p.filter)
        self._post_filter_calls = calls("PostFilter", self.post_filter, lambda p: p.post_filter)
        self._pre_score_calls = calls("PreScore", self.pre_score, lambda p: p.pre_score)
        self._reserve_calls = calls("Reserve", self.reserve, lambda p: p.reserve)
        self._unreserve_calls = calls("Unreserve", self.reserve, lambda p: p.unreserve)
        self._permit_calls = calls("Permit", self.permit, lambda p: p.permit)
        self._pre_bind_calls = calls("PreBind", self.pre_bind, lambda p: p.pre_bind, coroutine=True)
        self._bind_calls = calls("Bind", self.bind, lambda p: p.bind, coroutine=True)
        self._post_bind_calls = calls("PostBind", self.post_bind, lambda p: p.post_bind)
        # Opportunistic batching: who signs pods (computeBatchablePlugins) and the
        # previous cycle's ranking (newOpportunisticBatch).
        self.signer = PodSigner(
            self.profile_name,
            [*self.pre_filter, *self.filter, *self.pre_score, *self.score],
            has_extenders=bool(handle.extenders),
        )
        self.batch = OpportunisticBatch(
            self.profile_name, handle.nodes, handle.clock, handle.metrics, self.signer, handle.rng
        )

    def _evaluation_counters(
        self, point: str, found: list[P]
    ) -> dict[str, Callable[[float], None]]:
        if not self.recording:
            return {}
        counter = self.metrics.plugin_evaluation_counter
        return {plugin.name: counter(plugin.name, point, self.profile_name) for plugin in found}

    # --- metadata ----------------------------------------------------------------

    def events_to_register(self) -> dict[str, list[ifc.ClusterEventWithHint]]:
        events: dict[str, list[ifc.ClusterEventWithHint]] = {}
        for name, plugin in self.instances.items():
            if isinstance(plugin, ifc.EnqueueExtensions):
                events[name] = plugin.events_to_register()
        return events

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.queue_sort[0].less(a, b)

    # --- metrics -----------------------------------------------------------------
    # A run method observes plugin durations when `self.recording and
    # state.record_plugin_metrics` (state.ShouldRecordPluginMetrics upstream: the
    # cycle was sampled), checked once per run: it picks its point's calls with it.

    def _bound_calls(
        self, point: str, plugins: list[P], method: Callable[[P], C], coroutine: bool = False
    ) -> tuple[list[tuple[P, C]], list[tuple[P, C]]]:
        """Each plugin with its method at `point`, bound once (the plugins are fixed), in
        two lists a run method indexes with `sample`: the methods as they are (so an
        unsampled cycle, most of them, calls them and nothing else), and the same
        through _call_sampled (_call_sampled_async for a `coroutine` method)."""
        plain = [(plugin, method(plugin)) for plugin in plugins]
        timed = self._call_sampled_async if coroutine else self._call_sampled
        partial = functools.partial
        return plain, [(p, cast(C, partial(timed, point, p.name, call))) for p, call in plain]

    def _call_sampled(self, point: str, plugin: str, call: Callable[..., R], *args: Any) -> R:
        """A plugin's call in a sampled cycle, as frameworkImpl's runXPlugin makes it when
        state.ShouldRecordPluginMetrics(): timed, and observed (ObservePluginDurationAsync)
        with the code of the status it returns (timing.status_code: Success if none). If
        it raises, observed as _RAISED_AS says; the run method's except handles it."""
        started = perf_counter()
        try:
            result = call(*args)
        except Exception:
            self._observe_raised(point, plugin, started)
            raise
        self._observe_plugin(point, plugin, timing.status_code(result), started)
        return result

    async def _call_sampled_async(
        self, point: str, plugin: str, call: Callable[..., Awaitable[R]], *args: Any
    ) -> R:
        """_call_sampled for a coroutine method (PreBind, Bind)."""
        started = perf_counter()
        try:
            result = await call(*args)
        except Exception:
            self._observe_raised(point, plugin, started)
            raise
        self._observe_plugin(point, plugin, timing.status_code(result), started)
        return result

    def _observe_raised(self, point: str, plugin: str, started: float) -> None:
        if (code := _RAISED_AS.get(point)) is not None:
            self._observe_plugin(point, plugin, code, started)

    def _observe_plugin(self, point: str, plugin: str, code: int, started: float) -> None:
        """ObservePluginDurationAsync: one plugin at `point`, in a sampled cycle."""
        seconds = perf_counter() - started
        self.metrics.observe_plugin(plugin, point, CODE_NAMES[code], seconds)

    def run_filter_pass(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        candidates: Rows,
        start: int = 0,
        first: int | None = None,
        enough: int = 0,
    ) -> tuple[Rows, Diagnosis, Rows]:
        """The Filter plugins with nominated pods over the candidates in the order
        findNodesThatPassFilters tries them (from `start`, round to the beginning):
        only the FIRST nodes of that order when more than ENOUGH of them fit, else all
        of them (the same feasible nodes up to the ENOUGH-th, the same verdicts).
        Returns the feasible rows, the diagnosis, and the nodes filtered in order.

        Upstream records Filter's duration in the scheduler's findNodesThatPassFilters,
        "instead of in framework.go because framework.RunFilterPlugins function is
        called for each node, whereas we want to have an overall latency for all
        nodes per scheduling cycle": here the pass is one call, timed once. Error if
        a plugin failed (PluginError), else Success; nothing without Filter plugins
        (upstream returns before)."""
        timed = _UNTIMED if not self.recording or not self.filter else TimedBlock(self, "Filter")
        total = len(candidates)
        with timed:
            if first is not None and first < total:
                end = start + first
                if end <= total:
                    tried = candidates[start:end]
                else:
                    tried = np.concatenate([candidates[start:], candidates[: end - total]])
                feasible, diagnosis = self.run_filters_with_nominated_pods(state, pod, nodes, tried)
                if len(feasible) > enough:
                    return feasible, diagnosis, tried
            tried = (
                np.concatenate([candidates[start:], candidates[:start]]) if start else candidates
            )
            feasible, diagnosis = self.run_filters_with_nominated_pods(state, pod, nodes, tried)
            return feasible, diagnosis, tried

    # --- queueing ----------------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return Status()

    # --- scheduling cycle --------------------------------------------------------

    @extension_point("PreFilter")
    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[ifc.PreFilterResult, Status]:
        """Every PreFilter, as upstream: an unresolvable verdict stops at once, an
        unschedulable one lets the rest run (for preemption's sake) and is returned.
        Raises PluginError (recorded as an Error) for a plugin that fails."""
        result = ifc.PreFilterResult()
        rejected: Status | None = None
        counting = self.recording
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._pre_filter_calls[sample]:
            try:
                part, status = call(state, pod, nodes)
            except Exception as exc:  # a plugin bug must not stop the scheduler
                raise PluginError(plugin.name, "PreFilter", exc) from exc
            code = status.code
            if code == _SKIP:
                state.skip_filter_plugins.add(plugin.name)
                continue
            if counting:  # instrumentedPreFilterPlugin: every call that does not skip
                self._pre_filter_evaluations[plugin.name](1)
            if code != _SUCCESS:
                if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return result, status.with_plugin(plugin.name)  # no preemption can help
                if code == Code.UNSCHEDULABLE:
                    # Preemption may still help: the other PreFilters must run too.
                    rejected = status.with_plugin(plugin.name)
                    continue
                raise PluginError(plugin.name, "PreFilter", status.message())
            if part is not None and part.node_names is not None:
                result = result.merge(part, plugin.name)
                if not result.node_names:
                    narrowing = sorted(result.plugins)
                    if len(narrowing) == 1:
                        message = f"node(s) didn't satisfy plugin {narrowing[0]}"
                    else:
                        message = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] "
                        message += "simultaneously"
                    return result, Status.unresolvable(message, plugin=plugin.name)
        return result, rejected or Status()

    def run_filters(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> tuple[Rows, Diagnosis]:
        """Returns the rows that pass every filter (in the given order) and the
        diagnosis of those that do not."""
        failed_rows: list[Rows] = []
        failed_codes: list[npt.NDArray[np.int8]] = []
        failed_plugins: list[str] = []
        diagnosis = Diagnosis.empty()
        remaining = rows
        skipped = state.skip_filter_plugins
        counting = self.recording
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._filter_calls[sample]:
            if plugin.name in skipped or len(remaining) == 0:
                continue
            if counting:  # instrumentedFilterPlugin, called once per node upstream
                self._filter_evaluations[plugin.name](len(remaining))
            try:
                verdicts = call(state, pod, nodes, remaining)
            except Exception as exc:
                raise PluginError(plugin.name, "Filter", exc) from exc
            if not np.count_nonzero(verdicts.codes):  # every node passed (SUCCESS is 0)
                continue
            failed = verdicts.codes != _SUCCESS
            if (verdicts.codes == _ERROR).any():
                raise PluginError(plugin.name, "Filter", "; ".join(r for r, _ in verdicts.reasons))
            failed_rows.append(remaining[failed])
            failed_codes.append(verdicts.codes[failed])
            failed_plugins.extend([plugin.name] * int(failed.sum()))
            for reason, mask in verdicts.reasons:
                diagnosis.reasons.append((reason, remaining[mask]))
            if (verdicts.codes == _PENDING).any():
                diagnosis.pending_plugins.add(plugin.name)
            else:
                diagnosis.unschedulable_plugins.add(plugin.name)
            remaining = remaining[~failed]
        if failed_rows:
            diagnosis.rows = np.concatenate(failed_rows)
            diagnosis.codes = np.concatenate(failed_codes)
            diagnosis.plugins = failed_plugins
        return remaining, diagnosis

    def run_filter_plugin(
        self,
        plugin: ifc.FilterPlugin,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        rows: Rows,
    ) -> ifc.NodeVerdicts:
        """One of this framework's Filter plugins over the rows, counted and timed as
        run_filters counts and times it (runFilterPlugin through the instrumented
        plugin upstream): for preemption's batched dry run, which runs some of the
        filters itself."""
        if not self.recording:
            return plugin.filter(state, pod, nodes, rows)
        self._filter_evaluations[plugin.name](len(rows))
        if not state.record_plugin_metrics:
            return plugin.filter(state, pod, nodes, rows)
        return self._call_sampled("Filter", plugin.name, plugin.filter, state, pod, nodes, rows)

    @extension_point("PostFilter")
    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[ifc.PostFilterResult | None, Status]:
        """RunPostFilterPlugins: the first success or unresolvable answer wins; an
        error is returned (not raised: the pod stays merely unschedulable, with the
        error in its message); otherwise every plugin's reasons, and the last
        result that nominates (or clears the nomination)."""
        result: ifc.PostFilterResult | None = None
        reasons: list[str] = []
        rejector = ""
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._post_filter_calls[sample]:
            try:
                found, status = call(state, pod, diagnosis)
            except Exception as exc:
                found, status = None, Status.as_error(exc)
            if status.is_success():
                return found, status
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return found, status.with_plugin(plugin.name)
            if not status.is_rejected():
                return None, Status.as_error(status.message(), plugin.name)
            if found is not None:
                result = found
            reasons.extend(status.reasons)
            rejector = rejector or plugin.name
        return result, Status(Code.UNSCHEDULABLE, reasons, rejector)

    # --- what-if runs: preemption and nominated pods ------------------------------

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, nodes: NodeTable, row: int
    ) -> None:
        """Tell the PreFilter plugins that `to_add` was added to the row (the table
        has it already); raises PluginError if one fails."""
        self._run_pre_filter_extension(
            "PreFilterExtension AddPod", self._add_pod_calls, state, pod, to_add, nodes, row
        )

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, nodes: NodeTable, row: int
    ) -> None:
        """Tell the PreFilter plugins that `to_remove` left the row (the table no
        longer has it); raises PluginError if one fails."""
        self._run_pre_filter_extension(
            "PreFilterExtension RemovePod",
            self._remove_pod_calls,
            state,
            pod,
            to_remove,
            nodes,
            row,
        )

    def _run_pre_filter_extension(
        self,
        point: str,
        calls: Sequence[Sequence[tuple[ifc.Plugin, Callable[..., Status]]]],
        state: CycleState,
        pod: PodInfo,
        other: PodInfo,
        nodes: NodeTable,
        row: int,
    ) -> None:
        # RunPreFilterExtensionAddPod and RunPreFilterExtensionRemovePod upstream.
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in calls[sample]:
            if plugin.name in state.skip_filter_plugins:
                continue
            try:
                status = call(state, pod, other, nodes, row)
            except Exception as exc:
                raise PluginError(plugin.name, point, exc) from exc
            if not status.is_success():
                raise PluginError(plugin.name, point, status.message())

    def filter_scopes(
        self, state: CycleState, pod: PodInfo
    ) -> list[tuple[ifc.FilterPlugin, ifc.FilterScope]] | None:
        """The filters that run for the pod with what each declares it reads; None when
        a PreFilterExtensions runs for the pod (its CycleState does not follow what-if
        changes to several nodes at once)."""
        skipped = state.skip_filter_plugins
        for plugin in self.pre_filter:
            if isinstance(plugin, ifc.PreFilterExtensions) and plugin.name not in skipped:
                return None
        return [
            (plugin, ifc.declared_filter_scope(plugin, pod))
            for plugin in self.filter
            if plugin.name not in skipped
        ]

    def _widest_scope(self, state: CycleState, pod: PodInfo) -> ifc.FilterScope:
        """The widest FilterScope of the filters that run for the pod (CLUSTER with a
        PreFilterExtensions): up to ROW, what-if changes to several rows at once give
        each row the verdict it would get alone."""
        scopes = self.filter_scopes(state, pod)
        if scopes is None:
            return ifc.FilterScope.CLUSTER
        return max((scope for _, scope in scopes), default=ifc.FilterScope.NODE)

    def run_filters_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> tuple[Rows, Diagnosis]:
        """run_filters, as RunFilterPluginsWithNominatedPods: on a node with pods of
        the same or higher priority nominated to it, the filters run first with those
        pods added (node and PreFilter state), then, if they pass, without them."""
        nominated = nominated_by_row(self.handle.nominated, pod, nodes, rows)
        if not nominated:
            return self.run_filters(state, pod, nodes, rows)
        special = nominated.rows()
        feasible, diagnosis = self.run_filters(state, pod, nodes, rows[~np.isin(rows, special)])
        passed = [feasible]
        widest = self._widest_scope(state, pod) if len(nominated) > 1 else ifc.FilterScope.CLUSTER
        # The nominated pods go onto a copy of the table, as addGENominatedPods adds
        # them to a clone of the NodeInfo: the cycle's snapshot stays as it is, with
        # nothing to put back, whatever a filter does.
        copy = TableCopy.of(nodes)
        if widest <= ifc.FilterScope.ROW:
            # Every row with its nominated pods at once, then those that fit without.
            # Filters that read the pods only through their amounts see them added as
            # amounts alone (NodeTable.shift_requested): no pod is copied (copying the
            # rows' pods was most of PreemptionBasic's time).
            added = nominated.amounts(nodes) if widest <= ifc.FilterScope.AMOUNTS else None
            if added is not None:
                copy.shift_requested(special, added)
            else:
                for row, pods in nominated.items():
                    for other in pods:
                        copy.add_pod(other, row)
            fits, failed = self.run_filters(state.clone(), pod, copy, special)
            diagnosis.extend(failed)
            fits, failed = self.run_filters(state, pod, nodes, fits)
            diagnosis.extend(failed)
            passed.append(fits)
            nominated = NominatedRows({})
        for row, pods in nominated.items():
            # One row at a time: a filter that reads other nodes must not see their
            # nominated pods (upstream clones one NodeInfo).
            one = np.array([row], dtype=np.intp)
            state_out = state.clone()
            for other in pods:
                copy.add_pod(other, row)
                self.run_pre_filter_extension_add_pod(state_out, pod, other, copy, row)
            fits, failed = self.run_filters(state_out, pod, copy, one)
            copy.undo()
            if len(fits):
                fits, failed = self.run_filters(state, pod, nodes, one)
            if len(fits):
                passed.append(fits)
            else:
                diagnosis.extend(failed)
        feasible = np.concatenate(passed)
        position = np.empty(nodes.capacity, dtype=np.intp)
        position[rows] = np.arange(len(rows))
        feasible = feasible[np.argsort(position[feasible], kind="stable")]
        diagnosis.sort_rows(rows, nodes.capacity)
        return feasible, diagnosis

    def rejected_on(self, state: CycleState, pod: PodInfo, row: int) -> bool:
        """Whether the filters reject the pod on one node (RunFilterPlugins, then
        IsRejected, for the batch's "node not full" check); an error is not a
        rejection."""
        try:
            feasible, _ = self.run_filters(state, pod, self.handle.nodes, np.array([row], np.intp))
        except PluginError:
            return False
        return not len(feasible)

    def filter_status_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, row: int
    ) -> Status:
        """RunFilterPluginsWithNominatedPods for one node, as a Status."""
        one = np.array([row], dtype=np.intp)
        feasible, diagnosis = self.run_filters_with_nominated_pods(state, pod, nodes, one)
        if len(feasible):
            return Status()
        status = diagnosis.status_of(row)
        assert status is not None
        return status

    @extension_point("PreScore")
    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> None:
        """Every PreScore; raises PluginError (recorded as an Error) for one that fails."""
        counting = self.recording
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._pre_score_calls[sample]:
            try:
                status = call(state, pod, nodes, rows)
            except Exception as exc:
                raise PluginError(plugin.name, "PreScore", exc) from exc
            code = status.code
            if code == _SKIP:
                state.skip_score_plugins.add(plugin.name)
                continue
            if counting:  # instrumentedPreScorePlugin: every call that does not skip
                self._pre_score_evaluations[plugin.name](1)
            if code != _SUCCESS:
                raise PluginError(plugin.name, "PreScore", status.message())

    @extension_point("Score")
    def run_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        rows: Rows,
        *,
        per_plugin: bool = True,
    ) -> tuple[IntArray, dict[str, IntArray]]:
        """Weighted total per row, and each plugin's weighted scores (for explanations;
        with `per_plugin` false, those of plugins with a uniform score are left out).
        Raises PluginError (recorded as an Error) for a plugin that fails. A plugin
        whose score is uniform this cycle (ScorePlugin.uniform_score) adds one
        number: the same totals, without its arrays."""
        n = len(rows)
        total = np.zeros(n, dtype=np.int64)
        uniform_total = 0
        by_plugin: dict[str, IntArray] = {}
        skipped = state.skip_score_plugins
        counting = self.recording
        sample = self.recording and state.record_plugin_metrics
        capture: CycleCapture | None = state.explain
        for plugin in self.score:
            if plugin.name in skipped:
                if capture is not None:
                    capture.score_skipped.append(plugin.name)
                continue
            if counting:  # instrumentedScorePlugin, called once per node upstream
                self._score_evaluations[plugin.name](n)
            # Three calls timed as one, so not through _call_sampled: in a function of
            # their own, which an unsampled cycle would call too.
            started = perf_counter() if sample else 0.0
            try:
                uniform = plugin.uniform_score(state, pod, nodes)
                if uniform is None:
                    scores = np.asarray(plugin.score(state, pod, nodes, rows), dtype=np.int64)
                    raw = scores.copy() if capture is not None else scores
                    plugin.normalize_scores(state, pod, scores)
            except Exception as exc:
                raise PluginError(plugin.name, "Score", exc) from exc
            if sample:  # NormalizeScore's time included (ScoreExtensionNormalize upstream)
                self._observe_plugin("Score", plugin.name, _SUCCESS, started)
            weight = self.weights.get(plugin.name, 1)
            if uniform is not None:
                value = uniform[1]
                if not ifc.MIN_NODE_SCORE <= value <= ifc.MAX_NODE_SCORE and n:
                    raise score_range_error(plugin.name, value)
                uniform_total += value * weight
                if per_plugin:
                    by_plugin[plugin.name] = np.full(n, value * weight, dtype=np.int64)
                if capture is not None:
                    raw, scores = np.full(n, uniform[0], np.int64), np.full(n, value, np.int64)
                    capture.scores.append(ScoreCapture(plugin.name, weight, raw, scores))
                continue
            # One reduction for the range check: seen as unsigned, a negative score
            # is huge (MIN_NODE_SCORE is 0).
            if n and _MAX_U64(scores.view(np.uint64)) > ifc.MAX_NODE_SCORE:
                bad = int(scores[(scores < 0) | (scores > ifc.MAX_NODE_SCORE)][0])
                raise score_range_error(plugin.name, bad)
            if capture is not None:
                capture.scores.append(ScoreCapture(plugin.name, weight, raw, scores))
            weighted = scores * weight if weight != 1 else scores
            by_plugin[plugin.name] = weighted
            total += weighted
        if uniform_total:
            total += uniform_total
        return total, by_plugin

    @extension_point("Reserve")
    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """RunReservePluginsReserve: the first plugin that does not succeed stops it."""
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._reserve_calls[sample]:
            try:
                status = call(state, pod, node_name)
            except Exception as exc:
                status = Status.as_error(exc, plugin.name)
            if not status.is_success():
                return wrapped_error(status, plugin.name, "Reserve")
        return Status()

    @extension_point("Unreserve")
    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """RunReservePluginsUnreserve: recorded as a Success, as upstream (it cannot fail)."""
        sample = self.recording and state.record_plugin_metrics
        # In reverse order, as upstream: undo what the later plugins did first.
        calls = reversed(self._unreserve_calls[sample])
        self._run_unfailing("Unreserve", calls, state, pod, node_name)

    def _run_unfailing(
        self,
        point: str,
        calls: Iterable[tuple[ifc.Plugin, Callable[[CycleState, PodInfo, str], None]]],
        state: CycleState,
        pod: PodInfo,
        node_name: str,
    ) -> None:
        """Unreserve and PostBind return nothing upstream: they cannot fail (PostBind
        is informational: the pod is bound whatever a plugin does). One of ours that
        raises must not stop the others nor the cycle, nor go unseen: logged as
        upstream logs an error it cannot hand back (utilruntime.HandleErrorWithContext,
        with the pod and the plugin). A Success if sampled, as runReservePluginUnreserve
        and runPostBindPlugin."""
        for plugin, call in calls:
            try:
                call(state, pod, node_name)
            except Exception as exc:
                logging.getLogger(__name__).error(
                    f"Unexpected error running {point} plugin",
                    exc_info=exc,
                    extra={"kv": {"pod": pod.key, "plugin": plugin.name, "node": node_name}},
                )

    @extension_point("Permit")
    def run_permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status, dict[str, float]]:
        """RunPermitPlugins: Wait (with each waiting plugin's timeout) if some plugin
        asks to wait and none rejects."""
        waits: dict[str, float] = {}
        wait_status: Status | None = None
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._permit_calls[sample]:
            try:
                status, timeout = call(state, pod, node_name)
            except Exception as exc:
                status, timeout = Status.as_error(exc, plugin.name), 0.0
            if status.code == Code.WAIT:
                waits[plugin.name] = min(timeout, 15 * 60.0)  # upstream caps at 15 min
                wait_status = status
            elif not status.is_success():
                return wrapped_error(status, plugin.name, "Permit"), {}
        if waits:
            # The last waiting plugin's status, with upstream's appended reason (the
            # pod group cycle reports its message when the group cannot be placed).
            reasons = [] if wait_status is None else list(wait_status.reasons)
            reasons.append("one or more plugins asked to wait and no plugin rejected pod")
            waiter = "" if wait_status is None else wait_status.plugin
            return Status(Code.WAIT, reasons, waiter), waits
        return Status(), {}

    # --- binding cycle -----------------------------------------------------------

    @async_extension_point("PreBind")
    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """RunPreBindPlugins: the first plugin that neither succeeds nor skips stops it."""
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._pre_bind_calls[sample]:
            try:
                status = await call(state, pod, node_name)
            except Exception as exc:
                status = Status.as_error(exc, plugin.name)
            if status.is_skip():
                continue
            if not status.is_success():
                return wrapped_error(status, plugin.name, "PreBind")
        return Status()

    @async_extension_point("Bind")
    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """RunBindPlugins: the first plugin that does not skip binds (or fails to)."""
        sample = self.recording and state.record_plugin_metrics
        for plugin, call in self._bind_calls[sample]:
            try:
                status = await call(state, pod, node_name)
            except Exception as exc:
                status = Status.as_error(exc, plugin.name)
            if status.is_skip():
                continue
            return wrapped_error(status, plugin.name, "Bind")
        return Status.as_error("no bind plugin bound the pod")

    @extension_point("PostBind")
    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """RunPostBindPlugins: recorded as a Success, as upstream (it cannot fail)."""
        sample = self.recording and state.record_plugin_metrics
        self._run_unfailing("PostBind", self._post_bind_calls[sample], state, pod, node_name)

    def plugin_args(self, name: str) -> Mapping[str, Any]:
        return self.instances[name].args


# What run_filter_pass times with when nothing is recorded: nothing.
_UNTIMED: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
