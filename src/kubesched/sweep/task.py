"""One variation of a sweep: the base cluster changed as the variation says, simulated,
and summed up in one row.

`run_variation` is the task every engine runs (local worker processes or Ray): a
pure function of the base (sent to each worker once) and the variation's setup
(small: its values and its resolved scheduler configuration), so that a variation
run twice, or on another worker, gives the same row.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.cluster.manifests import ClusterState, pending_pods, running_pods
from kubesched.framework.extender import ExtenderConfig
from kubesched.framework.features import FeatureGates
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.registry import Registry
from kubesched.plan.pools import NodePool
from kubesched.simulation.capacity import make_copy
from kubesched.simulation.simulator import SimulationResult, World, simulate_world
from kubesched.sweep.spec import Variation


@dataclass(frozen=True, slots=True)
class SweepBase:
    """What every variation starts from: the manifests as loaded and the pools new
    nodes come from. Large: each worker gets it once."""

    state: ClusterState
    pools: Mapping[str, NodePool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VariationSetup:
    """A variation resolved by the command: the scheduler configuration it runs."""

    variation: Variation
    profiles: Sequence[ProfileConfig]
    registry: Registry | None
    gates: FeatureGates
    percentage_of_nodes_to_score: int
    seed: int
    extenders: Sequence[ExtenderConfig] = ()


class VariationResult(msgspec.Struct, kw_only=True, rename="camel"):
    """A variation's row of the sweep's table."""

    id: str
    index: int
    params: dict[str, str]
    pods: int  # pending pods to place (the base's, scaled)
    placed: int
    pending: int
    # Pending pods per reason (a pod with several reasons counts under each).
    pending_by_reason: dict[str, int]
    nodes: int  # every node, the added ones included
    nodes_added: int
    nodes_used: int  # nodes holding at least one pod once the run ends
    cpu_utilisation: float  # requested / allocatable over every node, 0 to 1
    memory_utilisation: float
    cost: float | None  # the added nodes' price; None when their pools have none
    notes: list[str] = []
    wall_seconds: float = 0.0
    error: str = ""  # set when every try failed: the row has no figures then


def failed_result(variation: Variation, error: str) -> VariationResult:
    """The row of a variation that failed every try: counted, with its error."""
    return VariationResult(
        id=variation.id,
        index=variation.index,
        params=variation.params(),
        pods=0,
        placed=0,
        pending=0,
        pending_by_reason={},
        nodes=0,
        nodes_added=0,
        nodes_used=0,
        cpu_utilisation=0.0,
        memory_utilisation=0.0,
        cost=None,
        error=error,
    )


def run_variation(base: SweepBase, setup: VariationSetup) -> VariationResult:
    """Simulate the base cluster with the variation's new nodes, scaled pending pods
    and scheduler configuration; its row."""
    started = time.perf_counter()
    variation = setup.variation
    state = base.state
    notes: list[str] = []
    added, cost = added_nodes(base.pools, variation.nodes, {n.metadata.name for n in state.nodes})
    pending, scale_note = scaled_pods(pending_pods(state), variation.scale)
    if scale_note:
        notes.append(scale_note)
    running = running_pods(state)
    world = World.of_state(
        state,
        setup.profiles,
        registry=setup.registry,
        gates=setup.gates,
        extenders=setup.extenders,
        nodes=[*state.nodes, *added],
        pods=[*running, *pending],
    )
    result = simulate_world(
        world, seed=setup.seed, percentage_of_nodes_to_score=setup.percentage_of_nodes_to_score
    )
    return summarise(
        variation,
        result,
        pending,
        nodes_added=len(added),
        cost=cost,
        notes=notes,
        wall=time.perf_counter() - started,
    )


def added_nodes(
    pools: Mapping[str, NodePool], counts: Mapping[str, int], taken: set[str]
) -> tuple[list[Node], float | None]:
    """COUNTS new nodes of each pool, named `<pool>-<n>` past the names TAKEN, and
    their price (None when no pool used has one)."""
    nodes: list[Node] = []
    total: Decimal | None = None
    for pool_name, count in sorted(counts.items()):
        pool = pools[pool_name]
        index = 0
        for _ in range(count):
            index += 1
            while f"{pool.name}-{index}" in taken:
                index += 1
            nodes.append(pool.node_named(index))
        if pool.price is not None and count:
            total = (total or Decimal(0)) + pool.price * count
    return nodes, None if total is None else float(total)


def _has_claims(pod: Pod) -> bool:
    """Copies of this pod would share its claims: ResourceClaims, PVCs, ephemeral volumes."""
    if pod.spec.resource_claims:
        return True
    return any(
        v.persistent_volume_claim is not None or v.ephemeral is not None for v in pod.spec.volumes
    )


def scaled_pods(pending: Sequence[Pod], scale: float) -> tuple[list[Pod], str]:
    """The pending pods times SCALE (rounded): the first ones kept when it is below 1,
    copies of each in turn added when above; and a note when some could not be
    copied. Copies keep their pod's spec (capacity's make_copy, preemption as the
    pod says), named `<name>-<n>` past the names taken."""
    target = round(len(pending) * scale)
    if target <= len(pending):
        return list(pending[:target]), ""
    copyable = [p for p in pending if not _has_claims(p)]
    note = ""
    if len(copyable) < len(pending):
        note = (
            f"{len(pending) - len(copyable)} pending pods with claims or volumes were not "
            "copied (copies would share them)"
        )
    if not copyable:
        return list(pending), note
    taken = {p.key for p in pending}
    pods = list(pending)
    index: Counter[str] = Counter()
    while len(pods) < target:
        for pod in copyable:
            if len(pods) >= target:
                break
            while True:
                index[pod.key] += 1
                copy = make_copy(pod, index[pod.key], preemption_policy=None)
                if copy.key not in taken:
                    break
            taken.add(copy.key)
            pods.append(copy)
    return pods, note


def summarise(
    variation: Variation,
    result: SimulationResult,
    pending: Sequence[Pod],
    *,
    nodes_added: int,
    cost: float | None,
    notes: list[str],
    wall: float,
) -> VariationResult:
    """The row of a simulation of the variation."""
    keys = [p.key for p in pending]
    placed = sum(1 for k in keys if result.placements.get(k) is not None)
    reasons: Counter[str] = Counter()
    for key in keys:
        if result.placements.get(key) is not None:
            continue
        outcome = result.outcomes.get(key)
        gate = result.not_attempted.get(key)
        if outcome is not None and outcome.diagnosis is not None:
            for reason in outcome.diagnosis.reason_counts():
                reasons[reason] += 1
        elif gate is not None:
            reasons[f"not attempted: {gate.plugin}"] += 1
        elif outcome is not None and outcome.reason:
            reasons[outcome.reason] += 1
        else:
            reasons["not attempted"] += 1
    requested: Counter[str] = Counter()
    allocatable: Counter[str] = Counter()
    for usage in result.nodes:
        requested.update(usage.requested)
        allocatable.update(usage.allocatable)

    def share(resource: str) -> float:
        room = allocatable.get(resource, 0)
        return requested.get(resource, 0) / room if room else 0.0

    return VariationResult(
        id=variation.id,
        index=variation.index,
        params=variation.params(),
        pods=len(keys),
        placed=placed,
        pending=len(keys) - placed,
        pending_by_reason=dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        nodes=len(result.nodes),
        nodes_added=nodes_added,
        nodes_used=sum(1 for usage in result.nodes if usage.pods),
        cpu_utilisation=round(share("cpu"), 4),
        memory_utilisation=round(share("memory"), 4),
        cost=cost,
        notes=notes,
        wall_seconds=round(wall, 3),
    )
