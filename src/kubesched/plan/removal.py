"""`kubesched plan --remove-nodes`: which nodes can go without leaving a pod homeless.

1. The input is simulated as `simulate` would: pending pods that fit go where
   the scheduler puts them. That cluster is the one the removal is planned on.
2. The candidates, in cluster-autoscaler's spirit: every node but those
   annotated `scale-down-disabled`, the most expensive first when the pools
   give prices (an existing node costs the price of the first pool whose
   template's labels it all has), then the least utilised (utilization.Calculate:
   the larger of its cpu and memory requests over its allocatable), then in the
   scheduler's node order.
3. Each candidate in turn (the planner's categorizeNodes and
   RemovalSimulator.SimulateNodeRemoval): drain.py says which of its pods move,
   which go with it (DaemonSet and mirror pods), or which pod blocks it and
   why. The pods that move are taken off its row, highest priority first, and
   each is placed on the nodes that remain (the candidate and every node
   removed before it left out) with the profile's PreFilter and Filter over all
   of those rows at once, then its PreScore and Score: the node is the one the
   scheduler would choose (the highest total; ties go to the first in node
   order, where the scheduler draws at random). cluster-autoscaler places them
   first-fit (HintingSimulator.TrySchedulePods); scoring is kept here because the
   pods of a real drain are placed by kube-scheduler, and the verification below
   simulates exactly that, so the two agree more often. Each pod is added to its
   node's row, so the next one sees it. If a pod fits nowhere, every row the
   candidate touched is put back (save_row/restore_row) and the node is blocked
   with "no place for pod X" and the filters' FailedScheduling text. Otherwise the
   node is removed from the node table, its pods' evictions are spent from the
   PodDisruptionBudgets, and the removal set grows: the drain order is the order
   the nodes were removed in.
4. Verification: the cluster of step 1 without the removed nodes, every pod
   that was on them pending (DaemonSet, mirror and terminal pods dropped), is
   simulated from scratch. Every such pod must be placed and no pod preempted.
   If not, the last removed node is given back and the simulation runs again,
   until it holds (both counts are reported).

Not modelled: a moved pod preempting others (cluster-autoscaler does not
either); volumes and ResourceClaims bound to a removed node (the filters see
them as they are, so such a pod usually finds no place); nodes' utilisation
threshold and unneeded time (every node that can go is reported).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from decimal import Decimal

import msgspec
import numpy as np

from kubesched.api.objects import Node, Pod, PodDisruptionBudget
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis, fit_error_message
from kubesched.framework.runtime.errors import PluginError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import NodeTable, SavedRow
from kubesched.framework.types import PodInfo
from kubesched.plan.drain import Drain, PdbTracker, pods_to_move, scale_down_disabled
from kubesched.plan.pools import NodePool
from kubesched.scheduler.schedule_one import pre_filter_candidates
from kubesched.simulation.simulator import (
    World,
    close_extenders,
    run_until_quiet,
    simulate_in_loop,
    start_session,
)

# cluster-autoscaler's UnremovableReason names (simulator/cluster.go).
SCALE_DOWN_DISABLED_REASON = "ScaleDownDisabledAnnotation"
BLOCKED_BY_POD = "BlockedByPod"
NO_PLACE = "NoPlaceToMovePods"


class _Record(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class RemovedNode(_Record):
    """A node the plan removes, in drain order, with where its pods go."""

    node: str
    step: int  # 1 for the first node to drain
    utilization: float  # the larger of cpu and memory requested / allocatable
    pool: str | None = None  # the pool it belongs to (--pools)
    price: str | None = None
    moved: dict[str, str] = {}  # pod -> the node it goes to
    leaving: list[str] = []  # DaemonSet and mirror pods: they go with the node
    done: list[str] = []  # terminal pods: they need no place


class BlockedNode(_Record):
    """A node that cannot go, as cluster-autoscaler's unremovable reasons say."""

    node: str
    reason: str  # ScaleDownDisabledAnnotation | BlockedByPod | NoPlaceToMovePods
    message: str
    pod: str = ""  # the pod that blocks it
    rule: str = ""  # BlockedByPod's BlockingPodReason (NotReplicated, NotEnoughPdb, ...)
    pool: str | None = None
    price: str | None = None


