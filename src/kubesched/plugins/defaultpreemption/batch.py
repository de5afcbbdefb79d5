"""DefaultPreemption's batched dry run: many candidate nodes at once over the node
table's columns, when the pod's filters declare that they read a node's pods only
through its requested amounts (FilterScope). Gives the same victims as the node by
node dry run (SelectVictimsOnNode upstream), which the tests check."""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kubesched.api.objects import PodDisruptionBudget
from kubesched.api.pod_groups import pod_group_key
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import FilterPlugin, FilterScope, FrameworkRunner
from kubesched.framework.state.node_table import IntArray, NodeRow, NodeTable, Rows
from kubesched.framework.state.nominated import NominatedRows, nominated_by_row
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption.candidates import (
    NO_VICTIMS,
    filter_pods_with_pdb_violation,
    importance,
)

log = logging.getLogger("kubesched.preemption")


def _pass(
    fw: FrameworkRunner,
    filters: Sequence[FilterPlugin],
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    rows: Rows,
) -> npt.NDArray[np.bool_]:
    """Which rows every one of the filters lets through: Framework.run_filters's
    verdicts (each filter sees the rows the earlier ones passed), minus the diagnosis.
    Raises on an Error verdict, as run_filters does. The framework runs each filter,
    which counts its evaluations as upstream's instrumented plugins count those of
    preemption's dry run."""
    passed = np.ones(len(rows), dtype=np.bool_)
    for plugin in filters:
        going = np.flatnonzero(passed)
        if not len(going):
            break
        codes = fw.run_filter_plugin(plugin, state, pod, table, rows[going]).codes
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


@dataclass(slots=True)
class _RowVictims:
    """A row's pods most important first (MoreImportantPod), as the dry run orders
    its potential victims, kept while the row's pods stay as they were."""

    node_row: NodeRow
    pod_changes: int
    width: int
    pods: list[PodInfo]
    # -priority of each pod, ascending: the pods below a priority are a tail.
    negated: list[int]
    # One line per pod: NodeTable.amounts_of; None when a pod has none.
    amounts: IntArray | None
    # Some pod belongs to a pod group (is_preemption_allowed may then say no to a
    # lower priority pod).
    grouped: bool


class Preemption(Protocol):
    """What the batched dry run reads of the DefaultPreemption it serves."""

    @property
    def handle(self) -> Handle: ...

    @property
    def framework(self) -> FrameworkRunner | None: ...

    def is_preemption_allowed(self, victim: PodInfo, preemptor: PodInfo) -> bool: ...

    def victims_are_the_lower_priority_pods(self) -> bool:
        """Whether is_preemption_allowed allows exactly the pods of lower priority on
        rows without pod group members (DefaultPreemption's rule, not overridden): a
        row's victims are then a tail of its pods in importance order."""
        ...


class BatchedDryRun:
    """The batched dry run: a part of DefaultPreemption (`plugin.dry_run`) that its
    Evaluator's dry_run_preemption runs (evaluator.py); it reads the plugin through
    the Preemption protocol (its rules, handle and framework)."""

    def __init__(self, preemption: Preemption) -> None:
        self.preemption = preemption
        # Row -> its pods in importance order: with a thousand preemptors and the
        # same few hundred candidate rows, sorting each row's pods and reading their
        # amounts was a tenth of PreemptionBasic.
        self._victims_by_row: dict[int, _RowVictims] = {}

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
        framework = self.preemption.framework
        if framework is None:
            return None
        scopes = framework.filter_scopes(state, pod)
        if scopes is None or any(scope > FilterScope.AMOUNTS for _, scope in scopes):
            return None
        return [plugin for plugin, scope in scopes if scope == FilterScope.AMOUNTS]

    def _row_victims(self, table: NodeTable, row: int) -> _RowVictims:
        node_row = table.rows[row]
        assert node_row is not None
        width = table.requested.shape[1]
        kept = self._victims_by_row.get(row)
        if (
            kept is not None
            and kept.node_row is node_row
            and kept.pod_changes == node_row.pod_changes
            and kept.width == width
        ):
            return kept
        pods = sorted(node_row.pods.values(), key=importance)
        vectors = [table.amounts_of(p) for p in pods]
        amounts = None
        if all(vector is not None for vector in vectors):
            amounts = np.array(vectors, dtype=np.int64).reshape(len(pods), width)
        negated = [-p.priority for p in pods]
        grouped = any(pod_group_key(p.pod) for p in pods)
        kept = _RowVictims(node_row, node_row.pod_changes, width, pods, negated, amounts, grouped)
        self._victims_by_row[row] = kept
        return kept

    def select_victims_batch(
        self,
        state: CycleState,
        pod: PodInfo,
        table: NodeTable,
        rows: Sequence[int],
        pdbs: Sequence[PodDisruptionBudget],
        nominated: NominatedRows | None = None,
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
        fw = self.preemption.framework
        amount_filters = self._amount_filters(state, pod)
        if fw is None or amount_filters is None:
            return None
        n = len(rows)
        width = table.requested.shape[1]

        orders: list[list[PodInfo]] = []
        violating_counts: list[int] = []
        # Every row's victims' amounts, one line per victim in its order.
        blocks: list[IntArray] = []
        allowed = self.preemption.is_preemption_allowed
        by_priority = self.preemption.victims_are_the_lower_priority_pods()
        priority = pod.priority
        for row in rows:
            kept = self._row_victims(table, row)
            picked: slice | list[int]
            if by_priority and not kept.grouped:
                # The pods below the preemptor's priority, most important first: a
                # tail of the row's pods in that order.
                picked = slice(bisect.bisect_right(kept.negated, -priority), None)
                potential = kept.pods[picked]
            else:
                picked = [k for k, p in enumerate(kept.pods) if allowed(p, pod)]
                potential = [kept.pods[k] for k in picked]
            if pdbs:
                violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
                order = violating + non_violating
            else:
                violating, order = [], potential
            if not pdbs and kept.amounts is not None:
                blocks.append(kept.amounts[picked])
            else:
                vectors = [table.amounts_of(victim) for victim in order]
                if any(vector is None for vector in vectors):
                    return None
                blocks.append(np.array(vectors, dtype=np.int64).reshape(len(order), width))
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
        # Victim k of row i goes to delta[k, i]: the steps count up within each row.
        at_row = np.repeat(np.arange(n), lengths)
        at_step = np.arange(len(at_row)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        delta[at_step, at_row] = np.concatenate(blocks)
        # What the first step changes: every victim out, the nominated pods in.
        change = -delta.sum(axis=0)
        if nominated is None:
            nominated = nominated_by_row(self.preemption.handle.nominated, pod, table)
        if nominated:
            at = [i for i, row in enumerate(rows) if row in nominated]
            added = nominated.amounts(table, np.asarray([rows[i] for i in at], dtype=np.intp))
            if added is None:
                return None
            change[at] += added

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
                lost = ~_pass(fw, amount_filters, trial, pod, table, back)
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
