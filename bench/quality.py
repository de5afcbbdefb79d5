"""How much the batch engine places beyond greedy: `make bench-quality`.

    python -m bench.quality [--timeout 1] [--seed 1] [--trace NAME ...]

Each trace (bench/quality_traces.py) is simulated as `kubesched simulate` would
(the real scheduler, greedy, one pod at a time), then placed jointly by the
engine from greedy's answer, as `simulate --optimize` does. Per trace: pods
placed by greedy, by the engine and the solver's bound; nodes used (with the
bound when every pod fits and the objective is nodes); solve time (the
engine's whole run: the model built from the filters, the solves, the replay
through the filters).
"""

from __future__ import annotations

import argparse
import os
import platform

from bench.quality_traces import TRACES, Trace
from kubesched.batch import Objective
from kubesched.framework.profile import ProfileConfig
from kubesched.simulation.optimize import Comparison, optimize
from kubesched.simulation.simulator import World, simulate


def run_trace(trace: Trace, timeout: float, seed: int) -> tuple[int, Comparison]:
    profiles = [ProfileConfig.default()]
    greedy = simulate(trace.nodes, trace.pods, profiles, seed=seed)
    world = World(trace.nodes, trace.pods, profiles)
    objective: Objective = "nodes" if trace.fits else "pods"
    comparison = optimize(world, greedy, objective=objective, timeout=timeout, seed=seed)
    assert comparison is not None
    return greedy.scheduled, comparison


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--trace", action="append", choices=sorted(TRACES))
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"load average {load:.2f} at start; timeout {args.timeout}s, seed {args.seed}"
    )
    header = (
        "| trace | pods × nodes | greedy | engine | bound | gain | nodes used greedy → engine "
        "(bound) | solver | solve s |"
    )
    print(header)
    print("|" + "---|" * 9)
    gains = []
    for name in args.trace or list(TRACES):
        trace = TRACES[name](args.seed)
        greedy_count, comparison = run_trace(trace, args.timeout, args.seed)
        batch = comparison.batch
        bound = sum(batch.bound.values()) if batch.bound else None
        gain = (batch.total - greedy_count) / greedy_count * 100 if greedy_count else 0.0
        if greedy_count < len(trace.pods):
            gains.append(gain)
        nodes = f"{batch.greedy_nodes_used} → {batch.nodes_used}"
        if batch.nodes_bound is not None:
            nodes += f" ({batch.nodes_bound})"
        print(
            f"| {name} | {len(trace.pods)} × {len(trace.nodes)} | {greedy_count} | "
            f"{batch.total} | {'-' if bound is None else bound} | {gain:+.1f}% | {nodes} | "
            f"{batch.solver_status} | {batch.solve_seconds:.2f} |",
            flush=True,
        )
    if gains:
        print(
            f"\nmean gain over greedy on the traces where greedy leaves pods pending: "
            f"{sum(gains) / len(gains):+.1f}% ({len(gains)} traces); "
            f"load average {os.getloadavg()[0]:.2f} at the end"
        )


if __name__ == "__main__":
    main()
