"""Make room for a pending pod by moving others: a quick pass before the
neighbourhood search.

A pending pod that no node has room for may fit on a node once a few of the
batch's pods there move to nodes with room to spare: the small pods that
LeastAllocated spread everywhere leave no node room for a large one. For each
pending pod, highest priority and largest first: a node it may use with room
for it takes it; otherwise, on the nodes it may use closest to having room,
the pods there whose moving covers what is missing are moved, each to the
node with the least room that still holds it (best fit), and if all of them
find one, the pending pod takes the room. Pods move, none is dropped, so no
priority loses a pod. This is an ejection chain of depth one, in numpy: a
pending pod costs milliseconds where a CP-SAT round costs tens of them.

Only the room (every column the batch asks for, the pod count included) and
the profile's filters' verdicts per class (build_problem's rows) are looked
at, so classes with host ports or in a required anti-affinity rule neither
move nor are placed here (the neighbourhood search handles them); the replay
through the filters checks the answer as always.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from kubesched.batch.problem import Problem

__all__ = ["make_room"]

# Nodes tried per pending pod, closest to having room first.
_TARGETS = 16


def make_room(
    problem: Problem,
    counts: list[dict[int, int]],
    used: np.ndarray,
    asks: np.ndarray,
    columns: np.ndarray,
    *,
    deadline: float,
) -> int:
    """Place pending pods by moving others (see the module's docstring);
    `counts` (per class: row -> pods) is updated in place; `used` is what the
    batch's pods ask per row and column (`columns`), as `counts` has them.
    Returns the pods placed."""
    classes = problem.classes
    fixed = {c for pair in problem.port_conflicts for c in pair}
    for rule in problem.anti_affinity:
        fixed.add(rule.owner)
        fixed.update(rule.matched)
    fixed.update(c for c, cls in enumerate(classes) if cls.held or cls.representative.host_ports)
    room = problem.free[:, columns] - used  # per row: what is left
    # Per row: the movable classes with pods there.
    on_row: dict[int, dict[int, int]] = {}
    for c, rows in enumerate(counts):
        if c not in fixed:
            for row, n in rows.items():
                on_row.setdefault(row, {})[c] = n
    size = asks / np.maximum(problem.free[problem.live_rows][:, columns].max(axis=0, initial=1), 1)
    order = sorted(
        (c for c in range(len(classes)) if c not in fixed and len(classes[c].rows)),
        key=lambda c: (-classes[c].priority, -float(size[c].sum())),
    )
    placed = 0
    for c in order:
        while sum(counts[c].values()) < len(classes[c].pods):
            if time.perf_counter() > deadline:
                return placed
            home = _direct(classes[c].rows, room, asks[c])
            if home is None:
                home = _by_moving(problem, c, counts, on_row, room, asks)
            if home is None:
                break
            _move(c, None, home, counts, on_row, room, asks)
            placed += 1
    return placed


def _direct(rows: np.ndarray, room: np.ndarray, need: np.ndarray) -> int | None:
    """The row among `rows` with room for `need` and the least left after (best fit)."""
    if not len(rows):
        return None
    fits = (room[rows] >= need).all(axis=1)
    if not fits.any():
        return None
    candidates = rows[fits]
    slack = ((room[candidates] - need) / np.maximum(room[candidates] + 1, 1)).sum(axis=1)
    return int(candidates[int(np.argmin(slack))])


def _by_moving(
    problem: Problem,
    c: int,
    counts: list[dict[int, int]],
    on_row: dict[int, dict[int, int]],
    room: np.ndarray,
    asks: np.ndarray,
) -> int | None:
    """A row of class `c` made to hold one more of its pods by moving pods off it,
    the moves done; None (nothing changed) if no row of the closest ones can."""
    need = asks[c]
    rows = problem.classes[c].rows
    short = np.maximum(need - room[rows], 0) / np.maximum(need, 1)
    for i in np.argsort(short.sum(axis=1), kind="stable")[:_TARGETS].tolist():
        target = int(rows[i])
        missing = np.maximum(need - room[target], 0)
        # Pods that free what is missing, those freeing the most of it first.
        pods: list[int] = []
        freed = np.zeros_like(missing)
        there = sorted(
            on_row.get(target, {}).items(),
            key=lambda item: -float((np.minimum(asks[item[0]], missing) / (missing + 1)).sum()),
        )
        for other, n in there:
            if other == c:
                continue
            for _ in range(n):
                if (freed >= missing).all():
                    break
                if (np.minimum(asks[other], missing - freed) > 0).any():
                    pods.append(other)
                    freed += asks[other]
        if not (freed >= missing).all():
            continue
        moves = _homes(problem, target, pods, room, asks)
        if moves is None:
            continue
        for other, home in moves:
            _move(other, target, home, counts, on_row, room, asks)
        return target
    return None


def _homes(
    problem: Problem,
    target: int,
    pods: Sequence[int],
    room: np.ndarray,
    asks: np.ndarray,
) -> list[tuple[int, int]] | None:
    """A row other than `target` for each of `pods` (classes), best fit, largest
    first, on the room as it would be; None if one finds none."""
    trial = room.copy()
    moves: list[tuple[int, int]] = []
    for other in sorted(pods, key=lambda o: -float(asks[o].sum())):
        rows = problem.classes[other].rows
        rows = rows[rows != target]
        home = _direct(rows, trial, asks[other])
        if home is None:
            return None
        trial[home] -= asks[other]
        moves.append((other, home))
    return moves


def _move(
    c: int,
    source: int | None,
    target: int,
    counts: list[dict[int, int]],
    on_row: dict[int, dict[int, int]],
    room: np.ndarray,
    asks: np.ndarray,
) -> None:
    """One pod of class `c` from `source` (None: pending) to `target`."""
    if source is not None:
        counts[c][source] -= 1
        if not counts[c][source]:
            del counts[c][source]
        on_row[source][c] -= 1
        if not on_row[source][c]:
            del on_row[source][c]
        room[source] += asks[c]
    counts[c][target] = counts[c].get(target, 0) + 1
    on_row.setdefault(target, {})[c] = on_row.get(target, {}).get(c, 0) + 1
    room[target] -= asks[c]
