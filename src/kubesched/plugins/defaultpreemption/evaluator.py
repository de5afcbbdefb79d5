"""DefaultPreemption's Evaluator (pkg/scheduler/framework/preemption/preemption.go
v1.36.3: Evaluator.Preempt, findCandidates, DryRunPreemption, callExtenders,
SelectCandidate), which the plugin holds and its PostFilter calls.

1. PodEligibleToPreemptOthers (the plugin's): not with preemptionPolicy Never; not
   while pods that this pod's earlier preemption evicts are still terminating on
   its nominated node (unless that node is now unresolvable for it).
2. Candidates: only nodes whose Filter verdict was Unschedulable (never
   UnschedulableAndUnresolvable). From a random offset, each is dry-run
   (SelectVictimsOnNode, the plugin's): every lower priority pod is removed (node
   table and PreFilterExtensions), the filters must then pass (with nominated
   pods); the victims are then reprieved one by one, PDB-violating ones first, each
   group from the most important (priority, then start time), as long as the pod
   still fits. The table is put back exactly afterwards. The dry run stops once it
   has max(minCandidateNodesPercentage% of the nodes, minCandidateNodesAbsolute)
   candidates and at least one that violates no PDB. When the pod's filters
   declare that they read a node's pods only through its requested amounts
   (FilterScope AMOUNTS, as NodeResourcesFit) or not at all (NODE, as the filters
   blind to pods) and no PreFilterExtensions runs, nodes are dry-run a batch at a
   time over the node table's columns, with the same outcome (batch.py).
3. The extenders that preempt narrow the candidates (callExtenders), then
   pickOneNodeForPreemption: fewest PDB violations, then the lowest highest victim
   priority, the smallest sum of priorities, the fewest victims, the latest start
   of the highest priority victims, then the first.
4. The Executor (executor.py) evicts the victims of the chosen candidate.

Messages are upstream's: when no node helps, a FitError of the dry run ("0/N
nodes are available: 4 No preemption victims found for incoming pod."), with
"Preemption is not helpful for scheduling" for every node that was not a
candidate.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from kubesched.api.objects import PodDisruptionBudget
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extender import ExtenderError, Victims
from kubesched.framework.fit_error import Diagnosis, fit_error_message
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import PostFilterResult
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.state.nominated import nominated_by_row
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.logs import V, kv
from kubesched.plugins.defaultpreemption.batch import BatchedDryRun
from kubesched.plugins.defaultpreemption.candidates import (
    Candidate,
    pick_one_node_for_preemption,
)
from kubesched.plugins.defaultpreemption.executor import Executor

log = logging.getLogger("kubesched.preemption")

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"

# The fewest nodes a batched dry run takes at once.
_MIN_BATCH = 16


class Interface(Protocol):
    """What the Evaluator asks of the plugin it serves (preemption.Interface
    upstream): its rules, which a plugin deriving from DefaultPreemption may change."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_status: Status
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        row: int,
        pdbs: Sequence[PodDisruptionBudget],
    ) -> tuple[list[PodInfo], int, Status]: ...


class Evaluator:
    """preemption.Evaluator: the preemption of one pod that fits nowhere, for the
    plugin PLUGIN_NAME over HANDLE (None: built without one). INTERFACE: the plugin
    (its rules); DRY_RUN: the batched dry run; EXECUTOR: evicts the victims."""

    def __init__(
        self,
        plugin_name: str,
        handle: Handle | None,
        interface: Interface,
        dry_run: BatchedDryRun,
        executor: Executor,
    ) -> None:
        self.plugin_name = plugin_name
        self._handle = handle
        self.interface = interface
        self.dry_run = dry_run
        self.executor = executor

    @property
    def handle(self) -> Handle:
        if self._handle is None:
            raise RuntimeError(f"plugin {self.plugin_name} was built without a framework handle")
        return self._handle

    def preempt(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """Evaluator.Preempt: (None, Unschedulable) leaves the pod's nomination as it is;
        (result "", Unschedulable) clears it; (result node, Success) nominates."""
        table = self.handle.nodes
        nominated_status = self.node_status(diagnosis, pod.pod.status.nominated_node_name)
        eligible, reason = self.interface.pod_eligible_to_preempt_others(pod, nominated_status)
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
        self.executor.prepare_candidate_async(best, pod)
        return PostFilterResult(best.name), Status()

    def node_status(self, diagnosis: Diagnosis, node_name: str) -> Status:
        """NodeToStatus.Get: the node's Filter verdict, or the status of absent nodes
        (UnschedulableAndUnresolvable by default)."""
        row = self.handle.nodes.row_of(node_name) if node_name else None
        if row is not None:
            status = diagnosis.status_of(row)
            if status is not None:
                return status
        return diagnosis.absent_status or Status.unresolvable()

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

    def find_candidates(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[list[Candidate], dict[int, Status]]:
        potential = self.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
        if not potential:
            return [], {}
        offset, count = self.interface.get_offset_and_num_candidates(len(potential))
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
                victims, violations, status = self.interface.select_victims_on_node(
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
