"""PodTopologySpread keeps, between cycles, which nodes count for a constraint and
their domains (they depend on the nodes alone). Whatever happens to nodes and pods
in between, one plugin reused across cycles must reach the same PreFilter state and
Filter verdicts as a fresh plugin that recounts everything."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY, _PreFilterState
from kubesched.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def spread_pod(name: str, rng: random.Random) -> PodInfo:
    constraint: dict[str, Any] = {
        "maxSkew": 1,
        "topologyKey": rng.choice([ZONE, HOST, "rack"]),
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "nodeAffinityPolicy": rng.choice(["Honor", "Ignore"]),
        "nodeTaintsPolicy": rng.choice(["Honor", "Ignore"]),
    }
    spec: dict[str, Any] = {"topologySpreadConstraints": [constraint]}
    if rng.random() < 0.5:
        spec["nodeSelector"] = {"disk": rng.choice(["ssd", "hdd"])}
    if rng.random() < 0.5:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    return PodInfo(make_pod(name, labels={"app": "web"}, spec=spec))


def random_node(name: str, rng: random.Random) -> Any:
    labels = {HOST: name, "disk": rng.choice(["ssd", "hdd"])}
    if rng.random() < 0.85:
        labels[ZONE] = rng.choice(["z1", "z2", "z3"])
    if rng.random() < 0.5:
        labels["rack"] = rng.choice(["r1", "r2"])
    taints = [{"key": "dedicated", "effect": "NoSchedule"}] if rng.random() < 0.3 else []
    return make_node(name, labels=labels, taints=taints)


def pre_filter(plugin: PodTopologySpread, pod: PodInfo, table: NodeTable) -> Any:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, table)
    if status.is_skip():
        return None
    found = state.read(PRE_FILTER_STATE_KEY, _PreFilterState)
    verdicts = plugin.filter(state, pod, table, table.order())
    return (
        [c.tolist() for c in found.counts],
        [d.tolist() for d in found.domains],
        [(p.values, p.nums) for p in found.paths],
        verdicts.codes.tolist(),
    )


def test_kept_eligibility_agrees_with_a_fresh_count_across_node_and_pod_changes() -> None:
    rng = random.Random(3)
    table = NodeTable()
    names = [f"n{i}" for i in range(12)]
    for name in names:
        table.upsert_node(random_node(name, rng))
    kept = PodTopologySpread()
    placed = 0
    for step in range(300):
        action = rng.random()
        if action < 0.15:  # a node relabelled or retainted, added back, or removed
            name = rng.choice(names)
            if name in table and rng.random() < 0.3:
                table.remove_node(name)
            else:
                table.upsert_node(random_node(name, rng))
        elif action < 0.6 and len(table):
            row = int(rng.choice(table.order()))
            table.add_pod(PodInfo(make_pod(f"p{placed}", labels={"app": "web"})), row)
            placed += 1
        pod = spread_pod(f"incoming-{step}", rng)
        assert pre_filter(kept, pod, table) == pre_filter(PodTopologySpread(), pod, table), step


def test_kept_eligibility_follows_a_relabelled_node() -> None:
    table = NodeTable()
    table.upsert_node(make_node("a", labels={ZONE: "z1"}))
    table.upsert_node(make_node("b", labels={ZONE: "z2"}))
    table.add_pod(PodInfo(make_pod("x", labels={"app": "web"})), table.index["a"])
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    pod = PodInfo(
        make_pod("p", labels={"app": "web"}, spec={"topologySpreadConstraints": [constraint]})
    )
    plugin = PodTopologySpread()
    # z1 holds 1 matching pod, z2 none: on a the skew would be 1 + 1 - 0.
    assert pre_filter(plugin, pod, table)[3] == [2, 0]
    table.upsert_node(make_node("b", labels={ZONE: "z1"}))  # one domain, z1, now
    _, domains, _, codes = pre_filter(plugin, pod, table)
    column = table.labels[ZONE]
    assert np.flatnonzero(domains[0]).tolist() == [column.code_of("z1")]
    assert codes == [0, 0]
