"""The scheduling cycle (schedule_one.go upstream: ScheduleOne, schedulingCycle,
schedulePod and findNodesThatFitPod with its pieces, prioritizeNodes, selectHost,
and the extenders' part of them).

The SchedulingCycle object is ScheduleOne for a pod of its own (the pod group
branch is podgroup_cycle.py's). It is synchronous Python: it reads the node table,
which only changes between cycles, so it needs no snapshot copy. On success it
starts the pod's binding cycle (BindingCycle.start, binding_cycle.py) as an
asyncio task; any failure goes to the FailureHandler (failure.py), as upstream's
ScheduleOne hands a failed schedulingCycle to sched.FailureHandler.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.objects import Node
from kubesched.cache.cache import Cache
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.explain import CycleCapture, ScoreCapture
from kubesched.framework.extender import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    Extender,
    ExtenderError,
)
from kubesched.framework.features import FeatureGates
from kubesched.framework.fit_error import NO_NODES_AT_ALL, Diagnosis, fit_error_message
from kubesched.framework.interfaces import MAX_NODE_SCORE, PreFilterResult
from kubesched.framework.runtime.errors import PluginError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.signature import PodSignature
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.framework.waiting import WaitingPods
from kubesched.logs import V, kv
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.batch_window import BatchWindow
from kubesched.scheduler.binding_cycle import BindingCycle
from kubesched.scheduler.explain import Explaining
from kubesched.scheduler.failure import FailureHandler
from kubesched.scheduler.listeners import SchedulingListeners

log = logging.getLogger("kubesched.scheduler")

_V3 = V(3)
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class FitError(Exception):
    """No node fits the pod (framework.FitError upstream); str() is the message
    users see, rebuilt once PostFilter has added its part."""

    def __init__(self, pod: PodInfo, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        super().__init__(fit_error_message(num_all_nodes, diagnosis))


class NoNodesError(Exception):
    """The cluster has no nodes at all (ErrNoNodesAvailable upstream)."""

    def __init__(self) -> None:
        super().__init__(NO_NODES_AT_ALL)


@dataclass(slots=True)
class ScheduleResult:
    node_name: str
    row: int
    evaluated: int
    feasible: int
    scores: dict[str, int] = field(default_factory=dict)


class SchedulingCycle:
    """The scheduling cycle of one pod: FRAMEWORKS by scheduler name (one per
    profile), the nodes in CACHE's node table, RNG to break ties, BINDING to start
    the binding cycle of a pod placed, FAILURE for an attempt that failed, and
    EXPLAINING for the attempts LISTENERS want explained. BATCH: the `run
    --batch-window` window, or None. It owns the state kept from one cycle to the
    next: where the next filter pass starts (nextStartNodeIndex upstream), the
    share of nodes that fitted lately, and whether this cycle's feasible nodes are
    an extender's new NodeInfos."""

    def __init__(
        self,
        *,
        frameworks: dict[str, Framework],
        queue: SchedulingQueue,
        cache: Cache,
        nominator: Nominator,
        waiting_pods: WaitingPods,
        listeners: SchedulingListeners,
        rng: np.random.Generator,
        gates: FeatureGates,
        extenders: Sequence[Extender],
        percentage_of_nodes_to_score: int,
        batch: BatchWindow | None,
        binding: BindingCycle,
        failure: FailureHandler,
        explaining: Explaining,
    ) -> None:
        self.frameworks = frameworks
        self.queue = queue
        self.cache = cache
        self.table = cache.table
        self.nominator = nominator
        self.waiting_pods = waiting_pods
        self.listeners = listeners
        self.rng = rng
        self.opportunistic_batching = gates.opportunistic_batching
        self.extenders = extenders
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.batch = batch
        self.start_binding = binding.start
        self.handle_failure = failure.handle_failure
        self.explaining = explaining
        self.next_start_node_index = 0
        # The share of filtered nodes that fitted lately, to size the first batch.
        self._feasible_share = 1.0
        # This cycle's feasible nodes are new NodeInfos from an extender's Nodes answer.
        self.extender_new_nodes = False

    def schedule_one(self, qpi: QueuedPodInfo) -> None:
        """One scheduling cycle; on success the binding cycle is started as a task
        (ScheduleOne in schedule_one.go)."""
        pod = qpi.pod_info
        fw = self.frameworks.get(pod.pod.spec.scheduler_name)
        if fw is None or pod.pod.metadata.deletion_timestamp is not None:
            # No profile for it, or it is being deleted (frameworkForPod, skipPodSchedule).
            self.queue.done(pod.key)
            return
        if log.isEnabledFor(_V3):
            # schedule_one.go's V(3) line, once per attempt (the differential harness
            # counts each pod's attempts from it, in both schedulers' logs).
            log.log(_V3, "Attempting to schedule pod", extra=kv(pod=pod.key))
        started = time.perf_counter()
        state = CycleState()
        # ScheduleOne samples the cycles whose plugin durations are observed
        # (state.SetRecordPluginMetrics); the framework reads it off the state, in
        # this pod's binding cycle too.
        listeners = self.listeners
        state.record_plugin_metrics = listeners.sample_plugins()
        listeners.pod_attempted(pod.key, qpi.attempts)
        if listeners.wants_explanation(pod.key):
            state.explain = CycleCapture()
        qpi.tried_at_generation = self.table.generation
        node = self.scheduling_cycle(fw, state, qpi, started)
        if node is None:
            return
        # The attempt's duration is observed when its binding cycle ends, as upstream
        # does: scheduling_attempt_duration_seconds includes Permit's wait and the bind.
        self.start_binding(fw, state, qpi, node, started)

    def scheduling_cycle(
        self, fw: Framework, state: CycleState, qpi: QueuedPodInfo, started: float
    ) -> str | None:
        """schedulingCycle in schedule_one.go: pick a node, assume the pod on it, run
        Reserve and Permit; the node, or None if the attempt failed. Every failure
        goes to the FailureHandler (ScheduleOne's sched.FailureHandler upstream); the
        explanation of an attempt no node fits is built here, before the failure is
        handled, from what the cycle captured."""
        pod = qpi.pod_info
        capture: CycleCapture | None = state.explain
        try:
            result = self.schedule_pod(fw, state, pod, self._sign(fw, qpi))
        except FitError as fit:
            nominating = self._post_filter(fw, state, qpi, fit)
            message = str(fit)
            if capture is not None:
                capture.post_filter_message = fit.diagnosis.post_filter_message
                capture.post_filter_nominated = nominating
                self.explaining.explain(fw, state, qpi, capture, "Unschedulable", message)
            self.listeners.algorithm(started)
            # What-if runs changed the table and put it back: the attempt saw this one.
            qpi.tried_at_generation = self.table.generation
            self.handle_failure(
                fw,
                qpi,
                Status(Code.UNSCHEDULABLE, [message]),
                started,
                diagnosis=fit.diagnosis,
                nominated=nominating,
            )
            return None
        except (NoNodesError, PluginError, ExtenderError) as exc:
            # An extender that failed (and is not ignorable) fails the attempt as an
            # error, as a plugin's error does: the pod goes to backoff.
            self.listeners.algorithm(started)
            if isinstance(exc, NoNodesError):
                status = Status(Code.UNSCHEDULABLE, [str(exc)])
            else:
                status = Status.as_error(exc)
            if isinstance(exc, PluginError):
                where = f" (raised at {exc.location})" if exc.location else ""
                log.error("pod %s: %s%s", pod.key, exc, where)
            qpi.tried_at_generation = self.table.generation
            if capture is not None:
                reason = "SchedulerError" if status.code == Code.ERROR else "Unschedulable"
                self.explaining.explain(fw, state, qpi, capture, reason, status.message())
            self.handle_failure(fw, qpi, status, started)
            return None
        self.listeners.algorithm(started)

        node = result.node_name
        if capture is not None:  # before the assume changes the chosen node's row
            capture.explanation = self.explaining.explanation(
                fw, state, qpi, capture, "Scheduled", ""
            )
        self.cache.assume_pod(pod, node)
        self.nominator.delete(pod.key)
        status = fw.run_reserve(state, pod, node)
        point, waits = "Reserve", dict[str, float]()
        if status.is_success():
            point = "Permit"
            status, waits = fw.run_permit(state, pod, node)
        if status.code not in (Code.SUCCESS, Code.WAIT):
            self.handle_failure(fw, qpi, status, started, state=state, node=node, point=point)
            self.explaining.explained(capture)
            return None
        if self.batch is not None and not waits:
            # Batch mode: held at Permit until the window closes (batch_window.py).
            waits = self.batch.hold(pod, node, fw.profile_name)
        if waits:
            self.waiting_pods.add(pod.key, node, waits)
        if capture is not None:
            self.explaining.explained(capture)
        return node

    def _post_filter(
        self, fw: Framework, state: CycleState, qpi: QueuedPodInfo, fit: FitError
    ) -> str | None:
        """Run PostFilter (preemption); returns the pod's new nominated node: a name,
        "" to clear it, or None to leave it as it is."""
        if not fw.post_filter:
            return ""
        result, status = fw.run_post_filter(state, qpi.pod_info, fit.diagnosis)
        fit.diagnosis.post_filter_message = status.message()
        if status.code == Code.ERROR:
            log.error("pod %s: PostFilter: %s", qpi.pod_info.key, status.message())
        fit.args = (fit_error_message(fit.num_all_nodes, fit.diagnosis),)
        return None if result is None else result.nominated_node_name

    def _sign(self, fw: Framework, qpi: QueuedPodInfo) -> PodSignature | None:
        """The pod's signature when OpportunisticBatching is on (the batch keeps it
        on the queued pod, OpportunisticBatch.sign)."""
        return fw.batch.sign(qpi) if self.opportunistic_batching else None

    def schedule_pod(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        signature: PodSignature | None = None,
    ) -> ScheduleResult:
        """Pick a node for the pod, or raise FitError / NoNodesError / PluginError
        (schedulePod in schedule_one.go). With OpportunisticBatching on, the pass's
        ranking is handed to the profile's batch (StoreScheduleResults)."""
        num_all = len(self.table)
        if num_all == 0:
            raise NoNodesError()
        cycle = self.queue.scheduling_cycle
        feasible, diagnosis, evaluated, hint = self.find_nodes_that_fit(
            fw, state, pod, signature, cycle
        )
        capture: CycleCapture | None = state.explain
        if capture is not None:
            capture.num_all_nodes, capture.evaluated = num_all, evaluated
            capture.diagnosis, capture.feasible = diagnosis, feasible
        if len(feasible) == 0:
            raise FitError(pod, num_all, diagnosis)
        if len(feasible) == 1:
            row = int(feasible[0])
            if capture is not None:
                capture.chosen_row = row
            name = self.table.names[row]
            if self.opportunistic_batching:
                fw.batch.store_pass(signature, hint, feasible, None, 0, cycle)
            return ScheduleResult(name, row, evaluated, 1)
        totals = self.prioritize_nodes(fw, state, pod, feasible)
        chosen = select_host(totals, self.rng)
        row = int(feasible[chosen])
        if self.opportunistic_batching:
            fw.batch.store_pass(signature, hint, feasible, totals, chosen, cycle)
        if capture is not None:
            capture.totals, capture.chosen_row = totals, row
            capture.tied_rows = [int(r) for r in feasible[totals == totals.max()]]
        return ScheduleResult(self.table.names[row], row, evaluated, len(feasible))

    # --- filtering -----------------------------------------------------------------

    def find_nodes_that_fit(
        self,
        fw: Framework,
        state: CycleState,
        pod: PodInfo,
        signature: PodSignature | None = None,
        cycle: int = 0,
    ) -> tuple[Rows, Diagnosis, int, str]:
        """Feasible rows (at most numFeasibleNodesToFind of them), the diagnosis,
        how many nodes were evaluated, and the batch's node hint, "" if none
        (findNodesThatFitPod in schedule_one.go)."""
        table = self.table
        order = table.order()
        num_all = len(order)
        self.extender_new_nodes = False
        pre_result, status = fw.run_pre_filter(state, pod, table)
        if not status.is_success():
            diagnosis = pre_filter_diagnosis(status, num_all)
            diagnosis.unschedulable_plugins.update(plugins_with_nodes(pre_result, status))
            return np.empty(0, np.intp), diagnosis, 0, ""

        hint = ""
        if self.opportunistic_batching:
            # Asked for even when the pod has a nominated node, as upstream does.
            hint = fw.batch.get_node_hint(pod, signature, state, cycle, fw.rejected_on)
        # A pod nominated by an earlier preemption tries that node first
        # (evaluateNominatedNode): it is likely the only one that fits. The
        # batch's hint is tried the same way, after a nomination.
        nominated_row: int | None = None
        nominated: Diagnosis | None = None
        first_try = pod.pod.status.nominated_node_name or hint
        if first_try:
            nominated_row = table.row_of(first_try)
        if nominated_row is not None:
            fits, nominated = self.evaluate_nominated_node(fw, state, pod, nominated_row)
            if state.explain is not None and pod.pod.status.nominated_node_name:
                state.explain.nominated_node = pod.pod.status.nominated_node_name
                state.explain.nominated_fits = bool(len(fits))
            if len(fits):
                return fits, Diagnosis.empty(), 1, hint

        candidates, absent = pre_filter_candidates(table, order, pre_result)
        if state.explain is not None:
            state.explain.candidates = candidates
        feasible, diagnosis, processed = self.find_nodes_that_pass_filters(
            fw, state, pod, candidates
        )
        explicit = len(candidates)
        if (
            nominated is not None
            and nominated_row is not None
            and add_nominated_verdict(diagnosis, nominated, nominated_row, feasible)
        ):
            processed += 1
            if nominated_row not in candidates:
                explicit += 1
        if num_all:
            self.next_start_node_index = (self.next_start_node_index + processed) % num_all
        if absent is not None:
            set_absent_nodes_status(diagnosis, absent, num_all - explicit)
        if self.extenders:
            passed = self.find_nodes_that_pass_extenders(state, pod, feasible, diagnosis)
            if len(passed) != len(feasible):
                # Extenders have no queueing hints: a pod they rejected nodes for is
                # retried on any cluster event (findNodesThatFitPod upstream).
                diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
            feasible = passed
        # The diagnosis starts with the plugins that narrowed the nodes (upstream sets
        # UnschedulablePlugins to RunPreFilterPlugins' pluginsWithNodes before the
        # filters add theirs): their events may retry the pod.
        diagnosis.unschedulable_plugins.update(plugins_with_nodes(pre_result, status))
        return feasible, diagnosis, processed, hint

    def evaluate_nominated_node(
        self, fw: Framework, state: CycleState, pod: PodInfo, row: int
    ) -> tuple[Rows, Diagnosis]:
        """The filters on the pod's nominated node alone (evaluateNominatedNode in
        schedule_one.go): the row if it fits, and that node's verdict."""
        one = np.array([row], dtype=np.intp)
        fits, diagnosis, _ = fw.run_filter_pass(state, pod, self.table, one)
        if self.extenders and len(fits):
            fits = self.find_nodes_that_pass_extenders(state, pod, fits, diagnosis)
        return fits, diagnosis

    def find_nodes_that_pass_filters(
        self, fw: Framework, state: CycleState, pod: PodInfo, candidates: Rows
    ) -> tuple[Rows, Diagnosis, int]:
        """The filters over the candidates, in rotated order from
        next_start_node_index, as findNodesThatPassFilters in schedule_one.go: at
        most numFeasibleNodesToFind feasible rows, the diagnosis, and how many nodes
        count as evaluated."""
        table = self.table
        start = self.next_start_node_index % len(candidates) if len(candidates) else 0
        num_candidates = len(candidates)
        num_to_find = self.num_feasible_nodes_to_find(fw, num_candidates)
        if not fw.score and not self.extenders_filter_or_score:
            num_to_find = 1  # with nothing to compare, the first feasible node will do
        # Upstream stops once it has found more than num_to_find feasible nodes.
        # The runtime filters a prefix of the rotated order sized from how many nodes
        # fitted lately; only if it holds enough feasible nodes is it the answer (the
        # nodes after the cut are dropped below either way), else all nodes are
        # filtered in one go, so the diagnosis of a failure is the same as ever.
        chunk = self._filter_chunk_size(num_to_find, num_candidates)
        feasible, diagnosis, rotated = fw.run_filter_pass(
            state, pod, table, candidates, start, chunk, num_to_find
        )
        self._note_feasible(len(feasible), len(rotated))
        return stop_at_enough(feasible, diagnosis, rotated, num_to_find, table.capacity)

    def num_feasible_nodes_to_find(self, fw: Framework, num_all_nodes: int) -> int:
        """How many feasible nodes are enough (numFeasibleNodesToFind in
        schedule_one.go): percentageOfNodesToScore of them, the profile's or else
        the scheduler's, adaptive when 0; never fewer than 100, all below that."""
        if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
            return num_all_nodes
        percentage = fw.percentage_of_nodes_to_score
        if percentage is None:
            percentage = self.percentage_of_nodes_to_score
        if percentage == 0:
            percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
        num = num_all_nodes * percentage // 100
        return max(num, MIN_FEASIBLE_NODES_TO_FIND)

    def _filter_chunk_size(self, num_to_find: int, num_candidates: int) -> int:
        """How many nodes (in rotated order) to filter first: enough to hold more
        than num_to_find feasible ones at the share that fitted lately, with room
        to spare; num_candidates (all) when that is most of them anyway."""
        if num_to_find >= num_candidates:
            return num_candidates
        ratio = max(self._feasible_share, 0.01)
        chunk = int((num_to_find + 1) / ratio * 1.15) + 32
        return num_candidates if chunk * 4 >= num_candidates * 3 else chunk

    def _note_feasible(self, feasible: int, evaluated: int) -> None:
        if evaluated:
            self._feasible_share = 0.5 * self._feasible_share + 0.5 * (feasible / evaluated)

    # --- scoring -------------------------------------------------------------------

    def prioritize_nodes(
        self, fw: Framework, state: CycleState, pod: PodInfo, feasible: Rows
    ) -> IntArray:
        """PreScore, then Score: the weighted total per feasible row
        (prioritizeNodes in schedule_one.go)."""
        if self.extenders and self.extender_new_nodes:
            # Upstream scores the NodeInfos an extender's Nodes answer was made into:
            # no pods, no images (HTTPExtender.Filter). So does this, to decide alike.
            with as_new_nodes(self.table, feasible):
                fw.run_pre_score(state, pod, self.table, feasible)
                totals, _ = fw.run_score(state, pod, self.table, feasible, per_plugin=False)
        else:
            fw.run_pre_score(state, pod, self.table, feasible)
            totals, _ = fw.run_score(state, pod, self.table, feasible, per_plugin=False)
        if self.extenders:
            totals = totals + self.extender_scores(state, pod, feasible)
        return totals

    # --- extenders -----------------------------------------------------------------

    def find_nodes_that_pass_extenders(
        self, state: CycleState, pod: PodInfo, feasible: Rows, diagnosis: Diagnosis
    ) -> Rows:
        """The feasible rows the extenders keep, each extender filtering what the one
        before it kept; the nodes they reject join the diagnosis with their
        messages (findNodesThatPassExtenders in schedule_one.go). Raises
        ExtenderError when an extender that is not ignorable fails."""
        table = self.table
        for extender in self.extenders:
            if not len(feasible):
                break
            if not extender.is_filter or not extender.is_interested(pod.pod):
                continue
            nodes = [table.node(r) for r in feasible.tolist()]
            try:
                result = extender.filter(pod.pod, nodes)
            except ExtenderError as exc:
                if extender.ignorable:
                    log.info(
                        "Skipping extender as it returned error and has ignorable flag set",
                        extra=kv(extender=extender.name, err=str(exc)),
                    )
                    continue
                raise
            rejected: dict[int, tuple[Code, str]] = {}
            for name, message in result.failed.items():
                if name not in result.failed_and_unresolvable:
                    rejected.setdefault(_row(table, name), (Code.UNSCHEDULABLE, message))
            for name, message in result.failed_and_unresolvable.items():
                rejected[_row(table, name)] = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)
            rejected.pop(-1, None)  # a name the cluster does not have
            if rejected:
                diagnosis.extend(extender_diagnosis(extender.name, rejected))
            feasible = np.array([table.row_of(n) for n in result.nodes], dtype=np.intp)
            self.extender_new_nodes |= result.as_new_nodes
        return feasible

    def extender_scores(self, state: CycleState, pod: PodInfo, feasible: Rows) -> IntArray:
        """What the extenders add to each feasible row's total: score × weight ×
        MaxNodeScore / MaxExtenderPriority (prioritizeNodes in schedule_one.go). An
        extender that fails gives no score, as upstream, where the others and the
        plugins then decide."""
        table = self.table
        added = np.zeros(len(feasible), dtype=np.int64)
        nodes: list[Node] | None = None
        position = {table.names[r]: i for i, r in enumerate(feasible.tolist())}
        for extender in self.extenders:
            if not extender.is_prioritizer or not extender.is_interested(pod.pod):
                continue
            if nodes is None:
                nodes = [table.node(r) for r in feasible.tolist()]
            try:
                scores, weight = extender.prioritize(pod.pod, nodes)
            except ExtenderError as exc:
                log.log(
                    V(5),
                    "Failed to run extender's priority function. No score given by this extender.",
                    extra=kv(error=str(exc), pod=pod.key, extender=extender.name),
                )
                continue
            raw = np.zeros(len(feasible), dtype=np.int64)
            for host, score in scores.items():
                index = position.get(host)
                if index is not None:
                    raw[index] = score
            # On the plugins' scale: an extender's 0..10 becomes 0..100.
            scaled = raw * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
            added += scaled * weight
            if state.explain is not None:
                name = f"{EXTENDER_NAME} {extender.name}"
                state.explain.scores.append(ScoreCapture(name, weight, raw, scaled))
        return added

    @property
    def extenders_filter_or_score(self) -> bool:
        """hasExtenderFilters or an extender that prioritizes (hasScoring)."""
        return any(e.is_filter or e.is_prioritizer for e in self.extenders)


