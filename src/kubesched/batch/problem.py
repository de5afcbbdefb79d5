"""The batch placement problem, built from the profile's own plugins.

Pods with the same shape (namespace, labels, spec and priority: a Deployment's
replicas) are one class, so the model has an integer per class and node instead
of a boolean per pod and node. Which nodes a class may use is what the profile's
PreFilter and Filter plugins say on the cluster as it is (nothing is
re-implemented); what couples the pods of the batch to each other is listed apart
for the solver: the amounts each class requests (every resource column of the
node table and the pod count), host ports, and required inter-pod anti-affinity.
Classes whose constraints the model cannot express exactly (required pod
affinity, hard topology spread, volumes, resource claims) are held where greedy
put them, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import msgspec
import numpy as np

from kubesched.api.labels import selects
from kubesched.api.objects import Pod
from kubesched.api.pod_groups import pod_group_name
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.runtime.errors import PluginError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import PODS, IntArray, NodeTable, Rows
from kubesched.framework.state.pod_index import AffinityTerm, pod_affinity_terms
from kubesched.framework.types import PodInfo
from kubesched.plugins.nodeports.plugin import fits_ports

# Why a class is held at greedy's placement.
HELD_POD_AFFINITY = "required pod affinity is not modelled"
HELD_SPREAD = "a DoNotSchedule topology spread constraint is not modelled"
HELD_VOLUMES = "persistent or ephemeral volumes are not modelled"
HELD_CLAIMS = "resource claims are not modelled"
HELD_MATCHED = "selected by the affinity or spread of a pod held at greedy's placement"
HELD_PARSE = "its affinity terms do not parse"
HELD_ERROR = "a plugin failed on it"
HELD_GATED = "PreEnqueue keeps it out of the queue"
# Coscheduling's whole-or-nothing rule lives in its PreFilter/Permit, which a per-pod
# feasibility matrix cannot express: moving one member could split the gang.
HELD_GANG = "a member of a PodGroup (gang) is not modelled"


class _Skip(Exception):
    """The class is not filtered (it is held)."""


@dataclass(slots=True)
class PodClass:
    """Interchangeable pods of the batch, and where they may go."""

    pods: list[PodInfo]
    priority: int
    rows: Rows  # feasible rows on the cluster as it is
    scores: IntArray  # the profile's total score per feasible row (empty unless asked)
    requests: dict[int, int]  # node table column -> amount per pod (pods column included)
    held: str = ""  # why it is held at greedy's placement ("" if modelled)
    anti_affinity: tuple[AffinityTerm, ...] = ()

    @property
    def representative(self) -> PodInfo:
        return self.pods[0]


@dataclass(slots=True)
class AntiAffinity:
    """One class's required anti-affinity term: while a pod of `owner` is in a
    domain of `topology_key`, no other pod of `matched` may be there."""

    owner: int
    topology_key: str
    matched: list[int]


@dataclass(slots=True)
class Problem:
    """Everything the solver, the neighbourhood search and the bounds read, copied
    off the node table when it is built: they may then run off the scheduling
    thread while the table moves on (`run --batch-window`)."""

    classes: list[PodClass]
    free: IntArray  # rows x columns: what each node has left (allocatable - requested)
    live_rows: Rows
    occupied: np.ndarray  # per row: whether pods already run there
    port_conflicts: list[tuple[int, int]] = field(default_factory=list)  # (i, j), i <= j
    anti_affinity: list[AntiAffinity] = field(default_factory=list)
    # The anti-affinity rules' topology keys: key -> row -> the live node's value
    # (rows without the label absent).
    domain_labels: dict[str, dict[int, str]] = field(default_factory=dict)
    # Each row's node name ("" for a free row): rows are the table's when built,
    # and a row freed since may hold another node by the time the answer is read.
    names: list[str] = field(default_factory=list)
    _rows_by_name: dict[str, int] = field(default_factory=dict)

    def row_of(self, name: str) -> int | None:
        if not self._rows_by_name:
            self._rows_by_name = {n: r for r, n in enumerate(self.names) if n}
        return self._rows_by_name.get(name)

    @property
    def capacity(self) -> int:
        """The node table's rows when the problem was built."""
        return len(self.occupied)

    def label_value(self, row: int, key: str) -> str | None:
        return self.domain_labels.get(key, {}).get(row)


def _shape(pod: PodInfo) -> bytes:
    p = pod.pod
    spec = msgspec.structs.replace(p.spec, node_name="")
    return msgspec.json.encode(
        (p.metadata.namespace, p.metadata.labels, spec, p.status.nominated_node_name)
    )


def classes_of(pods: Sequence[PodInfo]) -> list[list[PodInfo]]:
    """The pods grouped by shape, in their first member's order."""
    groups: dict[bytes, list[PodInfo]] = {}
    for pod in pods:
        groups.setdefault(_shape(pod), []).append(pod)
    return list(groups.values())


