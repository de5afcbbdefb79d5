"""PodTopologySpread: skew filtering, minDomains, inclusion policies, scores, defaults, hints.

Expected scores are worked out by hand from upstream's formulas:
score = round(sum over constraints of count * log(size + 2) + maxSkew - 1), then
normalized as 100 * (max + min - score) / max (integer division).
"""

from __future__ import annotations

import re
import struct
from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.objects import LabelSelector, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.podtopologyspread import PodTopologySpread
from kubesched.plugins.podtopologyspread.common import go_log, go_round
from kubesched.plugins.podtopologyspread.plugin import (
    PRE_FILTER_STATE_KEY,
    CriticalPaths,
    _PreFilterState,
)
from kubesched.testing import make_node, make_pod, make_table

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REASON = "node(s) didn't match pod topology spread constraints"
LABEL_REASON = "node(s) didn't match pod topology spread constraints (missing required label)"
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])
SKEWED = (Code.UNSCHEDULABLE, [REASON])
NO_LABEL = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [LABEL_REASON])

FOO = {"matchLabels": {"foo": ""}}


def constraint(
    max_skew: int,
    key: str,
    when: str = "DoNotSchedule",
    selector: dict[str, Any] | None = FOO,
    **extra: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    c.update(extra)
    return c


def incoming(
    *constraints: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any
) -> PodInfo:
    full: dict[str, Any] = {"topologySpreadConstraints": list(constraints), **spec}
    return PodInfo(make_pod("p", labels={"foo": ""} if labels is None else labels, spec=full))


def placed(
    node: str, count: int, labels: dict[str, str] | None = None, namespace: str = "default"
) -> list[Pod]:
    labels = {"foo": ""} if labels is None else labels
    return [
        make_pod(f"{node}-{namespace}-{i}", labels=labels, node_name=node, namespace=namespace)
        for i in range(count)
    ]


def zoned(name: str, zone: str | None, **kw: Any) -> Any:
    labels = {HOST: name}
    if zone is not None:
        labels[ZONE] = zone
    labels.update(kw.pop("labels", {}))
    return make_node(name, labels=labels, **kw)


def verdicts(
    plugin: PodTopologySpread, pod: PodInfo, nodes: NodeTable
) -> dict[str, tuple[int, list[str]]]:
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, nodes)
    assert status.code == Code.SUCCESS, status
    rows = nodes.order()
    result = plugin.filter(state, pod, nodes, rows)
    return {
        nodes.names[row]: (int(result.codes[i]), [r for r, mask in result.reasons if mask[i]])
        for i, row in enumerate(rows)
    }


def all_pass(result: dict[str, tuple[int, list[str]]]) -> bool:
    return all(v == PASS for v in result.values())