@contextmanager
def as_new_nodes(table: NodeTable, rows: Rows) -> Iterator[None]:
    """The rows as NodeInfos new from their Node objects look for the block: nothing
    requested and no images (framework.NewNodeInfo + SetNode, which HTTPExtender.Filter
    makes of an extender's Nodes answer); then as they were."""
    requested = table.requested[rows].copy()
    non_zero = table.non_zero_requested[rows].copy()
    free = table.free[rows].copy()
    wanted = set(rows.tolist())
    images = [
        (holders, row, holders.pop(row))
        for holders in table.images.values()
        for row in wanted & holders.keys()
    ]
    table.requested[rows] = 0
    table.non_zero_requested[rows] = 0
    table.free[rows] = table.allocatable[rows]
    table.generation += 1  # what plugins cached of the rows does not hold meanwhile
    try:
        yield
    finally:
        table.requested[rows] = requested
        table.non_zero_requested[rows] = non_zero
        table.free[rows] = free
        for holders, row, size in images:
            holders[row] = size
        table.generation += 1


def _row(table: NodeTable, name: str) -> int:
    row = table.row_of(name)
    return -1 if row is None else row


def extender_diagnosis(extender: str, rejected: dict[int, tuple[Code, str]]) -> Diagnosis:
    """The nodes an extender rejected, as diagnosis rows: no plugin rejected them
    (upstream's statuses name none), so "Extender URL" stands in its place."""
    rows = np.fromiter(rejected, dtype=np.intp, count=len(rejected))
    codes = np.array([int(code) for code, _ in rejected.values()], dtype=np.int8)
    by_message: dict[str, list[int]] = {}
    for row, (_, message) in rejected.items():
        by_message.setdefault(message, []).append(row)
    reasons = [(m, np.array(r, dtype=np.intp)) for m, r in by_message.items()]
    return Diagnosis(rows, codes, [f"{EXTENDER_NAME} {extender}"] * len(rows), reasons)


