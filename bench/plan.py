"""`kubesched plan` at size: the quality and time of `--add-nodes` against its bound
and cluster-autoscaler's first-fit-decreasing estimator, and what `--remove-nodes`
frees on a half-full cluster.

- add-nodes: PODS pending pods (default 1,000) of 10 shapes (cpu, memory, some
  with GPUs), no node yet, and 10 node templates with prices (general, compute,
  memory and GPU shapes, the GPU ones tainted). Reported: the solver's nodes and
  cost, the estimator's, the proven bound (the better of CP-SAT's and the node
  patterns' relaxation's) and the gap to it, the verification, and the wall time, for each
  solver time limit asked (--timeouts).
- remove-nodes: NODES nodes (default 1,000) of 8 cpu and 32 GiB at 50%
  utilisation on average (pods of 500m to 2 cpu from ReplicaSets, so movable),
  without PDBs, then with a PDB per app allowing a quarter of its pods to be
  disrupted. Reported: nodes the plan frees, those the verification keeps
  freed, nodes blocked and why, and the wall time.

Medians of --repeat runs for the times; the answers are the same each run (a
fixed seed, and CP-SAT's with one worker: --workers 1 by default here).

    python -m bench.plan --pods 1000 --nodes 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec

from bench.machine import wait_quiet
from kubesched.api.objects import Node, Pod, PodDisruptionBudget
from kubesched.framework.profile import ProfileConfig
from kubesched.plan import NodePool, plan_add_nodes, plan_remove_nodes
from kubesched.simulation.simulator import World

# (name, cpu, memory, gpus, price): ten templates, the GPU ones tainted.
TEMPLATES = (
    ("general-4", "4", "16Gi", 0, "0.20"),
    ("general-8", "8", "32Gi", 0, "0.38"),
    ("general-16", "16", "64Gi", 0, "0.74"),
    ("compute-8", "8", "16Gi", 0, "0.34"),
    ("compute-32", "32", "64Gi", 0, "1.30"),
    ("memory-8", "8", "64Gi", 0, "0.50"),
    ("memory-16", "16", "128Gi", 0, "0.98"),
    ("gpu-1", "8", "32Gi", 1, "0.90"),
    ("gpu-4", "32", "128Gi", 4, "3.20"),
    ("gpu-8", "64", "256Gi", 8, "6.10"),
)
# (cpu, memory, gpus) of the pending pods, in turn.
SHAPES = (
    ("500m", "1Gi", 0),
    ("1", "2Gi", 0),
    ("2", "4Gi", 0),
    ("250m", "512Mi", 0),
    ("1", "8Gi", 0),
    ("4", "8Gi", 0),
    ("2", "16Gi", 0),
    ("3", "6Gi", 0),
    ("4", "16Gi", 1),
    ("8", "32Gi", 2),
)


def pools() -> list[NodePool]:
    out = []
    for name, cpu, memory, gpus, price in TEMPLATES:
        allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
        spec: dict[str, Any] = {}
        if gpus:
            allocatable["nvidia.com/gpu"] = str(gpus)
            spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
        node = msgspec.convert({"spec": spec, "status": {"allocatable": allocatable}}, Node)
        out.append(NodePool(name, node, Decimal(price), None))
    return out


def pending_pods(count: int) -> list[Pod]:
    pods = []
    for i in range(count):
        cpu, memory, gpus = SHAPES[i % len(SHAPES)]
        requests: dict[str, str] = {"cpu": cpu, "memory": memory}
        spec: dict[str, Any] = {}
        if gpus:
            requests["nvidia.com/gpu"] = str(gpus)
            spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
        pods.append(_pod(f"p-{i:05d}", requests, spec=spec, app=f"shape-{i % len(SHAPES)}"))
    return pods


def _pod(
    name: str,
    requests: dict[str, str],
    *,
    app: str,
    node: str = "",
    spec: dict[str, Any] | None = None,
) -> Pod:
    body: dict[str, Any] = {
        "containers": [{"name": "c", "image": "app", "resources": {"requests": requests}}],
        **(spec or {}),
    }
    if node:
        body["nodeName"] = node
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"uid-{name}",
                "labels": {"app": app},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": app,
                        "uid": f"rs-{app}",
                        "controller": True,
                    }
                ],
            },
            "spec": body,
        },
        Pod,
    )


def half_full_cluster(nodes: int) -> tuple[list[Node], list[Pod], list[PodDisruptionBudget]]:
    """NODES nodes of 8 cpu, 32 GiB; pods of 500m to 2 cpu filling 50% on average
    (25% to 75% per node, in a fixed pattern); one PDB per app allowing a quarter
    of its pods to be disrupted."""
    node_list: list[Node] = []
    pods: list[Pod] = []
    sizes = ("500m", "1", "2", "1", "500m", "2")
    for i in range(nodes):
        name = f"node-{i:04d}"
        node_list.append(
            msgspec.convert(
                {
                    "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
                },
                Node,
            )
        )
        target = (2 + i % 5) * 1000  # 2 to 6 cpu of 8: 50% on average
        used, j = 0, 0
        while used < target:
            cpu = sizes[(i + j) % len(sizes)]
            millis = int(float(cpu) * 1000) if not cpu.endswith("m") else int(cpu[:-1])
            app = f"app-{(i * 7 + j) % 50}"
            pods.append(_pod(f"r-{i:04d}-{j}", {"cpu": cpu, "memory": "2Gi"}, app=app, node=name))
            used += millis
            j += 1
    per_app = Counter(p.metadata.labels["app"] for p in pods)
    pdbs = [
        msgspec.convert(
            {
                "metadata": {"name": app, "namespace": "default"},
                "spec": {"maxUnavailable": "25%", "selector": {"matchLabels": {"app": app}}},
                "status": {"disruptionsAllowed": count // 4},
            },
            PodDisruptionBudget,
        )
        for app, count in sorted(per_app.items())
    ]
    return node_list, pods, pdbs


def bench_add(
    pods: int, timeout: float, repeat: int, workers: int, quiet_wait: float = 30.0
) -> dict[str, Any]:
    world = World([], pending_pods(pods), [ProfileConfig.default()])
    walls: list[float] = []
    result = None
    for _ in range(repeat):
        wait_quiet(max_wait=quiet_wait)
        result = plan_add_nodes(world, pools(), timeout=timeout, seed=1, workers=workers)
        walls.append(result.wall_seconds)
    assert result is not None
    bound = None if result.lower_bound is None else Decimal(result.lower_bound)
    solver_cost = Decimal(result.solver.total_cost or "0")
    estimator_cost = Decimal(result.estimator.total_cost or "0")
    gap = None if not bound else float((solver_cost - bound) / bound)
    return {
        "pods": pods,
        "templates": len(TEMPLATES),
        "timeout": timeout,
        "solver_status": result.solver_status,
        "solver": {"nodes": result.solver.total_nodes, "cost": str(solver_cost)},
        "estimator": {"nodes": result.estimator.total_nodes, "cost": str(estimator_cost)},
        "bound": None if bound is None else str(bound),
        "gap_to_bound": gap,
        "verified": {
            "scheduled": result.verification.scheduled,
            "nodes": result.verified.total_nodes,
            "cost": result.verified.total_cost,
            "simulations": result.verification.rounds,
        },
        "wall_seconds": {"min": min(walls), "median": statistics.median(walls), "max": max(walls)},
        "solver_seconds": result.solver_seconds,
    }


def bench_remove(
    nodes: int, repeat: int, with_pdbs: bool, quiet_wait: float = 30.0
) -> dict[str, Any]:
    node_list, pods, pdbs = half_full_cluster(nodes)
    world = World(node_list, pods, [ProfileConfig.default()], pdbs if with_pdbs else [])
    walls: list[float] = []
    result = None
    for _ in range(repeat):
        wait_quiet(max_wait=quiet_wait)
        result = plan_remove_nodes(world, seed=1)
        walls.append(result.wall_seconds)
    assert result is not None
    return {
        "nodes": nodes,
        "pods": len(pods),
        "pdbs": with_pdbs,
        "planned": result.verification.planned,
        "verified": result.verification.verified,
        "blocked": dict(Counter(b.rule or b.reason for b in result.blocked)),
        "rounds": result.verification.rounds,
        "wall_seconds": {"min": min(walls), "median": statistics.median(walls), "max": max(walls)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--timeouts", default="5,20", help="solver time limits, seconds")
    parser.add_argument("--workers", type=int, default=1, help="CP-SAT's workers")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "machine": platform.processor() or platform.machine(),
        "repeat": args.repeat,
        "add_nodes": [],
    }
    print(f"plan --add-nodes: {args.pods} pending pods, {len(TEMPLATES)} templates")
    print(
        f"{'limit s':>8}{'status':>10}{'solver':>18}{'estimator':>18}{'bound':>9}{'gap':>7}"
        f"{'verified (simulations)':>26}{'wall s':>8}"
    )
    for text in args.timeouts.split(","):
        row = bench_add(args.pods, float(text), args.repeat, args.workers)
        figures["add_nodes"].append(row)
        gap = "" if row["gap_to_bound"] is None else f"{row['gap_to_bound']:.1%}"
        check = row["verified"]
        verified = (
            f"{'' if check['scheduled'] else 'NOT '}{check['nodes']} n {check['cost']:>9}"
            f" ({check['simulations']})"
        )
        print(
            f"{row['timeout']:>8g}{row['solver_status']:>10}"
            f"{row['solver']['nodes']:>6} n {row['solver']['cost']:>9}"
            f"{row['estimator']['nodes']:>6} n {row['estimator']['cost']:>9}"
            f"{row['bound'] or '-':>9}{gap:>7}"
            f"{verified:>26}"
            f"{row['wall_seconds']['median']:>8.1f}"
        )
    figures["remove_nodes"] = []
    for with_pdbs in (False, True):
        removal = bench_remove(args.nodes, args.repeat, with_pdbs)
        figures["remove_nodes"].append(removal)
        print(
            f"\nplan --remove-nodes: {removal['nodes']} nodes, {removal['pods']} pods at 50% "
            f"utilisation, {'a PDB per app (25%)' if with_pdbs else 'no PDB'}: "
            f"{removal['planned']} planned, {removal['verified']} verified free "
            f"({removal['rounds']} simulations); blocked {removal['blocked']}; "
            f"{removal['wall_seconds']['median']:.1f} s median "
            f"[{removal['wall_seconds']['min']:.1f}-{removal['wall_seconds']['max']:.1f}]"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
