"""Large-neighbourhood search: the batch model solved a few nodes at a time.

On a large batch (1,000 pods × 500 nodes, 181 pod classes: 48,300 integer
variables) CP-SAT's presolve alone takes longer than the second the engine
has. Here the model is solved over a neighbourhood of nodes at a time, every
other node keeping the pods the current placement gives it: the pods of the
neighbourhood and those still pending are placed again on its nodes, by the
same solve() (phases by priority, the neighbourhood's counts by priority as
floors), so a round never places fewer pods at any priority, and a higher
priority pod is never dropped for lower ones. The neighbourhood is the nodes
with the most room left among those a pending class may use, plus random
others that may take what they give up; a round that places more keeps its
answer. This is the large-neighbourhood search of Shaw (1998), the one CP-SAT
runs inside its own workers, made cheap by building only the small model.

Required anti-affinity is exact only when its topology domains are single
nodes (the sub-model sees only its nodes' pods); with wider domains the search
is not used (`supported`), and the engine solves the whole model.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence

import numpy as np

from kubesched.batch.problem import AntiAffinity, PodClass, Problem
from kubesched.batch.repair import make_room
from kubesched.batch.solver import solve

__all__ = ["improve", "supported"]

# Integer variables per round, and its time: without presolve CP-SAT improves a
# model of this size within tens of milliseconds (on mixed-large, 1,500 variables
# and 0.06 s placed more pods in 0.6 s than 3,000 and 0.12 s, or 6,000 and 0.2 s).
_ROUND_VARIABLES = 1000
_ROUND_SECONDS = 0.04
_SHORTEST_ROUND = 0.02
# Rows a pending class may use, closest to having room for one of its pods, per round.
_TARGETS = 2


def supported(problem: Problem) -> bool:
    """Whether every anti-affinity domain is a single node (else a neighbourhood
    could miss a pod of the same domain on a node outside it)."""
    for rule in problem.anti_affinity:
        seen: set[str] = set()
        for row in problem.live_rows.tolist():
            value = problem.label_value(row, rule.topology_key)
            if value is None:
                continue
            if value in seen:
                return False
            seen.add(value)
    return True


def improve(
    problem: Problem,
    counts: Sequence[Mapping[int, int]],
    *,
    deadline: float,
    workers: int = 2,
    seed: int = 0,
) -> tuple[list[dict[int, int]], int]:
    """The quick pass that moves pods to make room (repair.py), then rounds of
    neighbourhood solves from `counts` (per class: row -> pods) until `deadline`
    (time.perf_counter()) or no pod is left pending. Returns the best counts
    found and how many of the pass and the rounds placed more."""
    rng = random.Random(seed)
    current = [dict(c) for c in counts]
    classes = problem.classes
    columns = np.array(sorted({col for cls in classes for col in cls.requests}), np.intp)
    asks = np.array(
        [[cls.requests.get(col, 0) for col in columns.tolist()] for cls in classes], np.int64
    )
    # Per row: the classes that may go there (the variables a row brings).
    per_row = np.bincount(
        np.concatenate([cls.rows for cls in classes if not cls.held] or [np.empty(0, np.intp)]),
        minlength=problem.capacity,
    )
    # Per row and column: what the batch's pods placed there ask (kept up to date).
    used = np.zeros((problem.capacity, len(columns)), np.int64)
    for c, placed in enumerate(current):
        for row, n in placed.items():
            used[row] += asks[c] * n
    # First the quick pass that moves pods to make room for pending ones.
    gains = int(make_room(problem, current, used, asks, columns, deadline=deadline) > 0)
    used[:] = 0
    for c, placed in enumerate(current):
        for row, n in placed.items():
            used[row] += asks[c] * n
    overrun = 0.0  # the most a round took beyond its time (building the model, threads)
    while True:
        left = deadline - time.perf_counter() - overrun
        if left < _SHORTEST_ROUND:
            break
        pending = [
            c
            for c, cls in enumerate(classes)
            if not cls.held and len(cls.rows) and sum(current[c].values()) < len(cls.pods)
        ]
        if not pending:
            break
        chosen = _neighbourhood(problem, used, asks, columns, pending, per_row, rng)
        if not chosen:
            break
        began = time.perf_counter()
        limit = min(left, _ROUND_SECONDS)
        found = _round(problem, current, chosen, limit, workers)
        overrun = max(overrun, time.perf_counter() - began - limit)
        if found is None:
            continue
        before = _placed(classes, current)
        for c, inside in found.items():
            kept = {r: n for r, n in current[c].items() if r not in chosen}
            kept.update({r: n for r, n in inside.items() if n})
            for row, n in current[c].items():
                used[row] -= asks[c] * n
            for row, n in kept.items():
                used[row] += asks[c] * n
            current[c] = kept
        if _placed(classes, current) != before:
            gains += 1
    return current, gains


def _placed(classes: Sequence[PodClass], counts: Sequence[Mapping[int, int]]) -> list[int]:
    by: dict[int, int] = {}
    for cls, rows in zip(classes, counts, strict=True):
        by[cls.priority] = by.get(cls.priority, 0) + sum(rows.values())
    return [by[p] for p in sorted(by, reverse=True)]


def _neighbourhood(
    problem: Problem,
    used: np.ndarray,
    asks: np.ndarray,
    columns: np.ndarray,
    pending: Sequence[int],
    per_row: np.ndarray,
    rng: random.Random,
) -> set[int]:
    """Rows for one round: a few a pending class may use, those closest to
    having room for one of its pods (mostly of the highest priority with pods
    pending), and the rows with the most room left, to take what those give up,
    up to _ROUND_VARIABLES variables. Random noise on both orders, so rounds differ."""
    classes = problem.classes
    rows = problem.live_rows
    left = (problem.free[np.ix_(rows, columns)] - used[rows]).astype(np.float64)
    position = np.full(int(rows.max()) + 1, -1, np.intp)
    position[rows] = np.arange(len(rows))
    top = max(classes[c].priority for c in pending)
    focus_on = [c for c in pending if classes[c].priority == top]
    focus = rng.choice(focus_on if rng.random() < 0.7 else list(pending))
    need = asks[focus].astype(np.float64)
    asked = need > 0
    mine = position[classes[focus].rows]
    mine = mine[mine >= 0]
    short = (
        np.maximum(need[None, asked] - left[np.ix_(mine, np.flatnonzero(asked))], 0.0)
        / need[None, asked]
    ).sum(axis=1)
    short += _noise(rng, len(mine), 0.5)
    chosen: list[int] = mine[np.argsort(short, kind="stable")[: rng.randint(1, _TARGETS)]].tolist()
    scale = np.maximum(problem.free[np.ix_(rows, columns)].astype(np.float64), 1.0)
    roomy = (np.maximum(left, 0.0) / scale).mean(axis=1)
    roomy += _noise(rng, len(rows), 0.3)
    budget = _ROUND_VARIABLES - int(per_row[rows[chosen]].sum())
    taken = set(chosen)
    for i in np.argsort(-roomy, kind="stable").tolist():
        if budget <= 0:
            break
        if i not in taken:
            taken.add(i)
            budget -= int(per_row[rows[i]])
    return {int(rows[i]) for i in taken}


def _noise(rng: random.Random, size: int, scale: float) -> np.ndarray:
    return np.random.default_rng(rng.getrandbits(64)).random(size) * scale


def _round(
    problem: Problem,
    counts: Sequence[Mapping[int, int]],
    chosen: set[int],
    timeout: float,
    workers: int,
) -> dict[int, dict[int, int]] | None:
    """Solve the model on the `chosen` rows, the batch's pods elsewhere fixed.
    Returns the new counts on those rows, per class of the problem."""
    index: list[int] = []  # sub-class -> class
    sub_classes: list[PodClass] = []
    hint: list[dict[int, int]] = []
    floors: dict[int, int] = {}
    chosen_rows = np.array(sorted(chosen), np.intp)
    in_chosen = np.zeros(len(problem.occupied), bool)
    in_chosen[chosen_rows] = True
    for c, cls in enumerate(problem.classes):
        inside = {r: n for r, n in counts[c].items() if r in chosen}
        outside = sum(counts[c].values()) - sum(inside.values())
        mask = in_chosen[cls.rows]
        rows = cls.rows[mask]
        free = len(cls.pods) - outside
        if free <= 0 or (not inside and (cls.held or not len(rows))):
            continue
        index.append(c)
        sub_classes.append(
            PodClass(
                cls.pods[:free],
                cls.priority,
                rows,
                cls.scores[mask] if len(cls.scores) else cls.scores,
                cls.requests,
                cls.held,
                cls.anti_affinity,
            )
        )
        hint.append(inside)
        floors[cls.priority] = floors.get(cls.priority, 0) + sum(inside.values())
    if not sub_classes:
        return None
    where = {c: i for i, c in enumerate(index)}
    sub = Problem(
        sub_classes,
        problem.free,
        chosen_rows,
        problem.occupied,
        [(where[i], where[j]) for i, j in problem.port_conflicts if i in where and j in where],
        [
            AntiAffinity(where[rule.owner], rule.topology_key, matched)
            for rule in problem.anti_affinity
            if rule.owner in where and (matched := [where[c] for c in rule.matched if c in where])
        ],
        problem.domain_labels,
        problem.names,
    )
    solution = solve(
        sub,
        hint,
        objective="pods",
        timeout=timeout,
        workers=workers,
        floors=floors,
        presolve=False,
    )
    if solution is None:
        return None
    return {c: solution.counts[i] for i, c in enumerate(index)}