def select_host(totals: IntArray, rng: np.random.Generator) -> int:
    """The index of a highest total, ties broken at random (selectHost in
    schedule_one.go)."""
    first = int(totals.argmax())
    tied = totals == totals[first]
    if np.count_nonzero(tied) == 1:
        return first  # no tie: the random source is not drawn from
    best = np.flatnonzero(tied)
    return int(best[rng.integers(len(best))])


# --- the pieces of findNodesThatFitPod -----------------------------------------------


def pre_filter_diagnosis(status: Status, num_all: int) -> Diagnosis:
    """The diagnosis when PreFilter rejects the pod: every node gets its status
    (SetAbsentNodesStatus), and the rejecting plugin is named."""
    diagnosis = Diagnosis.empty()
    diagnosis.pre_filter_message = status.message()
    diagnosis.absent_status = status
    diagnosis.absent_count = num_all
    if status.plugin:
        if status.code == Code.PENDING:
            diagnosis.pending_plugins.add(status.plugin)
        else:
            diagnosis.unschedulable_plugins.add(status.plugin)
    return diagnosis


def plugins_with_nodes(pre_result: PreFilterResult, status: Status) -> list[str]:
    """RunPreFilterPlugins' third result upstream (pluginsWithNodes): the PreFilter
    plugins whose result named nodes, which findNodesThatFitPod makes the first of the
    diagnosis's UnschedulablePlugins. None when a plugin itself answered
    UnschedulableAndUnresolvable (upstream returns nil there; the result kubesched
    returns then still names the nodes the plugins before it narrowed to)."""
    if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and pre_result.node_names:
        return []
    return list(pre_result.plugins) if pre_result.node_names is not None else []