class RemovalVerification(_Record):
    scheduled: bool  # every pod of the removed nodes placed, none preempted
    planned: int  # nodes the search removed
    verified: int  # nodes that stay removed after the verification
    removed: list[str] = []  # those nodes, in drain order
    given_back: list[str] = []  # nodes the verification gave back, last first
    pending: list[str] = []  # moved pods the last simulation left pending
    evicted: list[str] = []  # pods it preempted
    rounds: int = 0  # simulations run (1: the plan held as it was)


class RemovalResult(_Record):
    mode: str  # remove-nodes
    nodes: int  # nodes in the cluster
    priced: bool  # whether the pools gave prices (else every node costs 1)
    removed: list[RemovedNode]  # in drain order, as the search found them
    blocked: list[BlockedNode]
    verification: RemovalVerification
    savings: str | None = None  # the verified removed nodes' prices, summed
    pending: list[str] = []  # pods of the input that fit nowhere before any removal
    preempted: list[str] = []  # running pods those pending pods preempted
    seed: int | None = None
    wall_seconds: float = 0.0


def plan_remove_nodes(
    world: World,
    pools: Sequence[NodePool] | None = None,
    *,
    seed: int = 0,
    percentage_of_nodes_to_score: int = 0,
) -> RemovalResult:
    """The nodes of `world` that can be removed (see the module's docstring); the
    pools, when given, price the nodes."""
    return asyncio.run(_plan(world, list(pools or []), seed, percentage_of_nodes_to_score))


def node_pool(node: Node, pools: Sequence[NodePool]) -> NodePool | None:
    """The first pool whose template's labels the node all has."""
    labels = node.metadata.labels
    for pool in pools:
        wanted = pool.node.metadata.labels
        if all(labels.get(k) == v for k, v in wanted.items()):
            return pool
    return None


def utilization(table: NodeTable, row: int) -> float:
    """utilization.Calculate: the larger of the cpu and memory utilisation, each
    the pods' requests over the node's allocatable (DaemonSet and mirror pods
    counted, as --ignore-daemonsets-utilization's default has it)."""
    best = 0.0
    for name in ("cpu", "memory"):
        col = table.resource_index.get(name)
        if col is None:
            continue
        allocatable = int(table.allocatable[row, col])
        if allocatable > 0:
            best = max(best, int(table.requested[row, col]) / allocatable)
    return round(best, 3)


def _money(price: Decimal | None) -> str | None:
    return None if price is None else format(price.normalize(), "f")


async def _plan(world: World, pools: list[NodePool], seed: int, percentage: int) -> RemovalResult:
    started = time.perf_counter()
    session = start_session(world, seed, percentage)
    scheduler = session.scheduler
    try:
        await run_until_quiet(scheduler, session.clock)
    finally:
        close_extenders(scheduler)
    after = dict(session.cluster.pods)
    pending = sorted(
        k for k, p in after.items() if not p.spec.node_name and scheduler.responsible_for(p)
    )
    preempted = sorted(session.cluster.evicted)
    priced = any(pool.price is not None for pool in pools)
    search = _Search(scheduler.frameworks, scheduler.table, world.pdbs, pools, priced)
    removed, blocked = search.run()

    # Verification: the cluster without the removed nodes, their pods pending.
    kept = [r.node for r in removed]
    movable = {r.node: list(r.moved) for r in removed}
    given_back: list[str] = []
    rounds = 0
    while True:
        result = await simulate_in_loop(_without(world, after, kept, movable), seed, percentage)
        rounds += 1
        moved = [key for node in kept for key in movable[node]]
        still = sorted(k for k in moved if not result.placements.get(k))
        evicted = sorted(result.evicted)
        if (not still and not evicted) or not kept:
            break
        given_back.append(kept.pop())
    savings: Decimal | None = None
    if priced:
        savings = sum(
            (Decimal(r.price) for r in removed if r.node in kept and r.price is not None),
            Decimal(0),
        )
    return RemovalResult(
        mode="remove-nodes",
        nodes=len(world.nodes),
        priced=priced,
        removed=removed,
        blocked=blocked,
        verification=RemovalVerification(
            scheduled=not still and not evicted,
            planned=len(removed),
            verified=len(kept),
            removed=list(kept),
            given_back=given_back,
            pending=still,
            evicted=evicted,
            rounds=rounds,
        ),
        savings=_money(savings),
        pending=pending,
        preempted=preempted,
        seed=seed,
        wall_seconds=round(time.perf_counter() - started, 3),
    )


