"""InterPodAffinity: required (anti-)affinity, existing pods' anti-affinity, namespaces,
label keys, the first pod of a group, preferred scores, hardPodAffinityWeight, hints."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from kubesched.api.objects import Namespace, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.interpodaffinity.plugin import (
    PRE_FILTER_STATE_KEY,
    TopologyCounts,
    _PreFilterState,
)
from kubesched.testing import make_node, make_pod, make_table

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])
AFF_FAIL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [AFFINITY])
ANTI_FAIL = (Code.UNSCHEDULABLE, [ANTI])
EXISTING_FAIL = (Code.UNSCHEDULABLE, [EXISTING])


def term(key: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": key}
    if labels is not None:
        t["labelSelector"] = {"matchLabels": labels}
    t.update(extra)
    return t


def affinity(
    required: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    preferred: list[tuple[int, dict[str, Any]]] | None = None,
    preferred_anti: list[tuple[int, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required or preferred:
        out["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": required or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred or []
            ],
        }
    if anti or preferred_anti:
        out["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti or []
            ],
        }
    return {"affinity": out}


def pod(
    name: str = "p",
    labels: dict[str, str] | None = None,
    node: str = "",
    namespace: str = "default",
    **kw: Any,
) -> Pod:
    spec = affinity(**kw) if kw else None
    return make_pod(name, labels=labels or {}, node_name=node, namespace=namespace, spec=spec)


def table(*pods: Pod) -> NodeTable:
    return make_table(
        [
            make_node("n1", labels={HOST: "n1", ZONE: "a"}),
            make_node("n2", labels={HOST: "n2", ZONE: "a"}),
            make_node("n3", labels={HOST: "n3", ZONE: "b"}),
            make_node("n4", labels={HOST: "n4"}),
        ],
        pods,
    )


def run_pre_filter(
    plugin: InterPodAffinity, incoming: Pod, nodes: NodeTable
) -> tuple[CycleState, Code]:
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(incoming), nodes)
    return state, status.code


def verdicts(
    incoming: Pod, nodes: NodeTable, plugin: InterPodAffinity | None = None
) -> dict[str, tuple[int, list[str]]]:
    plugin = plugin or InterPodAffinity()
    state, code = run_pre_filter(plugin, incoming, nodes)
    rows = nodes.order()
    if code == Code.SKIP:
        return {nodes.names[row]: PASS for row in rows}
    assert code == Code.SUCCESS
    result = plugin.filter(state, PodInfo(incoming), nodes, rows)
    return {
        nodes.names[row]: (int(result.codes[i]), [r for r, mask in result.reasons if mask[i]])
        for i, row in enumerate(rows)
    }


DB = {"app": "db"}
WEB = {"app": "web"}


# --- required affinity -----------------------------------------------------------------


def test_required_affinity() -> None:
    nodes = table(pod("db", DB, "n1"))
    incoming = pod(labels=WEB, required=[term(ZONE, DB)])
    assert verdicts(incoming, nodes) == {
        "n1": PASS,
        "n2": PASS,  # same zone as the db pod
        "n3": AFF_FAIL,
        "n4": AFF_FAIL,  # no zone label
    }


def test_first_pod_of_a_group_matches_its_own_affinity() -> None:
    nodes = table(pod("db-elsewhere", DB, "n1", namespace="other"))
    # No db pod in the pod's namespace: a pod matching its own term may go to any
    # node carrying the topology key.
    own = pod(labels=DB, required=[term(ZONE, DB)])
    assert verdicts(own, nodes) == {"n1": PASS, "n2": PASS, "n3": PASS, "n4": AFF_FAIL}
    # Not matching its own term: nowhere.
    other = pod(labels=WEB, required=[term(ZONE, DB)])
    assert all(v == AFF_FAIL for v in verdicts(other, nodes).values())
    # Once a db pod exists, the exception no longer applies.
    nodes = table(pod("db", DB, "n3"))
    assert verdicts(own, nodes) == {"n1": AFF_FAIL, "n2": AFF_FAIL, "n3": PASS, "n4": AFF_FAIL}


def test_one_pod_must_match_every_affinity_term() -> None:
    both = {"app": "db", "tier": "backend"}
    terms = [term(ZONE, DB), term(HOST, {"tier": "backend"})]
    nodes = table(pod("db", DB, "n1"), pod("be", {"tier": "backend"}, "n3"))
    # Neither pod matches both terms: nothing counts.
    assert all(v == AFF_FAIL for v in verdicts(pod(required=terms), nodes).values())
    nodes = table(pod("db", DB, "n1"), pod("both", both, "n2"))
    # The pod on n2 counts for zone a and for host n2; n1 is in zone a but its host has none.
    assert verdicts(pod(required=terms), nodes) == {
        "n1": AFF_FAIL,
        "n2": PASS,
        "n3": AFF_FAIL,
        "n4": AFF_FAIL,
    }


# --- required anti-affinity ------------------------------------------------------------


def test_required_anti_affinity() -> None:
    nodes = table(pod("web", WEB, "n1"))
    by_host = pod(labels=WEB, anti=[term(HOST, WEB)])
    assert verdicts(by_host, nodes) == {"n1": ANTI_FAIL, "n2": PASS, "n3": PASS, "n4": PASS}
    by_zone = pod(labels=WEB, anti=[term(ZONE, WEB)])
    # n4 has no zone label: anti-affinity cannot apply to it.
    assert verdicts(by_zone, nodes) == {"n1": ANTI_FAIL, "n2": ANTI_FAIL, "n3": PASS, "n4": PASS}


def test_existing_pods_anti_affinity() -> None:
    nodes = table(pod("guard", {"app": "guard"}, "n3", anti=[term(ZONE, WEB)]))
    assert verdicts(pod(labels=WEB), nodes) == {
        "n1": PASS,
        "n2": PASS,
        "n3": EXISTING_FAIL,
        "n4": PASS,
    }
    # A pod the guard does not repel, with no terms of its own: PreFilter skips.
    _, code = run_pre_filter(InterPodAffinity(), pod(labels=DB), nodes)
    assert code == Code.SKIP


def test_affinity_failure_wins_over_anti_affinity() -> None:
    nodes = table(pod("web", WEB, "n3"), pod("guard", {}, "n3", anti=[term(HOST, DB)]))
    incoming = pod(labels=DB, required=[term(ZONE, {"app": "missing"})], anti=[term(ZONE, WEB)])
    assert verdicts(incoming, nodes) == {
        "n1": AFF_FAIL,
        "n2": AFF_FAIL,
        "n3": AFF_FAIL,  # also anti-affinity and existing anti-affinity, but only one reason
        "n4": AFF_FAIL,
    }
    incoming = pod(labels=DB, anti=[term(ZONE, WEB)])
    assert verdicts(incoming, nodes)["n3"] == ANTI_FAIL  # before existing pods' rules


# --- namespaces ------------------------------------------------------------------------


def namespaced_handle(nodes: NodeTable) -> Handle:
    return Handle(
        nodes,
        listers=Listers(
            namespaces={
                name: msgspec.convert({"metadata": {"name": name, "labels": labels}}, Namespace)
                for name, labels in (
                    ("ns-a", {"team": "x"}),
                    ("ns-b", {"team": "y"}),
                    ("default", {}),
                )
            }
        ),
    )


def test_namespace_selector_and_namespaces() -> None:
    nodes = table(pod("db-a", DB, "n1", namespace="ns-a"), pod("db-b", DB, "n3", namespace="ns-b"))
    plugin = InterPodAffinity(handle=namespaced_handle(nodes))
    team_x = {"namespaceSelector": {"matchLabels": {"team": "x"}}}
    got = verdicts(pod(required=[term(ZONE, DB, **team_x)]), nodes, plugin)
    assert got == {"n1": PASS, "n2": PASS, "n3": AFF_FAIL, "n4": AFF_FAIL}
    every: dict[str, Any] = {"namespaceSelector": {}}
    got = verdicts(pod(required=[term(ZONE, DB, **every)]), nodes, plugin)
    assert got == {"n1": PASS, "n2": PASS, "n3": PASS, "n4": AFF_FAIL}
    listed = {"namespaces": ["ns-b"]}
    got = verdicts(pod(required=[term(ZONE, DB, **listed)]), nodes, plugin)
    assert got == {"n1": AFF_FAIL, "n2": AFF_FAIL, "n3": PASS, "n4": AFF_FAIL}
    # Listed namespaces and the selector add up.
    both = {"namespaces": ["ns-b"], "namespaceSelector": {"matchLabels": {"team": "x"}}}
    got = verdicts(pod(required=[term(ZONE, DB, **both)]), nodes, plugin)
    assert got == {"n1": PASS, "n2": PASS, "n3": PASS, "n4": AFF_FAIL}
    # Neither: the pod's own namespace only (no db there).
    got = verdicts(pod(labels=WEB, required=[term(ZONE, DB)]), nodes, plugin)
    assert all(v == AFF_FAIL for v in got.values())


def test_existing_pods_namespace_selector_reads_the_incoming_namespace_labels() -> None:
    guard_term = term(ZONE, WEB, namespaceSelector={"matchLabels": {"team": "y"}})
    nodes = table(pod("guard", {}, "n3", namespace="ns-a", anti=[guard_term]))
    plugin = InterPodAffinity(handle=namespaced_handle(nodes))
    in_b = pod(labels=WEB, namespace="ns-b")
    assert verdicts(in_b, nodes, plugin)["n3"] == EXISTING_FAIL
    in_a = pod(labels=WEB, namespace="ns-a")
    assert all(v == PASS for v in verdicts(in_a, nodes, plugin).values())


def test_match_and_mismatch_label_keys() -> None:
    v1, v2 = {"app": "db", "version": "v1"}, {"app": "db", "version": "v2"}
    nodes = table(pod("db1", v1, "n1"), pod("db2", v2, "n3"))
    same_version = pod(labels=v2, required=[term(ZONE, DB, matchLabelKeys=["version"])])
    assert verdicts(same_version, nodes) == {
        "n1": AFF_FAIL,
        "n2": AFF_FAIL,
        "n3": PASS,
        "n4": AFF_FAIL,
    }
    other_versions = pod(labels=v2, anti=[term(ZONE, DB, mismatchLabelKeys=["version"])])
    assert verdicts(other_versions, nodes) == {
        "n1": ANTI_FAIL,
        "n2": ANTI_FAIL,
        "n3": PASS,
        "n4": PASS,
    }


def test_unparsable_selector_is_unresolvable() -> None:
    bad = {
        "topologyKey": ZONE,
        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]},
    }
    state = CycleState()
    _, status = InterPodAffinity().pre_filter(state, PodInfo(pod(required=[bad])), table())
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == [
        'parsing pod: requiredAffinityTerms: "Bad" is not a valid label selector operator'
    ]


# --- PreFilterExtensions ---------------------------------------------------------------


def summary(state: CycleState, nodes: NodeTable) -> dict[str, dict[tuple[str, str], int]]:
    s = state.read(PRE_FILTER_STATE_KEY, _PreFilterState)

    def pairs(counts: TopologyCounts) -> dict[tuple[str, str], int]:
        out = {}
        for key, values in counts.by_key.items():
            column = nodes.labels[key]
            for code in np.flatnonzero(values):
                out[(key, column.values[code])] = int(values[code])
        return out

    return {
        "existing": pairs(s.existing_anti_affinity),
        "affinity": pairs(s.affinity),
        "anti": pairs(s.anti_affinity),
    }


def test_remove_pod_and_add_pod_match_a_fresh_pre_filter() -> None:
    guard = pod("guard", {}, "n3", anti=[term(ZONE, WEB)])
    nodes = table(pod("db", DB, "n1"), pod("db2", DB, "n3"), pod("web", WEB, "n2"), guard)
    incoming = pod(labels=WEB, required=[term(ZONE, DB)], anti=[term(HOST, WEB)])
    plugin = InterPodAffinity()
    state, _ = run_pre_filter(plugin, incoming, nodes)
    before = summary(state, nodes)
    assert before == {
        "existing": {(ZONE, "b"): 1},
        "affinity": {(ZONE, "a"): 1, (ZONE, "b"): 1},
        "anti": {(HOST, "n2"): 1},
    }
    copy = state.clone()
    for name, node in (("guard", "n3"), ("db", "n1"), ("web", "n2")):
        row = nodes.index[node]
        victim = next(p for p in nodes.pods_on(row) if p.name == name)
        nodes.remove_pod(victim, row)
        assert plugin.remove_pod(copy, PodInfo(incoming), victim, nodes, row).is_success()
        fresh, _ = run_pre_filter(plugin, incoming, nodes)
        assert summary(copy, nodes) == summary(fresh, nodes)
    assert summary(copy, nodes) == {
        "existing": {},
        "affinity": {(ZONE, "b"): 1},
        "anti": {},
    }
    assert summary(state, nodes) == before  # the clone's updates stayed in the clone
    for added in (guard, pod("web2", WEB, "n4")):
        info = PodInfo(added)
        row = nodes.index[added.spec.node_name]
        nodes.add_pod(info, row)
        assert plugin.add_pod(copy, PodInfo(incoming), info, nodes, row).is_success()
        fresh, _ = run_pre_filter(plugin, incoming, nodes)
        assert summary(copy, nodes) == summary(fresh, nodes)


# --- scoring ---------------------------------------------------------------------------


def scores(
    incoming: Pod, nodes: NodeTable, plugin: InterPodAffinity | None = None
) -> tuple[Code, dict[str, int], dict[str, int]]:
    plugin = plugin or InterPodAffinity()
    state = CycleState()
    rows = nodes.order()
    info = PodInfo(incoming)
    status = plugin.pre_score(state, info, nodes, rows)
    if status.code != Code.SUCCESS:
        return status.code, {}, {}
    raw = plugin.score(state, info, nodes, rows)
    names = [nodes.names[r] for r in rows]
    before = dict(zip(names, raw.tolist(), strict=True))
    plugin.normalize_scores(state, info, raw)
    return status.code, before, dict(zip(names, raw.tolist(), strict=True))


def test_preferred_affinity_and_anti_affinity() -> None:
    nodes = table(
        pod("db1", DB, "n1"), pod("db2", DB, "n3"), pod("db3", DB, "n3"), pod("web", WEB, "n2")
    )
    incoming = pod(preferred=[(10, term(ZONE, DB))], preferred_anti=[(5, term(HOST, WEB))])
    code, raw, normalized = scores(incoming, nodes)
    assert code == Code.SUCCESS
    # zone a: +10 (one db pod), zone b: +20, host n2: -5
    assert raw == {"n1": 10, "n2": 5, "n3": 20, "n4": 0}
    # 100 * (s - 0) / 20, truncated
    assert normalized == {"n1": 50, "n2": 25, "n3": 100, "n4": 0}


def test_existing_pods_terms_and_hard_pod_affinity_weight() -> None:
    nodes = table(
        pod("needs-web", {}, "n3", required=[term(ZONE, WEB)]),
        pod("dislikes-web", {}, "n1", preferred_anti=[(30, term(ZONE, WEB))]),
    )
    incoming = pod(labels=WEB)
    code, raw, normalized = scores(incoming, nodes)
    assert code == Code.SUCCESS
    # zone b: +1 (hardPodAffinityWeight), zone a: -30
    assert raw == {"n1": -30, "n2": -30, "n3": 1, "n4": 0}
    # 100 * (s + 30) / 31, truncated: n4 = 96.77 -> 96
    assert normalized == {"n1": 0, "n2": 0, "n3": 100, "n4": 96}
    _, raw, _ = scores(incoming, nodes, InterPodAffinity({"hardPodAffinityWeight": 5}))
    assert raw["n3"] == 5
    # Weight 0: the required term no longer scores; the preferred one still does.
    _, raw, _ = scores(incoming, nodes, InterPodAffinity({"hardPodAffinityWeight": 0}))
    assert raw == {"n1": -30, "n2": -30, "n3": 0, "n4": 0}


def test_pre_score_skips_without_any_matching_term() -> None:
    nodes = table(pod("needs-db", {}, "n3", required=[term(ZONE, DB)]))
    code, _, _ = scores(pod(labels=WEB), nodes)
    assert code == Code.SKIP
    code, _, _ = scores(pod(labels=WEB, preferred=[(10, term(ZONE, {"app": "none"}))]), nodes)
    assert code == Code.SKIP


def test_ignore_preferred_terms_of_existing_pods() -> None:
    nodes = table(pod("needs-web", {}, "n3", required=[term(ZONE, WEB)]), pod("db", DB, "n1"))
    plugin = InterPodAffinity({"ignorePreferredTermsOfExistingPods": True})
    code, _, _ = scores(pod(labels=WEB), nodes, plugin)
    assert code == Code.SKIP
    # With terms of its own, the existing pods' terms still count (as upstream).
    code, raw, _ = scores(pod(labels=WEB, preferred=[(3, term(ZONE, DB))]), nodes, plugin)
    assert code == Code.SUCCESS
    assert raw == {"n1": 3, "n2": 3, "n3": 1, "n4": 0}


def test_args_validation() -> None:
    try:
        InterPodAffinity({"hardPodAffinityWeight": 101})
    except ValueError as err:
        assert str(err) == "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"
    else:
        raise AssertionError("expected ValueError")


# --- queueing --------------------------------------------------------------------------


def test_events() -> None:
    events = InterPodAffinity().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
    ]


def test_pod_hint() -> None:
    plugin = InterPodAffinity()
    target = PodInfo(pod(labels=WEB, required=[term(ZONE, DB)], anti=[term(HOST, {"app": "x"})]))
    db = pod("db", DB, "n1")
    x = pod("x", {"app": "x"}, "n1")
    assert plugin.is_schedulable_after_pod_change(target, None, db)  # affinity now satisfiable
    assert not plugin.is_schedulable_after_pod_change(target, None, x)
    assert plugin.is_schedulable_after_pod_change(target, x, None)  # a repelled pod went away
    assert not plugin.is_schedulable_after_pod_change(target, db, None)
    assert not plugin.is_schedulable_after_pod_change(target, None, pod("db", DB))  # unassigned
    # deleted pod whose anti-affinity repelled the target
    guard = pod("guard", {}, "n1", anti=[term(ZONE, WEB)])
    assert plugin.is_schedulable_after_pod_change(target, guard, None)
    # label updates
    assert plugin.is_schedulable_after_pod_change(target, x, db)
    assert not plugin.is_schedulable_after_pod_change(target, db, x)
    # the target's own label change
    assert plugin.is_schedulable_after_pod_change(target, target.pod, target.pod)


def test_node_hint() -> None:
    plugin = InterPodAffinity()
    with_affinity = PodInfo(pod(required=[term(ZONE, DB)]))
    with_anti = PodInfo(pod(anti=[term(ZONE, DB)]))
    zone_a = make_node("n", labels={ZONE: "a"})
    zone_b = make_node("n", labels={ZONE: "b"})
    bare = make_node("n")
    assert plugin.is_schedulable_after_node_change(with_affinity, None, zone_a)
    assert not plugin.is_schedulable_after_node_change(with_affinity, None, bare)
    assert plugin.is_schedulable_after_node_change(with_affinity, bare, zone_a)
    assert plugin.is_schedulable_after_node_change(with_affinity, zone_a, zone_b)
    assert not plugin.is_schedulable_after_node_change(with_affinity, zone_a, bare)
    assert plugin.is_schedulable_after_node_change(with_anti, None, bare)
    assert plugin.is_schedulable_after_node_change(with_anti, zone_a, bare)
    assert not plugin.is_schedulable_after_node_change(with_anti, bare, zone_a)
    assert not plugin.is_schedulable_after_node_change(PodInfo(pod()), None, zone_a)
