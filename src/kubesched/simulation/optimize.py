"""`simulate --optimize`: greedy's placement and the batch engine's, side by side.

Greedy's is what `simulate` computed: the real scheduler, one pod at a time.
The engine (kubesched.batch) then places the same pending pods jointly, on the
cluster as it was before any of them was placed, starting from greedy's answer.
The pods of one profile form the batch (the profile with the most pending
pods); pods of other profiles stay where greedy put them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from dataclasses import dataclass

import msgspec

from kubesched.api.objects import Pod
from kubesched.batch import BatchPlacement, Objective, place_batch
from kubesched.framework.types import PodInfo
from kubesched.simulation.simulator import SimulationResult, World, start_session


@dataclass(slots=True)
class Comparison:
    profile: str
    batch: BatchPlacement
    pending: int  # pods of the batch
    evicted: int  # pods greedy's preemption deleted (the engine does not preempt)


def optimize(
    world: World,
    greedy: SimulationResult,
    *,
    objective: Objective = "pods",
    timeout: float = 1.0,
    seed: int | None = None,
    workers: int = 2,
) -> Comparison | None:
    """The engine's placement of `world`'s pending pods beside greedy's (None if no
    pod was pending)."""
    return asyncio.run(_optimize(world, greedy, objective, timeout, seed, workers))


async def _optimize(
    world: World,
    greedy: SimulationResult,
    objective: Objective,
    timeout: float,
    seed: int | None,
    workers: int,
) -> Comparison | None:
    names = {p.scheduler_name for p in world.profiles}
    pending = [p for p in world.pods if not p.spec.node_name and p.spec.scheduler_name in names]
    if not pending:
        return None
    profile = Counter(p.spec.scheduler_name for p in pending).most_common(1)[0][0]
    batch = [p for p in pending if p.spec.scheduler_name == profile]
    batch_keys = {p.key for p in batch}
    base: list[Pod] = [p for p in world.pods if p.spec.node_name]
    for pod in pending:
        node = greedy.placements.get(pod.key)
        if pod.key not in batch_keys and node:
            base.append(_bound(pod, node))
    start = dataclasses.replace(world, pods=base, pod_groups=(), workload_pod_groups=None)
    session = start_session(start, seed, 0)
    scheduler = session.scheduler
    fw = scheduler.frameworks[profile]
    placed = {p.key: node for p in batch if (node := greedy.placements.get(p.key))}
    labels = {name: ns.metadata.labels for name, ns in (world.namespaces or {}).items()}
    result = place_batch(
        fw,
        scheduler.table,
        [PodInfo(p) for p in batch],
        placed,
        objective=objective,
        timeout=timeout,
        workers=workers,
        namespace_labels=labels,
    )
    return Comparison(profile, result, len(batch), len(greedy.evicted))


def _bound(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))
