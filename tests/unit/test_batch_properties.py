"""Properties of the batch engine on random small clusters (hypothesis):

- every pod it places passes the profile's PreFilter and Filter plugins on its node,
  run in order as the placement fills the cluster;
- it places at least as many pods as greedy (the real scheduler) at every priority.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.api.objects import Node, Pod
from kubesched.testing import make_node, make_pod
from tests.unit.batch_helpers import filter_failures, greedy_then_engine

GPU = "nvidia.com/gpu"


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Node], list[Pod]]:
    nodes = []
    for i in range(draw(st.integers(1, 4))):
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
    for i in range(draw(st.integers(1, 10))):
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


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(clusters())
def test_placement_passes_the_filters_and_is_never_worse_than_greedy_at_any_priority(
    cluster: tuple[list[Node], list[Pod]],
) -> None:
    nodes, pods = cluster
    greedy, comparison = greedy_then_engine(nodes, pods, timeout=1.0)
    batch = comparison.batch
    assert filter_failures(nodes, pods, batch.placements) == []
    priority = {p.key: p.spec.priority or 0 for p in pods}
    for level in set(priority.values()):
        by_greedy = sum(
            1 for key, node in greedy.placements.items() if node and priority[key] == level
        )
        by_engine = sum(1 for key in batch.placements if priority[key] == level)
        assert by_engine >= by_greedy, (level, by_engine, by_greedy)
    assert set(batch.placements) <= set(priority)