def scores(
    plugin: PodTopologySpread, pod: PodInfo, nodes: NodeTable, candidates: list[str] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """(raw, normalized) scores of the candidate nodes (default: all)."""
    rows = nodes.order()
    if candidates is not None:
        rows = np.array([nodes.row_of(n) for n in candidates], dtype=np.intp)
    state = CycleState()
    status = plugin.pre_score(state, pod, nodes, rows)
    assert status.code == Code.SUCCESS, status
    raw = plugin.score(state, pod, nodes, rows)
    names = [nodes.names[r] for r in rows]
    before = dict(zip(names, raw.tolist(), strict=True))
    plugin.normalize_scores(state, pod, raw)
    return before, dict(zip(names, raw.tolist(), strict=True))


# --- Go arithmetic ---------------------------------------------------------------------


def bits(x: float) -> int:
    return int(struct.unpack("<Q", struct.pack("<d", x))[0])


def test_go_log_matches_go_bit_for_bit() -> None:
    # math.Log as Go's amd64 assembly computes it (values printed by Go 1.26); the C
    # library's log is one ulp off for these.
    assert bits(go_log(3.0)) == 0x3FF193EA7AAD030A
    assert bits(go_log(14.0)) == 0x40051CCA16D7BBA8
    assert go_log(2.0) == pytest.approx(0.6931471805599453)


def test_go_round_is_half_away_from_zero() -> None:
    got = go_round(np.array([0.5, 1.5, 2.5, 2.4999999999999996, 0.49999999999999994, 3.0]))
    assert got.tolist() == [1.0, 2.0, 3.0, 2.0, 0.0, 3.0]


def test_critical_paths_keep_the_two_smallest() -> None:
    paths = CriticalPaths()
    for value, num in [("a", 3), ("b", 1), ("c", 2), ("d", 5)]:
        paths.update(value, num)
    assert (paths.values, paths.nums) == (["b", "c"], [1, 2])
    paths.update("b", 4)  # b grows past c: swap
    assert (paths.values, paths.nums) == (["c", "b"], [2, 4])


# --- Filter ----------------------------------------------------------------------------


def zone_table(pods: list[Pod]) -> NodeTable:
    nodes = [zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b"), zoned("c1", "c")]
    return make_table(nodes, pods)


def test_skew_across_zones() -> None:
    # matching pods per zone: a = 2 + 1, b = 1, c = 0; the global minimum is 0.
    nodes = zone_table([*placed("a1", 2), *placed("a2", 1), *placed("b1", 1)])
    pod = incoming(constraint(1, ZONE))
    assert verdicts(PodTopologySpread(), pod, nodes) == {
        "a1": SKEWED,  # 3 + 1 - 0 > 1
        "a2": SKEWED,
        "b1": SKEWED,  # 1 + 1 - 0 > 1
        "c1": PASS,  # 0 + 1 - 0
    }
    wider = incoming(constraint(2, ZONE))
    assert verdicts(PodTopologySpread(), wider, nodes) == {
        "a1": SKEWED,  # 4 > 2
        "a2": SKEWED,
        "b1": PASS,  # 2
        "c1": PASS,
    }


def test_pod_not_matching_its_own_selector_adds_nothing() -> None:
    nodes = zone_table([*placed("a1", 1), *placed("b1", 1), *placed("c1", 0)])
    pod = incoming(constraint(1, ZONE), labels={"other": "x"})
    # counts a = 1, b = 1, c = 0: a and b reach 1 - 0 = 1, allowed.
    assert all_pass(verdicts(PodTopologySpread(), pod, nodes))


def test_min_domains_treats_the_global_minimum_as_zero() -> None:
    nodes = make_table([zoned("a1", "a"), zoned("b1", "b")], [*placed("a1", 1), *placed("b1", 1)])
    # Two domains with 1 each: 1 + 1 - 1 = 1 <= 1.
    assert all_pass(verdicts(PodTopologySpread(), incoming(constraint(1, ZONE)), nodes))
    # minDomains 3 > 2 domains: the minimum counts as 0, so 1 + 1 - 0 = 2 > 1.
    pod = incoming(constraint(1, ZONE, minDomains=3))
    assert verdicts(PodTopologySpread(), pod, nodes) == {"a1": SKEWED, "b1": SKEWED}
    pod = incoming(constraint(1, ZONE, minDomains=2))
    assert all_pass(verdicts(PodTopologySpread(), pod, nodes))


def test_nodes_lacking_the_topology_key() -> None:
    nodes = make_table(
        [zoned("a1", "a"), zoned("b1", "b"), zoned("x", None)],
        [*placed("a1", 1), *placed("x", 5)],  # pods on x count nowhere
    )
    pod = incoming(constraint(1, ZONE))
    assert verdicts(PodTopologySpread(), pod, nodes) == {
        "a1": SKEWED,  # 1 + 1 - 0
        "b1": PASS,
        "x": NO_LABEL,
    }


def test_first_failing_constraint_names_the_reason() -> None:
    nodes = make_table(
        [
            zoned("a1", "a"),
            make_node("a2", labels={ZONE: "a"}),  # no hostname label
            zoned("b1", "b"),
        ],
        placed("a1", 2),
    )
    pod = incoming(constraint(1, ZONE), constraint(1, HOST))
    assert verdicts(PodTopologySpread(), pod, nodes) == {
        "a1": SKEWED,
        # zone a is skewed (2 + 1 - 0 > 1) before the hostname label is looked for
        "a2": SKEWED,
        "b1": PASS,
    }
    pod = incoming(constraint(1, HOST), constraint(1, ZONE))
    # a2 lacks hostname, which is now checked first; but a2 also never counts as
    # a domain, so zone counts are a = 2 (a1 only), b = 0.
    assert verdicts(PodTopologySpread(), pod, nodes)["a2"] == NO_LABEL


def test_other_namespaces_and_terminating_pods_do_not_count() -> None:
    gone = make_pod("gone", labels={"foo": ""}, node_name="c1")
    gone = msgspec.structs.replace(
        gone,
        metadata=msgspec.structs.replace(gone.metadata, deletion_timestamp="2026-01-01T00:00:00Z"),
    )
    pods = [*placed("a1", 2, namespace="other"), *placed("b1", 1), gone]
    nodes = make_table([zoned("a1", "a"), zoned("b1", "b"), zoned("c1", "c")], pods)
    # counts a = 0, b = 1, c = 0 (terminating pod skipped)
    assert verdicts(PodTopologySpread(), incoming(constraint(1, ZONE)), nodes) == {
        "a1": PASS,
        "b1": SKEWED,
        "c1": PASS,
    }


def test_node_affinity_policy() -> None:
    nodes = make_table(
        [
            zoned("a1", "a", labels={"pool": "x"}),
            zoned("b1", "b", labels={"pool": "x"}),
            zoned("c1", "c"),
        ],
        [*placed("a1", 1), *placed("b1", 1)],
    )
    selector = {"nodeSelector": {"pool": "x"}}
    # Honor (default): zone c's node does not match the pod's nodeSelector, so c is
    # no domain; the minimum is 1 and a, b allow 1 + 1 - 1 = 1.
    honor = incoming(constraint(1, ZONE), **selector)
    assert all_pass(verdicts(PodTopologySpread(), honor, nodes))
    # Ignore: c counts with 0 pods, so a and b are at 2 - 0.
    ignore = incoming(constraint(1, ZONE, nodeAffinityPolicy="Ignore"), **selector)
    assert verdicts(PodTopologySpread(), ignore, nodes) == {
        "a1": SKEWED,
        "b1": SKEWED,
        "c1": PASS,
    }


def test_node_taints_policy() -> None:
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    nodes = make_table(
        [zoned("a1", "a"), zoned("b1", "b"), zoned("c1", "c", taints=taint)],
        [*placed("a1", 1), *placed("b1", 1)],
    )
    # Ignore (default): the tainted zone counts, minimum 0.
    ignore = incoming(constraint(1, ZONE))
    assert verdicts(PodTopologySpread(), ignore, nodes)["a1"] == SKEWED
    # Honor: the untolerated taint takes zone c out, minimum 1.
    honor = incoming(constraint(1, ZONE, nodeTaintsPolicy="Honor"))
    assert all_pass(verdicts(PodTopologySpread(), honor, nodes))
    # Honor, but tolerated: zone c is back.
    tolerated = incoming(
        constraint(1, ZONE, nodeTaintsPolicy="Honor"),
        tolerations=[{"key": "dedicated", "operator": "Exists"}],
    )
    assert verdicts(PodTopologySpread(), tolerated, nodes)["a1"] == SKEWED


def test_match_label_keys_narrow_the_selector() -> None:
    v1 = {"foo": "", "version": "v1"}
    v2 = {"foo": "", "version": "v2"}
    nodes = make_table(
        [zoned("a1", "a"), zoned("b1", "b")],
        [*placed("a1", 3, labels=v1), *placed("b1", 1, labels=v2)],
    )
    pod = incoming(constraint(1, ZONE, matchLabelKeys=["version"]), labels=v2)
    # only v2 pods count: a = 0, b = 1
    assert verdicts(PodTopologySpread(), pod, nodes) == {"a1": PASS, "b1": SKEWED}
    # without the key the v1 pods count too: a = 3, b = 1
    plain = incoming(constraint(1, ZONE), labels=v2)
    assert verdicts(PodTopologySpread(), plain, nodes) == {"a1": SKEWED, "b1": PASS}
    # a nil labelSelector stays "nothing" even with matchLabelKeys (counts 0, no self match)
    nil = incoming(constraint(1, ZONE, selector=None, matchLabelKeys=["version"]), labels=v2)
    assert all_pass(verdicts(PodTopologySpread(), nil, nodes))


def test_pre_filter_skips_without_hard_constraints() -> None:
    nodes = zone_table([])
    plugin = PodTopologySpread()
    _, status = plugin.pre_filter(
        CycleState(), incoming(constraint(1, ZONE, "ScheduleAnyway")), nodes
    )
    assert status.code == Code.SKIP
    # System default constraints are all ScheduleAnyway.
    _, status = plugin.pre_filter(CycleState(), PodInfo(make_pod("p")), nodes)
    assert status.code == Code.SKIP


def test_bad_selector_is_an_error() -> None:
    pod = incoming(
        constraint(1, ZONE, selector={"matchExpressions": [{"key": "foo", "operator": "Bad"}]})
    )
    _, status = PodTopologySpread().pre_filter(CycleState(), pod, zone_table([]))
    assert status.code == Code.ERROR
    assert status.message() == (
        "get constraints from pod: obtaining pod's hard topology spread constraints: "
        '"Bad" is not a valid label selector operator'
    )


# --- PreFilterExtensions ---------------------------------------------------------------


def state_summary(state: CycleState, nodes: NodeTable) -> list[tuple[dict[str, int], int]]:
    s = state.read(PRE_FILTER_STATE_KEY, _PreFilterState)
    out = []
    for i, c in enumerate(s.constraints):
        column = nodes.labels[c.topology_key]
        domains = {
            column.values[code]: int(s.counts[i][code]) for code in np.flatnonzero(s.domains[i])
        }
        out.append((domains, s.min_match_num(i)))
    return out


def test_remove_pod_and_add_pod_match_a_fresh_pre_filter() -> None:
    nodes = zone_table([*placed("a1", 2), *placed("a2", 1), *placed("b1", 1)])
    pod = incoming(constraint(1, ZONE), constraint(1, HOST))
    plugin = PodTopologySpread()
    state = CycleState()
    plugin.pre_filter(state, pod, nodes)
    before = state_summary(state, nodes)

    # Remove b1's pod: zone b drops to 0 and becomes the minimum with c.
    victim = next(nodes.pods_on(nodes.index["b1"]))
    copy = state.clone()
    nodes.remove_pod(victim, nodes.index["b1"])
    assert plugin.remove_pod(copy, pod, victim, nodes, nodes.index["b1"]).is_success()
    fresh = CycleState()
    plugin.pre_filter(fresh, pod, nodes)
    assert state_summary(copy, nodes) == state_summary(fresh, nodes)
    assert state_summary(state, nodes) == before  # the clone's update stayed in the clone

    # Add it back (and one more on c1): again as a fresh PreFilter sees it.
    extra = PodInfo(make_pod("c1-new", labels={"foo": ""}, node_name="c1"))
    for info, node in ((victim, "b1"), (extra, "c1")):
        nodes.add_pod(info, nodes.index[node])
        assert plugin.add_pod(copy, pod, info, nodes, nodes.index[node]).is_success()
    fresh = CycleState()
    plugin.pre_filter(fresh, pod, nodes)
    assert state_summary(copy, nodes) == state_summary(fresh, nodes)
    # zones a = 3, b = 1, c = 1; hosts a1 = 2, a2 = b1 = c1 = 1: minimum 1 for both
    assert verdicts(plugin, pod, nodes) == {"a1": SKEWED, "a2": SKEWED, "b1": PASS, "c1": PASS}


def test_updates_ignore_other_namespaces_and_unmatched_pods() -> None:
    nodes = zone_table(placed("a1", 1))
    pod = incoming(constraint(1, ZONE))
    plugin = PodTopologySpread()
    state = CycleState()
    plugin.pre_filter(state, pod, nodes)
    before = state_summary(state, nodes)
    row = nodes.index["b1"]
    for other in (
        PodInfo(make_pod("x", namespace="other", labels={"foo": ""}, node_name="b1")),
        PodInfo(make_pod("y", labels={"bar": ""}, node_name="b1")),
    ):
        assert plugin.add_pod(state, pod, other, nodes, row).is_success()
    assert state_summary(state, nodes) == before


# --- Score -----------------------------------------------------------------------------


def host_table(counts: dict[str, int], extra: list[Pod] | None = None) -> NodeTable:
    nodes = [make_node(n, labels={HOST: n}) for n in counts]
    pods = [p for n, c in counts.items() for p in placed(n, c)]
    return make_table(nodes, [*pods, *(extra or [])])


def test_score_one_constraint_on_hostname() -> None:
    # 4 candidates: weight log(4 + 2) = 1.7918; counts 2/1/0/3.
    nodes = host_table({"a": 2, "b": 1, "c": 0, "d": 3})
    pod = incoming(constraint(1, HOST, "ScheduleAnyway"))
    raw, normalized = scores(PodTopologySpread(), pod, nodes)
    assert raw == {"a": 4, "b": 2, "c": 0, "d": 5}  # round(2 * 1.7918) = round(3.58) ...
    # 100 * (5 + 0 - s) / 5
    assert normalized == {"a": 20, "b": 60, "c": 100, "d": 0}


def test_score_max_skew_waters_down_differences() -> None:
    nodes = host_table({"a": 2, "b": 1, "c": 0, "d": 3})
    pod = incoming(constraint(2, HOST, "ScheduleAnyway"))
    raw, normalized = scores(PodTopologySpread(), pod, nodes)
    assert raw == {"a": 5, "b": 3, "c": 1, "d": 6}  # + (maxSkew - 1)
    # 100 * (6 + 1 - s) / 6
    assert normalized == {"a": 33, "b": 66, "c": 100, "d": 16}


def test_score_zone_counts_pods_of_non_candidate_nodes() -> None:
    nodes = make_table(
        [zoned("a", "z1"), zoned("b", "z1"), zoned("x", "z2"), zoned("y", "z2")],
        [*placed("a", 4), *placed("b", 2), *placed("x", 1), *placed("y", 3)],
    )
    pod = incoming(constraint(1, ZONE, "ScheduleAnyway"))
    # y failed filtering, but its pods count for z2: z1 = 6, z2 = 4; 2 domains,
    # weight log(4) = 1.3863: 6 * 1.3863 = 8.32 -> 8, 4 * 1.3863 = 5.55 -> 6.
    raw, normalized = scores(PodTopologySpread(), pod, nodes, ["a", "b", "x"])
    assert raw == {"a": 8, "b": 8, "x": 6}
    assert normalized == {"a": 75, "b": 75, "x": 100}  # 100 * (14 - s) / 8


def test_score_ignores_candidates_lacking_a_topology_key() -> None:
    nodes = make_table(
        [
            make_node("a", labels={HOST: "a"}),
            make_node("b", labels={"n": "b"}),
            make_node("x", labels={HOST: "x"}),
            make_node("y", labels={HOST: "y"}),
        ],
        [*placed("a", 4), *placed("b", 2), *placed("x", 1), *placed("y", 3)],
    )
    pod = incoming(constraint(1, HOST, "ScheduleAnyway"))
    # b is ignored: size 3 - 1 = 2, weight log(4): a = 5.55 -> 6, x = 1.39 -> 1.
    raw, normalized = scores(PodTopologySpread(), pod, nodes, ["a", "b", "x"])
    assert raw == {"a": 6, "b": 0, "x": 1}
    assert normalized == {"a": 16, "b": 0, "x": 100}  # 100 * (7 - s) / 6; b stays 0


def test_score_two_constraints_with_different_selectors() -> None:
    # zone/foo counts z1 = 2, z2 = 2... (upstream's "two Constraints on zone and node,
    # with different labelSelectors"): P{foo} on a, P{foo,bar} on b, P{foo} P{bar} on y.
    nodes = make_table(
        [zoned("a", "z1"), zoned("b", "z1"), zoned("x", "z2"), zoned("y", "z2")],
        [
            *placed("a", 1, {"foo": ""}),
            *placed("b", 1, {"foo": "", "bar": ""}),
            *placed("y", 1, {"foo": ""}),
            make_pod("y-bar", labels={"bar": ""}, node_name="y"),
        ],
    )
    pod = incoming(
        constraint(1, ZONE, "ScheduleAnyway"),
        constraint(1, HOST, "ScheduleAnyway", selector={"matchLabels": {"bar": ""}}),
        labels={"foo": "", "bar": ""},
    )
    # zone: 2 domains, w = log 4 = 1.3863, z1 = 2, z2 = 1 (y's foo pod);
    # host: 4 nodes, w = log 6 = 1.7918, bar pods a 0, b 1, x 0, y 1.
    # a = 2.77 -> 3; b = 2.77 + 1.79 = 4.56 -> 5; x = 1.39 -> 1; y = 1.39 + 1.79 = 3.18 -> 3
    raw, normalized = scores(PodTopologySpread(), pod, nodes)
    assert raw == {"a": 3, "b": 5, "x": 1, "y": 3}
    assert normalized == {"a": 60, "b": 20, "x": 100, "y": 60}  # 100 * (6 - s) / 5


def test_score_inclusion_policies() -> None:
    taint = [{"key": "t", "effect": "NoSchedule"}]
    nodes = make_table(
        [zoned("a", "z1"), zoned("b", "z2"), zoned("c", "z2", taints=taint)],
        [*placed("a", 1), *placed("b", 1), *placed("c", 2)],
    )
    # Ignore (default): z1 = 1, z2 = 3; weight log(4): a = 1.39 -> 1, b = 4.16 -> 4.
    raw, normalized = scores(
        PodTopologySpread(), incoming(constraint(1, ZONE, "ScheduleAnyway")), nodes, ["a", "b"]
    )
    assert raw == {"a": 1, "b": 4}
    assert normalized == {"a": 100, "b": 25}
    # Honor: c's pods do not count: z1 = 1, z2 = 1.
    honor = incoming(constraint(1, ZONE, "ScheduleAnyway", nodeTaintsPolicy="Honor"))
    raw, normalized = scores(PodTopologySpread(), honor, nodes, ["a", "b"])
    assert raw == {"a": 1, "b": 1}
    assert normalized == {"a": 100, "b": 100}


def test_all_candidates_ignored_score_zero() -> None:
    nodes = make_table([make_node("a"), make_node("b")])
    raw, normalized = scores(
        PodTopologySpread(), incoming(constraint(1, ZONE, "ScheduleAnyway")), nodes
    )
    assert raw == normalized == {"a": 0, "b": 0}


# --- default constraints ---------------------------------------------------------------


def owned_by(kind: str, name: str, labels: dict[str, str], api_version: str = "apps/v1") -> PodInfo:
    pod = make_pod("p", labels=labels)
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "controller": True}
    meta = msgspec.convert(
        {"name": "p", "namespace": "default", "labels": labels, "ownerReferences": [ref]},
        type(pod.metadata),
    )
    return PodInfo(msgspec.structs.replace(pod, metadata=meta))


WEB = {"app": "web", "pod-template-hash": "abc"}


def default_table() -> NodeTable:
    return make_table(
        [zoned("n1", "a"), zoned("n2", "a"), zoned("n3", "b")],
        [
            *placed("n1", 2, WEB),
            *placed("n3", 1, WEB),
            # another ReplicaSet of the same app: not selected
            *placed("n2", 3, {"app": "web", "pod-template-hash": "old"}),
        ],
    )


def test_system_default_constraints_for_a_replica_set_pod() -> None:
    nodes = default_table()
    pod = owned_by("ReplicaSet", "web-abc", WEB)
    # hostname (maxSkew 3): 3 nodes, w = log 5 = 1.6094; zone (maxSkew 5): 2 zones,
    # w = log 4 = 1.3863, a = 2, b = 1.
    # n1 = 2*1.6094 + 2 + 2*1.3863 + 4 = 11.99 -> 12; n2 = 2 + 6.77 = 8.77 -> 9;
    # n3 = 3.61 + 5.39 = 9.00 -> 9
    expected = ({"n1": 12, "n2": 9, "n3": 9}, {"n1": 75, "n2": 100, "n3": 100})
    assert scores(PodTopologySpread(), pod, nodes) == expected
    # The same with the ReplicaSet's selector known.
    handle = Handle(
        nodes,
        listers=Listers(
            workload_selectors={
                ("default", "ReplicaSet", "web-abc"): LabelSelector(match_labels=WEB),
            }
        ),
    )
    assert scores(PodTopologySpread(handle=handle), pod, nodes) == expected


def test_no_default_constraints_without_a_known_controller() -> None:
    nodes = default_table()
    plugin = PodTopologySpread()
    for pod in (
        PodInfo(make_pod("p", labels=WEB)),  # no owner
        owned_by("Job", "j", WEB, "batch/v1"),  # not a spreading controller
        owned_by("ReplicaSet", "web-abc", WEB, "apps/v1beta2"),  # other group/version
    ):
        assert plugin.pre_score(CycleState(), pod, nodes, nodes.order()).code == Code.SKIP
    # Listers known, but the ReplicaSet is not among them.
    handle = Handle(nodes, listers=Listers(workload_selectors={}))
    pod = owned_by("ReplicaSet", "web-abc", WEB)
    status = PodTopologySpread(handle=handle).pre_score(CycleState(), pod, nodes, nodes.order())
    assert status.code == Code.SKIP


def test_services_selecting_the_pod_build_the_default_selector() -> None:
    nodes = default_table()
    handle = Handle(
        nodes,
        listers=Listers(
            workload_selectors={
                ("default", "Service", "web"): LabelSelector(match_labels={"app": "web"}),
                ("other", "Service", "web"): LabelSelector(match_labels={"app": "x"}),
            }
        ),
    )
    pod = PodInfo(make_pod("p", labels=WEB))
    # app=web: all 6 pods count. n1 = 2, n2 = 3, n3 = 1; zones a = 5, b = 1.
    # n1 = 2*1.6094 + 2 + 5*1.3863 + 4 = 16.15 -> 16; n2 = 4.83 + 2 + 10.93 = 17.76 -> 18;
    # n3 = 1.61 + 2 + 1.39 + 4 = 9.00 -> 9
    raw, normalized = scores(PodTopologySpread(handle=handle), pod, nodes)
    assert raw == {"n1": 16, "n2": 18, "n3": 9}
    assert normalized == {"n1": 61, "n2": 50, "n3": 100}  # 100 * (27 - s) / 18


def test_system_defaults_still_score_nodes_without_a_zone() -> None:
    nodes = make_table(
        [zoned("n1", "a"), zoned("n2", None)],
        [*placed("n1", 1, WEB), *placed("n2", 2, WEB)],
    )
    pod = owned_by("ReplicaSet", "web-abc", WEB)
    # Not ignored: n2 counts under zone "" (a domain of its own). host w = log 4 = 1.3863,
    # zone domains {a, ""}: w = log 4. n1 = 1.39 + 2 + 1.39 + 4 = 8.77 -> 9;
    # n2 = 2.77 + 2 (no zone label, no zone term) = 4.77 -> 5.
    raw, normalized = scores(PodTopologySpread(), pod, nodes)
    assert raw == {"n1": 9, "n2": 5}
    assert normalized == {"n1": 55, "n2": 100}  # 100 * (14 - s) / 9


def test_list_defaulting_uses_the_given_constraints() -> None:
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    nodes = default_table()
    pod = owned_by("ReplicaSet", "web-abc", WEB)
    # zones a = 2, b = 1: a is at 2 + 1 - 1 = 2 > 1
    assert verdicts(PodTopologySpread(args), pod, nodes) == {
        "n1": SKEWED,
        "n2": SKEWED,
        "n3": PASS,
    }
    # The pod's own constraints replace the defaults.
    own = incoming(constraint(5, ZONE), labels=WEB)
    assert all_pass(verdicts(PodTopologySpread(args), own, nodes))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ]
            },
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
        ),
        ({"defaultingType": "Other"}, "defaultingType: Unsupported value"),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
                ],
            },
            "defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        ),
        (
            {
                "defaultingType": "List",
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": ZONE,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {},
                    }
                ],
            },
            "constraint must not define a selector",
        ),
    ],
)
def test_args_validation(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        PodTopologySpread(args)


# --- queueing --------------------------------------------------------------------------


def test_events() -> None:
    events = PodTopologySpread().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (
            Resource.POD,
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATION
            | ActionType.DELETE,
        ),
        (
            Resource.NODE,
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT,
        ),
    ]


