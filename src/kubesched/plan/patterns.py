"""Node patterns: the bound of the cutting-stock relaxation, and an answer from it.

The assignment model's linear relaxation (pods spread over fractional nodes)
loses every per-node rounding: a 3-cpu pod on 4-cpu nodes wastes a cpu that
it does not see. Gilmore and Gomory's relaxation of cutting stock does not: a
*pattern* is what one new node of a pool can hold (a count per class, every
per-node constraint of the packing model respected), and the linear program
chooses how many nodes of each pattern, fractionally, to cover the demand at
the lowest price:

    minimise   sum_p price(pool_p) n_p
    subject to sum_p a_cp n_p + s_c >= d_c       per class c      (duals pi_c)
               sum_{p of pool t} n_p <= K_t       per pool t
               sum_c s_c <= L                     (the pods left out)

There are too many patterns to list, so they are generated (column
generation): GLOP solves the program over the patterns known so far, and per
pool CP-SAT finds the pattern of highest value under the duals (a
multi-dimensional knapsack); one that would lower the price joins, until none
does or the time is up.

The bound is Lagrangian, so it holds at any iteration and does not trust the
floating-point duals: for any pi >= 0 (here GLOP's, rounded down to 1/SCALE),
every packing costs at least

    sum_c pi_c d_c - L max_c pi_c + sum_t K_t min(0, price_t - M_t(pi))

where M_t is the best value of a pool-t pattern (CP-SAT's proven bound of its
knapsack). At the optimum of the program it equals the program's value.
Anti-affinity across nodes (a zone) is not a per-node constraint; it is left
out, which only lowers the bound.

The answer is the integer program over the generated patterns (price and
branch, by CP-SAT): whole nodes, pods beyond a class's demand taken off again.
It is only offered when every constraint of the packing is per node.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubesched.batch.bound import load_model_builder
from kubesched.batch.solver import load_cp_model
from kubesched.plan.demand import HOSTNAME
from kubesched.plan.ffd import Fit, Packing

if TYPE_CHECKING:
    from ortools.linear_solver.python.model_builder import LinearConstraint
    from ortools.sat.python.cp_model import CpModel, CpSolver, IntVar

# Duals are rounded down to this many parts of a price unit: the bound loses at
# most (pods / SCALE) units to it.
SCALE = 1000
# A column joins when it lowers the price by more than this (in price units).
_EPSILON = 1e-6
# Each pricing knapsack gets at most this long (it is small: a few classes).
_PRICING_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Pattern:
    pool: int
    pods: tuple[tuple[int, int], ...]  # (class, pods of it on the node), sorted


@dataclass(slots=True)
class PatternBound:
    bound: int | None  # a lower bound on the price, in price units (None: none found)
    patterns: list[Pattern]
    converged: bool  # no pattern lowers the program's value
    per_node: bool  # every constraint of the packing is a per-node one


class _Pricing:
    """One pool's knapsack: the pods of each class a new node holds, under the
    packing model's per-node constraints (packing.solve's rows for one node)."""

    def __init__(self, fit: Fit, pool: int, classes: list[int]) -> None:
        cp = load_cp_model()
        self.pool = pool
        self.model: CpModel = cp.CpModel()
        self.solver: CpSolver = cp.CpSolver()
        self.solver.parameters.num_workers = 1
        self.solver.parameters.max_time_in_seconds = _PRICING_SECONDS
        demands = fit.demands
        room = demands.room[pool]
        self.a: dict[int, IntVar] = {}
        for c in classes:
            most = per_node(fit, c, pool)
            if most > 0:
                self.a[c] = self.model.new_int_var(0, most, f"a[{c}]")
        for col, space in room.items():
            asks = [(c, demands.classes[c].requests.get(col, 0)) for c in self.a]
            asks = [(c, amount) for c, amount in asks if amount > 0]
            if asks:
                self.model.add(sum(amount * self.a[c] for c, amount in asks) <= space)
        for i, j in demands.port_conflicts:
            if i != j and i in self.a and j in self.a:
                self.model.add(self.a[i] + self.a[j] <= 1)
        for rule in demands.rules:
            if rule.topology_key != HOSTNAME or rule.owner not in self.a:
                continue
            owner = self.a[rule.owner]
            if rule.matched == [rule.owner]:
                self.model.add(owner <= 1)
                continue
            others = [self.a[c] for c in rule.matched if c in self.a]
            present = self.model.new_bool_var("present")
            self.model.add(owner <= len(demands.classes[rule.owner].pods) * present)
            self.model.add(sum(others) <= int(rule.owner in rule.matched)).only_enforce_if(present)

    def best(self, values: dict[int, int]) -> tuple[int, Pattern | None]:
        """The highest sum of `values` (per class, integers) a node holds: CP-SAT's
        proven upper bound on it, and the best pattern found (None if none)."""
        terms = [(values.get(c, 0), var) for c, var in self.a.items()]
        terms = [(v, var) for v, var in terms if v > 0]
        if not terms:
            return 0, None
        self.model.maximize(sum(v * var for v, var in terms))
        cp = load_cp_model()
        outcome = self.solver.solve(self.model)
        if outcome not in (cp.OPTIMAL, cp.FEASIBLE):
            # No answer in time: the bound is every class at its most.
            return sum(v * var.proto.domain[-1] for v, var in terms), None
        pods = tuple(sorted((c, n) for c, var in self.a.items() if (n := self.solver.value(var))))
        return math.floor(self.solver.best_objective_bound + 1e-6), Pattern(self.pool, pods)


def per_node(fit: Fit, c: int, pool: int) -> int:
    """The most pods of class c one new node of `pool` holds on its own."""
    cls = fit.demands.classes[c]
    if pool not in cls.pools:
        return 0
    room = fit.demands.room[pool]
    return min(
        [1 if cls.host_ports else len(cls.pods)]
        + [room.get(col, 0) // a for col, a in cls.requests.items() if a > 0]
    )


def pattern_of(node_pool: int, pods: dict[int, int]) -> Pattern:
    return Pattern(node_pool, tuple(sorted((c, n) for c, n in pods.items() if n)))


def generate(
    fit: Fit,
    counts: list[int],
    cost: list[int],
    left: int,
    start: Packing,
    *,
    seconds: float,
) -> PatternBound:
    """Column generation over the packed classes (see the module's docstring).
    `counts` are K_t, `cost` the integer prices, `left` the pods the answer may
    leave out, `start` a packing whose nodes are the first patterns."""
    started = time.perf_counter()
    deadline = started + seconds
    demands = fit.demands
    classes = [c for c in fit.packed if any(per_node(fit, c, t) for t in range(len(counts)))]
    per_node_only = all(rule.topology_key == HOSTNAME for rule in demands.rules)
    if not classes:
        return PatternBound(0, [], True, per_node_only)
    known: dict[Pattern, None] = {}
    for node in start.nodes:
        known[pattern_of(node.pool, node.pods)] = None
    pricing = [_Pricing(fit, t, classes) if counts[t] else None for t in range(len(counts))]
    for c in classes:  # and per pool, each class alone (its most per node)
        for knapsack in pricing:
            if knapsack is not None and (alone := knapsack.best({c: 1})[1]) is not None:
                known[alone] = None
    wanted = {c: len(demands.classes[c].pods) for c in classes}
    best_bound: int | None = None
    converged = False
    while True:
        solved = _master(list(known), classes, wanted, counts, cost, left)
        if solved is None:
            break
        duals, limit_duals = solved
        scaled = {c: max(math.floor(duals[c] * SCALE + 1e-9), 0) for c in classes}
        total = sum(scaled[c] * wanted[c] for c in classes)
        total -= left * max(scaled.values(), default=0)
        added = 0
        exact = True
        for t, knapsack in enumerate(pricing):
            if knapsack is None:
                continue
            top, pattern = knapsack.best(scaled)
            total += counts[t] * min(0, cost[t] * SCALE - top)
            if pattern is None:
                exact = False
                continue
            # Reduced cost under GLOP's own duals (the scaled ones only bound).
            worth = sum(duals[c] * n for c, n in pattern.pods)
            if cost[t] - limit_duals[t] - worth < -_EPSILON and pattern not in known:
                known[pattern] = None
                added += 1
        bound = math.ceil(total / SCALE - 1e-9)
        best_bound = bound if best_bound is None else max(best_bound, bound)
        if not added and exact:
            converged = True
            break
        if time.perf_counter() >= deadline:
            break
    return PatternBound(best_bound, list(known), converged, per_node_only)


def _master(
    patterns: list[Pattern],
    classes: list[int],
    wanted: dict[int, int],
    counts: list[int],
    cost: list[int],
    left: int,
) -> tuple[dict[int, float], dict[int, float]] | None:
    """The linear program over `patterns`: the cover rows' duals (>= 0) and the pool
    rows' (<= 0); None when GLOP does not solve it."""
    mb = load_model_builder()
    model = mb.Model()
    n = [model.new_num_var(0.0, float(counts[p.pool]), f"n{i}") for i, p in enumerate(patterns)]
    slack = {c: model.new_num_var(0.0, float(left), f"s{c}") for c in classes} if left else {}
    cover: dict[int, LinearConstraint] = {}
    for c in classes:
        terms = [k * n[i] for i, p in enumerate(patterns) for cc, k in p.pods if cc == c]
        cover[c] = model.add(sum(terms) + slack.get(c, 0) >= wanted[c])
    pools: dict[int, LinearConstraint] = {}
    for t in {p.pool for p in patterns}:
        pools[t] = model.add(sum(n[i] for i, p in enumerate(patterns) if p.pool == t) <= counts[t])
    if slack:
        model.add(sum(slack.values()) <= left)
    model.minimize(sum(cost[p.pool] * n[i] for i, p in enumerate(patterns)))
    solver = mb.Solver("glop")
    if solver.solve(model) != mb.SolveStatus.OPTIMAL:
        return None
    duals = {c: max(solver.dual_value(row), 0.0) for c, row in cover.items()}
    limit_duals = {t: 0.0 for t in range(len(counts))}
    for t, row in pools.items():
        limit_duals[t] = min(solver.dual_value(row), 0.0)
    return duals, limit_duals


def integer_answer(
    fit: Fit,
    patterns: list[Pattern],
    counts: list[int],
    cost: list[int],
    hint: Packing,
    *,
    seconds: float,
    seed: int = 0,
    workers: int = 1,
) -> Packing | None:
    """Whole nodes of the generated patterns: the fewest pods left out, then the
    lowest price, then the fewest nodes (one weighted objective), started from
    `hint`'s nodes where they are patterns; pods beyond a class's demand are taken
    off again (every per-node constraint holds for fewer pods). None if CP-SAT
    finds nothing in time."""
    cp = load_cp_model()
    demands = fit.demands
    wanted = {c: len(demands.classes[c].pods) for c in fit.packed}
    model = cp.CpModel()
    n = [model.new_int_var(0, counts[p.pool], f"n{i}") for i, p in enumerate(patterns)]
    missing = {c: model.new_int_var(0, d, f"m{c}") for c, d in wanted.items()}
    for c, d in wanted.items():
        terms = [k * n[i] for i, p in enumerate(patterns) for cc, k in p.pods if cc == c]
        model.add(sum(terms) + missing[c] >= d)
    for t, k_t in enumerate(counts):
        mine = [n[i] for i, p in enumerate(patterns) if p.pool == t]
        if mine:
            model.add(sum(mine) <= k_t)
    model.add(sum(missing.values()) <= sum(hint.left.values()))
    nodes_most = sum(counts) + 1
    price_most = sum(cost[t] * k for t, k in enumerate(counts)) + 1
    model.minimize(
        sum(missing.values()) * price_most * nodes_most
        + sum(cost[p.pool] * nodes_most * n[i] + n[i] for i, p in enumerate(patterns))
    )
    index = {p: i for i, p in enumerate(patterns)}
    start = [0] * len(patterns)
    for node in hint.nodes:
        if (i := index.get(pattern_of(node.pool, node.pods))) is not None:
            start[i] += 1
    for var, value in zip(n, start, strict=True):
        model.add_hint(var, value)
    solver = cp.CpSolver()
    solver.parameters.max_time_in_seconds = max(seconds, 0.05)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    if solver.solve(model) not in (cp.OPTIMAL, cp.FEASIBLE):
        return None
    packing = Packing()
    todo = dict(wanted)
    for i, p in enumerate(patterns):
        for _ in range(solver.value(n[i])):
            at = fit.new_node(packing, p.pool)
            for c, k in p.pods:
                for _ in range(min(k, todo[c])):
                    fit.place(packing, c, at)
                todo[c] -= min(k, todo[c])
            if not packing.nodes[at].pods:
                packing.nodes.pop()
    packing.left = {c: k for c, k in todo.items() if k}
    return packing
