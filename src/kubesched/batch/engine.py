"""The batch placement engine: place pending pods jointly, never worse than greedy.

`place_batch` takes the cluster as it is (a node table holding none of the
batch), the batch, the active profile (its Framework) and greedy's placement of
the batch (what the scheduler, one pod at a time, made of it). It builds the
model from the profile's plugins (problem.py), solves it under a time limit
with greedy's placement as the starting solution (solver.py; a model too large
to solve whole within the limit is solved a neighbourhood of nodes at a time,
neighbourhood.py), then replays the answer through the profile's PreFilter and
Filter plugins, pod by pod, on the cluster as it fills up. Pods the replay
refuses are left out; if what remains places fewer pods than greedy at some
priority (compared highest first), or is not better than greedy by the
objective, greedy's placement is the answer. The bound reported is CP-SAT's
where its phases finished, tightened by the linear relaxation's (bound.py),
which is always there.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubesched.batch.bound import load_model_builder, relaxation_bounds
from kubesched.batch.neighbourhood import improve, supported
from kubesched.batch.problem import Problem, build_problem
from kubesched.batch.solver import Objective, Solution, load_cp_model, solve
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.runtime.errors import PluginError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import NodeTable, SavedRow
from kubesched.framework.types import PodInfo

__all__ = [
    "BatchPlacement",
    "Objective",
    "PreparedBatch",
    "finish_batch",
    "place_batch",
    "prepare_batch",
    "replay",
]

# Above this many integer variables, CP-SAT's presolve of the whole model takes
# about the second (48,300 at 1,000 pods × 500 nodes took 0.6 s to load and stop
# in presolve): the model is then solved by neighbourhoods.
WHOLE_MODEL_VARIABLES = 10_000
# Time kept back from the neighbourhood search for the replay through the
# filters and the bound: the replay's cost per pod is measured on this many pods
# first (it was 0.15 ms a pod on a quiet machine and 0.45 ms at load 4, 1,000
# pods × 500 nodes), with this margin (a pod costs more as the nodes fill). A
# whole model's solve ends when CP-SAT proves its phases, usually well within the
# limit; it has the whole limit, as before.
_CALIBRATION_PODS = 32
_REPLAY_MARGIN = 1.6
# At least this share of the limit, whatever the few pods measured (a sample of
# milliseconds is noisy on a busy machine).
_REPLAY_SHARE = 0.2
_AFTER_SOLVE_SECONDS = 0.05


@dataclass(slots=True)
class BatchPlacement:
    """The engine's answer, with what it is compared with."""

    placements: dict[str, str]  # pod key -> node, for the pods placed
    source: str  # "engine" (the solver's placement) or "greedy" (kept)
    solver_status: str  # optimal | feasible | unknown | infeasible | none
    placed: dict[int, int]  # priority -> pods placed (the answer)
    greedy_placed: dict[int, int]  # priority -> pods greedy placed
    bound: dict[int, int]  # priority -> upper bound on pods placed (given higher ones)
    nodes_used: int  # nodes with any pod, in the answer
    greedy_nodes_used: int
    held: dict[str, str] = field(default_factory=dict)  # pod key -> why held at greedy's
    rejected: dict[str, str] = field(default_factory=dict)  # pod -> replay's message
    solve_seconds: float = 0.0
    note: str = ""
    # With objective "nodes": no placement of these pods by priority uses fewer nodes.
    nodes_bound: int | None = None

    @property
    def total(self) -> int:
        return sum(self.placed.values())


def load_solvers() -> None:
    """Import OR-Tools' CP-SAT and GLOP now (they are imported on first use: see
    solver.load_cp_model), so that the import is not counted in a time limit."""
    load_cp_model()
    load_model_builder()