def pre_filter_candidates(
    table: NodeTable, order: Rows, pre_result: PreFilterResult
) -> tuple[Rows, Status | None]:
    """The nodes to filter: all, or those a PreFilter result named; with the
    status of the others (absent from the diagnosis), if any."""
    absent: Status | None = None
    candidates = order
    if pre_result.node_names is not None:
        # Only the nodes PreFilter named (that exist); the rest are "absent".
        wanted = pre_result.node_names
        candidates = np.array([r for r in order if table.names[r] in wanted], dtype=np.intp)
        absent = Status.unresolvable(
            f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(pre_result.plugins))}]"
        )
    return candidates, absent


def stop_at_enough(
    feasible: Rows, diagnosis: Diagnosis, rotated: Rows, num_to_find: int, capacity: int
) -> tuple[Rows, Diagnosis, int]:
    """The filter pass cut where upstream's stops, at the num_to_find-th feasible
    node: that many feasible rows, the diagnosis of the nodes up to there, and
    how many nodes that is (all of `rotated` if too few fitted)."""
    processed = len(rotated)
    if len(feasible) > num_to_find and not len(diagnosis.rows) and not diagnosis.reasons:
        # Every node passed: the cut is at the num_to_find-th of them.
        processed = num_to_find
        feasible = feasible[:num_to_find]
    elif len(feasible) > num_to_find:
        # Upstream stops once it has found enough: nodes after the last one
        # it kept count as not evaluated.
        position = np.empty(capacity, dtype=np.intp)
        position[rotated] = np.arange(len(rotated))
        cut = int(position[feasible[num_to_find - 1]])
        processed = cut + 1
        feasible = feasible[:num_to_find]
        keep = position[diagnosis.rows] <= cut
        diagnosis.rows = diagnosis.rows[keep]
        diagnosis.codes = diagnosis.codes[keep]
        diagnosis.plugins = list(itertools.compress(diagnosis.plugins, keep.tolist()))
        diagnosis.reasons = [
            (reason, rows[position[rows] <= cut]) for reason, rows in diagnosis.reasons
        ]
    return feasible, diagnosis, processed


def add_nominated_verdict(
    diagnosis: Diagnosis, nominated: Diagnosis, nominated_row: int, feasible: Rows
) -> bool:
    """Merge the nominated node's verdict into the full pass's diagnosis; True if
    it adds a node the full pass did not evaluate."""
    # The nominated node's verdict stays in the diagnosis (upstream shares the
    # NodeToStatus map), also where the full pass did not reach that node.
    diagnosis.unschedulable_plugins |= nominated.unschedulable_plugins
    diagnosis.pending_plugins |= nominated.pending_plugins
    if nominated_row not in diagnosis.rows and nominated_row not in feasible:
        diagnosis.extend(nominated)
        return True
    return False


def set_absent_nodes_status(diagnosis: Diagnosis, status: Status, count: int) -> None:
    """The nodes PreFilter left out share one status (SetAbsentNodesStatus)."""
    diagnosis.absent_status = status
    diagnosis.absent_count = count
