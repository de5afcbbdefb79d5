"""The batch placement model, solved with OR-Tools CP-SAT.

CP-SAT was picked by measuring it beside HiGHS and SciPy's milp on the same
model (bench/solvers.py, docs/develop/benchmarks-log.md): it takes greedy's placement as a
hint, and expresses the anti-affinity implications directly (enforcement
literals) where a MILP needs big-M rows.

The model is written straight into CP-SAT's protocol buffer (variables by index,
linear rows as index and coefficient lists): building it through CpModel's
expression objects took seconds at 1,000 pods × 500 nodes.

The objective is lexicographic by priority, solved as one phase per priority
(highest first), each keeping what the phases before it placed; then, if asked,
a last phase that uses the fewest empty nodes or the highest total score while
keeping every priority's count.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Literal

import numpy as np

from kubesched.batch.problem import Problem

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

Objective = Literal["pods", "nodes", "score"]


def load_cp_model() -> ModuleType:
    """OR-Tools' CP-SAT module, imported on first use: it pulls in pandas and
    takes ~65 MB and a second or more to import, which a scheduler that never
    opens a batch window (the default) should not pay. place_batch loads it
    before its clock starts, and BatchWindow when it is set up (engine.py's
    load_solvers), so that neither the solver's time limit nor the first window
    pays the import."""
    from ortools.sat.python import cp_model as module

    return module


def _status_name(status: cp_model.CpSolverStatus) -> str:
    """CP-SAT's answer, as the report names it."""
    cp = load_cp_model()
    names = {
        cp.OPTIMAL: "optimal",
        cp.FEASIBLE: "feasible",
        cp.INFEASIBLE: "infeasible",
        cp.MODEL_INVALID: "invalid",
        cp.UNKNOWN: "unknown",
    }
    return names.get(status, "unknown")


_LOWEST = -(2**62)


@dataclass(slots=True)
class Solution:
    counts: list[dict[int, int]]  # per class: row -> pods of it there
    status: str  # the weakest phase's: optimal or feasible
    bounds: dict[int, int] = field(default_factory=dict)  # priority -> bound on pods placed
    seconds: float = 0.0
    # The last phase's proven bound: at least this many empty nodes used (nodes), at
    # most this total score (score); None for pods, or when that phase found nothing.
    objective_bound: int | None = None


class _Model:
    """A CpModel written through its proto."""

    def __init__(self) -> None:
        self.model = load_cp_model().CpModel()
        self.proto = self.model.proto

    def var(self, low: int, high: int) -> int:
        self.proto.variables.add().domain.extend([low, high])
        return len(self.proto.variables) - 1

    def linear(
        self,
        variables: Sequence[int],
        coeffs: Sequence[int],
        low: int,
        high: int,
        enforce: int | None = None,
    ) -> None:
        ct = self.proto.constraints.add()
        if enforce is not None:
            ct.enforcement_literal.append(enforce)
        ct.linear.vars.extend(variables)
        ct.linear.coeffs.extend(coeffs)
        ct.linear.domain.extend([low, high])

    def objective(self, variables: Sequence[int], coeffs: Sequence[int], maximize: bool) -> None:
        self.proto.clear_objective()
        sign = -1 if maximize else 1
        self.proto.objective.vars.extend(variables)
        self.proto.objective.coeffs.extend([sign * c for c in coeffs])
        self.proto.objective.scaling_factor = float(sign)

    def hint(self, variables: Sequence[int], values: Sequence[int]) -> None:
        self.proto.clear_solution_hint()
        self.proto.solution_hint.vars.extend(variables)
        self.proto.solution_hint.values.extend(values)


