"""What the pending pods need of new nodes: which pool each pod class may use.

One new, empty node per pool (a probe) is added to the cluster as the first
simulation left it, and the batch engine's `build_problem` asks the profile's
own PreFilter and Filter plugins which rows each class of identical pods may
use (nothing re-implemented): a class may use a pool when its probe row passes.
A class no probe passes is unplaceable, and its reason is what the filters say
of it on the probes alone, worded as FailedScheduling words it
(`0/2 nodes are available: ...`), with each pool's own reasons beside it.

What couples the classes on the new nodes comes from the same problem: the
amounts each class requests (every resource column, and the pod count), host
port conflicts, and required anti-affinity. Classes the engine holds (required
pod affinity, DoNotSchedule topology spread, volumes, claims, gangs) are left
out of the packing, with the engine's reason: the verification places them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.batch.problem import HELD_GATED, HELD_MATCHED, AntiAffinity, build_problem
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis, fit_error_message
from kubesched.framework.runtime.errors import PluginError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo

HOSTNAME = "kubernetes.io/hostname"


@dataclass(slots=True)
class Demand:
    """A class of identical pending pods, as the packing sees it."""

    pods: list[str]  # pod keys, in queue order
    profile: str
    requests: dict[int, int]  # node table column -> amount per pod (pods column included)
    pools: list[int]  # the pools whose fresh node passes the filters
    host_ports: bool
    held: str = ""  # why it is left out of the packing ("" if packed)
    # Per pool, the filters' reasons on a fresh node (those that fail only).
    reasons: dict[int, list[str]] = field(default_factory=dict)
    message: str = ""  # FailedScheduling's text over the probes, when no pool fits


@dataclass(slots=True)
class Rule:
    """Required anti-affinity between demand classes: while a pod of `owner` is in a
    domain of `topology_key`, no other pod of `matched` may be there."""

    owner: int
    topology_key: str
    matched: list[int]


@dataclass(slots=True)
class Demands:
    classes: list[Demand]
    columns: dict[int, str]  # the columns the classes ask for -> resource name
    room: list[dict[int, int]]  # per pool: column -> what a fresh node has
    port_conflicts: list[tuple[int, int]]
    rules: list[Rule]
    # Per pool, its labels (for anti-affinity domains other than the hostname).
    labels: list[Mapping[str, str]]
    gated: list[str] = field(default_factory=list)  # pods PreEnqueue holds back

    @property
    def pods(self) -> int:
        return sum(len(c.pods) for c in self.classes)


def find_demands(
    frameworks: Mapping[str, Framework],
    table: NodeTable,
    probes: Sequence[Node],
    pending: Sequence[Pod],
    namespace_labels: Mapping[str, Mapping[str, str]],
) -> Demands:
    """The classes of `pending` (each profile's pods apart), with the pools they may
    use; `table` holds the cluster and one probe node per pool (`probes`, in the
    pools' order), and none of the pending pods."""
    probe_rows = [table.index[n.metadata.name] for n in probes]
    pool_of_row = {row: p for p, row in enumerate(probe_rows)}
    classes: list[Demand] = []
    port_conflicts: list[tuple[int, int]] = []
    rules: list[Rule] = []
    gated: list[str] = []
    by_profile: dict[str, list[PodInfo]] = {}
    for pod in pending:
        by_profile.setdefault(pod.spec.scheduler_name, []).append(PodInfo(pod))
    for profile, pods in by_profile.items():
        fw = frameworks[profile]
        problem = build_problem(fw, table, pods, namespace_labels=namespace_labels)
        # The problem's class numbers, as the demands' (None: gated, left out).
        index: list[int | None] = []
        for cls in problem.classes:
            if cls.held.startswith(HELD_GATED):
                gated.extend(p.key for p in cls.pods)
                index.append(None)
                continue
            index.append(len(classes))
            ok = [pool_of_row[r] for r in cls.rows.tolist() if r in pool_of_row]
            demand = Demand(
                [p.key for p in cls.pods],
                profile,
                dict(cls.requests),
                sorted(ok),
                bool(cls.representative.host_ports),
                "" if cls.held == HELD_MATCHED else cls.held,
            )
            if len(ok) < len(probes):
                demand.reasons, demand.message = _reasons(fw, table, cls.representative, probe_rows)
            classes.append(demand)
        for i, j in problem.port_conflicts:
            a, b = index[i], index[j]
            if a is not None and b is not None:
                port_conflicts.append((a, b))
        rules.extend(_rules(problem.anti_affinity, index))
    columns = sorted({col for c in classes for col in c.requests})
    names = {col: name for name, col in table.resource_index.items()}
    room = [{col: int(table.free[row, col]) for col in columns} for row in probe_rows]
    return Demands(
        classes,
        {col: names.get(col, "pods") for col in columns},
        room,
        port_conflicts,
        rules,
        [dict(n.metadata.labels) for n in probes],
        gated,
    )


def _rules(rules: Sequence[AntiAffinity], index: Sequence[int | None]) -> list[Rule]:
    out: list[Rule] = []
    for rule in rules:
        owner = index[rule.owner]
        matched = [m for j in rule.matched if (m := index[j]) is not None]
        if owner is not None and matched:
            out.append(Rule(owner, rule.topology_key, matched))
    return out


def _reasons(
    fw: Framework, table: NodeTable, pod: PodInfo, probe_rows: Sequence[int]
) -> tuple[dict[int, list[str]], str]:
    """Per pool, the filters' reasons on its fresh node, and FailedScheduling's text
    over the fresh nodes alone (fit_error_message, as the scheduling cycle words it)."""
    state = CycleState()
    rows = np.array(probe_rows, np.intp)
    try:
        pre, status = fw.run_pre_filter(state, pod, table)
        if not status.is_success():
            reasons = status.reasons or [status.message()]
            diagnosis = Diagnosis.empty()
            diagnosis.pre_filter_message = status.message()
            return (
                {pool: list(reasons) for pool in range(len(probe_rows))},
                fit_error_message(len(probe_rows), diagnosis),
            )
        if pre.node_names is not None:
            rows = np.array([r for r in probe_rows if table.names[r] in pre.node_names], np.intp)
        _, diagnosis = fw.run_filters(state, pod, table, rows)
    except PluginError as exc:
        return {pool: [str(exc)] for pool in range(len(probe_rows))}, str(exc)
    out: dict[int, list[str]] = {}
    left_out = ["node(s) didn't satisfy plugin(s) PreFilter's node set"]
    for pool, row in enumerate(probe_rows):
        if row not in rows:
            out[pool] = left_out
            continue
        reasons = diagnosis.reasons_of(row)
        if reasons:
            out[pool] = reasons
    return out, fit_error_message(len(probe_rows), diagnosis)
