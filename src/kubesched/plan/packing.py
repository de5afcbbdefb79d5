"""The cheapest new nodes for the demand: node patterns, then an assignment model,
both solved by CP-SAT.

First the node patterns (patterns.py): the cutting-stock relaxation gives the
bound, and the integer program over its patterns an answer. On many pods of a
few shapes this answer is within a fraction of a percent of the bound, where
the assignment model below, on hundreds of node instances, seldom improves on
the estimator's in the time. When the answer meets the bound it is optimal and
the assignment model does not run.

The assignment model: per pool t, K_t instances (new nodes), each with a 0-1
`used` and, per class c the pool may host, an integer `x[c, t, k]`: the pods of
c on that node. The constraints are those of ffd.Fit: per node and column, the
pods' requests fit the template's room (scaled by the column's gcd); a class
with host ports has at most one pod per node and never shares one with a
conflicting class; the required anti-affinity rules between classes, per domain
(a node for the hostname, the pools of one label value otherwise); instances of
a pool are used in order (used[t, k] >= used[t, k+1]), which breaks the
symmetry between them. It is exact where the patterns are not: anti-affinity
per zone spans nodes, and only this model has it.

K_t is the pool's maximum, and at most what cluster-autoscaler's estimator needs
to put every pod the pool may host on it alone: an optimum never needs more of
t than the least number for the pods it puts on t, which is no more than that.

Objectives, one phase each (lexicographic, as the batch solver's phases): the
fewest pods left out (a pool's maximum can leave some; skipped when the
estimator leaves none out), then the lowest total price (the fewest nodes when
no pool has a price), then, with prices, the fewest nodes at that price. The
best answer so far (the estimator's, or the patterns') is the hint of every
phase and the answer kept when the model does not beat it, so the answer never
costs more than cluster-autoscaler's. Two lower bounds are reported: CP-SAT's
proven bound on the price phase, and the patterns'.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from kubesched.batch.solver import load_cp_model
from kubesched.plan.demand import HOSTNAME
from kubesched.plan.ffd import Fit, NewNode, Packing, binpack
from kubesched.plan.patterns import generate, integer_answer

if TYPE_CHECKING:
    from ortools.sat.python.cp_model import CpModel, IntVar

# Prices are Decimals; the model needs integers: this many decimal places at most.
PRICE_DIGITS = 6
# The share of the time limit for generating node patterns; the integer program
# over them has half of what is left, and the assignment model the rest.
PATTERN_SHARE = 0.3


@dataclass(slots=True)
class Solved:
    packing: Packing
    status: str  # optimal | feasible | estimator (the hint was kept)
    lower_bound: Decimal | None  # CP-SAT's, on the total price (node count without prices)
    pattern_bound: Decimal | None  # the node patterns' (patterns.py), on the same
    seconds: float


def price_units(prices: list[Decimal | None]) -> tuple[list[int], Decimal]:
    """Integer prices (per node) and their unit: 1 each when no pool has a price."""
    if all(p is None for p in prices):
        return [1] * len(prices), Decimal(1)
    digits = max(_places(p) for p in prices if p is not None)
    unit = Decimal(1).scaleb(-min(digits, PRICE_DIGITS))
    return [int(((p or Decimal(0)) / unit).to_integral_value()) for p in prices], unit


def _places(price: Decimal) -> int:
    exponent = price.normalize().as_tuple().exponent
    return max(-exponent, 0) if isinstance(exponent, int) else 0


def instances(fit: Fit, limits: list[int | None], hint: Packing) -> list[int]:
    """K_t per pool (see the module's docstring), never below the hint's count."""
    demands = fit.demands
    out: list[int] = []
    for pool, limit in enumerate(limits):
        wanted = {c: len(demands.classes[c].pods) for c in fit.packed}
        alone, _ = binpack(fit, Packing(), pool, wanted, limit)
        out.append(max(len(alone.nodes), hint.count(pool)))
    return out


def solve(
    fit: Fit,
    limits: list[int | None],
    prices: list[Decimal | None],
    hint: Packing,
    *,
    timeout: float,
    seed: int = 0,
    workers: int = 2,
) -> Solved:
    """The best packing of the demand's packed classes found within `timeout`: the
    node patterns' bound and answer first (patterns.py: a share of the time each),
    then the assignment model from the best answer so far, unless the patterns'
    answer already meets their bound."""
    load_cp_model()  # before the clock starts: the import takes a second
    started = time.perf_counter()
    deadline = started + timeout
    counts = instances(fit, limits, hint)
    cost, unit = price_units(prices)
    left = sum(hint.left.values())
    generated = generate(fit, counts, cost, left, hint, seconds=timeout * PATTERN_SHARE)
    best = hint
    if generated.per_node and generated.patterns:
        spare = (deadline - time.perf_counter()) / 2
        answer = integer_answer(
            fit, generated.patterns, counts, cost, hint, seconds=spare, seed=seed, workers=workers
        )
        if answer is not None and _worse(best, answer, cost):
            best = answer
    pattern_bound = None if generated.bound is None else Decimal(generated.bound) * unit
    price = sum(cost[n.pool] for n in best.nodes)
    if generated.bound is not None and price <= generated.bound and not best.left:
        return Solved(best, "optimal", None, pattern_bound, time.perf_counter() - started)
    priced = any(p is not None for p in prices)
    packing, status, bound = _assignment(
        fit, counts, cost, unit, priced, best, deadline, seed, workers
    )
    if _worse(packing, best, cost):
        packing = best
    if packing is hint:
        status = "estimator"
    elif status == "estimator":  # the patterns' answer, kept
        status = "feasible"
    return Solved(packing, status, bound, pattern_bound, time.perf_counter() - started)


def _assignment(
    fit: Fit,
    counts: list[int],
    cost: list[int],
    unit: Decimal,
    priced: bool,
    hint: Packing,
    deadline: float,
    seed: int,
    workers: int,
) -> tuple[Packing, str, Decimal | None]:
    """The assignment model (the module's docstring) from `hint`, until `deadline`:
    its best packing (`hint` if none is better), its status, and CP-SAT's bound on
    the price."""
    cp = load_cp_model()
    demands = fit.demands
    classes = fit.packed
    model: CpModel = cp.CpModel()
    used: dict[tuple[int, int], IntVar] = {}
    x: dict[tuple[int, int, int], IntVar] = {}
    hint_of: dict[tuple[int, int], NewNode] = {}
    seen: dict[int, int] = {}
    for node in hint.nodes:
        hint_of[(node.pool, seen.get(node.pool, 0))] = node
        seen[node.pool] = seen.get(node.pool, 0) + 1
    for t, k_t in enumerate(counts):
        for k in range(k_t):
            used[t, k] = model.new_bool_var(f"used[{t},{k}]")
            if k:
                model.add(used[t, k] <= used[t, k - 1])
    missing: dict[int, IntVar] = {}
    most: dict[tuple[int, int, int], int] = {}  # each x's upper bound
    for c in classes:
        cls = demands.classes[c]
        limit = 1 if cls.host_ports else len(cls.pods)
        mine: list[IntVar] = []
        for t in cls.pools:
            per_node = min(
                [limit]
                + [demands.room[t].get(col, 0) // a for col, a in cls.requests.items() if a > 0]
            )
            if per_node <= 0:
                continue
            for k in range(counts[t]):
                var = x[c, t, k] = model.new_int_var(0, per_node, f"x[{c},{t},{k}]")
                most[c, t, k] = per_node
                model.add(var <= per_node * used[t, k])
                mine.append(var)
        missing[c] = model.new_int_var(0, len(cls.pods), f"missing[{c}]")
        model.add(sum(mine) + missing[c] == len(cls.pods))
    for (t, k), flag in used.items():
        here = [c for c in classes if (c, t, k) in x]
        for col, room in demands.room[t].items():
            asks = [(c, demands.classes[c].requests.get(col, 0)) for c in here]
            asks = [(c, a) for c, a in asks if a > 0]
            if not asks:
                continue
            if sum(a * most[c, t, k] for c, a in asks) <= room:
                continue  # never binding
            g = math.gcd(*(a for _, a in asks))
            model.add(sum(a // g * x[c, t, k] for c, a in asks) <= room // g * flag)
        for i, j in demands.port_conflicts:
            if i != j and (i, t, k) in x and (j, t, k) in x:
                model.add(x[i, t, k] + x[j, t, k] <= 1)
    _anti_affinity(model, fit, x, counts)
    # Redundant, for the bound (as the batch solver's cluster-wide rows): the used
    # nodes' room holds what the placed pods ask, column by column.
    for col in demands.columns:
        need = {c: demands.classes[c].requests.get(col, 0) for c in classes}
        rooms = {t: demands.room[t].get(col, 0) for t in range(len(counts))}
        g = math.gcd(*need.values(), *rooms.values())
        if not g or not any(need.values()):
            continue
        supply = [(rooms[t] // g, flag) for (t, _), flag in used.items()]
        demand = [(need[c] // g, c) for c in classes if need[c]]
        model.add(
            sum(a * flag for a, flag in supply)
            >= sum(a * (len(demands.classes[c].pods) - missing[c]) for a, c in demand)
        )

    hints: dict[IntVar, int] = {}
    for (t, k), flag in used.items():
        hints[flag] = int((t, k) in hint_of)
    for (c, t, k), var in x.items():
        at = hint_of.get((t, k))
        hints[var] = 0 if at is None else at.pods.get(c, 0)
    for c, var in missing.items():
        hints[var] = hint.left.get(c, 0)
    for var, value in hints.items():
        model.add_hint(var, value)

    solver = cp.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    # (name, variables, coefficients, share of the time left)
    phases: list[tuple[str, list[IntVar], list[int], float]] = []
    if hint.left:
        phases.append(("left", list(missing.values()), [1] * len(missing), 0.2))
    else:
        for var in missing.values():  # the estimator leaves none out: neither does the answer
            model.add(var == 0)
    phases.append(("price", list(used.values()), [cost[t] for t, _ in used], 0.8 if priced else 1))
    if priced:
        phases.append(("nodes", list(used.values()), [1] * len(used), 1))
    status = "optimal"
    bound: Decimal | None = None
    values: dict[IntVar, int] | None = None
    for name, variables, coeffs, share in phases:
        expr = sum(a * v for v, a in zip(variables, coeffs, strict=True))
        model.minimize(expr)
        budget = max((deadline - time.perf_counter()) * share, 0.05)
        solver.parameters.max_time_in_seconds = budget
        outcome = solver.solve(model)
        if outcome not in (cp.OPTIMAL, cp.FEASIBLE):
            if name != "nodes":  # the last phase only breaks ties between answers
                status = "estimator" if values is None else "feasible"
            break
        if outcome == cp.FEASIBLE and name != "nodes":
            status = "feasible"
        best = round(solver.objective_value)
        if name == "price":
            bound = Decimal(math.ceil(solver.best_objective_bound - 1e-6)) * unit
        values = {v: solver.value(v) for v in hints}
        model.proto.clear_solution_hint()
        for var, value in values.items():
            model.add_hint(var, value)
        model.add(expr <= best)
    packing = hint if values is None else _packing(fit, values, used, x, missing, counts)
    return packing, status, bound


def _anti_affinity(
    m: CpModel,
    fit: Fit,
    x: dict[tuple[int, int, int], IntVar],
    counts: list[int],
) -> None:
    """The rules per domain, as the batch solver writes them: a class that repels
    itself has at most one pod per domain; otherwise, while a pod of the owner is
    in the domain (`present`), the matched classes have none there (one, the
    owner's, when it is among them)."""
    for rule in fit.demands.rules:
        domains: dict[object, list[tuple[int, int]]] = {}
        for t, k_t in enumerate(counts):
            for k in range(k_t):
                if rule.topology_key == HOSTNAME:
                    domains[t, k] = [(t, k)]  # each new node is its own
                elif (domain := fit.domain(rule.topology_key, 0, t)) is not None:
                    domains.setdefault(domain, []).append((t, k))
        for nodes in domains.values():
            owner = [x[rule.owner, t, k] for t, k in nodes if (rule.owner, t, k) in x]
            if not owner:
                continue
            if rule.matched == [rule.owner]:
                m.add(sum(owner) <= 1)
                continue
            others = [x[c, t, k] for c in rule.matched for t, k in nodes if (c, t, k) in x]
            present = m.new_bool_var("present")
            size = len(fit.demands.classes[rule.owner].pods)
            m.add(sum(owner) <= size * present)
            m.add(sum(others) <= int(rule.owner in rule.matched)).only_enforce_if(present)


def _packing(
    fit: Fit,
    values: dict[IntVar, int],
    used: dict[tuple[int, int], IntVar],
    x: dict[tuple[int, int, int], IntVar],
    missing: dict[int, IntVar],
    counts: list[int],
) -> Packing:
    packing = Packing()
    for t, k_t in enumerate(counts):
        for k in range(k_t):
            pods = {
                c: n for (c, tt, kk), var in x.items() if (tt, kk) == (t, k) and (n := values[var])
            }
            if not values[used[t, k]] or not pods:
                continue
            node = NewNode(t, pods, dict(fit.demands.room[t]))
            for c, n in pods.items():
                for col, amount in fit.demands.classes[c].requests.items():
                    node.free[col] = node.free.get(col, 0) - amount * n
            packing.nodes.append(node)
    packing.left = {c: n for c, var in missing.items() if (n := values[var])}
    return packing


def _worse(a: Packing, b: Packing, cost: list[int]) -> bool:
    """Whether `a` is worse than `b`: more pods left out, then a higher price, then
    more nodes."""

    def key(p: Packing) -> tuple[int, int, int]:
        return (sum(p.left.values()), sum(cost[n.pool] for n in p.nodes), len(p.nodes))

    return key(a) > key(b)
