"""The framework runtime: one per profile, it runs the plugins of each extension point.

Filter runs plugin by plugin over all candidate nodes at once: each plugin sees
only the nodes every earlier plugin let through, which gives the same verdicts
as kube-scheduler's node-by-node loop that stops at the first failing plugin.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from kubesched.cache.node_table import IntArray, NodeTable, Rows
from kubesched.framework import interfaces as ifc
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.profile import ProfileConfig, resolve
from kubesched.framework.registry import lookup
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo

P = TypeVar("P", bound=ifc.Plugin)

# Observer of extension-point and plugin durations (metrics plug in here).
DurationObserver = Callable[[str, str, Status, float], None]


class PluginError(Exception):
    """A plugin raised or returned Error: the attempt fails and the pod backs off."""

    def __init__(self, plugin: str, point: str, cause: BaseException | str):
        self.plugin = plugin
        self.point = point
        self.cause = cause
        super().__init__(f'running "{plugin}" {point} plugin: {cause}')


class ScoreRangeError(PluginError):
    pass


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits no node: per-node codes and reasons, as kube-scheduler's Diagnosis."""

    rows: Rows  # nodes that failed, in evaluation order
    codes: npt.NDArray[np.int8]  # their codes, aligned with rows
    plugins: list[str]  # the failing plugin of each row
    reasons: list[tuple[str, Rows]] = field(default_factory=list)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_message: str = ""
    post_filter_message: str = ""
    # Status for nodes that were never evaluated (PreFilter rejected, or left out
    # by a PreFilter node set), and how many such nodes there are.
    absent_status: Status | None = None
    absent_count: int = 0

    @classmethod
    def empty(cls) -> Diagnosis:
        return cls(np.empty(0, np.intp), np.empty(0, np.int8), [])

    def reason_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for reason, rows in self.reasons:
            counts[reason] = counts.get(reason, 0) + len(rows)
        if self.absent_status is not None and self.absent_count:
            for reason in self.absent_status.reasons:
                counts[reason] = counts.get(reason, 0) + self.absent_count
        return counts

    def reasons_of(self, row: int) -> list[str]:
        return [reason for reason, rows in self.reasons if row in rows]

    def code_of(self, row: int) -> Code | None:
        hit = np.nonzero(self.rows == row)[0]
        return Code(int(self.codes[hit[0]])) if len(hit) else None


