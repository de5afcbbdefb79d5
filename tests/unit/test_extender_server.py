"""`kubesched extender`'s verbs over an in-memory cache: the default profile's
plugins answer filter and prioritize as the extender protocol asks, and the HTTP
layer refuses bad and oversized bodies without a traceback."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import msgspec
import pytest

from kubesched.framework.profile import ProfileConfig
from kubesched.kube.extender_server import (
    EXTENDER_ALWAYS_ALLOW_PATHS,
    MAX_BODY_BYTES,
    ExtenderServer,
    ReadOnlyCluster,
    handle_verb,
)
from kubesched.kube.extender_verbs import (
    UNKNOWN_NODE,
    ExtenderVerbs,
    max_total,
    to_extender_priority,
)
from kubesched.scheduler import Scheduler
from kubesched.server.auth import RequestGuard
from kubesched.server.metrics import SchedulerMetrics
from kubesched.testing import make_node, make_pod


def _verbs() -> ExtenderVerbs:
    sched = Scheduler([ProfileConfig.default("kubesched")], ReadOnlyCluster(), seed=1)
    sched.on_node_add(make_node("big", cpu="8", labels={"zone": "a"}))
    sched.on_node_add(make_node("small", cpu="3", labels={"zone": "a"}))
    sched.on_node_add(make_node("other-zone", cpu="8", labels={"zone": "b"}))
    # Pods already on "big" and "busy": LeastAllocated prefers the emptier nodes.
    sched.on_pod_add(make_pod("placed", cpu="4", node_name="big"))
    sched.on_node_add(make_node("busy", cpu="8", labels={"zone": "b"}))
    sched.on_pod_add(make_pod("hog", cpu="7", memory="14Gi", node_name="busy"))
    # Room for 1 cpu on "small": preemption could make more (Unschedulable); a
    # pod asking more than its allocatable is UnschedulableAndUnresolvable.
    sched.on_pod_add(make_pod("filler", cpu="2", node_name="small"))
    return ExtenderVerbs(sched)


def _args(pod: Any, names: list[str], *, cache_capable: bool = True) -> bytes:
    if cache_capable:
        return msgspec.json.encode({"Pod": pod, "Nodes": None, "NodeNames": names})
    nodes = [make_node(n, cpu="8") for n in names]
    return msgspec.json.encode(
        {"Pod": pod, "Nodes": {"metadata": {}, "items": nodes}, "NodeNames": None}
    )


def _call(verbs: ExtenderVerbs, verb: str, body: bytes) -> Any:
    answer = handle_verb(verbs, verb, body)
    assert answer.status == 200, answer.body
    return json.loads(answer.body)


def test_filter_answers_node_names_with_each_rejection_reason() -> None:
    pod = make_pod("p", cpu="2", spec={"nodeSelector": {"zone": "a"}})
    result = _call(_verbs(), "filter", _args(pod, ["big", "small", "other-zone", "ghost"]))
    assert result["NodeNames"] == ["big"]
    assert result["Nodes"] is None
    assert result["FailedNodes"] == {"small": "Insufficient cpu", "ghost": UNKNOWN_NODE}
    # A node selector that does not match cannot be fixed by preemption.
    assert result["FailedAndUnresolvableNodes"] == {
        "other-zone": "node(s) didn't match Pod's node affinity/selector"
    }
    assert result["Error"] == ""


def test_filter_answers_nodes_for_a_request_with_nodes() -> None:
    pod = make_pod("p", cpu="2")
    result = _call(_verbs(), "filter", _args(pod, ["small", "big"], cache_capable=False))
    assert result["NodeNames"] is None
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["big"]
    assert result["FailedNodes"] == {"small": "Insufficient cpu"}


def test_prioritize_maps_the_weighted_totals_onto_0_to_10() -> None:
    verbs = _verbs()
    pod = make_pod("p", cpu="1")
    result = _call(verbs, "prioritize", _args(pod, ["busy", "other-zone", "ghost"]))
    scores = {entry["Host"]: entry["Score"] for entry in result}
    assert [entry["Host"] for entry in result] == ["busy", "other-zone", "ghost"]
    assert scores["ghost"] == 0
    # Ten steps only: small differences of the totals vanish in the protocol.
    assert 0 <= scores["busy"] < scores["other-zone"] <= 10
    fw = verbs.framework_for(pod)
    assert max_total(fw) == sum(fw.weights.get(p.name, 1) for p in fw.score) * 100
    # Relative to what the plugins that scored this pod could give (PreScore
    # skips NodeAffinity without preferences, VolumeBinding without claims, ...):
    # TaintToleration
    # 3 x 100 + NodeResourcesFit 5 + BalancedAllocation 71 = 376 of 800 and
    # 463 of 800 (NodeResourcesFit 92) for the emptier node.
    skipped = {"NodeAffinity", "PodTopologySpread", "InterPodAffinity", "VolumeBinding"}
    assert max_total(fw, skipped) == 800
    assert (scores["busy"], scores["other-zone"]) == (5, 6)


def test_the_mapping_is_linear_and_clamped() -> None:
    assert to_extender_priority(0, 700) == 0
    assert to_extender_priority(700, 700) == 10
    assert to_extender_priority(350, 700) == 5
    assert to_extender_priority(34, 700) == 0 and to_extender_priority(35, 700) == 1
    assert to_extender_priority(900, 700) == 10 and to_extender_priority(-5, 700) == 0
    assert to_extender_priority(50, 0) == 0


def test_a_pod_of_another_scheduler_uses_the_first_profile() -> None:
    verbs = _verbs()
    pod = make_pod("p", spec={"schedulerName": "default-scheduler"})
    assert verbs.framework_for(pod).profile_name == "kubesched"


def test_bad_bodies_get_400_with_one_line() -> None:
    verbs = _verbs()
    for body in (b"{not json", b'{"NodeNames": ["big"]}', b'{"Pod": 3}'):
        answer = handle_verb(verbs, "filter", body)
        assert answer.status == 400
        assert answer.error == "bad_request"
        assert b"\n" not in answer.body and b"Traceback" not in answer.body


def test_the_verbs_over_https_with_anonymous_access_and_metrics() -> None:
    metrics = SchedulerMetrics()
    # No authenticator or authorizer: only always-allowed paths pass, as for
    # kube-scheduler's credential-less calls.
    guard = RequestGuard(None, None, EXTENDER_ALWAYS_ALLOW_PATHS)
    server = ExtenderServer(_verbs(), metrics, "127.0.0.1", 0, guard=guard)
    pod = make_pod("p", cpu="2")

    async def main() -> None:
        await server.start()
        base = f"http://127.0.0.1:{server.port}"
        try:
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{base}/scheduler/filter", data=_args(pod, ["big"])) as r:
                    assert r.status == 200
                    assert (await r.json())["NodeNames"] == ["big"]
                async with session.post(f"{base}/scheduler/prioritize", data=b"[") as r:
                    assert r.status == 400
                    assert (await r.text()).startswith("invalid ExtenderArgs")
                big = b" " * (MAX_BODY_BYTES + 1)
                async with session.post(f"{base}/scheduler/filter", data=big) as r:
                    assert r.status == 413
                async with session.get(f"{base}/metrics") as r:
                    assert r.status == 403  # /metrics is not always allowed
        finally:
            await server.stop()

    asyncio.run(main())
    duration = "kubesched_extender_request_duration_seconds_count"
    assert metrics.value(duration, {"verb": "filter", "code": "200"}) == 1
    assert metrics.value(duration, {"verb": "filter", "code": "413"}) == 1
    errors = "kubesched_extender_request_errors_total"
    assert metrics.value(errors, {"verb": "prioritize", "reason": "bad_request"}) == 1
    assert metrics.value(errors, {"verb": "filter", "reason": "too_large"}) == 1


def test_the_verbs_answer_503_until_the_informers_synced() -> None:
    metrics = SchedulerMetrics()
    synced = asyncio.Event()
    server = ExtenderServer(_verbs(), metrics, "127.0.0.1", 0, ready=synced.is_set)
    body = _args(make_pod("p", cpu="2"), ["big"])

    async def main() -> tuple[int, int]:
        await server.start()
        url = f"http://127.0.0.1:{server.port}/scheduler/filter"
        try:
            async with aiohttp.ClientSession() as session:
                async with session.post(url, data=body) as r:
                    before = r.status
                synced.set()
                async with session.post(url, data=body) as r:
                    return before, r.status
        finally:
            await server.stop()

    assert asyncio.run(main()) == (503, 200)
    errors = "kubesched_extender_request_errors_total"
    assert metrics.value(errors, {"verb": "filter", "reason": "not_ready"}) == 1


def _with_uid(pod: Any, uid: str) -> Any:
    pod.metadata.uid = uid
    return pod


def _preemption_verbs() -> ExtenderVerbs:
    """Two 4-cpu nodes in zone a, one in zone b; each holds a low-priority pod of 3
    cpu (uids lo-a1, lo-a2, lo-b) and "a2" a second of 1 cpu (uid lo-a2-small)."""
    sched = Scheduler([ProfileConfig.default("kubesched")], ReadOnlyCluster(), seed=1)
    for name, zone in (("a1", "a"), ("a2", "a"), ("b", "b")):
        sched.on_node_add(make_node(name, cpu="4", labels={"zone": zone}))
        sched.on_pod_add(
            _with_uid(make_pod(f"lo-{name}", cpu="3", node_name=name, priority=0), f"lo-{name}")
        )
    small = make_pod("lo-a2-small", cpu="1", node_name="a2", priority=0)
    sched.on_pod_add(_with_uid(small, "lo-a2-small"))
    return ExtenderVerbs(sched)


def _preempt_body(pod: Any, victims: dict[str, list[str]], *, meta: bool = True) -> bytes:
    if meta:
        return msgspec.json.encode(
            {
                "Pod": pod,
                "NodeNameToMetaVictims": {
                    node: {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": 1}
                    for node, uids in victims.items()
                },
            }
        )
    # Whole Pods, as a kube-scheduler sends them to an extender that is not
    # nodeCacheCapable; only their UIDs matter.
    return msgspec.json.encode(
        {
            "Pod": pod,
            "NodeNameToVictims": {
                node: {
                    "Pods": [_with_uid(make_pod(uid, cpu="3"), uid) for uid in uids],
                    "NumPDBViolations": 1,
                }
                for node, uids in victims.items()
            },
        }
    )


@pytest.mark.parametrize("meta", [True, False], ids=["meta-victims", "victims"])
def test_preempt_keeps_the_candidates_the_plugins_accept_once_the_victims_left(
    meta: bool,
) -> None:
    pod = make_pod("hi", cpu="3", priority=100, spec={"nodeSelector": {"zone": "a"}})
    victims = {
        "a1": ["lo-a1"],  # 4 cpu free once it is gone: kept
        "a2": ["lo-a2-small"],  # lo-a2 still holds 3 of 4: Insufficient cpu, dropped
        "b": ["lo-b"],  # room enough, but the node selector still rejects it: dropped
        "ghost": ["x"],  # a node the cache does not have: dropped
    }
    result = _call(_preemption_verbs(), "preempt", _preempt_body(pod, victims, meta=meta))
    # The victims are kube-scheduler's, kept as they came, with its PDB count.
    assert result == {
        "NodeNameToMetaVictims": {"a1": {"Pods": [{"UID": "lo-a1"}], "NumPDBViolations": 1}}
    }


def test_preempt_drops_a_node_whose_victims_the_cache_does_not_have_there() -> None:
    pod = make_pod("hi", cpu="3", priority=100)
    # lo-b is on node b, not a1; and a node sent without victims is no candidate.
    result = _call(_preemption_verbs(), "preempt", _preempt_body(pod, {"a1": ["lo-b"], "a2": []}))
    assert result == {"NodeNameToMetaVictims": {}}


def test_preempt_with_all_the_victims_the_plugins_need() -> None:
    pod = make_pod("hi", cpu="4", priority=100)
    result = _call(
        _preemption_verbs(), "preempt", _preempt_body(pod, {"a2": ["lo-a2", "lo-a2-small"]})
    )
    kept = result["NodeNameToMetaVictims"]["a2"]["Pods"]
    assert kept == [{"UID": "lo-a2"}, {"UID": "lo-a2-small"}]


def test_preempt_leaves_the_cache_as_it_was() -> None:
    verbs = _preemption_verbs()
    table = verbs.sched.table
    before = {
        name: sorted(p.pod.metadata.uid for p in table.pods_on(table.row_of(name) or 0))
        for name in ("a1", "a2", "b")
    }
    pod = make_pod("hi", cpu="3", priority=100)
    _call(verbs, "preempt", _preempt_body(pod, {"a1": ["lo-a1"], "a2": ["lo-a2"]}))
    after = {
        name: sorted(p.pod.metadata.uid for p in table.pods_on(table.row_of(name) or 0))
        for name in ("a1", "a2", "b")
    }
    assert after == before
    # And the pod is then placed by filter as if nothing had been evicted.
    result = _call(verbs, "filter", _args(pod, ["a1", "a2", "b"]))
    assert result["NodeNames"] == []


def test_bad_preemption_bodies_get_400() -> None:
    verbs = _preemption_verbs()
    for body in (b"[", b'{"NodeNameToMetaVictims": {}}', b'{"Pod": {}, "NodeNameToVictims": 3}'):
        answer = handle_verb(verbs, "preempt", body)
        assert answer.status == 400, answer.body
        assert answer.body.startswith(b"invalid ExtenderPreemptionArgs")
