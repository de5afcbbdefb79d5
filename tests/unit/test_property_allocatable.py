"""Property: whatever the input, no node is given more than its allocatable."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.profile import ProfileConfig
from kubesched.framework.types import PodInfo
from kubesched.simulation.simulator import simulate
from kubesched.testing import make_node, make_pod

cpu = st.integers(min_value=0, max_value=4000).map(lambda m: f"{m}m")
memory = st.integers(min_value=0, max_value=8 * 1024).map(lambda mi: f"{mi}Mi")
gpus = st.integers(min_value=0, max_value=2)


@st.composite
def containers(draw: st.DrawFn, name: str, sidecar: bool = False) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    if draw(st.booleans()):
        requests["cpu"] = draw(cpu)
    if draw(st.booleans()):
        requests["memory"] = draw(memory)
    if draw(st.integers(0, 4)) == 0:
        requests["example.com/gpu"] = draw(gpus)
    c: dict[str, Any] = {"name": name, "resources": {"requests": requests}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


@st.composite
def pods(draw: st.DrawFn, index: int, node_names: list[str]) -> Any:
    spec: dict[str, Any] = {
        "containers": [draw(containers(f"c{i}")) for i in range(draw(st.integers(1, 3)))],
        "initContainers": [
            draw(containers(f"i{i}", sidecar=draw(st.booleans())))
            for i in range(draw(st.integers(0, 2)))
        ],
    }
    if draw(st.booleans()):
        spec["overhead"] = {"cpu": draw(cpu)}
    running_on = draw(st.sampled_from(["", "", "", *node_names]))
    return make_pod(f"p{index}", spec=spec, node_name=running_on, priority=draw(st.integers(0, 3)))


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    nodes = [
        make_node(
            f"n{i}",
            cpu=f"{draw(st.integers(0, 8000))}m",
            memory=f"{draw(st.integers(0, 16 * 1024))}Mi",
            pods=draw(st.integers(0, 6)),
            extra={"example.com/gpu": draw(gpus)},
        )
        for i in range(draw(st.integers(1, 6)))
    ]
    names = [n.metadata.name for n in nodes]
    return nodes, [draw(pods(i, names)) for i in range(draw(st.integers(0, 30)))]


@settings(max_examples=150, deadline=None)
@given(clusters(), st.integers(0, 2**16))
def test_no_node_is_given_more_than_its_allocatable(
    cluster: tuple[list[Any], list[Any]], seed: int
) -> None:
    nodes, all_pods = cluster
    result = simulate(nodes, all_pods, [ProfileConfig.default()], seed=seed)
    running = {f"default/{p.metadata.name}" for p in all_pods if p.spec.node_name}
    by_key = {f"default/{p.metadata.name}": p for p in all_pods}
    for node in nodes:
        name = node.metadata.name
        placed = [k for k, n in result.placements.items() if n == name and k not in running]
        if not placed:
            continue
        alloc = node.status.allocatable
        # Requests of everything on the node: pods that were already running
        # count too (they may overcommit; the scheduler must add nothing then).
        on_node = [PodInfo(by_key[k]) for k, n in result.placements.items() if n == name]
        used: dict[str, int] = {}
        for info in on_node:
            for r, amount in info.requests.items():
                used[r] = used.get(r, 0) + amount
        limits = {
            "cpu": int(alloc["cpu"][:-1]) if isinstance(alloc["cpu"], str) else 0,
            "memory": int(alloc["memory"][:-2]) * 1024 * 1024,
            "example.com/gpu": int(alloc["example.com/gpu"]),
        }
        assert len(on_node) <= int(alloc["pods"]), name
        # A pod that already ran may overcommit a node (the kubelet admitted it,
        # say); the scheduler must then add nothing more of that resource.
        asked = {r for k in placed for r, a in PodInfo(by_key[k]).requests.items() if a > 0}
        for r, limit in limits.items():
            if r in asked:
                assert used.get(r, 0) <= limit, (name, r, used, limits)
    # The simulator's own table agrees with this independent count.
    assert all(np.all(np.array(list(u.requested.values())) >= 0) for u in result.nodes)
