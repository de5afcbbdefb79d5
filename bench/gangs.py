"""Gangs in process: Coscheduling on GANGS gangs of SIZE GPU pods mixed with single pods.

    python -m bench.gangs --gangs 100 --size 8 --singles 800 --nodes 90 --repeat 3

NODES nodes with 8 GPUs each; GANGS PodGroups (minMember SIZE) of SIZE pods asking for
one GPU each, interleaved with SINGLES single pods (cpu only, a quarter of them with one
GPU), all pending at once, scheduled by the configuration scheduler-plugins documents
(Coscheduling everywhere, the only queue sort). With fewer GPUs than the gangs ask for,
some gangs cannot fit: the figures say how many were placed whole, and check that no
gang was placed in part (the invariant Coscheduling exists for). The time is the
wall-clock of the simulation (simulated time for Permit waits is jumped over); CPU time
is the process's, so that a loaded machine shows in the gap.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from kubesched.api.objects import ObjectMeta, Pod
from kubesched.api.pod_groups import POD_GROUP_LABEL, PodGroup, PodGroupSpec, pod_group_key
from kubesched.framework.profile import DEFAULT_MULTI_POINT, PluginRef, PluginSet, ProfileConfig
from kubesched.simulation.simulator import SimulationResult, simulate
from kubesched.testing import make_node, make_pod

GPU = "nvidia.com/gpu"


def coscheduling_profile() -> ProfileConfig:
    return ProfileConfig(
        plugins={
            "multiPoint": PluginSet([*DEFAULT_MULTI_POINT, PluginRef("Coscheduling")]),
            "queueSort": PluginSet([PluginRef("Coscheduling")], [PluginRef("*")]),
        },
        plugin_config={"Coscheduling": {"permitWaitingTimeSeconds": 30}},
    )


def workload(gangs: int, size: int, singles: int) -> tuple[list[Pod], list[PodGroup]]:
    """Pods in creation order: each gang's pods, with single pods between the gangs."""
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    per_gap = singles // max(gangs, 1)
    made_singles = 0
    for g in range(gangs):
        name = f"gang-{g:04d}"
        groups.append(
            PodGroup(
                metadata=ObjectMeta(name=name, namespace="default"),
                spec=PodGroupSpec(min_member=size),
            )
        )
        for i in range(size):
            pods.append(
                make_pod(f"{name}-{i}", cpu="2", requests={GPU: 1}, labels={POD_GROUP_LABEL: name})
            )
        for _ in range(per_gap if g < gangs - 1 else singles - made_singles):
            gpu = {GPU: 1} if made_singles % 4 == 0 else None
            pods.append(make_pod(f"single-{made_singles:05d}", cpu="1", requests=gpu))
            made_singles += 1
    return pods, groups


def check(result: SimulationResult, size: int) -> tuple[int, int]:
    """(gangs placed whole, gangs placed in part: must be 0)."""
    per_group: dict[str, int] = {}
    for key, pod in result.pods.items():
        group = pod_group_key(pod)
        if group:
            per_group[group] = per_group.get(group, 0) + (1 if result.placements.get(key) else 0)
    whole = sum(1 for n in per_group.values() if n >= size)
    partial = sum(1 for n in per_group.values() if 0 < n < size)
    return whole, partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--singles", type=int, default=800)
    parser.add_argument("--nodes", type=int, default=90)
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    nodes = [
        make_node(f"node-{i:04d}", cpu="64", memory="256Gi", extra={GPU: args.gpus})
        for i in range(args.nodes)
    ]
    pods, groups = workload(args.gangs, args.size, args.singles)
    gpus_asked = args.gangs * args.size + (args.singles + 3) // 4
    print(
        f"gangs: {args.gangs} x {args.size} GPU pods, {args.singles} single pods; "
        f"{args.nodes} nodes x {args.gpus} GPUs ({args.nodes * args.gpus} GPUs for "
        f"{gpus_asked} asked); python {platform.python_version()}"
    )
    walls, cpus = [], []
    for run in range(args.repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = simulate(nodes, pods, [coscheduling_profile()], seed=run, pod_groups=groups)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        walls.append(wall)
        cpus.append(cpu)
        whole, partial = check(result, args.size)
        print(
            f"run {run + 1}: {result.scheduled}/{len(pods)} pods scheduled, "
            f"{whole}/{args.gangs} gangs placed whole, {partial} in part; "
            f"{result.attempts} attempts; {wall:.2f}s wall, {cpu:.2f}s CPU, "
            f"{len(pods) / wall:.0f} pods/s"
        )
        if partial:
            raise SystemExit(f"{partial} gangs placed in part")
    print(
        f"median: {statistics.median(walls):.2f}s wall, {statistics.median(cpus):.2f}s CPU, "
        f"{len(pods) / statistics.median(walls):.0f} pods/s"
    )


if __name__ == "__main__":
    main()
