"""Explanations of scheduling attempts: the scheduler's side.

A scheduling cycle asked for an explanation (an ExplainObserver wants the pod)
carries a CycleCapture on its CycleState; the SchedulingCycle (schedule_one.py)
fills it where findNodesThatFitPod, prioritizeNodes and selectHost compute what it
keeps, and the Explaining object here turns it into an Explanation
(framework/explain.py) while the node table is still as the attempt saw it: before
the pod is assumed on its node. A failure after that (Reserve, Permit, the binding
cycle) amends the explanation through explain_binding_failure (the FailureHandler
calls it). Nothing here runs for a cycle that carries no capture. Upstream has no
such thing: kubesched's.
"""

from __future__ import annotations

import numpy as np

from kubesched.framework import interfaces as ifc
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.explain import (
    CycleCapture,
    Explanation,
    PluginScore,
    PostFilterOutcome,
    ProfilePlugins,
    RejectedNodes,
    ReportsShortfalls,
    ScoredNodes,
    Shortfall,
    TieBreak,
)
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import CODE_NAMES, Code, Status
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.scheduler.listeners import SchedulingListeners

TIE_BREAK = (
    "selectHost picks one of the {count} nodes with the best total at random "
    "(reservoir sampling upstream; here the scheduler's seeded generator)"
)
NOT_EVALUATED = (
    "not evaluated: the filter pass stopped once it had found {wanted} feasible nodes "
    "(numFeasibleNodesToFind, from percentageOfNodesToScore)"
)
NOMINATED_FIT = "not evaluated: the pod's nominated node fits (evaluateNominatedNode)"


class Explaining:
    """The scheduling cycle's explanation hooks: build an attempt's explanation from
    its capture over TABLE, and hand it to the LISTENERS' explain observer."""

    def __init__(self, table: NodeTable, listeners: SchedulingListeners) -> None:
        self.table = table
        self.listeners = listeners

    def explanation(
        self,
        fw: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        capture: CycleCapture,
        result: str,
        message: str,
    ) -> Explanation:
        return build_explanation(
            self.table, fw, state, qpi.pod_info, capture, qpi.attempts, result, message
        )

    def explain(
        self,
        fw: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        capture: CycleCapture,
        result: str,
        message: str,
    ) -> None:
        """The attempt's explanation, built now, to its observer."""
        if self.listeners.explaining():
            self.listeners.explained(self.explanation(fw, state, qpi, capture, result, message))

    def explained(self, capture: CycleCapture | None) -> None:
        """The attempt's explanation to its observer, once the scheduling cycle is
        over (a failure at Reserve or Permit has said so in it: the FailureHandler)."""
        if capture is not None and capture.explanation is not None:
            self.listeners.explained(capture.explanation)


def explain_binding_failure(state: CycleState, point: str, status: Status) -> None:
    """The binding cycle failed (a Permit wait rejected or timed out, PreBind, Bind):
    the attempt's record, which its observer already holds, says so."""
    capture = state.explain
    if isinstance(capture, CycleCapture) and capture.explanation is not None:
        capture.explanation.result = point
        capture.explanation.message = status.message()


def profile_plugins(fw: Framework) -> ProfilePlugins:
    """The profile's plugins that take part in an attempt's choice."""
    return ProfilePlugins(
        profile=fw.profile_name,
        filter=[p.name for p in fw.filter],
        score={p.name: fw.weights.get(p.name, 1) for p in fw.score},
        post_filter=[p.name for p in fw.post_filter],
    )


def build_explanation(
    table: NodeTable,
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    capture: CycleCapture,
    attempt: int,
    result: str,
    message: str,
) -> Explanation:
    names = table.names
    feasible = capture.feasible if capture.feasible is not None else np.empty(0, np.intp)
    explanation = Explanation(
        pod=pod.key,
        attempt=attempt,
        plugins=profile_plugins(fw),
        num_nodes=capture.num_all_nodes or len(table),
        evaluated=capture.evaluated,
        feasible=len(feasible),
        result=result,
        node=names[capture.chosen_row] if capture.chosen_row is not None else "",
        message=message,
        nominated_node=capture.nominated_node,
        nominated_fits=capture.nominated_fits,
        score_skipped=list(capture.score_skipped),
    )
    diagnosis = capture.diagnosis
    if diagnosis is not None:
        explanation.pre_filter = diagnosis.pre_filter_message
        explanation.rejected = rejected_groups(table, fw, state, pod, capture)
    seen = len(feasible) + sum(len(g.nodes) for g in explanation.rejected)
    if capture.diagnosis is not None and seen < explanation.num_nodes:
        explanation.not_evaluated = explanation.num_nodes - seen
        explanation.not_evaluated_reason = (
            NOMINATED_FIT if capture.nominated_fits else NOT_EVALUATED.format(wanted=len(feasible))
        )
    explanation.scored = scored_groups(names, capture, feasible)
    if len(capture.tied_rows) > 1 and capture.chosen_row is not None:
        explanation.tie = TieBreak(
            nodes=[names[r] for r in capture.tied_rows],
            chosen=names[capture.chosen_row],
            how=TIE_BREAK.format(count=len(capture.tied_rows)),
        )
    if result == "Unschedulable" and fw.post_filter:
        explanation.post_filter = PostFilterOutcome(
            message=capture.post_filter_message,
            nominated_node=capture.post_filter_nominated or "",
        )
    return explanation


