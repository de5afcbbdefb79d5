"""PodTopologySpread against a line-by-line transcription of upstream's loops.

The reference walks every pod of every node (countPodsMatchSelector, the maps
TpValueToMatchNum / TopologyValueToPodCounts) instead of using the pod index
and numpy; random clusters must get the same verdicts and scores.
"""

from __future__ import annotations

import math
import random
from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.node_affinity import required_node_affinity
from kubesched.api.objects import OwnerReference, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    MAX_INT32,
    Constraint,
    go_log,
    has_all_keys,
    node_included,
)
from kubesched.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
)
from kubesched.testing import make_node, make_pod, make_table

ZONE = "topology.kubernetes.io/zone"
RACK = "rack"


def count_matching(pods: list[PodInfo], c: Constraint, namespace: str) -> int:
    if c.selector.empty():
        return 0
    return sum(
        1
        for p in pods
        if p.pod.metadata.deletion_timestamp is None
        and p.namespace == namespace
        and c.selector.matches(p.pod.metadata.labels)
    )


def reference_filter(
    plugin: PodTopologySpread, pod: PodInfo, nodes: NodeTable
) -> dict[str, tuple[int, str]] | None:
    constraints = plugin.get_constraints(pod.pod)
    if not constraints:
        return None
    required = required_node_affinity(pod.pod)
    tp: list[dict[str, int]] = [{} for _ in constraints]
    for row in nodes.order():
        node = nodes.node(int(row))
        if not has_all_keys(node.metadata.labels, constraints):
            continue
        pods = list(nodes.pods_on(int(row)))
        for i, c in enumerate(constraints):
            if not node_included(c, pod.pod, node, required):
                continue
            value = node.metadata.labels[c.topology_key]
            tp[i][value] = tp[i].get(value, 0) + count_matching(pods, c, pod.namespace)
    out: dict[str, tuple[int, str]] = {}
    for row in nodes.order():
        node = nodes.node(int(row))
        verdict = (int(Code.SUCCESS), "")
        for i, c in enumerate(constraints):
            found = node.metadata.labels.get(c.topology_key)
            if found is None:
                verdict = (
                    int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                    ERR_REASON_NODE_LABEL_NOT_MATCH,
                )
                break
            minimum = min(tp[i].values(), default=MAX_INT32)
            if len(tp[i]) < c.min_domains:
                minimum = 0
            self_match = int(c.selector.matches(pod.pod.metadata.labels))
            if tp[i].get(found, 0) + self_match - minimum > c.max_skew:
                verdict = (int(Code.UNSCHEDULABLE), ERR_REASON_CONSTRAINTS_NOT_MATCH)
                break
        out[node.metadata.name] = verdict
    return out


