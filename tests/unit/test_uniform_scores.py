"""ScorePlugin.uniform_score: a plugin that knows every node scores the same this
cycle (no taint, no image, no claim) adds one number instead of its arrays, and
the totals, the per-plugin scores and the explanation's raw and normalized
scores are those of Score and NormalizeScore run over every node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.config.file import parse_config
from kubesched.framework import interfaces as ifc
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.explain import CycleCapture
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.registry import register
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import IntArray, NodeTable
from kubesched.framework.types import PodInfo
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import simulate
from kubesched.testing import make_node, make_pod

KIND = "KubeSchedulerConfiguration"
UNIFORM_PLUGINS = {"TaintToleration", "ImageLocality", "DynamicResources"}
PREFER = {"key": "k", "value": "v", "effect": "PreferNoSchedule"}


def default_scheduler(nodes: list[Any]) -> Scheduler:
    cluster = InMemoryCluster(nodes={n.metadata.name: n for n in nodes})
    config = parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": KIND})
    sched = Scheduler(config.profiles, cluster, clock=SimClock(), seed=1)
    cluster.watch(sched)
    return sched


def every_node(
    fw: Framework, state: CycleState, pod: PodInfo, table: NodeTable, rows: Any
) -> tuple[IntArray, dict[str, tuple[IntArray, IntArray]]]:
    """RunScorePlugins as it was: Score and NormalizeScore of each plugin over the
    rows; the weighted total and each plugin's (raw, normalized) scores."""
    total = np.zeros(len(rows), dtype=np.int64)
    scores: dict[str, tuple[IntArray, IntArray]] = {}
    for plugin in fw.score:
        if plugin.name in state.skip_score_plugins:
            continue
        raw = np.asarray(plugin.score(state, pod, table, rows), dtype=np.int64)
        normalized = raw.copy()
        plugin.normalize_scores(state, pod, normalized)
        scores[plugin.name] = (raw, normalized)
        total += normalized * fw.weights.get(plugin.name, 1)
    return total, scores


@pytest.mark.parametrize(
    ("taints", "images", "uniform"),
    [
        ((), (), UNIFORM_PLUGINS),
        ([PREFER], (), {"ImageLocality", "DynamicResources"}),
        ((), [(["nginx:1.25"], 300 * 2**20)], {"TaintToleration", "DynamicResources"}),
    ],
)
def test_uniform_scores_give_the_totals_and_scores_of_every_node_scored(
    taints: Any, images: Any, uniform: set[str]
) -> None:
    nodes = [make_node(f"n{i}", cpu=str(2 + i)) for i in range(4)]
    nodes.append(make_node("n4", taints=taints, images=images))
    sched = default_scheduler(nodes)
    fw = sched.frameworks["default-scheduler"]
    table = sched.table
    pod = PodInfo(
        make_pod(
            "p",
            cpu="500m",
            memory="1Gi",
            spec={
                "containers": [
                    {"name": "c", "image": "nginx:1.25", "resources": {"requests": {"cpu": "500m"}}}
                ]
            },
        )
    )
    state = CycleState()
    state.explain = CycleCapture()
    fw.run_pre_filter(state, pod, table)
    rows = table.order()
    fw.run_pre_score(state, pod, table, rows)
    found = {p.name for p in fw.score if p.uniform_score(state, pod, table) is not None}
    assert found == uniform

    want_total, want = every_node(fw, state, pod, table, rows)
    total, by_plugin = fw.run_score(state, pod, table, rows)
    assert total.tolist() == want_total.tolist()
    assert set(by_plugin) == set(want)
    for name, (_, normalized) in want.items():
        weighted = normalized * fw.weights.get(name, 1)
        assert by_plugin[name].tolist() == weighted.tolist(), name
    captured = {c.plugin: (c.raw.tolist(), c.normalized.tolist()) for c in state.explain.scores}
    assert captured == {name: (r.tolist(), n.tolist()) for name, (r, n) in want.items()}
    # Without the per-plugin arrays, the same totals.
    alone, _ = fw.run_score(state, pod, table, rows, per_plugin=False)
    assert alone.tolist() == want_total.tolist()


@register
class UniformTooHigh(ifc.ScorePlugin):
    name = "test-UniformTooHigh"

    def uniform_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> ifc.Uniform:
        return (5, 101)


def test_a_uniform_score_out_of_range_is_the_same_scheduler_error() -> None:
    refs = [PluginRef("PrioritySort"), PluginRef("DefaultBinder"), PluginRef(UniformTooHigh.name)]
    profile = ProfileConfig("default-scheduler", {"multiPoint": PluginSet(refs)})
    nodes = [make_node("node-1"), make_node("node-2")]
    result = simulate(nodes, [make_pod("p")], [profile], seed=1)
    assert result.placements["default/p"] is None
    assert result.reasons["default/p"] == (
        'running Score plugins: plugin "test-UniformTooHigh" failed with: plugin '
        "'test-UniformTooHigh' returns an invalid score 101, it should be in the range "
        "of [0, 100] after normalizing"
    )
    assert result.outcomes["default/p"].reason == "SchedulerError"