def test_pod_hint() -> None:
    plugin = PodTopologySpread()
    target = incoming(constraint(1, ZONE))
    matching = make_pod("m", labels={"foo": ""}, node_name="n")
    unrelated = make_pod("u", labels={"bar": ""}, node_name="n")
    assert plugin.is_schedulable_after_pod_change(target, None, matching)
    assert not plugin.is_schedulable_after_pod_change(target, None, unrelated)
    assert plugin.is_schedulable_after_pod_change(target, matching, None)  # deleted
    assert not plugin.is_schedulable_after_pod_change(target, unrelated, None)
    # label change that flips the match
    assert plugin.is_schedulable_after_pod_change(
        target,
        unrelated,
        msgspec.structs.replace(
            unrelated, metadata=msgspec.structs.replace(unrelated.metadata, labels={"foo": ""})
        ),
    )
    assert not plugin.is_schedulable_after_pod_change(target, unrelated, unrelated)
    # unscheduled or other-namespace pods are not involved
    assert not plugin.is_schedulable_after_pod_change(
        target, None, make_pod("x", labels={"foo": ""})
    )
    assert not plugin.is_schedulable_after_pod_change(
        target, None, make_pod("x", labels={"foo": ""}, namespace="other", node_name="n")
    )


def test_pod_hint_own_toleration_with_taints_policy_honor() -> None:
    plugin = PodTopologySpread()
    spec = {"topologySpreadConstraints": [constraint(1, ZONE, nodeTaintsPolicy="Honor")]}
    before = make_pod("p", labels={"foo": ""}, spec=spec)
    after = make_pod(
        "p", labels={"foo": ""}, spec={**spec, "tolerations": [{"operator": "Exists"}]}
    )
    assert plugin.is_schedulable_after_pod_change(PodInfo(before), before, after)
    honorless = make_pod(
        "p", labels={"foo": ""}, spec={"topologySpreadConstraints": [constraint(1, ZONE)]}
    )
    # Without a NodeTaintsPolicy: Honor constraint a new toleration cannot help.
    new_toleration = msgspec.structs.replace(
        honorless, spec=msgspec.structs.replace(honorless.spec, tolerations=after.spec.tolerations)
    )
    assert not plugin.is_schedulable_after_pod_change(PodInfo(honorless), honorless, new_toleration)


def test_node_hint() -> None:
    plugin = PodTopologySpread()
    target = incoming(constraint(1, ZONE))
    with_zone = zoned("n", "a")
    other_zone = zoned("n", "b")
    no_zone = zoned("n", None)
    tainted = zoned("n", "a", taints=[{"key": "k", "effect": "NoSchedule"}])
    assert plugin.is_schedulable_after_node_change(target, None, with_zone)
    assert not plugin.is_schedulable_after_node_change(target, None, no_zone)
    assert plugin.is_schedulable_after_node_change(target, with_zone, None)  # deleted
    assert not plugin.is_schedulable_after_node_change(target, no_zone, None)
    assert plugin.is_schedulable_after_node_change(target, no_zone, with_zone)
    assert plugin.is_schedulable_after_node_change(target, with_zone, other_zone)
    assert plugin.is_schedulable_after_node_change(target, with_zone, tainted)
    assert not plugin.is_schedulable_after_node_change(target, with_zone, with_zone)
