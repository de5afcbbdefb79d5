"""DefaultPreemption: make room for a pod that fits nowhere by evicting lower priority pods.

kube-scheduler v1.36's PostFilter plugin (defaultpreemption and the preemption
Evaluator), with asynchronous preemption (SchedulerAsyncPreemption, on by default):

1. PodEligibleToPreemptOthers: not with preemptionPolicy Never; not while pods
   that this pod's earlier preemption evicts are still terminating on its
   nominated node (unless that node is now unresolvable for it).
2. Candidates: only nodes whose Filter verdict was Unschedulable (never
   UnschedulableAndUnresolvable). From a random offset, each is dry-run:
   every lower priority pod is removed (node table and PreFilterExtensions),
   the filters must then pass (with nominated pods); the victims are then
   reprieved one by one, PDB-violating ones first, each group from the most
   important (priority, then start time), as long as the pod still fits. The
   table is put back exactly afterwards. The dry run stops once it has
   max(minCandidateNodesPercentage% of the nodes, minCandidateNodesAbsolute)
   candidates and at least one that violates no PDB. When the pod's filters
   declare that they read a node's pods only through its requested amounts
   (FilterScope AMOUNTS, as NodeResourcesFit) or not at all (NODE, as the filters
   blind to pods) and no PreFilterExtensions runs, nodes are dry-run a batch at a time over the
   node table's columns, with the same outcome (see select_victims_batch).
3. pickOneNodeForPreemption: fewest PDB violations, then the lowest highest
   victim priority, the smallest sum of priorities, the fewest victims, the
   latest start of the highest priority victims, then the first.
4. The victims get the DisruptionTarget condition and are deleted in a task
   after the scheduling cycle (pods waiting at Permit are just rejected);
   lower priority pods nominated to that node lose their nomination. The
   pod is nominated to the node and retried when the victims are gone.

Messages are upstream's: "preemption: " and the reason, or, when no node
helps, a FitError of the dry run ("0/N nodes are available: 4 No preemption
victims found for incoming pod."), with "Preemption is not helpful for
scheduling" for every node that was not a candidate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kubesched.api.disruption import selector_matches
from kubesched.api.objects import Pod, PodDisruptionBudget
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis, fit_error_message
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    FrameworkRunner,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from kubesched.framework.node_table import PODS, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

log = logging.getLogger("kubesched.preemption")

NAME = "DefaultPreemption"

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
PREEMPT_NEVER = "Never"

_MAX_INT32 = 2**31 - 1
# The fewest nodes a batched dry run takes at once.
_MIN_BATCH = 16
_AMOUNTS_CACHE_SIZE = 1 << 16
# GetPodStartTime gives pods that have not started "now": later than any start.
_NOW = 2**63 - 1


class ArgsError(ValueError):
    """DefaultPreemptionArgs that kube-scheduler's validation would refuse."""


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def parse(cls, args: Mapping[str, Any]) -> DefaultPreemptionArgs:
        """v1 defaulting and ValidateDefaultPreemptionArgs."""
        percentage = args.get("minCandidateNodesPercentage")
        absolute = args.get("minCandidateNodesAbsolute")
        percentage = 10 if percentage is None else percentage
        absolute = 100 if absolute is None else absolute
        for name, value in (
            ("minCandidateNodesPercentage", percentage),
            ("minCandidateNodesAbsolute", absolute),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgsError(f"{name}: must be an integer, got {value!r}")
        errors: list[str] = []
        if percentage < 0 or percentage > 100:
            errors.append(
                f"minCandidateNodesPercentage: Invalid value: {percentage}: "
                "not in valid range [0, 100]"
            )
        if absolute < 0:
            errors.append(
                f"minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
            )
        if percentage == 0 and absolute == 0:
            errors.append(
                "minCandidateNodesPercentage: Invalid value: 0: "
                "cannot be zero at the same time as minCandidateNodesAbsolute"
            )
            errors.append(
                "minCandidateNodesAbsolute: Invalid value: 0: "
                "cannot be zero at the same time as minCandidateNodesPercentage"
            )
        if errors:
            raise ArgsError(errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
        return cls(percentage, absolute)


@dataclass(slots=True)
class Candidate:
    """A node where evicting `victims` (most important first) makes the pod fit."""

    name: str
    row: int
    victims: list[PodInfo]
    num_pdb_violations: int


# --- pods: importance, start times, PDBs, termination ----------------------------------


def start_time(pod: Pod) -> int:
    """util.GetPodStartTime in nanoseconds; pods not started yet count as started now."""
    text = pod.status.start_time
    if not text:
        return _NOW
    return _parse_start_time(text)


@lru_cache(maxsize=4096)
def _parse_start_time(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return _NOW
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def importance(pod: PodInfo) -> tuple[int, int]:
    """Sort key for util.MoreImportantPod: higher priority first, then the older pod."""
    return (-pod.priority, start_time(pod.pod))


def terminating_by_preemption(pod: Pod) -> bool:
    """podTerminatingByPreemption: being deleted, with DisruptionTarget=True set by a
    scheduler's preemption (the first DisruptionTarget condition decides)."""
    if pod.metadata.deletion_timestamp is None:
        return False
    for condition in pod.status.conditions:
        if condition.type == DISRUPTION_TARGET:
            return condition.status == "True" and condition.reason == PREEMPTION_BY_SCHEDULER
    return False


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """filterPodsWithPDBViolation: (violating, non-violating), each in input order. Each
    matching budget's allowance is spent pod by pod; a pod the budget already counts as
    disrupted spends nothing."""
    allowed = [pdb.status.disruptions_allowed if pdb.status is not None else 0 for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for info in pods:
        pod = info.pod
        violated = False
        if pod.metadata.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.metadata.namespace != pod.metadata.namespace:
                    continue
                if not selector_matches(pdb.spec.selector, pod.metadata.labels):
                    continue
                if pdb.status is not None and pod.metadata.name in pdb.status.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(info)
    return violating, non_violating


def earliest_start_of_highest_priority(victims: Sequence[PodInfo]) -> int:
    """util.GetEarliestPodStartTime: among the victims of the highest priority."""
    earliest = start_time(victims[0].pod)
    highest = victims[0].priority
    for victim in victims:
        if victim.priority == highest:
            earliest = min(earliest, start_time(victim.pod))
        elif victim.priority > highest:
            highest = victim.priority
            earliest = start_time(victim.pod)
    return earliest


def _pass(
    filters: Sequence[FilterPlugin], state: CycleState, pod: PodInfo, table: NodeTable, rows: Rows
) -> npt.NDArray[np.bool_]:
    """Which rows every one of the filters lets through: Framework.run_filters's
    verdicts (each filter sees the rows the earlier ones passed), minus the diagnosis.
    Raises on an Error verdict, as run_filters does."""
    passed = np.ones(len(rows), dtype=np.bool_)
    for plugin in filters:
        going = np.flatnonzero(passed)
        if not len(going):
            break
        codes = plugin.filter(state, pod, table, rows[going]).codes
        if (codes == Code.ERROR).any():
            raise RuntimeError(f"{plugin.name} Filter failed with an error")
        passed[going] = codes == Code.SUCCESS
    return passed


def _statuses_of(
    diagnosis: Diagnosis, rows: Sequence[int], wanted: npt.NDArray[np.bool_]
) -> Iterator[tuple[int, Status]]:
    """(index, Diagnosis.status_of(rows[index])) for the wanted indices, all in one
    pass over the diagnosis."""
    index = {int(rows[i]): i for i in np.flatnonzero(wanted).tolist()}
    reasons: dict[int, list[str]] = {i: [] for i in index.values()}
    for reason, failed in diagnosis.reasons:
        for row in failed.tolist():
            i = index.get(row)
            if i is not None:
                reasons[i].append(reason)
    found: dict[int, Status] = {}
    for row, code, plugin in zip(
        diagnosis.rows.tolist(), diagnosis.codes.tolist(), diagnosis.plugins, strict=True
    ):
        i = index.get(row)
        if i is not None and i not in found:
            found[i] = Status(Code(code), reasons[i], plugin)
    for i in index.values():
        yield i, found[i]


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate:
    """pickOneNodeForPreemption with the default score functions, in their order; ties
    left after the last one go to the first candidate."""
    # Each candidate's victim priorities, looked up once.
    priorities = {id(c): [v.priority for v in c.victims] for c in candidates}
    scores: list[Callable[[Candidate], int]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -priorities[id(c)][0],
        lambda c: -sum(priorities[id(c)]) - len(c.victims) * (_MAX_INT32 + 1),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest_priority(c.victims),
    ]
    remaining = list(candidates)
    for score in scores:
        values = [score(c) for c in remaining]
        best = max(values)
        remaining = [c for c, v in zip(remaining, values, strict=True) if v == best]
        if len(remaining) == 1:
            break
    return remaining[0]


# --- the plugin --------------------------------------------------------------------------


WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    """PostFilter: preempt lower-priority pods. PreEnqueue (async preemption, on by
    default since 1.33): a preemptor is not retried while its victims are still
    being evicted, so it never preempts twice for one nomination."""

    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None):
        super().__init__(args, handle)
        self.preemption_args = DefaultPreemptionArgs.parse(self.args)
        # pod key -> (the PodInfo, what it adds to a row's requested), for the batched
        # dry run; an entry counts only for that very PodInfo (and table width).
        self._amounts: dict[str, tuple[PodInfo, list[int]]] = {}
        # Preemptors whose victims are being evicted (Executor.preempting upstream),
        # each with the last victim it deletes: (node, victim key).
        self._last_victim: dict[str, tuple[str, str]] = {}

    # --- PreEnqueue ----------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if self.running_preemption(pod.key):
            return Status.unresolvable(WAITING_FOR_PREEMPTION)
        return Status()

    def running_preemption(self, preemptor: str) -> bool:
        """IsPodRunningPreemption: while the last victim is being deleted, the
        preemption counts as done once the scheduler no longer sees that victim (or
        sees it terminating), even if the deletion call has not returned yet."""
        last = self._last_victim.get(preemptor)
        if last is None:
            return False
        node, victim = last
        table = self.handle.nodes
        row = table.row_of(node)
        if row is None:
            return False
        for info in table.pods_on(row):
            if info.key == victim:
                return info.pod.metadata.deletion_timestamp is None
        return False

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A victim's deletion is what lets a gated preemptor in; the rejecting
        # plugins' hints (NodeResourcesFit's for a deleted pod) then requeue it.
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE), lambda _pod, _old, _new: False
            )
        ]

    # --- PostFilter ----------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Any
    ) -> tuple[PostFilterResult | None, Status]:
        assert isinstance(diagnosis, Diagnosis)
        result, status = self.preempt(state, pod, diagnosis)
        message = status.message()
        if message:
            return result, Status(status.code, ["preemption: " + message], status.plugin)
        return result, status

    def preempt(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """Evaluator.Preempt: (None, Unschedulable) leaves the pod's nomination as it is;
        (result "", Unschedulable) clears it; (result node, Success) nominates."""
        table = self.handle.nodes
        nominated_status = self.node_status(diagnosis, pod.pod.status.nominated_node_name)
        eligible, reason = self.pod_eligible_to_preempt_others(pod, nominated_status)
        if not eligible:
            return None, Status.unschedulable(reason)

        num_all = len(table)
        if num_all == 0:
            return None, Status.as_error("no nodes available")
        candidates, statuses = self.find_candidates(state, pod, diagnosis)
        errors = [s.message() for s in statuses.values() if s.code == Code.ERROR]
        if errors and not candidates:
            # utilerrors.NewAggregate's text
            text = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
            return None, Status.as_error(text)
        if not candidates:
            return PostFilterResult(""), Status.unschedulable(
                self.no_candidate_message(num_all, statuses)
            )
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status.unschedulable(NO_CANDIDATE)
        self.prepare_candidate_async(best, pod)
        return PostFilterResult(best.name), Status()

    # --- eligibility ------------------------------------------------------------------

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_status: Status
    ) -> tuple[bool, str]:
        if pod.pod.spec.preemption_policy == PREEMPT_NEVER:
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.pod.status.nominated_node_name
        if nominated:
            if nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            table = self.handle.nodes
            row = table.row_of(nominated)
            if row is not None:
                for other in table.pods_on(row):
                    if self.is_preemption_allowed(other, pod) and terminating_by_preemption(
                        other.pod
                    ):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    @staticmethod
    def is_preemption_allowed(victim: PodInfo, preemptor: PodInfo) -> bool:
        """isPreemptionAllowed: only lower priority pods (IsEligiblePod allows all)."""
        return victim.priority < preemptor.priority

    def node_status(self, diagnosis: Diagnosis, node_name: str) -> Status:
        """NodeToStatus.Get: the node's Filter verdict, or the status of absent nodes
        (UnschedulableAndUnresolvable by default)."""
        row = self.handle.nodes.row_of(node_name) if node_name else None
        if row is not None:
            status = diagnosis.status_of(row)
            if status is not None:
                return status
        return diagnosis.absent_status or Status.unresolvable()

    # --- candidates --------------------------------------------------------------------

    def nodes_for_status_code(self, diagnosis: Diagnosis, code: Code) -> list[int]:
        """NodeToStatus.NodesForStatusCode: every node when the absent nodes have that
        code (minus the explicit ones that do not), else the explicit nodes with it."""
        absent = diagnosis.absent_status
        absent_code = absent.code if absent is not None else Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        explicit = dict(zip(diagnosis.rows.tolist(), diagnosis.codes.tolist(), strict=True))
        if absent_code == code:
            order = self.handle.nodes.order().tolist()
            return [r for r in order if explicit.get(r, absent_code) == code]
        return [row for row, c in explicit.items() if c == code]

    def calculate_num_candidates(self, num_nodes: int) -> int:
        args = self.preemption_args
        n = num_nodes * args.min_candidate_nodes_percentage // 100
        n = max(n, args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        offset = int(self.handle.rng.integers(num_nodes))
        return offset, self.calculate_num_candidates(num_nodes)

    def find_candidates(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[list[Candidate], dict[int, Status]]:
        potential = self.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
        if not potential:
            return [], {}
        offset, count = self.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, self.handle.pdbs, offset, count)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[int],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        count: int,
    ) -> tuple[list[Candidate], dict[int, Status]]:
        """DryRunPreemption, one node after another from `offset`: the candidates (those
        violating no PDB first) and the verdict of every node that is not one.

        When the pod's filters can only change their mind through the amounts a node
        has requested (see `amounts_only`), the nodes are dry-run a batch at a time
        (`select_victims_batch`), with the same verdicts as one by one."""
        table = self.handle.nodes
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[int, Status] = {}
        total = len(potential)
        ordered = [potential[(offset + i) % total] for i in range(total)]
        batched = self.amounts_only(state, pod)
        nominated = self.nominated_by_row(pod, table) if batched else {}
        buffered: list[tuple[list[PodInfo], int, Status]] = []
        buffer_start = 0
        for i, row in enumerate(ordered):
            if batched and i >= buffer_start + len(buffered):
                # Every node from here on may be needed: at least as many as the
                # candidates still missing, more when nodes so far were not all
                # candidates (nodes beyond the last one needed are only wasted work).
                missing = count - len(non_violating) - len(violating)
                chosen_so_far = len(non_violating) + len(violating)
                if i == 0:
                    size = missing
                elif chosen_so_far == 0:
                    size = 2 * i
                else:
                    size = -(-missing * i // chosen_so_far)
                found = self.select_victims_batch(
                    state, pod, table, ordered[i : i + max(size, _MIN_BATCH)], pdbs, nominated
                )
                if found is None:
                    batched = False
                else:
                    buffered, buffer_start = found, i
            if batched:
                victims, violations, status = buffered[i - buffer_start]
            else:
                victims, violations, status = self.select_victims_on_node(
                    state.clone(), pod, table, row, pdbs
                )
            if status.is_success() and victims:
                chosen = non_violating if violations == 0 else violating
                if len(chosen) < count:
                    chosen.append(Candidate(table.names[row], row, victims, violations))
                if non_violating and len(non_violating) + len(violating) >= count:
                    break
                continue
            if status.is_success():
                status = Status.as_error(
                    f'expected at least one victim pod on node "{table.names[row]}"'
                )
            statuses[row] = status
        return non_violating + violating, statuses

    def _framework(self) -> FrameworkRunner:
        if self.framework is None:
            raise RuntimeError(f"plugin {NAME} runs outside a framework")
        return self.framework

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        row: int,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status]:
        """SelectVictimsOnNode: the fewest pods to evict from the row (most important
        first) and how many of them violate a PDB. The table is left as it was."""
        fw = self._framework()
        saved = table.save_row(row)
        try:
            return self._select_victims(fw, state, pod, table, row, pdbs)
        except Exception as exc:
            return [], 0, Status.as_error(exc)
        finally:
            table.restore_row(saved)

    def _select_victims(
        self,
        fw: FrameworkRunner,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        row: int,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status]:
        def remove(victim: PodInfo) -> None:
            table.remove_pod(victim, row)
            fw.run_pre_filter_extension_remove_pod(state, pod, victim, table, row)

        def add(victim: PodInfo) -> None:
            table.add_pod(victim, row)
            fw.run_pre_filter_extension_add_pod(state, pod, victim, table, row)

        potential = [p for p in table.pods_on(row) if self.is_preemption_allowed(p, pod)]
        for victim in potential:
            remove(victim)
        if not potential:
            return [], 0, Status.unresolvable(NO_VICTIMS)
        status = fw.filter_status_with_nominated_pods(state, pod, table, row)
        if not status.is_success():
            return [], 0, status

        potential.sort(key=importance)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(victim: PodInfo) -> bool:
            add(victim)
            fits = fw.filter_status_with_nominated_pods(state, pod, table, row).is_success()
            if not fits:
                remove(victim)
                victims.append(victim)
            return fits

        violations = 0
        for victim in violating:
            if not reprieve(victim):
                violations += 1
        for victim in non_violating:
            reprieve(victim)
        if violating and non_violating:
            victims.sort(key=importance)
        return victims, violations, Status()

    # --- the batched dry run --------------------------------------------------------

    def nominated_by_row(self, pod: PodInfo, table: NodeTable) -> dict[int, list[PodInfo]]:
        """The pods nominated to each row that the pod's filters must count (those of
        its priority or more, itself aside), as RunFilterPluginsWithNominatedPods."""
        nominator = self.handle.nominated
        found: dict[int, list[PodInfo]] = {}
        for name in nominator.nominated_nodes():
            row = table.row_of(name)
            if row is None:
                continue
            others = [
                p
                for p in nominator.nominated_pods_for_node(name)
                if p.priority >= pod.priority and p.key != pod.key
            ]
            if others:
                found[row] = others
        return found

    def amounts_only(self, state: CycleState, pod: PodInfo) -> bool:
        """Whether the filters that run for the pod see the pods on a node only through
        the amounts it has requested (`NodeTable.requested`, and what the table keeps
        in step with it), with no PreFilterExtension to tell: the built-in plugins
        that do not look at pods at all, and NodeResourcesFit. Evicting or reprieving
        a victim is then a change of one row of `requested`, and a node's verdict
        depends on nothing but its own row, so that many nodes can be dry-run at once.
        Any other plugin (one of the others, a subclass, an out-of-tree one) means one
        node at a time, as upstream."""
        return self._amount_filters(state, pod) is not None

    def _amount_filters(self, state: CycleState, pod: PodInfo) -> list[FilterPlugin] | None:
        """The filters that run for the pod and look at the amounts, when
        `amounts_only` (else None): each filter's declared FilterScope says whether it
        reads the node's pods not at all (NODE), only through the amounts (AMOUNTS),
        or more."""
        if self.framework is None:
            return None
        scopes = self.framework.filter_scopes(state, pod)
        if scopes is None or any(scope > FilterScope.AMOUNTS for _, scope in scopes):
            return None
        return [plugin for plugin, scope in scopes if scope == FilterScope.AMOUNTS]

    def select_victims_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        rows: Sequence[int],
        pdbs: Sequence[PodDisruptionBudget],
        nominated: Mapping[int, list[PodInfo]] | None = None,
    ) -> list[tuple[list[PodInfo], int, Status]] | None:
        """select_victims_on_node for each of the rows, all at once, for pods that
        `amounts_only` allows. The filters run once with every row's lower priority
        pods taken out of its requested amounts (`NodeTable.shift_requested`), then,
        once per reprieve step k, the filters that look at the amounts run for the
        rows still going, each with its k-th victim back (kept if the pod still fits):
        the others passed those rows already and look at no amounts.

        Pods nominated to a row (of the pod's priority or more) are added to its
        amounts for every run, as RunFilterPluginsWithNominatedPods's first pass; its
        second pass, without them, cannot fail where the first passed, since more
        requested never makes a node fit better. None (the table as it was) for the
        rare cases that do not fit this (a nominated pod already on the row, a
        resource without a column) and when a filter failed with an error: the caller
        then goes node by node, which reports errors per node."""
        fw = self.framework
        amount_filters = self._amount_filters(state, pod)
        if fw is None or amount_filters is None:
            return None
        n = len(rows)
        width = table.requested.shape[1]
        columns = table.resource_index

        cache = self._amounts
        if len(cache) > _AMOUNTS_CACHE_SIZE:
            cache.clear()

        def amounts(info: PodInfo) -> list[int] | None:
            """What add_pod adds to the row's `requested` (None: not just that)."""
            cached = cache.get(info.key)
            if cached is not None and cached[0] is info and len(cached[1]) == width:
                return cached[1]
            vector = [0] * width
            for resource, amount in info.requests.items():
                col = columns.get(resource)
                if col is None or col >= width or amount < 0:
                    return None
                vector[col] += amount
            vector[PODS] += 1
            cache[info.key] = (info, vector)
            return vector

        orders: list[list[PodInfo]] = []
        violating_counts: list[int] = []
        # Every victim's amounts, with its reprieve step and the index of its row.
        vectors: list[list[int]] = []
        at_step: list[int] = []
        at_row: list[int] = []
        allowed = self.is_preemption_allowed
        if allowed is DefaultPreemption.is_preemption_allowed:
            priority = pod.priority
            lower: Callable[[PodInfo], bool] = lambda p: p.priority < priority  # noqa: E731
        else:
            lower = lambda p: allowed(p, pod)  # noqa: E731
        for i, row in enumerate(rows):
            potential = [p for p in table.pods_on(row) if lower(p)]
            if len(potential) > 1:
                potential.sort(key=importance)
            if pdbs:
                violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
                order = violating + non_violating
            else:
                violating, order = [], potential
            for k, victim in enumerate(order):
                vector = amounts(victim)
                if vector is None:
                    return None
                vectors.append(vector)
                at_step.append(k)
                at_row.append(i)
            orders.append(order)
            violating_counts.append(len(violating))
        lengths = np.array([len(order) for order in orders], dtype=np.intp)
        has_victims = lengths > 0
        no_victims: tuple[list[PodInfo], int, Status] = ([], 0, Status.unresolvable(NO_VICTIMS))
        results = [no_victims] * n
        if not has_victims.any():
            return [([], 0, Status.unresolvable(NO_VICTIMS)) for _ in range(n)]
        steps = int(lengths.max())
        delta = np.zeros((steps, n, width), dtype=np.int64)
        delta[at_step, at_row] = vectors
        # What the first step changes: every victim out, the nominated pods in.
        change = -delta.sum(axis=0)
        if nominated is None:
            nominated = self.nominated_by_row(pod, table)
        if nominated:
            added: list[list[int]] = []
            added_at: list[int] = []
            for i, row in enumerate(rows):
                others = nominated.get(row)
                if not others:
                    continue
                on_row = table.rows[row]
                assert on_row is not None
                for other in others:
                    vector = amounts(other)
                    if vector is None or other.key in on_row.pods:
                        return None
                    added.append(vector)
                    added_at.append(i)
            if added:
                np.add.at(change, added_at, np.array(added, dtype=np.int64))

        row_array = np.asarray(rows, dtype=np.intp)
        trial = state.clone()
        evicted = [[False] * len(order) for order in orders]
        applied = np.zeros((n, width), dtype=np.int64)  # to take off again at the end
        try:
            table.shift_requested(row_array, change)
            applied += change
            tried = row_array[has_victims]
            fitting, diagnosis = fw.run_filters(trial, pod, table, tried)
            passed = np.zeros(table.capacity, dtype=np.bool_)
            passed[fitting] = True
            fits = passed[row_array]
            if not fits[has_victims].all():
                for i, status in _statuses_of(diagnosis, rows, has_victims & ~fits):
                    results[i] = ([], 0, status)
            for k in range(steps):
                going = np.flatnonzero(fits & (lengths > k))
                if not len(going):
                    break
                back = row_array[going]
                table.shift_requested(back, delta[k, going])
                applied[going] += delta[k, going]
                # The other filters passed these rows, with any amounts.
                lost = ~_pass(amount_filters, trial, pod, table, back)
                if lost.any():
                    table.shift_requested(back[lost], -delta[k, going[lost]])
                    applied[going[lost]] -= delta[k, going[lost]]
                    for i in going[lost].tolist():
                        evicted[i][k] = True
        except Exception:
            log.debug("batched dry run for pod %s failed; node by node", pod.key, exc_info=True)
            return None
        finally:
            table.shift_requested(row_array, -applied)
        for i in np.flatnonzero(~has_victims).tolist():
            results[i] = ([], 0, Status.unresolvable(NO_VICTIMS))
        for i in np.flatnonzero(fits).tolist():
            order = orders[i]
            out = evicted[i]
            victims = [v for v, gone in zip(order, out, strict=True) if gone]
            if 0 < violating_counts[i] < len(order):
                victims.sort(key=importance)
            results[i] = (victims, sum(out[: violating_counts[i]]), Status())
        return results

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        return pick_one_node_for_preemption(candidates)

    def no_candidate_message(self, num_all: int, statuses: Mapping[int, Status]) -> str:
        """The dry run's FitError: each node's verdict, the others not helped."""
        rows = list(statuses)
        diagnosis = Diagnosis(
            np.array(rows, dtype=np.intp),
            np.array([int(s.code) for s in statuses.values()], dtype=np.int8),
            [s.plugin for s in statuses.values()],
            [
                (reason, np.array([row], dtype=np.intp))
                for row, status in statuses.items()
                for reason in status.reasons
            ],
        )
        diagnosis.absent_status = Status.unresolvable(NOT_HELPFUL)
        diagnosis.absent_count = num_all - len(rows)
        return fit_error_message(num_all, diagnosis)

    # --- actuation ---------------------------------------------------------------------

    def prepare_candidate_async(self, candidate: Candidate, preemptor: PodInfo) -> None:
        """prepareCandidateAsync: evict the victims (those not already being deleted)
        in a task, after this scheduling cycle."""
        victims = [v for v in candidate.victims if v.pod.metadata.deletion_timestamp is None]
        if not victims:
            return
        # Upstream registers the last victim once the others are deleted; known from
        # the start, the check is the same while they are (the last one is still
        # there) and right when another preemptor already deleted it.
        self._last_victim[preemptor.key] = (candidate.name, victims[-1].key)
        self.handle.spawn(self._preempt(candidate.name, victims, preemptor))

    async def _preempt(self, node: str, victims: Sequence[PodInfo], preemptor: PodInfo) -> None:
        handle = self.handle
        try:
            # Lower priority pods nominated to the node may no longer fit there.
            lower = [
                p
                for p in handle.nominated.nominated_pods_for_node(node)
                if p.priority < preemptor.priority
            ]
            if lower:
                handle.clear_nominated_node(lower)
            for victim in victims:
                await self.preempt_pod(node, preemptor, victim)
        except Exception:
            log.exception("preemption for pod %s on node %s failed", preemptor.key, node)
            self._last_victim.pop(preemptor.key, None)
            # Do not leave the preemptor waiting for deletions that will not come.
            handle.activate([preemptor.key])
            return
        self._last_victim.pop(preemptor.key, None)

    async def preempt_pod(self, node: str, preemptor: PodInfo, victim: PodInfo) -> None:
        """Executor.PreemptPod: a victim waiting at Permit is just told so; any other
        gets DisruptionTarget=True and is deleted. Either way a Preempted event."""
        handle = self.handle
        cluster = handle.cluster
        if cluster is None:
            raise RuntimeError("no cluster to delete preemption victims from")
        message = f"Preempted by pod {preemptor.pod.metadata.uid} on node {node}"
        waiting = handle.waiting_pods.get(victim.key) if handle.waiting_pods else None
        if waiting is not None and waiting.preempt(NAME, "preempted"):
            message += " (in kube-scheduler memory)."
        else:
            found = await cluster.set_disruption_target(
                victim.pod,
                PREEMPTION_BY_SCHEDULER,
                f"{preemptor.pod.spec.scheduler_name}: "
                "preempting to accommodate a higher priority pod",
            )
            if not found:
                log.info("Victim Pod is already deleted: victim=%s node=%s", victim.key, node)
                return
            await cluster.delete_pod(victim.pod, "Preempted")
            log.info(
                "Preemptor Pod preempted victim Pod: preemptor=%s victim=%s node=%s",
                preemptor.key,
                victim.key,
                node,
            )
        cluster.record_event(victim.pod, "Normal", "Preempted", message)


__all__ = [
    "NAME",
    "ArgsError",
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "filter_pods_with_pdb_violation",
    "pick_one_node_for_preemption",
]