def rejected_groups(
    table: NodeTable, fw: Framework, state: CycleState, pod: PodInfo, capture: CycleCapture
) -> list[RejectedNodes]:
    """The rejected nodes, grouped by verdict: the first plugin that rejected each
    (with its code and reasons), what the other filters say of it, and the nodes a
    PreFilter left out or rejected all at once (SetAbsentNodesStatus)."""
    diagnosis = capture.diagnosis
    assert diagnosis is not None
    names = table.names
    reasons: dict[int, list[str]] = {}
    for reason, rows in diagnosis.reasons:
        for row in rows.tolist():
            reasons.setdefault(row, []).append(reason)
    others = other_rejections(table, fw, state, pod, diagnosis.rows, diagnosis.plugins)
    groups: dict[tuple[object, ...], RejectedNodes] = {}
    group_rows: dict[tuple[object, ...], list[int]] = {}
    for row, code, plugin in zip(
        diagnosis.rows.tolist(), diagnosis.codes.tolist(), diagnosis.plugins, strict=True
    ):
        also = others.get(row, {})
        key = (plugin, code, tuple(reasons.get(row, ())), tuple(sorted(also.items())))
        group = groups.get(key)
        if group is None:
            group = groups[key] = RejectedNodes(
                nodes=[],
                plugin=plugin,
                code=CODE_NAMES[code],
                reasons=list(reasons.get(row, ())),
                also_rejected_by={p: list(r) for p, r in sorted(also.items())},
            )
            group_rows[key] = []
        group.nodes.append(names[row])
        group_rows[key].append(row)
    for grouped, group in groups.items():
        group.insufficient = shortfalls(fw, state, pod, table, group, group_rows[grouped])
    found = sorted(groups.values(), key=lambda g: (-len(g.nodes), g.plugin, g.reasons))
    absent = diagnosis.absent_status
    if absent is not None and diagnosis.absent_count:
        evaluated = np.zeros(table.capacity, dtype=np.bool_)
        evaluated[diagnosis.rows] = True
        if capture.candidates is not None and not diagnosis.pre_filter_message:
            evaluated[capture.candidates] = True
        left_out = [names[r] for r in table.order().tolist() if not evaluated[r]]
        found.append(
            RejectedNodes(
                nodes=left_out[: diagnosis.absent_count],
                plugin=absent.plugin or "PreFilter",
                code=CODE_NAMES[absent.code],
                reasons=list(absent.reasons),
            )
        )
    return found


def shortfalls(
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    table: NodeTable,
    group: RejectedNodes,
    rows: list[int],
) -> list[Shortfall]:
    """What the group's nodes lack, from the filters that rejected them and can say
    (NodeResourcesFit: the pod's request against each node's free amount)."""
    found: list[Shortfall] = []
    for plugin in fw.filter:
        if plugin.name != group.plugin and plugin.name not in group.also_rejected_by:
            continue
        if isinstance(plugin, ReportsShortfalls) and plugin.name not in state.skip_filter_plugins:
            found.extend(plugin.shortfalls(state, pod, table, np.array(rows, dtype=np.intp)))
    return found


def other_rejections(
    table: NodeTable,
    fw: Framework,
    state: CycleState,
    pod: PodInfo,
    rows: Rows,
    first: list[str],
) -> dict[int, dict[str, tuple[str, ...]]]:
    """Every other filter's verdict on the rejected nodes, by row: upstream's filter
    loop stops at the first plugin that rejects a node (RunFilterPlugins), so the
    others are run here, only for an explanation, over the same nodes at once."""
    if not len(rows):
        return {}
    first_of = dict(zip(rows.tolist(), first, strict=True))
    found: dict[int, dict[str, tuple[str, ...]]] = {}
    for plugin in fw.filter:
        if plugin.name in state.skip_filter_plugins:
            continue
        try:
            verdicts: ifc.NodeVerdicts = plugin.filter(state, pod, table, rows)
        except Exception:  # a plugin that cannot judge these nodes adds nothing
            continue
        failed = verdicts.codes != int(Code.SUCCESS)
        if not failed.any():
            continue
        per_row: dict[int, list[str]] = {}
        for reason, mask in verdicts.reasons:
            for row in rows[mask].tolist():
                per_row.setdefault(row, []).append(reason)
        for row in rows[failed].tolist():
            if first_of[row] != plugin.name:
                found.setdefault(row, {})[plugin.name] = tuple(per_row.get(row, ()))
    return found


def scored_groups(names: list[str], capture: CycleCapture, feasible: Rows) -> list[ScoredNodes]:
    """The feasible nodes grouped by their scores (equal for every plugin), best first,
    each plugin's raw, normalized and weighted score (RunScorePlugins)."""
    if not len(feasible):
        return []
    if capture.totals is None:  # one feasible node: prioritizeNodes is skipped
        return [ScoredNodes(nodes=[names[int(r)] for r in feasible], total=0)]
    columns = [c.raw for c in capture.scores] + [c.normalized for c in capture.scores]
    matrix = np.stack([*columns, capture.totals], axis=1) if columns else capture.totals[:, None]
    _, first_index, inverse = np.unique(matrix, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    members: dict[int, list[str]] = {}
    for position, group in enumerate(inverse.tolist()):
        members.setdefault(group, []).append(names[int(feasible[position])])
    groups: list[tuple[int, int, ScoredNodes]] = []
    for group, nodes in members.items():
        at = int(first_index[group])
        scores = [
            PluginScore(
                plugin=c.plugin,
                raw=int(c.raw[at]),
                normalized=int(c.normalized[at]),
                weight=c.weight,
                weighted=int(c.normalized[at]) * c.weight,
            )
            for c in capture.scores
        ]
        total = int(capture.totals[at])
        groups.append((-total, at, ScoredNodes(nodes=nodes, total=total, scores=scores)))
    groups.sort(key=lambda g: (g[0], g[1]))
    return [g[2] for g in groups]
