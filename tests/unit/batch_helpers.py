"""Shared by the batch engine's tests: greedy (the simulator) then the engine, and an
independent check of a placement through the profile's filters."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.batch import Objective
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.types import PodInfo
from kubesched.simulation.optimize import Comparison, optimize
from kubesched.simulation.simulator import SimulationResult, World, simulate, start_session
from kubesched.testing import make_node, make_pod

GPU = "nvidia.com/gpu"


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


@st.composite
def clusters(
    draw: st.DrawFn, min_nodes: int = 1, max_nodes: int = 4, max_pods: int = 10
) -> tuple[list[Node], list[Pod]]:
    """A random small cluster and pending pods: cpu, memory and GPU shapes, two
    priorities, host ports, hostname or zone anti-affinity between two apps."""
    nodes = []
    for i in range(draw(st.integers(min_nodes, max_nodes))):
        name = f"n{i}"
        gpus = draw(st.sampled_from([0, 0, 2]))
        nodes.append(
            make_node(
                name,
                cpu=str(draw(st.integers(2, 6))),
                memory=f"{draw(st.integers(4, 16))}Gi",
                pods=draw(st.sampled_from([3, 110])),
                labels={"kubernetes.io/hostname": name, "zone": f"z{i % 2}"},
                extra={GPU: gpus} if gpus else None,
            )
        )
    pods = []
    for i in range(draw(st.integers(1, max_pods))):
        app = draw(st.sampled_from(["", "a", "b"]))
        spec: dict[str, Any] = {}
        if app and draw(st.booleans()):
            key = draw(st.sampled_from(["kubernetes.io/hostname", "zone"]))
            target = draw(st.sampled_from(["a", "b"]))
            term = {"labelSelector": {"matchLabels": {"app": target}}, "topologyKey": key}
            spec["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
        cpu = str(draw(st.integers(1, 4)))
        if draw(st.integers(0, 5)) == 0:
            port = {"containerPort": 80, "hostPort": 8080}
            spec["containers"] = [
                {"name": "c", "ports": [port], "resources": {"requests": {"cpu": cpu}}}
            ]
        gpu = draw(st.sampled_from([0, 0, 0, 1]))
        pods.append(
            make_pod(
                f"p{i}",
                cpu=cpu,
                memory=f"{draw(st.integers(1, 8))}Gi",
                requests={GPU: gpu} if gpu else None,
                priority=draw(st.sampled_from([0, 100])),
                labels={"app": app} if app else None,
                spec=spec,
            )
        )
    return nodes, pods