class Framework:
    """The plugins of one profile, ready to run."""

    def __init__(
        self,
        profile: ProfileConfig,
        handle: Handle,
        *,
        observe: DurationObserver | None = None,
    ) -> None:
        self.profile_name = profile.scheduler_name
        self.handle = handle
        self.percentage_of_nodes_to_score = profile.percentage_of_nodes_to_score
        resolved = resolve(profile, ifc.EXTENSION_POINTS)
        self.instances: dict[str, ifc.Plugin] = {}
        for names in resolved.points.values():
            for name in names:
                if name not in self.instances:
                    cls = lookup(name)
                    args = profile.plugin_config.get(name)
                    self.instances[name] = cls(args, handle)
        self.points = resolved.points
        self.weights = resolved.weights
        self.observe = observe

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

    # --- metadata ----------------------------------------------------------------

    def events_to_register(self) -> dict[str, list[ifc.ClusterEventWithHint]]:
        events: dict[str, list[ifc.ClusterEventWithHint]] = {}
        for name, plugin in self.instances.items():
            if isinstance(plugin, ifc.EnqueueExtensions):
                events[name] = plugin.events_to_register()
        return events

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.queue_sort[0].less(a, b)

    def _timed(self, point: str, plugin: str, started: float, status: Status) -> None:
        if self.observe is not None:
            self.observe(point, plugin, status, time.perf_counter() - started)

    # --- queueing ----------------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> Status:
        for plugin in self.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return Status()

    # --- scheduling cycle --------------------------------------------------------

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[ifc.PreFilterResult, Status]:
        """Every PreFilter, as upstream: an unresolvable verdict stops at once, an
        unschedulable one lets the rest run (for preemption's sake) and is returned."""
        result = ifc.PreFilterResult()
        rejected: Status | None = None
        for plugin in self.pre_filter:
            started = time.perf_counter()
            try:
                part, status = plugin.pre_filter(state, pod, nodes)
            except Exception as exc:  # a plugin bug must not stop the scheduler
                raise PluginError(plugin.name, "PreFilter", exc) from exc
            self._timed("PreFilter", plugin.name, started, status)
            if status.is_skip():
                state.skip_filter_plugins.add(plugin.name)
                continue
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return result, status.with_plugin(plugin.name)  # no preemption can help
            if status.code == Code.UNSCHEDULABLE:
                # Preemption may still help: the other PreFilters must run too.
                rejected = status.with_plugin(plugin.name)
                continue
            if not status.is_success():
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
        for plugin in self.filter:
            if plugin.name in state.skip_filter_plugins or len(remaining) == 0:
                continue
            started = time.perf_counter()
            try:
                verdicts = plugin.filter(state, pod, nodes, remaining)
            except Exception as exc:
                raise PluginError(plugin.name, "Filter", exc) from exc
            failed = verdicts.codes != Code.SUCCESS
            self._timed("Filter", plugin.name, started, Status())
            if not failed.any():
                continue
            if (verdicts.codes == Code.ERROR).any():
                raise PluginError(plugin.name, "Filter", "; ".join(r for r, _ in verdicts.reasons))
            failed_rows.append(remaining[failed])
            failed_codes.append(verdicts.codes[failed])
            failed_plugins.extend([plugin.name] * int(failed.sum()))
            for reason, mask in verdicts.reasons:
                diagnosis.reasons.append((reason, remaining[mask]))
            if (verdicts.codes == Code.PENDING).any():
                diagnosis.pending_plugins.add(plugin.name)
            else:
                diagnosis.unschedulable_plugins.add(plugin.name)
            remaining = remaining[~failed]
        if failed_rows:
            diagnosis.rows = np.concatenate(failed_rows)
            diagnosis.codes = np.concatenate(failed_codes)
            diagnosis.plugins = failed_plugins
        return remaining, diagnosis

    def run_post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[ifc.PostFilterResult | None, Status]:
        status = Status.unschedulable()
        for plugin in self.post_filter:
            started = time.perf_counter()
            result, status = plugin.post_filter(state, pod, diagnosis)
            self._timed("PostFilter", plugin.name, started, status)
            if status.is_success():
                return result, status.with_plugin(plugin.name)
            if status.code == Code.ERROR:
                raise PluginError(plugin.name, "PostFilter", status.message())
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return result, status.with_plugin(plugin.name)
        return None, status

    def run_pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> None:
        for plugin in self.pre_score:
            started = time.perf_counter()
            try:
                status = plugin.pre_score(state, pod, nodes, rows)
            except Exception as exc:
                raise PluginError(plugin.name, "PreScore", exc) from exc
            self._timed("PreScore", plugin.name, started, status)
            if status.is_skip():
                state.skip_score_plugins.add(plugin.name)
            elif not status.is_success():
                raise PluginError(plugin.name, "PreScore", status.message())

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> tuple[IntArray, dict[str, IntArray]]:
        """Weighted total per row, and each plugin's weighted scores (for explanations)."""
        total = np.zeros(len(rows), dtype=np.int64)
        by_plugin: dict[str, IntArray] = {}
        for plugin in self.score:
            if plugin.name in state.skip_score_plugins:
                continue
            started = time.perf_counter()
            try:
                scores = np.asarray(plugin.score(state, pod, nodes, rows), dtype=np.int64)
                plugin.normalize_scores(state, pod, scores)
            except Exception as exc:
                raise PluginError(plugin.name, "Score", exc) from exc
            self._timed("Score", plugin.name, started, Status())
            if len(scores) and (
                scores.min() < ifc.MIN_NODE_SCORE or scores.max() > ifc.MAX_NODE_SCORE
            ):
                bad = int(scores[(scores < 0) | (scores > ifc.MAX_NODE_SCORE)][0])
                raise ScoreRangeError(
                    plugin.name,
                    "Score",
                    f"plugin {plugin.name!r} returns an invalid score {bad}, it should be in "
                    f"the range of [{ifc.MIN_NODE_SCORE}, {ifc.MAX_NODE_SCORE}] after normalizing",
                )
            weighted = scores * self.weights.get(plugin.name, 1)
            by_plugin[plugin.name] = weighted
            total += weighted
        return total, by_plugin

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.reserve:
            try:
                status = plugin.reserve(state, pod, node_name)
            except Exception as exc:
                return Status.as_error(exc, plugin.name)
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return Status()

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # In reverse order, as upstream: undo what the later plugins did first.
        for plugin in reversed(self.reserve):
            with contextlib.suppress(Exception):
                plugin.unreserve(state, pod, node_name)

    def run_permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status, dict[str, float]]:
        waits: dict[str, float] = {}
        for plugin in self.permit:
            try:
                status, timeout = plugin.permit(state, pod, node_name)
            except Exception as exc:
                return Status.as_error(exc, plugin.name), {}
            if status.code == Code.WAIT:
                waits[plugin.name] = min(timeout, 15 * 60.0)  # upstream caps at 15 min
            elif not status.is_success():
                return status.with_plugin(plugin.name), {}
        if waits:
            return Status.wait(), waits
        return Status(), {}

    # --- binding cycle -----------------------------------------------------------

    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.pre_bind:
            try:
                status = await plugin.pre_bind(state, pod, node_name)
            except Exception as exc:
                return Status.as_error(exc, plugin.name)
            if status.is_skip():
                continue
            if not status.is_success():
                return status.with_plugin(plugin.name)
        return Status()

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        for plugin in self.bind:
            try:
                status = await plugin.bind(state, pod, node_name)
            except Exception as exc:
                return Status.as_error(exc, plugin.name)
            if status.is_skip():
                continue
            return status.with_plugin(plugin.name)
        return Status.as_error("no bind plugin bound the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for plugin in self.post_bind:
            with contextlib.suppress(Exception):
                plugin.post_bind(state, pod, node_name)

    def plugin_args(self, name: str) -> Mapping[str, Any]:
        return self.instances[name].args