@dataclass(slots=True)
class PreparedBatch:
    """A batch's model, built on the node table (`prepare_batch`), and what its
    solve needs. `solve` reads only the model, never the table: it may run in
    another thread while the scheduling cycles move the table on, and
    `finish_batch` then checks its answer on the table as it is by then."""

    problem: Problem
    pods: Sequence[PodInfo]
    greedy: Mapping[str, str]
    hint: list[dict[int, int]]
    held: dict[str, str]
    greedy_placed: dict[int, int]
    objective: Objective
    timeout: float
    workers: int
    started: float
    # Seconds for the neighbourhood search (None: the whole model is solved).
    neighbourhood_budget: float | None

    def solve(self) -> tuple[Solution | None, int]:
        """The solver's counts per class and row, and how many neighbourhood
        steps placed more (0 for a whole model)."""
        if self.neighbourhood_budget is not None:
            counts, rounds = improve(
                self.problem,
                self.hint,
                deadline=time.perf_counter() + self.neighbourhood_budget,
                workers=self.workers,
            )
            return Solution(counts, "feasible"), rounds
        solution = solve(
            self.problem,
            self.hint,
            objective=self.objective,
            timeout=max(self.timeout - (time.perf_counter() - self.started), 0.05),
            workers=self.workers,
            floors=self.greedy_placed,
        )
        return solution, 0


