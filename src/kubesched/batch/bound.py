"""A cheap upper bound on the pods a batch placement can place, by priority.

CP-SAT's own bound comes only from a phase it finishes; on a large batch
(1,000 pods × 500 nodes) it may not finish one within the second, and the
report would have no bound at all. This one is the linear relaxation of the
same model with equivalent nodes merged, solved by GLOP (OR-Tools' LP solver)
in a few milliseconds:

- nodes with the same room left (every column the batch asks for) and the same
  feasible classes (the profile's filters' verdicts, as build_problem found
  them) are one node class; a variable per pod class and node class holds how
  many of its pods go there. On identical nodes this loses nothing against the
  per-node relaxation (average any per-node solution over the class); when
  there are too many node classes, nodes are merged by feasible classes alone,
  which only loosens the bound;
- per node class and column, what the pods there ask fits the class's total
  room; per pod class and node class, no more pods than the nodes could hold
  one by one (each node's own room, host ports: one a node);
- a pod class that repels itself (required anti-affinity) has at most one pod
  per topology domain among its feasible nodes;
- classes held at greedy's placement are fixed there: their pods count, and
  the room they take is gone.

Priorities are bounded highest first, each given the pods placed at every
higher priority (`placed`: the answer's counts), as CP-SAT's phases are: no
placement that keeps the held classes and places at least `placed[q]` pods at
every priority q above p places more than `bound[p]` pods at p.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from kubesched.batch.problem import Problem

if TYPE_CHECKING:
    from ortools.linear_solver.python.model_builder_helper import ModelBuilderHelper

__all__ = ["load_model_builder", "relaxation_bounds"]


def load_model_builder() -> ModuleType:
    """OR-Tools' model builder (GLOP), imported on first use, as solver.py's
    load_cp_model imports CP-SAT: a scheduler without a batch window never needs
    OR-Tools (and pandas, which it imports)."""
    from ortools.linear_solver.python import model_builder

    return model_builder


# Above this many node classes, nodes are merged by feasible classes only.
_MAX_NODE_CLASSES = 256
# GLOP's answer is exact to its tolerances: a hair over an integer still floors to it.
_SLACK = 1e-4


def relaxation_bounds(
    problem: Problem,
    hint: Sequence[Mapping[int, int]],
    placed: Mapping[int, int],
    *,
    merge_nodes: bool = True,
) -> dict[int, int]:
    """Priority -> upper bound on the pods placed at it (see the module's
    docstring); `hint` is greedy's placement as counts per class and row (where
    the held classes stay), `placed` the answer's pods by priority. A priority
    whose relaxation does not solve has no entry. Without `merge_nodes` every
    node is its own class (the per-node relaxation, which the tests compare)."""
    classes = problem.classes
    rows = np.asarray(problem.live_rows, np.intp)
    if not classes or not len(rows):
        return {}
    columns = np.array(sorted({col for cls in classes for col in cls.requests}), np.intp)
    index = {row: i for i, row in enumerate(rows.tolist())}
    room = problem.free[np.ix_(rows, columns)].astype(np.float64)
    held_count: dict[int, int] = {}
    for c, cls in enumerate(classes):
        if not cls.held:
            continue
        held_count[cls.priority] = held_count.get(cls.priority, 0) + sum(hint[c].values())
        for row, count in hint[c].items():
            if row in index:
                for k, col in enumerate(columns.tolist()):
                    room[index[row], k] -= cls.requests.get(col, 0) * count
    room = np.maximum(room, 0.0)
    modelled = [c for c, cls in enumerate(classes) if not cls.held]
    position = np.full(max(int(rows.max()) + 1, problem.capacity), -1, np.intp)
    position[rows] = np.arange(len(rows))
    feasible = np.zeros((len(rows), len(modelled)), bool)
    for j, c in enumerate(modelled):
        at = position[classes[c].rows]
        feasible[at[at >= 0], j] = True
    asks = np.array(
        [[classes[c].requests.get(col, 0) for col in columns.tolist()] for c in modelled],
        np.float64,
    ).reshape(len(modelled), len(columns))
    # Per node and pod class: how many of its pods the node alone could hold.
    limit = np.array(
        [1 if classes[c].representative.host_ports else len(classes[c].pods) for c in modelled],
        np.float64,
    )
    per_node = np.where(feasible, limit[None, :], 0.0)
    for k in range(len(columns)):
        asking = asks[:, k] > 0
        per_node[:, asking] = np.minimum(
            per_node[:, asking], np.floor(room[:, k, None] / asks[None, asking, k])
        )
    groups = _node_classes(room, feasible) if merge_nodes else np.arange(len(rows))
    group_room = np.zeros((groups.max() + 1, len(columns)))
    np.add.at(group_room, groups, room)
    group_cap = np.zeros((groups.max() + 1, len(modelled)))
    np.add.at(group_cap, groups, per_node)

    model_builder = load_model_builder()
    model = model_builder.Model()
    helper = model.helper
    # y[g, j]: pods of modelled class j on node class g (only where some node fits one).
    y: dict[tuple[int, int], int] = {}
    for g, j in zip(*np.nonzero(group_cap > 0), strict=True):
        v = helper.add_var()
        helper.set_var_lower_bound(v, 0.0)
        helper.set_var_upper_bound(v, float(group_cap[g, j]))
        y[int(g), int(j)] = v
    by_class: dict[int, list[int]] = {}
    by_group: dict[int, list[tuple[int, int]]] = {}
    for (g, j), v in y.items():
        by_class.setdefault(j, []).append(v)
        by_group.setdefault(g, []).append((j, v))
    for j, variables in by_class.items():
        _row(helper, variables, [1.0] * len(variables), 0.0, len(classes[modelled[j]].pods))
    for g, group in by_group.items():
        for k in range(len(columns)):
            terms = [(v, asks[j, k]) for j, v in group if asks[j, k] > 0]
            if terms:
                scale = max(a for _, a in terms)
                _row(
                    helper,
                    [v for v, _ in terms],
                    [a / scale for _, a in terms],
                    0.0,
                    float(group_room[g, k]) / scale,
                )
    _anti_affinity_rows(helper, problem, modelled, y)

    solver = model_builder.Solver("glop")
    priorities = sorted({cls.priority for cls in classes}, reverse=True)
    bounds: dict[int, int] = {}
    for priority in priorities:
        members = [
            v
            for j, c in enumerate(modelled)
            if classes[c].priority == priority
            for v in by_class.get(j, [])
        ]
        fixed = held_count.get(priority, 0)
        helper.clear_objective()
        helper.set_maximize(True)
        if members:
            helper.set_objective_coefficients(members, [1.0] * len(members))
        status = solver.solve(model)
        if status != model_builder.SolveStatus.OPTIMAL:
            break
        value = float(solver.objective_value) if members else 0.0
        bounds[priority] = fixed + math.floor(value + _SLACK)
        # The next priorities are bounded given this one's pods as placed.
        if members:
            floor = max(placed.get(priority, 0) - fixed, 0)
            _row(helper, members, [1.0] * len(members), floor - _SLACK, math.inf)
    return bounds


def _node_classes(room: np.ndarray, feasible: np.ndarray) -> np.ndarray:
    """Per row, its node class: same room and same feasible classes; by feasible
    classes alone when that makes too many."""
    bits = np.packbits(feasible, axis=1)
    groups = _same_rows(np.hstack([room.view(np.uint8).reshape(len(room), -1), bits]))
    if groups.max(initial=0) + 1 > _MAX_NODE_CLASSES:
        groups = _same_rows(bits)
    return groups


def _same_rows(keys: np.ndarray) -> np.ndarray:
    """Per row of `keys`, the index of the first distinct row equal to it (a dict
    of the rows' bytes: np.unique(axis=0) sorts, and took tens of milliseconds)."""
    keys = np.ascontiguousarray(keys)
    seen: dict[bytes, int] = {}
    return np.array([seen.setdefault(row.tobytes(), len(seen)) for row in keys], np.intp)


def _anti_affinity_rows(
    helper: ModelBuilderHelper,
    problem: Problem,
    modelled: Sequence[int],
    y: Mapping[tuple[int, int], int],
) -> None:
    """A class that repels itself: at most one pod per domain of the topology key
    among its feasible rows (when every one of them has the key: a node without
    it is in no domain, and takes any number)."""
    position = {c: j for j, c in enumerate(modelled)}
    for rule in problem.anti_affinity:
        j = position.get(rule.owner)
        if j is None or rule.owner not in rule.matched:
            continue
        cls = problem.classes[rule.owner]
        values = [problem.label_value(row, rule.topology_key) for row in cls.rows.tolist()]
        if None in values:
            continue
        variables = [v for (_, owner), v in y.items() if owner == j]
        if variables:
            _row(helper, variables, [1.0] * len(variables), 0.0, float(len(set(values))))


def _row(
    helper: ModelBuilderHelper,
    variables: Sequence[int],
    coeffs: Sequence[float],
    low: float,
    high: float,
) -> None:
    ct = helper.add_linear_constraint()
    helper.set_constraint_lower_bound(ct, low)
    helper.set_constraint_upper_bound(ct, high)
    for v, a in zip(variables, coeffs, strict=True):
        helper.add_term_to_constraint(ct, v, float(a))
