"""Shared by the batch engine's tests: greedy (the simulator) then the engine, and an
independent check of a placement through the profile's filters."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.batch import Objective
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.types import PodInfo
from kubesched.optimize import Comparison, optimize
from kubesched.simulator import SimulationResult, World, simulate, start_session


def greedy_then_engine(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    objective: Objective = "pods",
    timeout: float = 2.0,
) -> tuple[SimulationResult, Comparison]:
    profiles = [ProfileConfig.default()]
    greedy = simulate(nodes, pods, profiles, seed=1)
    comparison = optimize(
        World(nodes, pods, profiles), greedy, objective=objective, timeout=timeout, seed=1
    )
    assert comparison is not None
    return greedy, comparison


def filter_failures(
    nodes: Sequence[Node], pods: Sequence[Pod], placement: Mapping[str, str]
) -> list[str]:
    """Each placed pod, highest priority first, through the default profile's
    PreFilter and every Filter on its node, on the cluster as the placement fills
    it: the failures, as "pod: message"."""
    failures: list[str] = []

    async def check() -> None:
        running = [p for p in pods if p.spec.node_name]
        session = start_session(World(nodes, running, [ProfileConfig.default()]), 1, 0)
        fw = session.scheduler.frameworks["default-scheduler"]
        table = session.scheduler.table
        placed = sorted(
            (PodInfo(p) for p in pods if p.key in placement),
            key=lambda p: (-p.priority, p.key),
        )
        for pod in placed:
            row = table.row_of(placement[pod.key])
            assert row is not None
            state = CycleState()
            _, status = fw.run_pre_filter(state, pod, table)
            if not status.is_success():
                failures.append(f"{pod.key}: {status.message()}")
                continue
            feasible, diagnosis = fw.run_filters(state, pod, table, np.array([row]))
            if not len(feasible):
                failures.append(f"{pod.key}: {diagnosis.status_of(row)}")
                continue
            table.add_pod(pod, row)

    asyncio.run(check())
    return failures