def place_batch(
    fw: Framework,
    table: NodeTable,
    pods: Sequence[PodInfo],
    greedy: Mapping[str, str],
    *,
    objective: Objective = "pods",
    timeout: float = 1.0,
    workers: int = 2,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> BatchPlacement:
    """Place `pods` (pending, none of them in `table`) jointly on `table`'s nodes;
    `greedy` is greedy's placement of them (pod key -> node name). The answer
    places at least as many pods as greedy at every priority, and the most pods
    by priority (highest first) among such placements that the solver finds in
    time; then the fewest nodes or the highest score, by `objective`."""
    prepared = prepare_batch(
        fw,
        table,
        pods,
        greedy,
        objective=objective,
        timeout=timeout,
        workers=workers,
        namespace_labels=namespace_labels,
    )
    solution, rounds = prepared.solve()
    return finish_batch(prepared, fw, table, solution, rounds)


def prepare_batch(
    fw: Framework,
    table: NodeTable,
    pods: Sequence[PodInfo],
    greedy: Mapping[str, str],
    *,
    objective: Objective = "pods",
    timeout: float = 1.0,
    workers: int = 2,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> PreparedBatch:
    """The model of place_batch's question, on `table` (which holds none of the
    pods), for PreparedBatch.solve."""
    load_solvers()  # the first call imports them: not part of the solver's time
    started = time.perf_counter()
    problem = build_problem(
        fw, table, pods, scores=objective == "score", namespace_labels=namespace_labels
    )
    hint = _counts(problem, greedy)
    held = {p.key: cls.held for cls in problem.classes if cls.held for p in cls.pods}
    greedy_placed = _by_priority(pods, greedy)
    size = sum(len(cls.rows) for cls in problem.classes if not cls.held)
    budget = None
    if size > WHOLE_MODEL_VARIABLES and supported(problem):
        # The rounds run to the deadline: the replay's time is kept back from them.
        replaying = max(_replay_seconds(fw, table, pods, greedy), _REPLAY_SHARE * timeout)
        reserve = _AFTER_SOLVE_SECONDS + replaying
        budget = max(timeout - reserve - (time.perf_counter() - started), 0.05)
    return PreparedBatch(
        problem,
        pods,
        greedy,
        hint,
        held,
        greedy_placed,
        objective,
        timeout,
        workers,
        started,
        budget,
    )


def finish_batch(
    prepared: PreparedBatch,
    fw: Framework,
    table: NodeTable,
    solution: Solution | None,
    rounds: int,
) -> BatchPlacement:
    """The answer from the solver's counts: the pods assigned to nodes, replayed
    through the filters on `table` (holding none of the pods), and compared with
    greedy's placement."""
    problem, pods, greedy = prepared.problem, prepared.pods, prepared.greedy
    hint, objective = prepared.hint, prepared.objective
    # Of the pods still in the batch (off the loop, some may have left it).
    greedy_placed = _by_priority(pods, greedy)
    started = prepared.started
    greedy_nodes = _nodes_used(table, greedy)
    nodes_bound = None
    if solution is not None and objective == "nodes" and solution.objective_bound is not None:
        nodes_bound = _nodes_used(table, {}) + solution.objective_bound
    keep = BatchPlacement(
        dict(greedy),
        "greedy",
        "none" if solution is None else solution.status,
        greedy_placed,
        greedy_placed,
        {} if solution is None else solution.bounds,
        greedy_nodes,
        greedy_nodes,
        prepared.held,
        solve_seconds=time.perf_counter() - started,
        nodes_bound=nodes_bound,
    )
    if solution is None:
        keep.bound = _bounds(problem, hint, greedy_placed, {}, {})
        keep.note = "the solver found no placement in time; greedy's is kept"
        keep.solve_seconds = time.perf_counter() - started
        return keep
    wanted = _assign(problem, solution.counts, greedy)
    accepted, rejected = replay(fw, table, pods, wanted)
    placed = _by_priority(pods, accepted)
    solved = _by_priority(pods, wanted)
    nodes = _nodes_used(table, accepted)
    keep.rejected = rejected
    better = _compare(placed, greedy_placed)
    if any(placed[p] < n for p, n in greedy_placed.items()):
        better = -1  # fewer than greedy at some priority: never the answer
    if better == 0 and objective == "nodes":
        better = greedy_nodes - nodes
    elif better == 0 and objective == "score":
        better = int(_score(problem, accepted) > _score(problem, greedy))
    by_neighbourhood = prepared.neighbourhood_budget is not None
    how = f"by neighbourhoods ({rounds} steps placed more)" if by_neighbourhood else ""
    if better <= 0:
        keep.note = (
            "greedy's placement is already as good"
            if not rejected
            else (
                f"the filters refused {len(rejected)} of the solver's placements; greedy's is kept"
            )
        )
        keep.note += f"; solved {how}" if how else ""
        keep.bound = _bounds(problem, hint, greedy_placed, solution.bounds, solved)
        keep.solve_seconds = time.perf_counter() - started
        return keep
    return BatchPlacement(
        accepted,
        "engine",
        solution.status,
        placed,
        greedy_placed,
        _bounds(problem, hint, placed, solution.bounds, solved),
        nodes,
        greedy_nodes,
        prepared.held,
        rejected,
        time.perf_counter() - started,
        note=f"solved {how}" if how else "",
        nodes_bound=nodes_bound,
    )


def _bounds(
    problem: Problem,
    hint: Sequence[Mapping[int, int]],
    placed: Mapping[int, int],
    solver_bounds: Mapping[int, int],
    solved: Mapping[int, int],
) -> dict[int, int]:
    """Priority -> bound on the pods placed there, given the answer's (`placed`)
    at every higher priority: the linear relaxation's, or CP-SAT's where lower.
    CP-SAT's phase for a priority was given the solver's counts above it
    (`solved`), so its bound holds for the answer only while those are the
    answer's (the replay may have refused some)."""
    bounds = relaxation_bounds(problem, hint, placed)
    for priority in sorted(solver_bounds, reverse=True):
        higher = [p for p in placed if p > priority]
        if any(solved.get(p, 0) != placed[p] for p in higher):
            break
        own = solver_bounds[priority]
        bounds[priority] = min(bounds.get(priority, own), own)
    return bounds


def replay(
    fw: Framework, table: NodeTable, pods: Sequence[PodInfo], placement: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Run each placed pod through the profile's PreFilter and Filter on its node,
    on the cluster as it fills up (the table is put back after). Pods go highest
    priority first; a pod refused is tried again after the others (a pod may need
    another there first, e.g. for the spread's minimum); what still fails is
    refused, with the filters' message. Returns (accepted, refused)."""
    order = sorted((p for p in pods if p.key in placement), key=lambda p: -p.priority)
    saved: dict[int, SavedRow] = {}
    accepted: dict[str, str] = {}
    refused: dict[str, str] = {}
    try:
        while order:
            waiting: list[PodInfo] = []
            for pod in order:
                node = placement[pod.key]
                row = table.row_of(node)
                message = "node not found" if row is None else _check(fw, table, pod, row)
                if message:
                    refused[pod.key] = message
                    waiting.append(pod)
                    continue
                assert row is not None
                if row not in saved:
                    saved[row] = table.save_row(row)
                table.add_pod(pod, row)
                accepted[pod.key] = node
                refused.pop(pod.key, None)
            if len(waiting) == len(order):
                break
            order = waiting
    finally:
        for kept in saved.values():
            table.restore_row(kept)
    return accepted, refused


def _replay_seconds(
    fw: Framework, table: NodeTable, pods: Sequence[PodInfo], greedy: Mapping[str, str]
) -> float:
    """What the replay of the whole batch will take, from the replay of a few of
    its pods (greedy's placement of them; the table is put back after)."""
    sample = [p for p in pods if p.key in greedy][:_CALIBRATION_PODS]
    if not sample:
        return 0.0
    started = time.perf_counter()
    replay(fw, table, sample, greedy)
    per_pod = (time.perf_counter() - started) / len(sample)
    return per_pod * len(pods) * _REPLAY_MARGIN


def _check(fw: Framework, table: NodeTable, pod: PodInfo, row: int) -> str:
    state = CycleState()
    try:
        pre, status = fw.run_pre_filter(state, pod, table)
        if not status.is_success():
            return status.message() or "PreFilter refused the pod"
        if pre.node_names is not None and table.names[row] not in pre.node_names:
            return "PreFilter left the node out"
        status = fw.filter_status_with_nominated_pods(state, pod, table, row)
    except PluginError as exc:
        return str(exc)
    return "" if status.is_success() else status.message()


def _counts(problem: Problem, placement: Mapping[str, str]) -> list[dict[int, int]]:
    counts: list[dict[int, int]] = []
    for cls in problem.classes:
        rows: Counter[int] = Counter()
        for pod in cls.pods:
            node = placement.get(pod.key)
            row = None if node is None else problem.row_of(node)
            if row is not None:
                rows[row] += 1
        counts.append(dict(rows))
    return counts


def _assign(
    problem: Problem,
    counts: Sequence[Mapping[int, int]],
    greedy: Mapping[str, str],
) -> dict[str, str]:
    """Pods of each class onto the class's counts per node: those greedy put on a
    node keep it where the count allows (fewer moves), the rest fill in."""
    placement: dict[str, str] = {}
    for cls, rows in zip(problem.classes, counts, strict=True):
        left = {problem.names[row]: n for row, n in rows.items() if n}
        rest: list[PodInfo] = []
        for pod in sorted(cls.pods, key=lambda p: p.key):
            node = greedy.get(pod.key)
            if node is not None and left.get(node, 0) > 0:
                placement[pod.key] = node
                left[node] -= 1
            else:
                rest.append(pod)
        slots = [node for node, n in sorted(left.items()) for _ in range(n)]
        for pod, node in zip(rest, slots, strict=False):
            placement[pod.key] = node
    return placement


def _by_priority(pods: Sequence[PodInfo], placement: Mapping[str, str]) -> dict[int, int]:
    placed: dict[int, int] = {p.priority: 0 for p in pods}
    for pod in pods:
        if pod.key in placement:
            placed[pod.priority] += 1
    return dict(sorted(placed.items(), reverse=True))


def _compare(a: Mapping[int, int], b: Mapping[int, int]) -> int:
    """> 0 if `a` places more pods than `b` at the first priority (highest first)
    where they differ, < 0 if fewer, 0 if the same everywhere."""
    for priority in sorted(set(a) | set(b), reverse=True):
        diff = a.get(priority, 0) - b.get(priority, 0)
        if diff:
            return diff
    return 0


def _nodes_used(table: NodeTable, placement: Mapping[str, str]) -> int:
    rows = table.order()
    occupied = {int(r) for r in rows if (node_row := table.rows[r]) is not None and node_row.pods}
    occupied.update(row for n in placement.values() if (row := table.row_of(n)) is not None)
    return len(occupied)


def _score(problem: Problem, placement: Mapping[str, str]) -> int:
    """The profile's total score of a placement, each pod scored on the cluster as
    it is (the scores the solver maximised)."""
    total = 0
    for cls in problem.classes:
        score_of = dict(zip(cls.rows.tolist(), cls.scores.tolist(), strict=False))
        for pod in cls.pods:
            node = placement.get(pod.key)
            row = None if node is None else problem.row_of(node)
            if row is not None:
                total += int(score_of.get(row, 0))
    return total