def solve(
    problem: Problem,
    hint: Sequence[Mapping[int, int]],
    *,
    objective: Objective = "pods",
    timeout: float = 1.0,
    workers: int = 2,
    floors: Mapping[int, int] | None = None,
    presolve: bool = True,
) -> Solution | None:
    """The best placement found within `timeout` seconds (None if none was found:
    the hint did not fit the model and nothing else was found in time). `floors`
    (priority -> pods) are kept at every priority: greedy's counts, so that the
    answer places no fewer pods than greedy at any priority. Without `presolve`
    CP-SAT starts searching at once: on the small models of the neighbourhood
    search its presolve (probing, symmetries) took the whole of a round's time."""
    started = time.perf_counter()
    deadline = started + timeout
    m = _Model()
    classes = problem.classes
    x: list[dict[int, int]] = []  # class -> row -> variable index
    upper: list[dict[int, int]] = []  # the most each variable can be
    for c, cls in enumerate(classes):
        limit = 1 if cls.representative.host_ports else len(cls.pods)
        if cls.held:
            # Held where greedy put it: fixed in the model, so what they use counts.
            own = {row: m.var(count, count) for row, count in hint[c].items()}
            upper.append(dict(hint[c]))
        else:
            own = {row: m.var(0, limit) for row in cls.rows.tolist()}
            upper.append(dict.fromkeys(own, limit))
        x.append(own)
        m.linear(list(own.values()), [1] * len(own), 0, len(cls.pods))

    # Resources and the pod count, per node and column; each column is scaled by
    # the gcd of the amounts asked (exact: the sums are multiples of it), which
    # keeps the LP relaxation well conditioned. Built column by column over flat
    # arrays of the variables (a Python loop per node and class took seconds).
    by_row: dict[int, list[int]] = defaultdict(list)
    for c, own in enumerate(x):
        for row in own:
            by_row[row].append(c)
    var_of = np.array([v for own in x for v in own.values()], dtype=np.int64)
    class_of = np.array([c for c, own in enumerate(x) for _ in own], dtype=np.int64)
    row_of = np.array([r for own in x for r in own], dtype=np.int64)
    most = np.array([upper[c][r] for c, own in enumerate(x) for r in own], dtype=np.int64)
    scale = {
        col: math.gcd(*(cls.requests[col] for cls in classes if col in cls.requests))
        for col in {col for cls in classes for col in cls.requests}
    }
    free = problem.free
    for col, g in scale.items():
        per_class = np.array([cls.requests.get(col, 0) // g for cls in classes], dtype=np.int64)
        amount = per_class[class_of] if len(class_of) else np.zeros(0, np.int64)
        asks = np.flatnonzero(amount > 0)
        order = asks[np.argsort(row_of[asks], kind="stable")]
        rows, starts = np.unique(row_of[order], return_index=True)
        ends = np.append(starts[1:], len(order))
        need = np.add.reduceat(amount[order] * most[order], starts) if len(order) else starts
        room = np.maximum(free[rows, col], _LOWEST) // g if len(rows) else rows
        for i in np.flatnonzero(need > room).tolist():
            part = order[starts[i] : ends[i]]
            m.linear(var_of[part].tolist(), amount[part].tolist(), _LOWEST, int(room[i]))
        # Redundant, for the bound: what the batch asks of the column, cluster-wide.
        total = int((np.maximum(free[rows, col], 0) // g).sum()) if len(rows) else 0
        m.linear(var_of[asks].tolist(), amount[asks].tolist(), _LOWEST, total)
    amounts = [{col: n // scale[col] for col, n in cls.requests.items()} for cls in classes]

    # Host ports: two classes whose ports conflict never share a node.
    for i, j in problem.port_conflicts:
        if i != j:  # a class with host ports has at most one pod per node already
            for row in x[i].keys() & x[j].keys():
                m.linear([x[i][row], x[j][row]], [1, 1], 0, 1)

    # Required anti-affinity within the batch (the cluster's pods are in the rows).
    for rule in problem.anti_affinity:
        for domain in _domains(problem, rule.topology_key, by_row).values():
            owner = [x[rule.owner][r] for r in domain if r in x[rule.owner]]
            if not owner:
                continue
            if rule.matched == [rule.owner]:
                m.linear(owner, [1] * len(owner), 0, 1)
                continue
            others = [x[c][r] for c in rule.matched for r in domain if r in x[c]]
            present = m.var(0, 1)
            size = len(classes[rule.owner].pods)
            m.linear([*owner, present], [1] * len(owner) + [-size], _LOWEST, 0)
            m.linear(others, [1] * len(others), 0, int(rule.owner in rule.matched), present)

    placed = [list(own.values()) for own in x]
    priorities = sorted({cls.priority for cls in classes}, reverse=True)
    for priority, floor in (floors or {}).items():
        members = [
            v for c, cls in enumerate(classes) if cls.priority == priority for v in placed[c]
        ]
        if floor and members:
            m.linear(members, [1] * len(members), floor, len(members) * len(problem.live_rows))

    all_vars = [v for own in x for v in own.values()]
    m.hint(all_vars, [hint[c].get(row, 0) for c, own in enumerate(x) for row in own])
    solver = load_cp_model().CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.cp_model_presolve = presolve
    phases = len(priorities) + (objective != "pods")
    status = "optimal"
    bounds: dict[int, int] = {}
    # Greedy's placement, as values of the variables: what a phase that finds
    # nothing in its time keeps (the rows the hint breaks, if any, are caught by the
    # replay through the filters).
    values: list[int] | None = None
    if hint_values := [hint[c].get(row, 0) for c, own in enumerate(x) for row in own]:
        values = [0] * len(m.proto.variables)
        for v, n in zip(all_vars, hint_values, strict=True):
            values[v] = n
    for level, priority in enumerate(priorities):
        members = [
            v for c, cls in enumerate(classes) if cls.priority == priority for v in placed[c]
        ]
        # The pods of this priority first, then those of the lower ones (a weight
        # above all of theirs), so that each phase's answer is a good start for
        # the next one.
        lower = [v for c, cls in enumerate(classes) if cls.priority < priority for v in placed[c]]
        weight = sum(len(cls.pods) for cls in classes if cls.priority < priority) + 1
        m.objective([*members, *lower], [weight] * len(members) + [1] * len(lower), True)
        outcome = _phase(solver, m, deadline, phases)
        phases -= 1
        if outcome in ("optimal", "feasible"):
            status = "feasible" if outcome == "feasible" else status
            bounds[priority] = int(solver.best_objective_bound + 1e-6) // weight
            values = list(solver.response_proto.solution)
            m.hint(all_vars, [values[v] for v in all_vars])
        elif values is None or (level == 0 and outcome == "infeasible"):
            return None  # greedy's placement does not fit the model
        else:
            status = "feasible"
        value = sum(values[v] for v in members)
        m.linear(members, [1] * len(members), value, 2**62)
    if values is None:
        return None
    objective_bound: int | None = None
    if objective != "pods":
        if objective == "nodes":
            _nodes_objective(m, problem, x, upper, by_row, amounts, scale)
        else:
            scored: list[int] = []
            scores: list[int] = []
            for c, cls in enumerate(classes):
                if not cls.held:
                    for row, score in zip(cls.rows.tolist(), cls.scores.tolist(), strict=False):
                        scored.append(x[c][row])
                        scores.append(int(score))
            m.objective(scored, scores, maximize=True)
        outcome = _phase(solver, m, deadline, 1)
        if outcome in ("optimal", "feasible"):
            values = list(solver.response_proto.solution)
            bound = solver.best_objective_bound
            objective_bound = int(bound + 1e-6) if objective == "score" else math.ceil(bound - 1e-6)
            status = "feasible" if outcome == "feasible" else status
    return Solution(_counts(x, values), status, bounds, _since(started), objective_bound)


def _nodes_objective(
    m: _Model,
    problem: Problem,
    x: list[dict[int, int]],
    upper: list[dict[int, int]],
    by_row: Mapping[int, list[int]],
    amounts: list[dict[int, int]],
    scale: Mapping[int, int],
) -> None:
    """Use the fewest nodes that had no pod: a 0-1 `used` per such node, which every
    pod there needs; and, for the bound, the room of the used nodes must hold what
    the batch asks, column by column."""
    used: dict[int, int] = {}
    for row, members in by_row.items():
        if problem.occupied[row]:
            continue
        used[row] = flag = m.var(0, 1)
        for c in members:
            m.linear([x[c][row], flag], [1, -upper[c][row]], _LOWEST, 0)
    for col, g in scale.items():
        variables: list[int] = []
        coeffs: list[int] = []
        for c, own in enumerate(x):
            if col in amounts[c]:
                variables.extend(own.values())
                coeffs.extend([-amounts[c][col]] * len(own))
        fixed = sum(max(int(problem.free[row, col]), 0) // g for row in by_row if row not in used)
        for row, flag in used.items():
            variables.append(flag)
            coeffs.append(max(int(problem.free[row, col]), 0) // g)
        m.linear(variables, coeffs, -fixed, 2**62)
    m.objective(list(used.values()), [1] * len(used), maximize=False)


def _domains(problem: Problem, key: str, rows: Mapping[int, object]) -> dict[str, list[int]]:
    domains: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        value = problem.label_value(row, key)
        if value is not None:
            domains[value].append(row)
    return domains


def _phase(solver: cp_model.CpSolver, m: _Model, deadline: float, left: int) -> str:
    budget = max((deadline - time.perf_counter()) / max(left, 1), 0.01)
    solver.parameters.max_time_in_seconds = budget
    return _status_name(solver.solve(m.model))


def _counts(x: list[dict[int, int]], values: Sequence[int]) -> list[dict[int, int]]:
    return [{row: values[v] for row, v in own.items() if values[v]} for own in x]


def _since(started: float) -> float:
    return time.perf_counter() - started