def reference_scores(
    plugin: PodTopologySpread, pod: PodInfo, nodes: NodeTable, candidates: list[int]
) -> dict[str, int] | None:
    constraints = plugin.soft_constraints(pod.pod)
    if not constraints:
        return None
    require_all = bool(pod.pod.spec.topology_spread_constraints) or not plugin.system_defaulted
    ignored: set[str] = set()
    counts: list[dict[str, int]] = [{} for _ in constraints]
    size = [0] * len(constraints)
    for row in candidates:
        node = nodes.node(row)
        if require_all and not has_all_keys(node.metadata.labels, constraints):
            ignored.add(node.metadata.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            value = node.metadata.labels.get(c.topology_key, "")
            if value not in counts[i]:
                counts[i][value] = 0
                size[i] += 1
    weights = [
        go_log(
            float((len(candidates) - len(ignored) if c.topology_key == LABEL_HOSTNAME else s) + 2)
        )
        for c, s in zip(constraints, size, strict=True)
    ]
    required = required_node_affinity(pod.pod)
    for row in nodes.order():
        node = nodes.node(int(row))
        if require_all and not has_all_keys(node.metadata.labels, constraints):
            continue
        pods = list(nodes.pods_on(int(row)))
        for i, c in enumerate(constraints):
            if not node_included(c, pod.pod, node, required):
                continue
            value = node.metadata.labels.get(c.topology_key, "")
            if value in counts[i]:
                counts[i][value] += count_matching(pods, c, pod.namespace)
    raw: dict[str, int] = {}
    for row in candidates:
        node = nodes.node(row)
        if node.metadata.name in ignored:
            raw[node.metadata.name] = 0
            continue
        score = 0.0
        for i, c in enumerate(constraints):
            found = node.metadata.labels.get(c.topology_key)
            if found is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_matching(list(nodes.pods_on(row)), c, pod.namespace)
            else:
                cnt = counts[i][found]
            score += float(cnt) * weights[i] + float(c.max_skew - 1)
        raw[node.metadata.name] = math.floor(score + 0.5)  # scores are >= 0
    valid = [s for n, s in raw.items() if n not in ignored]
    lo, hi = min(valid, default=2**63 - 1), max([0, *valid])
    return {
        n: 0 if n in ignored else (100 if hi == 0 else 100 * (hi + lo - s) // hi)
        for n, s in raw.items()
    }


def random_cluster(rng: random.Random) -> NodeTable:
    nodes = []
    for i in range(rng.randint(1, 14)):
        labels: dict[str, str] = {}
        if rng.random() < 0.85:
            labels[LABEL_HOSTNAME] = f"n{i}"
        if rng.random() < 0.8:
            labels[ZONE] = rng.choice("abc")
        if rng.random() < 0.5:
            labels[RACK] = rng.choice(["r1", "r2", ""])
        if rng.random() < 0.5:
            labels["pool"] = rng.choice(["x", "y"])
        taints = [{"key": "t", "effect": "NoSchedule"}] if rng.random() < 0.2 else []
        nodes.append(make_node(f"n{i}", labels=labels, taints=taints))
    pods: list[Pod] = []
    for j in range(rng.randint(0, 40)):
        node = rng.choice(nodes).metadata.name
        labels = {}
        if rng.random() < 0.7:
            labels["app"] = rng.choice(["web", "db"])
        if rng.random() < 0.5:
            labels["version"] = rng.choice(["v1", "v2"])
        p = make_pod(
            f"p{j}",
            labels=labels,
            node_name=node,
            namespace=rng.choice(["default", "default", "other"]),
        )
        if rng.random() < 0.1:
            p = msgspec.structs.replace(
                p, metadata=msgspec.structs.replace(p.metadata, deletion_timestamp="2026-01-01")
            )
        pods.append(p)
    return make_table(nodes, pods)


def random_constraint(rng: random.Random, when: str) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": rng.randint(1, 3),
        "topologyKey": rng.choice([ZONE, LABEL_HOSTNAME, RACK]),
        "whenUnsatisfiable": when,
    }
    selector = rng.choice(
        [
            {"matchLabels": {"app": "web"}},
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
            {"matchExpressions": [{"key": "version", "operator": "NotIn", "values": ["v1"]}]},
            {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            {},
            None,
        ]
    )
    if selector is not None:
        c["labelSelector"] = selector
    if rng.random() < 0.3:
        c["minDomains"] = rng.randint(1, 4)
    if rng.random() < 0.3:
        c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.3:
        c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
    if rng.random() < 0.2:
        c["matchLabelKeys"] = ["version"]
    return c


def random_pod(rng: random.Random) -> PodInfo:
    labels = {"app": rng.choice(["web", "db"])}
    if rng.random() < 0.5:
        labels["version"] = rng.choice(["v1", "v2"])
    spec: dict[str, Any] = {}
    if rng.random() < 0.8:
        whens = ["DoNotSchedule", "ScheduleAnyway"]
        spec["topologySpreadConstraints"] = [
            random_constraint(rng, rng.choice(whens)) for _ in range(rng.randint(1, 3))
        ]
    if rng.random() < 0.3:
        spec["nodeSelector"] = {"pool": "x"}
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
    pod = make_pod("incoming", labels=labels, spec=spec)
    if rng.random() < 0.3:
        ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}
        meta = msgspec.structs.replace(
            pod.metadata, owner_references=[msgspec.convert(ref, OwnerReference)]
        )
        pod = msgspec.structs.replace(pod, metadata=meta)
    return PodInfo(pod)


@pytest.mark.parametrize("seed", range(150))
def test_filter_and_score_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    nodes = random_cluster(rng)
    pod = random_pod(rng)
    plugin = PodTopologySpread()
    rows = nodes.order()

    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    expected = reference_filter(plugin, pod, nodes)
    if expected is None:
        assert status.code == Code.SKIP
    else:
        assert status.code == Code.SUCCESS
        result = plugin.filter(state, pod, nodes, rows)
        got = {}
        for i, row in enumerate(rows):
            reasons = [r for r, mask in result.reasons if mask[i]]
            got[nodes.names[row]] = (int(result.codes[i]), reasons[0] if reasons else "")
        assert got == expected

    candidates = [int(r) for r in rows if rng.random() < 0.7] or [int(rows[0])]
    state = CycleState()
    cand = np.array(candidates, dtype=np.intp)
    status = plugin.pre_score(state, pod, nodes, cand)
    expected_scores = reference_scores(plugin, pod, nodes, candidates)
    if expected_scores is None:
        assert status.code == Code.SKIP
        return
    assert status.code == Code.SUCCESS
    scores = plugin.score(state, pod, nodes, cand)
    plugin.normalize_scores(state, pod, scores)
    assert dict(zip([nodes.names[r] for r in candidates], scores.tolist(), strict=True)) == (
        expected_scores
    )
