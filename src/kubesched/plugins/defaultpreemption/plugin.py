"""DefaultPreemption: make room for a pod that fits nowhere by evicting lower priority pods.

kube-scheduler v1.36's PostFilter plugin (pkg/scheduler/framework/plugins/
defaultpreemption), with asynchronous preemption (SchedulerAsyncPreemption, on by
default). As upstream, the plugin holds an Evaluator (evaluator.py: Preempt, the
candidates, the dry run, the extenders, the choice of node) and an Executor
(executor.py: the evictions), and is itself what the Evaluator asks for its rules
(preemption.Interface): PodEligibleToPreemptOthers, GetOffsetAndNumCandidates and
SelectVictimsOnNode, with isPreemptionAllowed. Its PreEnqueue keeps a preemptor
out of the queue while its victims are being evicted.

Messages are upstream's: "preemption: " and the reason (PostFilter adds the
prefix), or, when no node helps, a FitError of the dry run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubesched.api.objects import PodDisruptionBudget
from kubesched.api.pod_groups import pod_group_key
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FrameworkRunner,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.defaultpreemption.args import (
    ArgsError,
    DefaultPreemptionArgs,
    default_preemption_args,
)
from kubesched.plugins.defaultpreemption.batch import BatchedDryRun
from kubesched.plugins.defaultpreemption.candidates import (
    NO_VICTIMS,
    Candidate,
    filter_pods_with_pdb_violation,
    importance,
    is_lower_priority,
    pick_one_node_for_preemption,
    terminating_by_preemption,
)
from kubesched.plugins.defaultpreemption.evaluator import Evaluator
from kubesched.plugins.defaultpreemption.executor import Executor
from kubesched.plugins.helpers.args import raw_args

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

NAME = "DefaultPreemption"

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."

PREEMPT_NEVER = "Never"

WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    """PostFilter: preempt lower-priority pods (`evaluator`). PreEnqueue (async
    preemption, on by default since 1.33): a preemptor is not retried while its
    victims are still being evicted (`executor`), so it never preempts twice for
    one nomination."""

    name = NAME
    args_decoder = staticmethod(default_preemption_args)

    def __init__(
        self,
        args: Mapping[str, Any] | DefaultPreemptionArgs | None = None,
        handle: Handle | None = None,
    ):
        super().__init__(raw_args(args), handle)
        self.preemption_args = default_preemption_args(args)
        # As upstream's New: pl.Executor = NewExecutor(fh, ...), pl.Evaluator =
        # NewEvaluator(Name, fh, &pl, pl.Executor). The batched dry run (batch.py)
        # reads the plugin's rules too; the Evaluator runs it.
        self.executor = Executor(NAME, handle)
        self.dry_run = BatchedDryRun(self)
        self.evaluator = Evaluator(NAME, handle, self, self.dry_run, self.executor)

    # --- PreEnqueue ----------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status:
        if self.executor.is_pod_running_preemption(pod.key):
            return Status.unresolvable(WAITING_FOR_PREEMPTION)
        return Status()

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
            result, status = self.evaluator.preempt(state, pod, diagnosis)
        finally:
            # DefaultPreemption.PostFilter: `defer metrics.PreemptionAttempts.Inc()`,
            # every call, whatever becomes of it.
            self.handle.metrics.inc_preemption_attempts()
        message = status.message()
        if message:
            return result, Status(status.code, ["preemption: " + message], status.plugin)
        return result, status

    # --- the Evaluator's Interface: the plugin's rules --------------------------------

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

    def calculate_num_candidates(self, num_nodes: int) -> int:
        args = self.preemption_args
        n = num_nodes * args.min_candidate_nodes_percentage // 100
        n = max(n, args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        offset = int(self.handle.rng.integers(num_nodes))
        return offset, self.calculate_num_candidates(num_nodes)

    # --- the dry run of one node -------------------------------------------------------

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


__all__ = [
    "NAME",
    "ArgsError",
    "Candidate",
    "DefaultPreemption",
    "DefaultPreemptionArgs",
    "filter_pods_with_pdb_violation",
    "pick_one_node_for_preemption",
]
