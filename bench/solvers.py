"""The three solvers on the batch engine's model: which one the engine uses.

    python -m bench.solvers [--timeout 1] [--trace NAME ...]

The same problem (kubesched.batch.problem, built from the default profile's
filters on each bench-quality trace) goes to OR-Tools CP-SAT (the engine's
solve(), objective pods, greedy's placement as the hint), HiGHS (highspy, the
MILP with greedy's placement as the start) and SciPy's milp (HiGHS underneath,
no start). The MILP is the same rows: per class and node an integer; per node and
resource column the sum; host-port pairs; anti-affinity as "at most one per
domain" for a class that repels itself and a big-M row otherwise. Classes
held at greedy's placement are fixed there in all three. The objective is the
pods placed, priorities set aside (the engine's phases by priority are solves of
this kind, one per priority). Time is the solver's whole call, model building
included.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field

import highspy
import numpy as np
import scipy.optimize
import scipy.sparse

from bench.quality_traces import TRACES, Trace
from kubesched.batch.engine import _counts as greedy_counts
from kubesched.batch.problem import Problem, build_problem
from kubesched.batch.solver import solve
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo
from kubesched.simulation.simulator import World, simulate, start_session


@dataclass
class Rows:
    """A MILP: maximise the sum of the variables, subject to lb <= A x <= ub."""

    low: list[int] = field(default_factory=list)  # per variable
    high: list[int] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    entries: list[tuple[int, int, float]] = field(default_factory=list)  # (row, var, coeff)
    row_low: list[float] = field(default_factory=list)
    row_high: list[float] = field(default_factory=list)
    objective: list[float] = field(default_factory=list)

    def var(self, low: int, high: int, start: int, counts: bool) -> int:
        self.low.append(low)
        self.high.append(high)
        self.starts.append(start)
        self.objective.append(1.0 if counts else 0.0)
        return len(self.low) - 1

    def row(self, terms: list[tuple[int, float]], low: float, high: float) -> None:
        r = len(self.row_low)
        self.entries.extend((r, v, c) for v, c in terms)
        self.row_low.append(low)
        self.row_high.append(high)

    def matrix(self) -> scipy.sparse.csr_array:
        rows, cols, vals = zip(*self.entries, strict=True) if self.entries else ((), (), ())
        shape = (len(self.row_low), len(self.low))
        return scipy.sparse.csr_array((vals, (rows, cols)), shape=shape)


def milp_rows(problem: Problem, table: NodeTable, hint: list[dict[int, int]]) -> Rows:
    m = Rows()
    inf = float("inf")
    x: list[dict[int, int]] = []
    for c, cls in enumerate(problem.classes):
        limit = 1 if cls.representative.host_ports else len(cls.pods)
        if cls.held:
            own = {r: m.var(n, n, n, True) for r, n in hint[c].items()}
        else:
            own = {r: m.var(0, limit, hint[c].get(r, 0), True) for r in cls.rows.tolist()}
        x.append(own)
        m.row([(v, 1.0) for v in own.values()], 0, len(cls.pods))
    by_row: dict[int, list[int]] = defaultdict(list)
    for c, own in enumerate(x):
        for r in own:
            by_row[r].append(c)
    for r, members in by_row.items():
        cols: dict[int, list[int]] = defaultdict(list)
        for c in members:
            for col in problem.classes[c].requests:
                cols[col].append(c)
        for col, users in cols.items():
            terms = [(x[c][r], float(problem.classes[c].requests[col])) for c in users]
            m.row(terms, -inf, float(problem.free[r, col]))
    for i, j in problem.port_conflicts:
        if i != j:
            for r in x[i].keys() & x[j].keys():
                m.row([(x[i][r], 1.0), (x[j][r], 1.0)], 0, 1)
    for rule in problem.anti_affinity:
        domains: dict[str, list[int]] = defaultdict(list)
        for r in by_row:
            value = table.label_value(r, rule.topology_key)
            if value is not None:
                domains[value].append(r)
        for rows in domains.values():
            owner = [x[rule.owner][r] for r in rows if r in x[rule.owner]]
            if not owner:
                continue
            if rule.matched == [rule.owner]:
                m.row([(v, 1.0) for v in owner], 0, 1)
                continue
            others = [x[c][r] for c in rule.matched for r in rows if r in x[c]]
            size = len(problem.classes[rule.owner].pods)
            big = sum(len(problem.classes[c].pods) for c in rule.matched)
            present = m.var(0, 1, 1 if any(hint[rule.owner].get(r) for r in rows) else 0, False)
            m.row([*((v, 1.0) for v in owner), (present, -float(size))], -inf, 0)
            limit = int(rule.owner in rule.matched)
            m.row([*((v, 1.0) for v in others), (present, float(big))], -inf, big + limit)
    return m


def run_highs(m: Rows, timeout: float) -> tuple[float, float, float]:
    started = time.perf_counter()
    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", timeout)
    h.setOptionValue("threads", 2)
    n = len(m.low)
    h.addVars(n, np.array(m.low, float), np.array(m.high, float))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array(m.objective))
    h.changeColsIntegrality(
        n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger)
    )
    a = m.matrix()
    h.addRows(
        len(m.row_low),
        np.array(m.row_low),
        np.array(m.row_high),
        a.nnz,
        a.indptr.astype(np.int32),
        a.indices.astype(np.int32),
        a.data,
    )
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    solution = highspy.HighsSolution()
    solution.col_value = list(m.starts)
    h.setSolution(solution)
    h.run()
    info = h.getInfo()
    return info.objective_function_value, info.mip_dual_bound, time.perf_counter() - started


def run_scipy(m: Rows, timeout: float) -> tuple[float, float, float]:
    started = time.perf_counter()
    result = scipy.optimize.milp(
        -np.array(m.objective),
        constraints=scipy.optimize.LinearConstraint(m.matrix(), m.row_low, m.row_high),
        integrality=np.ones(len(m.low)),
        bounds=scipy.optimize.Bounds(m.low, m.high),
        options={"time_limit": timeout},
    )
    value = -result.fun if result.x is not None else float("nan")
    dual = getattr(result, "mip_dual_bound", None)
    bound = float("nan") if dual is None else -dual
    return value, bound, time.perf_counter() - started


def measure(trace: Trace, timeout: float) -> list[str]:
    profiles = [ProfileConfig.default()]
    greedy = simulate(trace.nodes, trace.pods, profiles, seed=1)

    async def build() -> tuple[Problem, NodeTable, list[dict[int, int]]]:
        session = start_session(World(trace.nodes, [], profiles), 1, 0)
        fw = session.scheduler.frameworks["default-scheduler"]
        table = session.scheduler.table
        problem = build_problem(fw, table, [PodInfo(p) for p in trace.pods])
        placed = {k: n for k, n in greedy.placements.items() if n}
        return problem, table, greedy_counts(problem, placed)

    problem, table, hint = asyncio.run(build())
    # One objective for all three: pods placed, whatever their priority (the engine's
    # phases by priority are the same kind of solve, once per priority).
    for cls in problem.classes:
        cls.priority = 0
    cells = [trace.name, str(greedy.scheduled)]
    started = time.perf_counter()
    found = solve(problem, hint, timeout=timeout)
    spent = time.perf_counter() - started
    if found is None:
        cells.append(f"none ({spent:.2f}s)")
    else:
        placed = sum(sum(c.values()) for c in found.counts)
        cells.append(f"{placed} ≤ {sum(found.bounds.values())} ({spent:.2f}s)")
    rows = milp_rows(problem, table, hint)
    for runner in (run_highs, run_scipy):
        value, bound, spent = runner(rows, timeout)
        cells.append(f"{value:.0f} ≤ {bound:.0f} ({spent:.2f}s)")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--trace", action="append", choices=sorted(TRACES))
    args = parser.parse_args()
    print(f"# load average {os.getloadavg()[0]:.2f} at start; timeout {args.timeout}s")
    print("| trace | greedy | CP-SAT placed ≤ bound (s) | HiGHS | SciPy milp |")
    print("|---|---|---|---|---|")
    for name in args.trace or [n for n in TRACES if n != "fits-pack"]:
        print("| " + " | ".join(measure(TRACES[name](1), args.timeout)) + " |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
