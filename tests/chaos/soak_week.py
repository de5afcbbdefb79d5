"""`make soak`: a simulated week of node and pod churn through kubesched's
scheduler; does what it keeps stay flat?

    python -m tests.chaos.soak_week [--days 7] [--nodes 200] [--pods-per-minute 10]
        [--lifetime 90] [--node-every 2] [--warmup 1] [--max-slope 1.0]

In process, on the in-memory cluster with the simulator's clock (`simulate`'s
scheduler, the same code as `run`'s), so that a week takes minutes. Each
simulated minute:

- PODS_PER_MINUTE pods are created and each is deleted LIFETIME minutes (half to
  one and a half times that, at random) after it was created. They belong to a
  few Deployments whose pod-template-hash changes each simulated day (a rollout),
  some spread over zones, some repel each other by hostname; 2 % select a node
  that does not exist and stay pending until deleted.
- Every NODE_EVERY minutes the oldest node is tainted as cluster-autoscaler does
  before a scale-down (ToBeDeletedByClusterAutoscaler, the time as its value),
  then deleted with its pods (as the pod GC does), and a new node joins with a
  hostname, a zone and an instance-id label of its own.
- The cluster's event log is emptied (the API server keeps events for an hour).

Every 6 simulated hours it samples the process's resident memory (VmRSS), the
number of objects the garbage collector tracks, and the sizes of what the
scheduler keeps (label values, taint sets, queue, cache, nominator). After the
run it prints the samples and, over the samples after WARMUP days, the
least-squares slope of the memory in MiB per simulated day and of the objects
in percent of their mean per day. Exit code 1 if either slope exceeds
MAX_SLOPE (MiB per day, and percent per day), 2 if the run itself failed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import os
import random
import sys
import time
from collections import deque
from dataclasses import dataclass, field

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.framework.clock import SimClock
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.state.node_table import NodeTable
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from tests.chaos.checks import slope, table
from tests.chaos.harness import vm_rss_kib

MINUTE = 60.0
SAMPLE_EVERY_MINUTES = 6 * 60
ZONES = ("zone-a", "zone-b", "zone-c")
APPS = 8


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.soak_week", description=__doc__)
    parser.add_argument("--days", type=float, default=float(os.environ.get("SOAK_DAYS", "7")))
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods-per-minute", type=int, default=10)
    parser.add_argument("--lifetime", type=float, default=90.0, help="mean minutes a pod lives")
    parser.add_argument("--node-every", type=float, default=2.0, help="minutes between node swaps")
    parser.add_argument("--warmup", type=float, default=1.0, help="days the slopes leave out")
    parser.add_argument(
        "--max-slope",
        type=float,
        default=float(os.environ.get("SOAK_MAX_SLOPE", "1.0")),
        help="MiB per simulated day, and percent of the objects per day: more is a failure",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--without-compaction",
        action="store_true",
        help="turn the node table's compaction off: the soak must then fail (its own test)",
    )
    return parser.parse_args(argv)


@dataclass
class Sample:
    minute: float
    rss_mib: float
    objects: int
    sizes: dict[str, int] = field(default_factory=dict)


def make_node(seq: int) -> Node:
    name = f"node-{seq}"
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "topology.kubernetes.io/zone": ZONES[seq % len(ZONES)],
                    "node.kubernetes.io/instance-id": f"i-{seq:012x}",
                },
            },
            "status": {
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": 110},
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": 110},
            },
        },
        Node,
    )


def tainted_for_removal(node: Node, minute: float) -> Node:
    taint = {
        "key": "ToBeDeletedByClusterAutoscaler",
        "value": str(int(minute * MINUTE)),
        "effect": "NoSchedule",
    }
    raw = msgspec.to_builtins(node)
    raw["spec"] = {**raw.get("spec", {}), "taints": [taint]}
    return msgspec.convert(raw, Node)


def make_pod(seq: int, minute: float, rng: random.Random) -> Pod:
    app = f"app-{seq % APPS}"
    day = int(minute // (24 * 60))
    template = f"{(hash((app, day)) & 0xFFFFFFFF):08x}"[:10]
    labels = {"app": app, "pod-template-hash": template}
    spec: dict[str, object] = {
        "schedulerName": "default-scheduler",
        "containers": [
            {
                "name": "c",
                "image": f"registry.example/{app}:{day}",
                "resources": {
                    "requests": {"cpu": f"{rng.choice((100, 250, 500))}m", "memory": "256Mi"}
                },
            }
        ],
    }
    kind = seq % 50
    if kind == 0:
        spec["nodeSelector"] = {"kubernetes.io/hostname": "no-such-node"}
    elif kind % 5 == 1:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    elif kind % 7 == 2:
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": app}},
                        },
                    }
                ]
            }
        }
    return msgspec.convert(
        {
            "metadata": {
                "name": f"{app}-{template}-{seq:x}",
                "namespace": "soak",
                "uid": f"uid-{seq}",
                "labels": labels,
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": spec,
        },
        Pod,
    )


def sizes(sched: Scheduler) -> dict[str, int]:
    """What the scheduler keeps, by structure: a leak shows here by name."""
    table_ = sched.table
    queue = sched.queue
    return {
        "nodes": len(table_),
        "label keys": len(table_.labels),
        "label values": sum(len(c.values) for c in table_.labels.values()),
        "taint sets": len(table_.taint_sets),
        "images": len(table_.images),
        "placed pods": len(sched.cache.placed),
        "assumed pods": len(sched.cache.assumed),
        "queued pods": len(queue.active) + len(queue.backoff) + len(queue.unschedulable),
        "nominated pods": len(sched.nominator),
        "last failures": len(sched.last_failures),
        "waiting pods": len(sched.waiting_pods),
    }


async def soak(args: argparse.Namespace) -> list[Sample]:
    rng = random.Random(args.seed)
    clock = SimClock()
    cluster = InMemoryCluster()
    sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=args.seed)
    cluster.watch(sched)
    nodes: deque[int] = deque()
    for seq in range(args.nodes):
        cluster.add_node(make_node(seq))
        nodes.append(seq)
    next_node = args.nodes
    pod_seq = 0
    deaths: list[tuple[float, str]] = []  # (minute, pod key), kept sorted by a heap
    samples: list[Sample] = []
    minutes = int(args.days * 24 * 60)
    next_swap = args.node_every
    for minute in range(1, minutes + 1):
        now = minute * MINUTE
        if clock.now() < now:
            clock.advance_to(now)
        sched.queue.flush_backoff_completed()
        for _ in range(args.pods_per_minute):
            pod = make_pod(pod_seq, minute, rng)
            pod_seq += 1
            cluster.add_pod(pod)
            life = args.lifetime * rng.uniform(0.5, 1.5)
            heapq.heappush(deaths, (minute + life, pod.key))
        while deaths and deaths[0][0] <= minute:
            _, key = heapq.heappop(deaths)
            cluster.remove_pod(key)
        while minute >= next_swap:
            next_swap += args.node_every
            old = nodes.popleft()
            name = f"node-{old}"
            cluster.add_node(tainted_for_removal(cluster.nodes[name], minute))
            cluster.delete_node(name)
            for key in [k for k, p in cluster.pods.items() if p.spec.node_name == name]:
                cluster.remove_pod(key)  # the pod GC's
            cluster.add_node(make_node(next_node))
            nodes.append(next_node)
            next_node += 1
        await run_until_quiet(sched, clock)
        cluster.events.clear()
        if minute % SAMPLE_EVERY_MINUTES == 0:
            gc.collect()
            samples.append(
                Sample(
                    minute,
                    (vm_rss_kib(os.getpid()) or 0) / 1024.0,
                    len(gc.get_objects()),
                    sizes(sched),
                )
            )
            last = samples[-1]
            print(
                f"day {minute / 1440:5.2f}: rss {last.rss_mib:7.1f} MiB, "
                f"{last.objects:>9,} objects, {last.sizes['placed pods']} pods placed, "
                f"{last.sizes['label values']} label values",
                flush=True,
            )
    return samples


def verdict(samples: list[Sample], warmup_days: float, max_slope: float) -> tuple[int, str]:
    steady = [s for s in samples if s.minute / 1440 > warmup_days]
    if len(steady) < 2:
        return 2, "too few samples after the warm-up: run longer than --warmup"
    rss = slope([(s.minute / 1440, s.rss_mib) for s in steady])
    mean_objects = sum(s.objects for s in steady) / len(steady)
    objects = 100 * slope([(s.minute / 1440, float(s.objects)) for s in steady]) / mean_objects
    first, last = steady[0], steady[-1]
    rows: list[tuple[str, object]] = [
        ("samples after the warm-up", len(steady)),
        ("rss start / end (MiB)", f"{first.rss_mib:.1f} / {last.rss_mib:.1f}"),
        ("rss slope (MiB per day)", f"{rss:+.2f}"),
        ("objects start / end", f"{first.objects:,} / {last.objects:,}"),
        ("objects slope (% per day)", f"{objects:+.2f}"),
    ]
    rows += [
        (f"{name} start / end", f"{first.sizes[name]} / {v}") for name, v in last.sizes.items()
    ]
    failed = rss > max_slope or objects > max_slope
    return (1 if failed else 0), table(rows)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.without_compaction:
        NodeTable._maybe_compact = lambda self: None  # type: ignore[method-assign]
    started = time.monotonic()
    try:
        samples = asyncio.run(soak(args))
    except Exception as exc:  # the run itself failed: not a verdict on memory
        print(f"soak failed: {exc!r}", file=sys.stderr)
        raise
    code, report = verdict(samples, args.warmup, args.max_slope)
    print(f"\n{args.days:g} simulated days in {time.monotonic() - started:.0f} s:")
    print(report)
    if code == 1:
        print(f"memory grows: a slope above {args.max_slope} per day", file=sys.stderr)
    elif code == 2:
        print(report, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