def _held_reason(pod: PodInfo) -> str:
    if pod_group_name(pod.pod):
        return HELD_GANG
    spec = pod.pod.spec
    if any(c.when_unsatisfiable == "DoNotSchedule" for c in spec.topology_spread_constraints):
        return HELD_SPREAD
    affinity = spec.affinity
    pod_affinity = None if affinity is None else affinity.pod_affinity
    if (
        pod_affinity is not None
        and pod_affinity.required_during_scheduling_ignored_during_execution
    ):
        return HELD_POD_AFFINITY
    if spec.resource_claims:
        return HELD_CLAIMS
    for volume in spec.volumes:
        if volume.persistent_volume_claim is not None or volume.ephemeral is not None:
            return HELD_VOLUMES
    return ""


def build_problem(
    fw: Framework,
    table: NodeTable,
    pods: Sequence[PodInfo],
    *,
    scores: bool = False,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> Problem:
    """The classes of `pods` with their feasible rows (the profile's PreFilter and
    Filter on `table`, which holds none of them) and what couples them."""
    ns_labels = namespace_labels or {}
    rows = table.order()
    classes: list[PodClass] = []
    for members in classes_of(pods):
        pod = members[0]
        state = CycleState()
        feasible = np.empty(0, np.intp)
        totals = np.zeros(0, np.int64)
        failed = ""
        gate = fw.run_pre_enqueue(pod)
        if not gate.is_success():
            # Not to be scheduled yet (a scheduling gate): greedy left it, so does this.
            failed = f"{HELD_GATED}: {gate.message()}"
        try:
            if failed:
                raise _Skip
            pre, status = fw.run_pre_filter(state, pod, table)
            if status.is_success():
                candidates = rows
                if pre.node_names is not None:
                    wanted = pre.node_names
                    candidates = np.array([r for r in rows if table.names[r] in wanted], np.intp)
                feasible, _ = fw.run_filters(state, pod, table, candidates)
            if scores and len(feasible):
                fw.run_pre_score(state, pod, table, feasible)
                totals, _ = fw.run_score(state, pod, table, feasible, per_plugin=False)
        except _Skip:
            pass
        except PluginError as exc:
            # As in a scheduling cycle, a failing plugin is the pod's error, not the
            # engine's: the class is held where greedy put it.
            failed = f"{HELD_ERROR}: {exc}"
            feasible, totals = np.empty(0, np.intp), np.zeros(0, np.int64)
        requests = {PODS: 1}
        for resource, amount in pod.requests.items():
            if amount > 0:
                requests[table.resource_column(resource)] = amount
        terms = pod_affinity_terms(pod.pod)
        held = failed or (HELD_PARSE if terms.errors else _held_reason(pod))
        classes.append(
            PodClass(
                members,
                pod.priority,
                np.asarray(feasible, np.intp),
                np.asarray(totals, np.int64),
                requests,
                held,
                terms.required_anti_affinity,
            )
        )
    _hold_matched(classes, ns_labels)
    problem = Problem(
        classes,
        table.free.copy(),
        rows,
        np.array([_has_pods(table, r) for r in range(table.capacity)]),
        names=list(table.names),
    )
    for i, a in enumerate(classes):
        if not a.representative.host_ports:
            continue
        for j in range(i, len(classes)):
            b = classes[j]
            if b.representative.host_ports and not fits_ports(
                a.representative.host_ports, b.representative.host_ports
            ):
                problem.port_conflicts.append((i, j))
    for i, a in enumerate(classes):
        for term in a.anti_affinity:
            matched = [
                j
                for j, b in enumerate(classes)
                if term.matches_pod(b.representative.pod, ns_labels.get(b.pods[0].namespace))
            ]
            if matched:
                problem.anti_affinity.append(AntiAffinity(i, term.topology_key, matched))
    for key in {rule.topology_key for rule in problem.anti_affinity}:
        values = problem.domain_labels[key] = {}
        for row in rows.tolist():
            value = table.label_value(row, key)
            if value is not None:
                values[row] = value
    return problem


def _has_pods(table: NodeTable, row: int) -> bool:
    node_row = table.rows[row]
    return node_row is not None and bool(node_row.pods)


def _hold_matched(classes: list[PodClass], ns_labels: Mapping[str, Mapping[str, str]]) -> None:
    """Hold the classes that a held class's affinity or spread selects: moving them
    could break what greedy's placement of the held class relied on."""
    for held in [c for c in classes if c.held and c.held != HELD_MATCHED]:
        pod = held.representative.pod
        terms = pod_affinity_terms(pod)
        for other in classes:
            if other.held:
                continue
            labels = ns_labels.get(other.pods[0].namespace)
            if any(
                t.matches_pod(other.representative.pod, labels) for t in terms.required_affinity
            ) or (
                other.pods[0].namespace == pod.metadata.namespace
                and _spread_selects(pod, other.representative)
            ):
                other.held = HELD_MATCHED


def _spread_selects(pod: Pod, other: PodInfo) -> bool:
    return any(
        constraint.label_selector is not None
        and selects(constraint.label_selector, other.pod.metadata.labels)
        for constraint in pod.spec.topology_spread_constraints
    )
