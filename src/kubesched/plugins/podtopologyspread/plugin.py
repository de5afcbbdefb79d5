"""PodTopologySpread: spread matching pods evenly over topology domains.

DoNotSchedule constraints filter (PreFilter counts the matching pods per domain
over all nodes, Filter checks each node's skew), ScheduleAnyway constraints
score (PreScore counts, Score weighs the counts, NormalizeScore inverts them).
Pods without constraints get the default constraints (the system defaults
unless the args list others), with a selector deduced from their controller.

Counting uses the NodeTable's pod index (cache/pod_index.py): the groups of
pods whose labels match a constraint's selector give (row, count) pairs, which
one np.bincount per constraint sums into per-domain counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from kubesched.api.labels import SelectorError
from kubesched.api.node_affinity import RequiredNodeAffinity, required_node_affinity
from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.framework.signature import SignFragment, SignPlugin, not_signable
from kubesched.framework.state.node_table import BoolArray, IntArray, LabelColumn, NodeTable, Rows
from kubesched.framework.state.pod_index import sparse_counts
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.args import raw_args
from kubesched.plugins.helpers.hints import as_node, as_pod, same_pod
from kubesched.plugins.podtopologyspread.args import (
    PodTopologySpreadArgs,
    pod_topology_spread_args,
)
from kubesched.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    HONOR,
    LABEL_HOSTNAME,
    MAX_INT32,
    SCHEDULE_ANYWAY,
    Constraint,
    default_constraints,
    default_selector,
    filter_constraints,
    go_round,
    has_all_keys,
    included_rows,
    node_included,
    rows_with_all_keys,
    topology_normalizing_weight,
)

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

PRE_FILTER_STATE_KEY = "PreFilterPodTopologySpread"
PRE_SCORE_STATE_KEY = "PreScorePodTopologySpread"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


# --- state -------------------------------------------------------------------------------


class CriticalPaths:
    """criticalPaths: the two domains with the fewest matching pods, as upstream keeps
    them (paths[0] always the minimum; paths[1] not always the second after updates)."""

    __slots__ = ("nums", "values")

    def __init__(self) -> None:
        self.values = ["", ""]
        self.nums = [MAX_INT32, MAX_INT32]

    def update(self, value: str, num: int) -> None:
        values, nums = self.values, self.nums
        i = 0 if value == values[0] else 1 if value == values[1] else -1
        if i >= 0:
            nums[i] = num
            if nums[0] > nums[1]:
                values.reverse()
                nums.reverse()
        elif num < nums[0]:
            values[1], nums[1] = values[0], nums[0]
            values[0], nums[0] = value, num
        elif num < nums[1]:
            values[1], nums[1] = value, num

    def copy(self) -> CriticalPaths:
        other = CriticalPaths()
        other.values = list(self.values)
        other.nums = list(self.nums)
        return other

    @classmethod
    def of(cls, column: LabelColumn | None, counts: IntArray, domains: BoolArray) -> CriticalPaths:
        """The paths PreFilter's loop over all domains ends with: the two smallest counts
        (ties broken by label value code, where upstream's map order is random)."""
        paths = cls()
        codes = np.flatnonzero(domains)
        if column is None or len(codes) == 0:
            return paths
        order = codes[np.argsort(counts[codes], kind="stable")[:2]]
        for code in order:
            paths.update(column.values[int(code)], int(counts[code]))
        return paths


@dataclass(slots=True)
class _PreFilterState:
    """preFilterState: per constraint, the matching pods per domain (by the label value
    code of the constraint's topology key) and which values are domains at all."""

    constraints: tuple[Constraint, ...]
    counts: list[IntArray]
    domains: list[BoolArray]
    paths: list[CriticalPaths]
    required: RequiredNodeAffinity
    self_match: list[bool]

    def min_match_num(self, i: int) -> int:
        if int(np.count_nonzero(self.domains[i])) < self.constraints[i].min_domains:
            return 0
        return self.paths[i].nums[0]

    def copy(self) -> _PreFilterState:
        return _PreFilterState(
            self.constraints,
            [c.copy() for c in self.counts],
            [d.copy() for d in self.domains],
            [p.copy() for p in self.paths],
            self.required,
            self.self_match,
        )


@dataclass(slots=True)
class _PreScoreState:
    """preScoreState: per constraint, the matching pods per domain id (per row for the
    hostname key), the normalizing weight, and the rows not to score."""

    constraints: tuple[Constraint, ...]
    ignored_by_row: BoolArray
    counts: list[IntArray]
    # the id nodes lacking the key count under (the value "", as upstream reads it)
    absent_ids: list[int]
    weights: list[float]
    last_ignored: BoolArray = field(default_factory=lambda: np.zeros(0, dtype=np.bool_))


@dataclass(frozen=True, slots=True)
class _Eligible:
    """For one constraint: the topology key's label column and its width, which values
    are domains (of nodes whose pods count), and those nodes by row (None: none)."""

    column: LabelColumn | None
    size: int
    domain: BoolArray
    by_row: BoolArray | None


# Distinct (constraints, node affinity, tolerations) kept between node changes.
_ELIGIBLE_CACHE_SIZE = 256
_ENCODER = msgspec.json.Encoder()


def _lookup(values: IntArray, ids: IntArray) -> IntArray:
    """values[ids], 0 where an id is negative or beyond the array."""
    ok = (ids >= 0) & (ids < len(values))
    out = np.zeros(len(ids), dtype=np.int64)
    out[ok] = values[ids[ok]]
    return out


def _grown(array: IntArray | BoolArray, size: int) -> Any:
    if len(array) >= size:
        return array
    out = np.zeros(size, dtype=array.dtype)
    out[: len(array)] = array
    return out


# --- the plugin --------------------------------------------------------------------------


class PodTopologySpread(
    SignPlugin,
    PreFilterPlugin,
    PreFilterExtensions,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    EnqueueExtensions,
):
    """Args (PodTopologySpreadArgs): `defaultingType` "System" (default) or "List", and
    `defaultConstraints` (with "List"), for pods that set no constraints.

    Weight 2 in the default profile (set by the profile, not here).
    """

    name = "PodTopologySpread"
    args_decoder = staticmethod(pod_topology_spread_args)

    def __init__(
        self,
        args: Mapping[str, Any] | PodTopologySpreadArgs | None = None,
        handle: Handle | None = None,
    ):
        super().__init__(raw_args(args), handle)
        self.spread_args = pod_topology_spread_args(args)
        self.default_constraints, self.system_defaulted = default_constraints(self.spread_args)
        # The default constraints parsed once, per action, when they do not depend on
        # the pod's labels (no matchLabelKeys); else parsed for each pod.
        self._parsed_defaults: dict[str, list[Constraint]] = {}
        if not any(c.match_label_keys for c in self.default_constraints):
            try:
                for action in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                    self._parsed_defaults[action] = filter_constraints(
                        self.default_constraints, {}, action
                    )
            except SelectorError:
                self._parsed_defaults = {}  # the error is raised for each pod, as before
        self._eligible_cache: dict[bytes, list[_Eligible]] = {}
        self._eligible_table: NodeTable | None = None
        self._eligible_gen = -1

    # --- constraints -------------------------------------------------------------------

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: a pod with spread constraints, its own or the cluster's
        default ones (System defaulting has them), is not signable."""
        if pod.pod.spec.topology_spread_constraints:
            return not_signable("pods with topology constraints are not signable")
        if self.default_constraints:
            return not_signable("pods with default topology constraints are not signable")
        return (), Status.success()

    def _default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """buildDefaultConstraints."""
        constraints = self._parsed_defaults.get(action)
        if constraints is None:
            constraints = filter_constraints(self.default_constraints, pod.metadata.labels, action)
        if not constraints:
            return []
        workloads = None if self._handle is None else self._handle.workload_selectors
        selector = default_selector(pod, workloads)
        if selector.empty():
            return []
        return [
            Constraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains,
                c.node_affinity_policy,
                c.node_taints_policy,
            )
            for c in constraints
        ]

    def get_constraints(self, pod: Pod) -> list[Constraint]:
        """getConstraints: the pod's DoNotSchedule constraints, or the default ones."""
        if pod.spec.topology_spread_constraints:
            try:
                return filter_constraints(
                    pod.spec.topology_spread_constraints, pod.metadata.labels, DO_NOT_SCHEDULE
                )
            except SelectorError as err:
                raise SelectorError(
                    f"obtaining pod's hard topology spread constraints: {err}"
                ) from err
        try:
            return self._default_constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as err:
            raise SelectorError(f"setting default hard topology spread constraints: {err}") from err

    def soft_constraints(self, pod: Pod) -> list[Constraint]:
        """The pod's ScheduleAnyway constraints, or the default ones."""
        if pod.spec.topology_spread_constraints:
            try:
                return filter_constraints(
                    pod.spec.topology_spread_constraints, pod.metadata.labels, SCHEDULE_ANYWAY
                )
            except SelectorError as err:
                raise SelectorError(
                    f"obtaining pod's soft topology spread constraints: {err}"
                ) from err
        try:
            return self._default_constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as err:
            raise SelectorError(f"setting default soft topology spread constraints: {err}") from err

    # --- PreFilter ---------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        try:
            constraints = self.get_constraints(pod.pod)
        except SelectorError as err:
            return None, Status.as_error(f"get constraints from pod: {err}", plugin=self.name)
        if not constraints:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, self._pre_filter_state(pod, nodes, constraints))
        return None, Status.success()

    def _eligible_nodes(
        self, pod: PodInfo, nodes: NodeTable, constraints: list[Constraint]
    ) -> tuple[RequiredNodeAffinity, list[_Eligible]]:
        """Per constraint, the nodes whose pods count and their domains: they depend on
        the nodes alone (and on the pod's node affinity and tolerations where the
        inclusion policies honour them), so they are kept until a node changes
        (NodeTable.node_generation); the pods placed since are counted every cycle."""
        required = required_node_affinity(pod.pod)
        if nodes is not self._eligible_table or nodes.node_generation != self._eligible_gen:
            self._eligible_cache.clear()
            self._eligible_table, self._eligible_gen = nodes, nodes.node_generation
        spec = pod.pod.spec
        honour_affinity = any(c.node_affinity_policy == HONOR for c in constraints)
        honour_taints = any(c.node_taints_policy == HONOR for c in constraints)
        affinity = spec.affinity.node_affinity if spec.affinity is not None else None
        key = _ENCODER.encode(
            (
                [
                    (c.topology_key, c.node_affinity_policy, c.node_taints_policy)
                    for c in constraints
                ],
                (spec.node_selector, affinity) if honour_affinity else None,
                spec.tolerations if honour_taints else None,
            )
        )
        found = self._eligible_cache.get(key)
        if found is not None:
            return required, found
        rows = nodes.order()
        masks = included_rows(nodes, rows, constraints, pod.pod, required)
        found = []
        for constraint, mask in zip(constraints, masks, strict=True):
            column = nodes.labels.get(constraint.topology_key)
            size = 0 if column is None else len(column.values)
            if column is None or not mask.any():
                found.append(_Eligible(column, size, np.zeros(size, dtype=np.bool_), None))
                continue
            eligible = rows[mask]
            domain = np.bincount(column.codes[eligible], minlength=size) > 0
            eligible_by_row = np.zeros(nodes.capacity, dtype=np.bool_)
            eligible_by_row[eligible] = True
            found.append(_Eligible(column, size, domain, eligible_by_row))
        if len(self._eligible_cache) >= _ELIGIBLE_CACHE_SIZE:
            self._eligible_cache.clear()
        self._eligible_cache[key] = found
        return required, found

    def _pre_filter_state(
        self, pod: PodInfo, nodes: NodeTable, constraints: list[Constraint]
    ) -> _PreFilterState:
        """calPreFilterState: count the matching pods of every eligible node by domain."""
        required, eligible_nodes = self._eligible_nodes(pod, nodes, constraints)
        index = nodes.pod_index
        namespace = pod.namespace
        counts: list[IntArray] = []
        domains: list[BoolArray] = []
        paths: list[CriticalPaths] = []
        for constraint, eligible in zip(constraints, eligible_nodes, strict=True):
            column, size, domain = eligible.column, eligible.size, eligible.domain
            count = np.zeros(size, dtype=np.int64)
            if (
                column is not None
                and eligible.by_row is not None
                and not constraint.selector.empty()
            ):
                groups = index.matching_groups((namespace,), constraint.selector)
                pod_rows, pod_counts = sparse_counts(groups, skip_terminating=True)
                if len(pod_rows):
                    keep = eligible.by_row[pod_rows]
                    count = np.bincount(
                        column.codes[pod_rows[keep]],
                        weights=pod_counts[keep],
                        minlength=size,
                    ).astype(np.int64)
            counts.append(count)
            domains.append(domain)
            paths.append(CriticalPaths.of(column, count, domain))
        labels = pod.pod.metadata.labels
        return _PreFilterState(
            tuple(constraints),
            counts,
            domains,
            paths,
            required,
            [c.selector.matches(labels) for c in constraints],
        )

    # --- PreFilterExtensions -----------------------------------------------------------

    def update_with_pod(
        self,
        state: CycleState,
        pod: PodInfo,
        updated: PodInfo,
        nodes: NodeTable,
        row: int,
        delta: int,
    ) -> Status:
        """updateWithPod. The state is replaced, not changed in place: CycleState.clone()
        is shallow, and a clone must not see another's updates."""
        found = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(found, _PreFilterState):
            return Status.as_error(
                f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found', plugin=self.name
            )
        if updated.namespace != pod.namespace or nodes.rows[row] is None:
            return Status.success()
        node = nodes.node(row)
        if not has_all_keys(node.metadata.labels, found.constraints):
            return Status.success()
        labels = updated.pod.metadata.labels
        new: _PreFilterState | None = None
        for i, constraint in enumerate(found.constraints):
            if not constraint.selector.matches(labels):
                continue
            if not node_included(constraint, pod.pod, node, found.required):
                continue
            if new is None:
                new = found.copy()
            column = nodes.labels[constraint.topology_key]
            code = int(column.codes[row])
            new.counts[i] = _grown(new.counts[i], code + 1)
            new.domains[i] = _grown(new.domains[i], code + 1)
            new.counts[i][code] += delta
            new.domains[i][code] = True
            new.paths[i].update(column.values[code], int(new.counts[i][code]))
        if new is not None:
            state.write(PRE_FILTER_STATE_KEY, new)
        return Status.success()

    # --- Filter ------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        s = state.read(PRE_FILTER_STATE_KEY, _PreFilterState)
        verdicts = NodeVerdicts.passing(len(rows))
        if not s.constraints:
            return verdicts
        undecided = np.ones(len(rows), dtype=np.bool_)
        missing_label = np.zeros(len(rows), dtype=np.bool_)
        too_skewed = np.zeros(len(rows), dtype=np.bool_)
        for i, constraint in enumerate(s.constraints):
            column = nodes.labels.get(constraint.topology_key)
            codes = (
                np.full(len(rows), -1, dtype=np.int64)
                if column is None
                else column.codes[rows].astype(np.int64)
            )
            # The first failing constraint names the reason, as upstream returns at once.
            missing = undecided & (codes < 0)
            missing_label |= missing
            undecided &= ~missing
            match_num = _lookup(s.counts[i], codes)
            skew = match_num + int(s.self_match[i]) - s.min_match_num(i)
            failed = undecided & (skew > constraint.max_skew)
            too_skewed |= failed
            undecided &= ~failed
        verdicts.add(
            ERR_REASON_NODE_LABEL_NOT_MATCH, missing_label, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        )
        verdicts.add(ERR_REASON_CONSTRAINTS_NOT_MATCH, too_skewed, Code.UNSCHEDULABLE)
        return verdicts

    # --- PreScore ----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        all_rows = nodes.order()
        if len(all_rows) == 0:
            return Status.skip()
        # Only the pod's own constraints need every topology key on a node: nodes
        # without a zone label still get hostname spreading from the system defaults.
        require_all = bool(pod.pod.spec.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self.soft_constraints(pod.pod)
        except SelectorError as err:
            return Status.as_error(f"calculating preScoreState: {err}", plugin=self.name)
        if not constraints:
            return Status.skip()

        ignored = (
            ~rows_with_all_keys(nodes, rows, constraints)
            if require_all
            else np.zeros(len(rows), dtype=np.bool_)
        )
        ignored_by_row = np.zeros(nodes.capacity, dtype=np.bool_)
        ignored_by_row[rows[ignored]] = True
        kept = rows[~ignored]
        required = required_node_affinity(pod.pod)
        masks = included_rows(
            nodes, all_rows, constraints, pod.pod, required, require_all_keys=require_all
        )
        index = nodes.pod_index
        counts: list[IntArray] = []
        absent_ids: list[int] = []
        weights: list[float] = []
        for constraint, mask in zip(constraints, masks, strict=True):
            groups = (
                []
                if constraint.selector.empty()
                else index.matching_groups((pod.namespace,), constraint.selector)
            )
            pod_rows, pod_counts = sparse_counts(groups, skip_terminating=True)
            if constraint.topology_key == LABEL_HOSTNAME:
                # Per-node counts, read by Score (no inclusion policy applies to them).
                per_row = np.bincount(pod_rows, weights=pod_counts, minlength=nodes.capacity)
                counts.append(per_row.astype(np.int64))
                absent_ids.append(-1)
                weights.append(topology_normalizing_weight(len(kept)))
                continue
            ids, absent, width = _domain_ids(nodes.labels.get(constraint.topology_key))
            kept_ids = np.full(len(kept), absent) if ids is None else ids[kept]
            domains = np.bincount(kept_ids, minlength=width) > 0
            count = np.zeros(width, dtype=np.int64)
            if len(pod_rows):
                eligible_by_row = np.zeros(nodes.capacity, dtype=np.bool_)
                eligible_by_row[all_rows[mask]] = True
                keep = eligible_by_row[pod_rows]
                pod_ids = np.full(int(keep.sum()), absent) if ids is None else ids[pod_rows[keep]]
                count = np.bincount(pod_ids, weights=pod_counts[keep], minlength=width).astype(
                    np.int64
                )
            count[~domains] = 0  # only domains of candidate nodes are counted
            counts.append(count)
            absent_ids.append(absent)
            weights.append(topology_normalizing_weight(int(domains.sum())))
        state.write(
            PRE_SCORE_STATE_KEY,
            _PreScoreState(tuple(constraints), ignored_by_row, counts, absent_ids, weights),
        )
        return Status.success()

    # --- Score -------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        """Sum over constraints of count * weight + (maxSkew - 1), rounded; NormalizeScore
        turns the fewest matching pods into the highest score."""
        s = state.read(PRE_SCORE_STATE_KEY, _PreScoreState)
        ignored = np.zeros(len(rows), dtype=np.bool_)
        known = rows < len(s.ignored_by_row)
        ignored[known] = s.ignored_by_row[rows[known]]
        total = np.zeros(len(rows), dtype=np.float64)
        for i, constraint in enumerate(s.constraints):
            column = nodes.labels.get(constraint.topology_key)
            if column is None:
                continue
            codes = column.codes[rows].astype(np.int64)
            has = codes >= 0
            if constraint.topology_key == LABEL_HOSTNAME:
                count = _lookup(s.counts[i], rows.astype(np.int64))
            else:
                count = _lookup(s.counts[i], np.where(has, codes, s.absent_ids[i]))
            part = count.astype(np.float64) * s.weights[i] + float(constraint.max_skew - 1)
            total = total + np.where(has, part, 0.0)
        scores = go_round(total).astype(np.int64)
        scores[ignored] = 0
        s.last_ignored = ignored
        return scores

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        s = state.read(PRE_SCORE_STATE_KEY, _PreScoreState)
        ignored = s.last_ignored if len(s.last_ignored) == len(scores) else None
        valid = np.ones(len(scores), dtype=np.bool_) if ignored is None else ~ignored
        if not valid.any():
            scores[:] = 0
            return
        min_score = int(scores[valid].min())
        max_score = max(int(scores[valid].max()), 0)
        if max_score == 0:
            out = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        else:
            out = MAX_NODE_SCORE * (max_score + min_score - scores) // max_score
        out[~valid] = 0
        scores[:] = out

    # --- queueing ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.POD,
                    ActionType.ADD
                    | ActionType.UPDATE_POD_LABEL
                    | ActionType.UPDATE_POD_TOLERATION
                    | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: object, new: object) -> bool:
        original, modified = as_pod(old), as_pod(new)
        if (old is not None and original is None) or (new is not None and modified is None):
            return True
        target = pod.pod
        if (modified is not None and not _involved(modified, target)) or (
            original is not None and not _involved(original, target)
        ):
            return False
        try:
            constraints = self.get_constraints(target)
        except SelectorError:
            return True
        if modified is not None and original is not None:
            if (
                same_pod(target, modified)
                and modified.spec.tolerations != original.spec.tolerations
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return True
            if modified.metadata.labels == original.metadata.labels:
                return False
            return any(
                c.selector.matches(original.metadata.labels)
                != c.selector.matches(modified.metadata.labels)
                for c in constraints
            )
        changed = modified if modified is not None else original
        if changed is None:
            return True
        return any(c.selector.matches(changed.metadata.labels) for c in constraints)

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> bool:
        original, modified = as_node(old), as_node(new)
        if (old is not None and original is None) or (new is not None and modified is None):
            return True
        try:
            constraints = self.get_constraints(pod.pod)
        except SelectorError:
            return True
        was = original is not None and has_all_keys(original.metadata.labels, constraints)
        now = modified is not None and has_all_keys(modified.metadata.labels, constraints)
        if original is not None and modified is not None:
            if was != now:
                return True
            return now and (
                _topology_labels_changed(
                    original.metadata.labels, modified.metadata.labels, constraints
                )
                or original.spec.taints != modified.spec.taints
            )
        if modified is not None:
            return now
        return was


def _domain_ids(column: LabelColumn | None) -> tuple[IntArray | None, int, int]:
    """Per row, the id PreScore counts a node under: its value's code, or (lacking the
    key) the id of the value "" (node.Labels[key] reads "" upstream); also that id
    and how many ids there are."""
    if column is None:
        return None, 0, 1
    absent = column.vocab.get("", len(column.values))
    ids = column.codes.astype(np.int64)
    ids[ids < 0] = absent
    return ids, absent, len(column.values) + 1


def _involved(incoming: Pod, target: Pod) -> bool:
    """involvedInTopologySpreading."""
    if same_pod(incoming, target):
        return True
    if not incoming.spec.node_name and not incoming.status.nominated_node_name:
        return False
    return incoming.metadata.namespace == target.metadata.namespace


def _topology_labels_changed(
    original: Mapping[str, str], modified: Mapping[str, str], constraints: Sequence[Constraint]
) -> bool:
    return any(
        original.get(c.topology_key, "") != modified.get(c.topology_key, "") for c in constraints
    )


__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "CriticalPaths",
    "PodTopologySpread",
]
