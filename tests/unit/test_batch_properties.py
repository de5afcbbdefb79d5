"""Properties of the batch engine on random small clusters (hypothesis):

- every pod it places passes the profile's PreFilter and Filter plugins on its node,
  run in order as the placement fills the cluster;
- it places at least as many pods as greedy (the real scheduler) at every priority.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from kubesched.api.objects import Node, Pod
from tests.unit.batch_helpers import clusters, filter_failures, greedy_then_engine

GPU = "nvidia.com/gpu"


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(clusters(max_nodes=4, max_pods=10))
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
