"""`kubesched sweep` on one machine: 100 variations of a 1,000-node cluster, run in
one process, on local worker processes and on a local Ray cluster; the wall time
of each, and the scaling efficiency against the one-process run.

The cluster: NODES nodes of 8 cpu and 32 GiB in 3 zones, half full (4 running pods
of 1 cpu and 4 GiB on each), and PENDING (1,500) pending pods of 1 cpu and 2 GiB from 10
Deployments. The variations (100 by default): 0 to 45 nodes of a pool added (10
values) × 2 scheduler configs (the default profile, and NodeResourcesFit with
MostAllocated) × 5 workload scales (1 to 3). Each is a full simulate.

Scaling efficiency = T(one process) / (workers × T(workers)): 1.0 would be a
perfect split over the workers. Local workers and Ray both use WORKERS slots (the
machine's 2 cores by default). The base cluster's load (parsing the manifests,
once per sweep, in the driver) is outside the times: what is compared is how the
variations are run.

    python -m bench.sweep --nodes 1000 --variations 100 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.machine import CpuMeter, wait_quiet
from bench.ray_local import local_ray
from kubesched.cluster.manifests import load_paths
from kubesched.config.file import load_config
from kubesched.framework.features import DEFAULT_GATES
from kubesched.framework.profile import ProfileConfig
from kubesched.plan.pools import load_pools
from kubesched.sweep.engines import Engine, LocalEngine, RayEngine
from kubesched.sweep.spec import Variation
from kubesched.sweep.task import SweepBase, VariationResult, VariationSetup

ZONES = ("a", "b", "c")
MOST_ALLOCATED = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "MostAllocated",
                            "resources": [
                                {"name": "cpu", "weight": 1},
                                {"name": "memory", "weight": 1},
                            ],
                        }
                    },
                }
            ],
        }
    ],
}


def cluster_documents(nodes: int, pending: int) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for i in range(nodes):
        name = f"node-{i:04d}"
        zone = ZONES[i % len(ZONES)]
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "topology.kubernetes.io/zone": zone,
                    },
                },
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            }
        )
        for j in range(4):
            docs.append(_pod(f"run-{i:04d}-{j}", "1", "4Gi", node=name, app=f"svc-{i % 20}"))
    for k in range(pending):
        docs.append(_pod(f"new-{k:05d}", "1", "2Gi", app=f"web-{k % 10}"))
    return docs


def _pod(name: str, cpu: str, memory: str, *, app: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ]
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": spec,
    }


POOLS = {
    "apiVersion": "kubesched.io/v1alpha1",
    "kind": "NodePools",
    "pools": [
        {
            "name": "general",
            "price": 0.4,
            "node": {
                "metadata": {"labels": {"topology.kubernetes.io/zone": "a"}},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
            },
        }
    ],
}


def setups(folder: Path, variations: int) -> list[VariationSetup]:
    """The grid: nodes added × config × scale, cut to VARIATIONS."""
    (folder / "most.yaml").write_text(yaml.safe_dump(MOST_ALLOCATED))
    configs = {
        "default": [ProfileConfig.default()],
        "most.yaml": load_config(folder / "most.yaml").profiles,
    }
    out: list[VariationSetup] = []
    for added in range(0, 50, 5):
        for config, profiles in configs.items():
            for scale in (1.0, 1.5, 2.0, 2.5, 3.0):
                variation = Variation(len(out), {"general": added}, config, scale, "", "bench")
                out.append(VariationSetup(variation, profiles, None, DEFAULT_GATES, 0, 1))
    return out[:variations]


def timed(
    engine: Engine, base: SweepBase, work: list[VariationSetup]
) -> tuple[float, list[VariationResult], dict[str, float]]:
    rows: list[VariationResult] = []
    meter = CpuMeter().start()
    started = time.perf_counter()
    engine.run(base, work, rows.append)
    wall = time.perf_counter() - started
    return wall, rows, meter.stop()


def _signature(rows: list[VariationResult]) -> list[tuple[int, int, int, int]]:
    return sorted((r.index, r.placed, r.pending, r.nodes_used) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pending", type=int, default=1500)
    parser.add_argument("--variations", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quiet-wait", type=float, default=30.0)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    (folder / "cluster.yaml").write_text(
        yaml.safe_dump_all(cluster_documents(args.nodes, args.pending))
    )
    (folder / "pools.yaml").write_text(yaml.safe_dump(POOLS))
    loading = time.perf_counter()
    base = SweepBase(
        load_paths([folder / "cluster.yaml"]),
        {p.name: p for p in load_pools(folder / "pools.yaml")},
    )
    print(f"cluster: {args.nodes} nodes, loaded in {time.perf_counter() - loading:.1f} s")
    work = setups(folder, args.variations)
    walls: dict[str, list[float]] = {"one process": [], "local workers": [], "ray": []}
    foreign: dict[str, list[float]] = {k: [] for k in walls}
    reference: list[tuple[int, int, int, int]] | None = None
    with local_ray(cpus=args.workers) as address:
        engines: dict[str, Callable[[], Engine]] = {
            "one process": lambda: LocalEngine(1),
            "local workers": lambda: LocalEngine(args.workers),
            "ray": lambda: RayEngine(address),
        }
        for attempt in range(args.repeat):
            for name, make in engines.items():
                wait_quiet(max_wait=args.quiet_wait)
                wall, rows, cpu = timed(make(), base, work)
                walls[name].append(wall)
                foreign[name].append(cpu["foreign_share"])
                signature = _signature(rows)
                if reference is None:
                    reference = signature
                elif signature != reference:
                    raise SystemExit(f"{name}: rows differ from the one-process run's")
                print(
                    f"  run {attempt + 1} {name}: {wall:.1f} s for {len(rows)} variations "
                    f"(others took {cpu['foreign_share']:.0%} of the CPUs; for ray, its own "
                    "processes count as others)"
                )
    serial = statistics.median(walls["one process"])
    figures: dict[str, Any] = {
        "nodes": args.nodes,
        "pending": args.pending,
        "variations": len(work),
        "workers": args.workers,
        "repeat": args.repeat,
        "machine": f"{platform.processor() or platform.machine()}, {args.workers} slots",
        "engines": {},
    }
    print(f"\nsweep of {len(work)} variations, {args.nodes} nodes, medians of {args.repeat}:")
    print(f"{'engine':<15}{'wall s':>9}{'min':>8}{'max':>8}{'var/s':>8}{'speed-up':>10}{'eff.':>7}")
    for name, runs in walls.items():
        median = statistics.median(runs)
        slots = 1 if name == "one process" else args.workers
        speedup = serial / median
        figures["engines"][name] = {
            "wall_seconds": {"min": min(runs), "median": median, "max": max(runs)},
            "variations_per_second": len(work) / median,
            "speedup": speedup,
            "efficiency": speedup / slots,
            "foreign_share": statistics.median(foreign[name]),
        }
        print(
            f"{name:<15}{median:>9.1f}{min(runs):>8.1f}{max(runs):>8.1f}"
            f"{len(work) / median:>8.2f}{speedup:>10.2f}{speedup / slots:>7.0%}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
