"""InterPodAffinity against a line-by-line transcription of upstream's loops.

The reference walks every pod of every node with map counts keyed by
(topology key, value), as filtering.go and scoring.go do; random clusters must
get the same verdicts and scores, and PreFilterExtensions must leave the state
a fresh PreFilter would compute.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.objects import Namespace, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.state.pod_index import pod_affinity_terms
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.interpodaffinity.plugin import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    pod_matches_all_terms,
)
from kubesched.testing import make_node, make_pod, make_table

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NAMESPACES = {"default": {}, "ns-a": {"team": "x"}, "ns-b": {"team": "y"}}

Pair = tuple[str, str]
Verdict = tuple[int, str]


def bump(counts: dict[Pair, int], labels: dict[str, str], key: str, delta: int) -> None:
    if key in labels:
        pair = (key, labels[key])
        counts[pair] = counts.get(pair, 0) + delta
        if counts[pair] == 0:
            del counts[pair]


def reference_filter(
    plugin: InterPodAffinity, incoming: Pod, nodes: NodeTable
) -> dict[str, Verdict] | None:
    terms = plugin._merged(pod_affinity_terms(incoming), preferred=False)
    ns_labels = plugin._namespace_labels(incoming.metadata.namespace)
    existing: dict[Pair, int] = {}
    affinity: dict[Pair, int] = {}
    anti: dict[Pair, int] = {}
    for row in nodes.order():
        labels = nodes.node(int(row)).metadata.labels
        for placed in nodes.pods_on(int(row)):
            for t in pod_affinity_terms(placed.pod).required_anti_affinity:
                if t.matches_pod(incoming, ns_labels):
                    bump(existing, labels, t.topology_key, 1)
            if pod_matches_all_terms(terms.required_affinity, placed.pod):
                for t in terms.required_affinity:
                    bump(affinity, labels, t.topology_key, 1)
            for t in terms.required_anti_affinity:
                if t.matches_pod(placed.pod):
                    bump(anti, labels, t.topology_key, 1)
    if not existing and not terms.required_affinity and not terms.required_anti_affinity:
        return None
    self_match = pod_matches_all_terms(terms.required_affinity, incoming)
    out: dict[str, Verdict] = {}
    for row in nodes.order():
        node = nodes.node(int(row))
        labels = node.metadata.labels
        ok, pods_exist = True, True
        for t in terms.required_affinity:
            if t.topology_key not in labels:
                ok = False
                break
            if affinity.get((t.topology_key, labels[t.topology_key]), 0) <= 0:
                pods_exist = False
        if ok and not pods_exist:
            ok = not affinity and self_match
        if not ok:
            out[node.metadata.name] = (
                int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
                ERR_REASON_AFFINITY_RULES_NOT_MATCH,
            )
            continue
        if any(
            anti.get((t.topology_key, labels.get(t.topology_key)), 0) > 0  # type: ignore[arg-type]
            for t in terms.required_anti_affinity
            if t.topology_key in labels
        ):
            out[node.metadata.name] = (
                int(Code.UNSCHEDULABLE),
                ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
            )
            continue
        if any(existing.get(pair, 0) > 0 for pair in labels.items()):
            out[node.metadata.name] = (
                int(Code.UNSCHEDULABLE),
                ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
            )
            continue
        out[node.metadata.name] = (int(Code.SUCCESS), "")
    return out


def reference_scores(
    plugin: InterPodAffinity, incoming: Pod, nodes: NodeTable, candidates: list[int]
) -> dict[str, int] | None:
    aff = incoming.spec.affinity
    has_constraints = aff is not None and (
        (
            aff.pod_affinity is not None
            and bool(aff.pod_affinity.preferred_during_scheduling_ignored_during_execution)
        )
        or (
            aff.pod_anti_affinity is not None
            and bool(aff.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution)
        )
    )
    if plugin.ignore_preferred_terms_of_existing_pods and not has_constraints:
        return None
    terms = plugin._merged(pod_affinity_terms(incoming), preferred=True)
    ns_labels = plugin._namespace_labels(incoming.metadata.namespace)
    topo: dict[str, dict[str, int]] = {}

    def process(t: Any, weight: int, target: Pod, nsl: Any, labels: dict[str, str]) -> None:
        if t.matches_pod(target, nsl) and t.topology_key in labels:
            per_key = topo.setdefault(t.topology_key, {})
            value = labels[t.topology_key]
            per_key[value] = per_key.get(value, 0) + weight

    for row in nodes.order():
        labels = nodes.node(int(row)).metadata.labels
        if not labels:
            continue
        for placed in nodes.pods_on(int(row)):
            for w in terms.preferred_affinity:
                process(w.term, w.weight, placed.pod, None, labels)
            for w in terms.preferred_anti_affinity:
                process(w.term, -w.weight, placed.pod, None, labels)
            theirs = pod_affinity_terms(placed.pod)
            if plugin.hard_pod_affinity_weight > 0:
                for t in theirs.required_affinity:
                    process(t, plugin.hard_pod_affinity_weight, incoming, ns_labels, labels)
            for w in theirs.preferred_affinity:
                process(w.term, w.weight, incoming, ns_labels, labels)
            for w in theirs.preferred_anti_affinity:
                process(w.term, -w.weight, incoming, ns_labels, labels)
    if not topo:
        return None
    raw = {}
    for row in candidates:
        labels = nodes.node(row).metadata.labels
        raw[nodes.names[row]] = sum(
            values.get(labels[key], 0) for key, values in topo.items() if key in labels
        )
    lo, hi = min(raw.values()), max(raw.values())
    return {
        n: int(100.0 * (float(s - lo) / float(hi - lo))) if hi > lo else 0 for n, s in raw.items()
    }


# --- random clusters ---------------------------------------------------------------------


def random_term(rng: random.Random) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": rng.choice([HOST, ZONE, ZONE, "rack"])}
    t["labelSelector"] = rng.choice(
        [
            {"matchLabels": {"app": "web"}},
            {"matchLabels": {"app": "db"}},
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
            {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
            {},
        ]
    )
    roll = rng.random()
    if roll < 0.15:
        t["namespaceSelector"] = {"matchLabels": {"team": rng.choice(["x", "y"])}}
    elif roll < 0.25:
        t["namespaceSelector"] = {}
    elif roll < 0.35:
        t["namespaces"] = rng.sample(sorted(NAMESPACES), rng.randint(1, 2))
    if rng.random() < 0.15:
        t["matchLabelKeys"] = ["version"]
    if rng.random() < 0.1:
        t["mismatchLabelKeys"] = ["version"]
    return t


def random_affinity(rng: random.Random, p: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        required = [random_term(rng) for _ in range(rng.randint(1, 2))] if rng.random() < p else []
        preferred = (
            [
                {"weight": rng.randint(1, 100), "podAffinityTerm": random_term(rng)}
                for _ in range(rng.randint(1, 2))
            ]
            if rng.random() < p
            else []
        )
        if required or preferred:
            out[kind] = {
                "requiredDuringSchedulingIgnoredDuringExecution": required,
                "preferredDuringSchedulingIgnoredDuringExecution": preferred,
            }
    return {"affinity": out} if out else {}


def random_labels(rng: random.Random) -> dict[str, str]:
    labels = {}
    if rng.random() < 0.8:
        labels["app"] = rng.choice(["web", "db"])
    if rng.random() < 0.5:
        labels["version"] = rng.choice(["v1", "v2"])
    return labels


def random_cluster(rng: random.Random) -> NodeTable:
    nodes = []
    for i in range(rng.randint(1, 10)):
        labels: dict[str, str] = {}
        if rng.random() < 0.9:
            labels[HOST] = f"n{i}"
        if rng.random() < 0.75:
            labels[ZONE] = rng.choice("abc")
        if rng.random() < 0.3:
            labels["rack"] = rng.choice(["r1", "r2"])
        nodes.append(make_node(f"n{i}", labels=labels))
    pods: list[Pod] = [
        make_pod(
            f"p{j}",
            labels=random_labels(rng),
            node_name=rng.choice(nodes).metadata.name,
            namespace=rng.choice(sorted(NAMESPACES)),
            spec=random_affinity(rng, 0.2),
        )
        for j in range(rng.randint(0, 30))
    ]
    return make_table(nodes, pods)


def handle_for(nodes: NodeTable) -> Handle:
    return Handle(
        nodes,
        listers=Listers(
            namespaces={
                name: msgspec.convert({"metadata": {"name": name, "labels": labels}}, Namespace)
                for name, labels in NAMESPACES.items()
            }
        ),
    )


def verdicts(plugin: InterPodAffinity, state: CycleState, pod: PodInfo, nodes: NodeTable) -> Any:
    rows = nodes.order()
    result = plugin.filter(state, pod, nodes, rows)
    out = {}
    for i, row in enumerate(rows):
        reasons = [r for r, mask in result.reasons if mask[i]]
        assert len(reasons) <= 1
        out[nodes.names[row]] = (int(result.codes[i]), reasons[0] if reasons else "")
    return out


@pytest.mark.parametrize("seed", range(150))
def test_filter_and_score_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    nodes = random_cluster(rng)
    args: dict[str, Any] = {}
    if rng.random() < 0.3:
        args["hardPodAffinityWeight"] = rng.choice([0, 1, 7])
    if rng.random() < 0.2:
        args["ignorePreferredTermsOfExistingPods"] = True
    plugin = InterPodAffinity(args, handle_for(nodes))
    incoming = make_pod(
        "incoming",
        labels=random_labels(rng),
        namespace=rng.choice(sorted(NAMESPACES)),
        spec=random_affinity(rng, 0.5),
    )
    info = PodInfo(incoming)

    state = CycleState()
    _, status = plugin.pre_filter(state, info, nodes)
    expected = reference_filter(plugin, incoming, nodes)
    if expected is None:
        assert status.code == Code.SKIP
    else:
        assert status.code == Code.SUCCESS
        assert verdicts(plugin, state, info, nodes) == expected

        # Remove a random pod, then add it back: each time as a fresh PreFilter sees it.
        placed = [(int(r), p) for r in nodes.order() for p in nodes.pods_on(int(r))]
        if placed:
            row, victim = rng.choice(placed)
            copy = state.clone()
            nodes.remove_pod(victim, row)
            assert plugin.remove_pod(copy, info, victim, nodes, row).is_success()
            after = reference_filter(plugin, incoming, nodes)
            if after is None:  # a fresh PreFilter would skip: every node passes
                after = {nodes.names[r]: (int(Code.SUCCESS), "") for r in nodes.order()}
            assert verdicts(plugin, copy, info, nodes) == after
            nodes.add_pod(victim, row)
            assert plugin.add_pod(copy, info, victim, nodes, row).is_success()
            assert verdicts(plugin, copy, info, nodes) == expected

    candidates = [int(r) for r in nodes.order() if rng.random() < 0.7] or [int(nodes.order()[0])]
    state = CycleState()
    cand = np.array(candidates, dtype=np.intp)
    status = plugin.pre_score(state, info, nodes, cand)
    expected_scores = reference_scores(plugin, incoming, nodes, candidates)
    if expected_scores is None:
        assert status.code == Code.SKIP
        return
    assert status.code == Code.SUCCESS
    scores = plugin.score(state, info, nodes, cand)
    plugin.normalize_scores(state, info, scores)
    got = dict(zip([nodes.names[r] for r in candidates], scores.tolist(), strict=True))
    assert got == expected_scores
