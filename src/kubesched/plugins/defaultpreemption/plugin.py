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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import PodDisruptionBudget
from kubesched.api.pod_groups import pod_group_key
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extender import ExtenderError, Victims
from kubesched.framework.fit_error import Diagnosis, fit_error_message
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FrameworkRunner,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from kubesched.framework.node_table import NodeTable
from kubesched.framework.nominated import nominated_by_row
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.logs import V, kv
from kubesched.plugins.defaultpreemption.args import (
    ArgsError,
    DefaultPreemptionArgs,
    default_preemption_args,
)
from kubesched.plugins.defaultpreemption.batch import BatchedDryRun
from kubesched.plugins.defaultpreemption.candidates import (
    NO_VICTIMS,
    PREEMPTION_BY_SCHEDULER,
    Candidate,
    filter_pods_with_pdb_violation,
    importance,
    is_lower_priority,
    pick_one_node_for_preemption,
    terminating_by_preemption,
)
from kubesched.plugins.helpers.args import raw_args

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

log = logging.getLogger("kubesched.preemption")

NAME = "DefaultPreemption"

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"

PREEMPT_NEVER = "Never"

# The fewest nodes a batched dry run takes at once.
_MIN_BATCH = 16


# --- the plugin --------------------------------------------------------------------------


WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    """PostFilter: preempt lower-priority pods. PreEnqueue (async preemption, on by
    default since 1.33): a preemptor is not retried while its victims are still
    being evicted, so it never preempts twice for one nomination."""

    name = NAME
    args_decoder = staticmethod(default_preemption_args)

    def __init__(
        self,
        args: Mapping[str, Any] | DefaultPreemptionArgs | None = None,
        handle: Handle | None = None,
    ):
        super().__init__(raw_args(args), handle)
        self.preemption_args = default_preemption_args(args)
        # Preemptors whose victims are being evicted (Executor.preempting upstream),
        # each with the last victim it deletes: (node, victim key).
        self._last_victim: dict[str, tuple[str, str]] = {}
        # Many nodes dry-run at once where the filters allow it (batch.py).
        self.dry_run = BatchedDryRun(self)

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
        try:
            result, status = self.preempt(state, pod, diagnosis)
        finally:
            # DefaultPreemption.PostFilter: `defer metrics.PreemptionAttempts.Inc()`,
            # every call, whatever becomes of it.
            self.handle.metrics.inc_preemption_attempts()
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
        candidates, status = self.call_extenders(pod, candidates)
        if not status.is_success():
            return None, status
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

    def victims_are_the_lower_priority_pods(self) -> bool:
        """Whether is_preemption_allowed is this class's (a subclass may change it):
        the batched dry run may then take a tail of each row's pods as its victims."""
        return type(self).is_preemption_allowed is DefaultPreemption.is_preemption_allowed

    def is_preemption_allowed(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        """isPreemptionAllowed: only lower priority pods (IsEligiblePod allows all).
        Not upstream's: a pod of a scheduler-plugins PodGroup is never a victim here,
        since evicting part of a running gang leaves the rest holding its nodes for
        nothing; Coscheduling's gang preemption takes such pods, a group whole."""
        if not is_lower_priority(victim, preemptor):
            return False
        group = pod_group_key(victim.pod)
        return not group or self._handle is None or self._handle.pod_groups.get(group) is None

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
        # Over the arrays: a pod that fits nowhere asks this of every node, each
        # time it is tried (scheduler_perf's churn pod, at 5,000 nodes).
        rows, codes = diagnosis.rows, diagnosis.codes
        if absent_code == code:
            table = self.handle.nodes
            order = table.order()
            keep = np.ones(table.capacity, dtype=np.bool_)
            keep[rows[codes != code]] = False
            return order[keep[order]].tolist()  # type: ignore[no-any-return]
        return rows[codes == code].tolist()  # type: ignore[no-any-return]

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
        has requested (see BatchedDryRun.amounts_only), the nodes are dry-run a batch
        at a time (`dry_run.select_victims_batch`), with the same verdicts as one by one."""
        table = self.handle.nodes
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses: dict[int, Status] = {}
        total = len(potential)
        ordered = [potential[(offset + i) % total] for i in range(total)]
        batched = self.dry_run.amounts_only(state, pod)
        nominated = nominated_by_row(self.handle.nominated, pod, table) if batched else None
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
                found = self.dry_run.select_victims_batch(
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

    def call_extenders(
        self, pod: PodInfo, candidates: list[Candidate]
    ) -> tuple[list[Candidate], Status]:
        """The candidates the extenders that preempt keep, with the victims they
        agree to, each extender narrowing what the one before kept (callExtenders in
        preemption.go)."""
        extenders = [
            e for e in self.handle.extenders if e.supports_preemption and e.is_interested(pod.pod)
        ]
        if not extenders or not candidates:
            return candidates, Status()
        table = self.handle.nodes
        rows = {c.name: c.row for c in candidates}
        victims = {
            c.name: Victims([v.pod for v in c.victims], c.num_pdb_violations) for c in candidates
        }
        for extender in extenders:
            on_node = {name: [p.pod for p in table.pods_on(row)] for name, row in rows.items()}
            try:
                answer = extender.process_preemption(pod.pod, victims, on_node)
            except ExtenderError as exc:
                if extender.ignorable:
                    log.log(
                        V(2),
                        "Skipped extender as it returned error and has ignorable flag set",
                        extra=kv(extender=extender.name, err=str(exc)),
                    )
                    continue
                return [], Status.as_error(str(exc))
            for name in [n for n, v in answer.items() if not v.pods]:
                if not extender.ignorable:
                    return [], Status.as_error(f'expected at least one victim pod on node "{name}"')
                del answer[name]
            victims = answer
            if not victims:
                break
        chosen: list[Candidate] = []
        for name, kept in victims.items():
            row = rows[name] if name in rows else table.row_of(name)
            if row is None:
                continue
            by_uid = {p.pod.metadata.uid: p for p in table.pods_on(row)}
            pods = [by_uid[v.metadata.uid] for v in kept.pods if v.metadata.uid in by_uid]
            chosen.append(Candidate(name, row, pods, kept.num_pdb_violations))
        return chosen, Status()

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
        # Executor.prepareCandidateAsync observes PreemptionVictims (all of the
        # candidate's victims) once some are to be deleted.
        self.handle.metrics.observe_preemption_victims(len(candidate.victims))
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
            # Do not leave the preemptor waiting for deletions that will not come
            # (prepareCandidateAsync Activates it), but let it retry after its
            # backoff, not at once: the API that refused is likely to refuse again.
            handle.retry_after_error([preemptor.key])
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