def _without(
    world: World, pods: Mapping[str, Pod], removed: Sequence[str], movable: Mapping[str, list[str]]
) -> World:
    """The cluster as the first simulation left it, without the removed nodes: the
    pods they move pending (in queue order: the queue sorts them by priority), the
    others on them (DaemonSet, mirror and terminal pods) gone."""
    gone = set(removed)
    moving = {key for node in removed for key in movable[node]}
    out: list[Pod] = []
    for key, pod in pods.items():
        if pod.spec.node_name not in gone:
            out.append(pod)
        elif key in moving:
            out.append(_pending(pod))
    nodes = [n for n in world.nodes if n.metadata.name not in gone]
    return dataclasses.replace(world, nodes=nodes, pods=out)


def _pending(pod: Pod) -> Pod:
    """The pod as its controller would make it again: not bound, not nominated."""
    spec = msgspec.structs.replace(pod.spec, node_name="")
    status = msgspec.structs.replace(pod.status, nominated_node_name="")
    return msgspec.structs.replace(pod, spec=spec, status=status)


def _bound(pod: Pod, node: str) -> Pod:
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=node))


class _Search:
    """The greedy removal (the scale-down planner's loop over its candidates)."""

    def __init__(
        self,
        frameworks: Mapping[str, Framework],
        table: NodeTable,
        pdbs: Sequence[PodDisruptionBudget],
        pools: Sequence[NodePool],
        priced: bool,
    ) -> None:
        self.frameworks = frameworks
        self.table = table
        self.tracker = PdbTracker(pdbs)
        self.pools = pools
        self.priced = priced

    def candidates(self) -> list[tuple[str, NodePool | None, float]]:
        """The nodes in the order they are tried: the most expensive first (with
        prices), then the least utilised (the scale-down candidates' order), then
        the scheduler's node order."""
        table = self.table
        out: list[tuple[Decimal, float, int, str, NodePool | None]] = []
        for position, row in enumerate(table.order().tolist()):
            name = table.names[row]
            pool = node_pool(table.node(row), self.pools)
            price = pool.price if pool is not None and pool.price is not None else None
            # Unpriced nodes (no pool) come after the priced ones.
            key = -price if price is not None else Decimal(1)
            out.append((key, utilization(table, row), position, name, pool))
        out.sort(key=lambda c: (c[0], c[1], c[2]))
        return [(name, pool, used) for _, used, _, name, pool in out]

    def run(self) -> tuple[list[RemovedNode], list[BlockedNode]]:
        removed: list[RemovedNode] = []
        blocked: list[BlockedNode] = []
        for name, pool, used in self.candidates():
            price = _money(pool.price) if pool is not None and self.priced else None
            pool_name = pool.name if pool is not None and self.pools else None
            row = self.table.row_of(name)
            assert row is not None
            node = self.table.node(row)
            if scale_down_disabled(node):
                blocked.append(
                    BlockedNode(
                        node=name,
                        reason=SCALE_DOWN_DISABLED_REASON,
                        message='annotated scale-down-disabled: "true"',
                        pool=pool_name,
                        price=price,
                    )
                )
                continue
            drain = pods_to_move([p.pod for p in self.table.pods_on(row)], self.tracker)
            if drain.blocking is not None:
                blocked.append(
                    BlockedNode(
                        node=name,
                        reason=BLOCKED_BY_POD,
                        message=drain.blocking.message,
                        pod=drain.blocking.pod,
                        rule=drain.blocking.reason,
                        pool=pool_name,
                        price=price,
                    )
                )
                continue
            moved, failure = self.try_remove(row, drain)
            if failure is not None:
                pod, message = failure
                blocked.append(
                    BlockedNode(
                        node=name,
                        reason=NO_PLACE,
                        message=f"no place for pod {pod}: {message}",
                        pod=pod,
                        pool=pool_name,
                        price=price,
                    )
                )
                continue
            self.tracker.spend(drain.movable)
            self.table.remove_node(name)  # from now on no pod may go there
            removed.append(
                RemovedNode(
                    node=name,
                    step=len(removed) + 1,
                    utilization=used,
                    pool=pool_name,
                    price=price,
                    moved=moved,
                    leaving=[p.key for p in drain.leaving],
                    done=[p.key for p in drain.done],
                )
            )
        return removed, blocked

    def try_remove(self, row: int, drain: Drain) -> tuple[dict[str, str], tuple[str, str] | None]:
        """Take the node's movable pods off its row and place each elsewhere, the
        highest priority first (then in the row's order): where each went; or, with
        every row touched put back, the pod that fits nowhere and why."""
        table = self.table
        saved: dict[int, SavedRow] = {row: table.save_row(row)}
        infos = {p.key: p for p in table.pods_on(row)}
        order = sorted(
            range(len(drain.movable)), key=lambda i: -(drain.movable[i].spec.priority or 0)
        )
        moving = [drain.movable[i] for i in order]
        for pod in moving:
            table.remove_pod(infos[pod.key], row)
        moved: dict[str, str] = {}
        failure: tuple[str, str] | None = None
        for pod in moving:
            target, message = self.place(pod, row)
            if target is None:
                failure = (pod.key, message)
                break
            if target not in saved:
                saved[target] = table.save_row(target)
            name = table.names[target]
            table.add_pod(PodInfo(_bound(pod, name)), target)
            moved[pod.key] = name
        if failure is not None:
            for kept in reversed(list(saved.values())):
                table.restore_row(kept)
            return {}, failure
        return moved, None

    def place(self, pod: Pod, leaving: int) -> tuple[int | None, str]:
        """The row the scheduler would put the pod on, the leaving row left out
        (schedulePod: PreFilter, Filter over every row at once, PreScore, Score, the
        highest total); None and the FailedScheduling text if it fits nowhere."""
        table = self.table
        fw = self.frameworks.get(pod.spec.scheduler_name)
        if fw is None:
            return None, f'no profile for schedulerName "{pod.spec.scheduler_name}"'
        order = table.order()
        order = order[order != leaving]
        num_all = len(order)
        info = PodInfo(_pending(pod))
        state = CycleState()
        try:
            pre, status = fw.run_pre_filter(state, info, table)
            if not status.is_success():
                diagnosis = Diagnosis.empty()
                diagnosis.pre_filter_message = status.message()
                return None, fit_error_message(num_all, diagnosis)
            rows, absent = pre_filter_candidates(table, order, pre)
            feasible, diagnosis = fw.run_filters_with_nominated_pods(state, info, table, rows)
            if len(feasible) == 0:
                if absent is not None:
                    diagnosis.absent_status = absent
                    diagnosis.absent_count = num_all - len(rows)
                return None, fit_error_message(num_all, diagnosis)
            if len(feasible) == 1:
                return int(feasible[0]), ""
            fw.run_pre_score(state, info, table, feasible)
            totals, _ = fw.run_score(state, info, table, feasible, per_plugin=False)
        except PluginError as exc:
            return None, str(exc)
        return int(feasible[int(np.argmax(totals))]), ""
