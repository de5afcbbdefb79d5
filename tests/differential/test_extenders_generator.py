"""The extenders feature of the generator, its rule servers and the in-process re-run
that calls them, without a cluster (the servers are on loopback)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from kubesched.config.file import parse_config
from tests.differential import generator as gen
from tests.differential.harness import KUBESCHED, score_step
from tests.differential.harness import extenders as served
from tests.differential.scenario_builders import _node, _pod, _run, _scenario

SEED = 70


def test_extenders_are_opt_in_and_known() -> None:
    assert "extenders" not in gen.parse_features(None)
    assert gen.parse_features("extenders,spread") == ["spread", "extenders"]
    assert gen.unsupported_features(["extenders"]) == {}
    assert "extenders" not in gen.generate(SEED, 0, features=["spread"])


@pytest.mark.parametrize("index", range(20))
def test_specs_are_deterministic_and_well_formed(index: int) -> None:
    scenario = gen.generate(SEED, index, features=["extenders", "preemption"])
    again = gen.generate(SEED, index, features=["extenders", "preemption"])
    assert yaml.safe_dump(scenario) == yaml.safe_dump(again)
    specs = scenario["extenders"]
    assert 1 <= len(specs) <= 3
    nodes = {n["name"] for n in scenario["nodes"]}
    pods = {p["name"] for p in scenario["pods"]}
    assert sum(bool(s["managedResources"]) for s in specs) <= 1  # one manager per resource
    for spec in specs:
        assert {"filter", "prioritize", "preempt"} & set(spec), spec
        if "filter" in spec:
            assert set(spec["filter"]["reject"]) < nodes  # never every node
        if "prioritize" in spec:
            assert set(spec["prioritize"]["scores"]) == nodes
            assert all(0 <= v <= 10 for v in spec["prioritize"]["scores"].values())
            assert 1 <= spec["prioritize"]["weight"] <= 5
        fails = spec.get("fails")
        if fails:
            assert fails["how"] in ("error", "timeout")
            assert fails["pods"] is None or set(fails["pods"]) <= pods
        assert "bindVerb" not in gen.extender_configs([spec], ["http://x"])[0]


def test_the_series_covers_every_failure_mode() -> None:
    specs = [
        s for i in range(40) for s in gen.generate(SEED, i, features=["extenders"])["extenders"]
    ]
    modes = {
        ((s.get("fails") or {}).get("how"), (s.get("fails") or {}).get("pods") is None)
        for s in specs
    }
    assert {("error", False), ("error", True), ("timeout", False), (None, True)} <= modes
    assert any(s["ignorable"] and s.get("fails") for s in specs)
    assert any(
        s["managedResources"] and s["managedResources"][0]["ignoredByScheduler"] for s in specs
    )
    assert any(
        s["managedResources"] and not s["managedResources"][0]["ignoredByScheduler"] for s in specs
    )
    assert any(s["filter"]["unresolvable"] for s in specs if "filter" in s)
    assert {s["nodeCacheCapable"] for s in specs} == {True, False}


@pytest.mark.parametrize("index", range(12))
def test_kubesched_parses_the_config_file(index: int) -> None:
    scenario = gen.generate(SEED, index, features=["extenders"])
    specs = scenario["extenders"]
    urls = [f"http://127.0.0.1:{9000 + i}/scheduler" for i in range(len(specs))]
    config = parse_config(gen.scheduler_config(scenario, "differential", "", urls))
    assert len(config.extenders) == len(specs)
    # kube-scheduler's order: the ignorable extenders last (buildExtenders).
    by_url = {e.url_prefix: e for e in config.extenders}
    assert [e.ignorable for e in config.extenders] == sorted(s["ignorable"] for s in specs)
    for spec, url in zip(specs, urls, strict=True):
        ext = by_url[url]
        assert ext.node_cache_capable == spec["nodeCacheCapable"]
        assert bool(ext.filter_verb) == ("filter" in spec)
        timeout = (spec.get("fails") or {}).get("how") == "timeout"
        assert (ext.http_timeout == 0.3) == timeout
    with pytest.raises(ValueError, match="but 0 URLs"):
        gen.scheduler_config(scenario, "differential")


# --------------------------------------------------------------------- the rules
def _args(nodes: list[str], pod: str = "p00", cache: bool = True) -> dict[str, Any]:
    pod_obj = {"metadata": {"name": pod, "namespace": "ns"}}
    if cache:
        return {"Pod": pod_obj, "Nodes": None, "NodeNames": nodes}
    items = [{"metadata": {"name": n}} for n in nodes]
    return {"Pod": pod_obj, "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}


SPEC: dict[str, Any] = {
    "name": "e0",
    "filter": {"reject": ["n1"], "message": "node(s) are drained", "unresolvable": False},
    "prioritize": {"scores": {"n0": 2, "n1": 5, "n2": 9}, "weight": 2},
    "preempt": {"keep": ["n2"]},
    "nodeCacheCapable": True,
    "managedResources": [],
    "ignorable": False,
}
REAL = ["d1ab-n0", "d1ab-n1", "d1ab-n2"]  # as the harness names them: <prefix>-<logical>


def test_filter_rejects_the_rule_s_nodes_by_their_logical_names() -> None:
    handle = served.handlers(SPEC)["filter"]
    answer = handle(_args(REAL))
    assert answer["NodeNames"] == ["d1ab-n0", "d1ab-n2"]
    assert answer["FailedNodes"] == {"d1ab-n1": "node(s) are drained"}
    assert answer["FailedAndUnresolvableNodes"] == {}
    unresolvable = copy.deepcopy(SPEC)
    unresolvable["filter"]["unresolvable"] = True
    answer = served.handlers(unresolvable)["filter"](_args(REAL, cache=False))
    assert [n["metadata"]["name"] for n in answer["Nodes"]["items"]] == ["d1ab-n0", "d1ab-n2"]
    assert answer["FailedAndUnresolvableNodes"] == {"d1ab-n1": "node(s) are drained"}


def test_prioritize_gives_the_rule_s_scores() -> None:
    answer = served.handlers(SPEC)["prioritize"](_args(REAL[1:]))
    assert answer == [{"Host": "d1ab-n1", "Score": 5}, {"Host": "d1ab-n2", "Score": 9}]


def test_preempt_keeps_the_rule_s_candidates_with_their_victims() -> None:
    handle = served.handlers(SPEC)["preempt"]
    meta = {
        "Pod": {"metadata": {"name": "p03"}},
        "NodeNameToMetaVictims": {
            "d1ab-n0": {"Pods": [{"UID": "a"}], "NumPDBViolations": 0},
            "d1ab-n2": {"Pods": [{"UID": "b"}, {"UID": "c"}], "NumPDBViolations": 1},
        },
    }
    kept = {"d1ab-n2": {"Pods": [{"UID": "b"}, {"UID": "c"}], "NumPDBViolations": 1}}
    assert handle(meta) == {"NodeNameToMetaVictims": kept}
    full = {
        "Pod": {"metadata": {"name": "p03"}},
        "NodeNameToVictims": {
            "d1ab-n2": {"Pods": [{"metadata": {"uid": "b"}}, {"metadata": {"uid": "c"}}]},
        },
    }
    kept["d1ab-n2"]["NumPDBViolations"] = 0
    assert handle(full) == {"NodeNameToMetaVictims": kept}


def test_failures_hit_only_the_named_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    erring = {**SPEC, "fails": {"how": "error", "pods": ["p01"]}}
    verbs = served.handlers(erring)
    assert all(verbs[v](_args(REAL, pod="p01")) == 500 for v in ("filter", "prioritize"))
    assert verbs["filter"](_args(REAL, pod="p00"))["NodeNames"] == ["d1ab-n0", "d1ab-n2"]
    always = served.handlers({**SPEC, "fails": {"how": "error", "pods": None}})
    assert always["prioritize"](_args(REAL, pod="p07")) == 500
    slept: list[float] = []
    # (time.sleep itself, for this test's direct calls: no server runs here.)
    monkeypatch.setattr("tests.differential.harness.extenders.time.sleep", slept.append)
    slow = served.handlers({**SPEC, "fails": {"how": "timeout", "pods": ["p02"]}})
    slow["filter"](_args(REAL, pod="p00"))
    assert slept == []
    # Late, but a right answer: the scheduler has given up by then.
    assert slow["filter"](_args(REAL, pod="p02"))["NodeNames"] == ["d1ab-n0", "d1ab-n2"]
    assert slept == [served.SLOW_SECONDS]


# --------------------------------------------------------------------- served, in-process
def _served_scenario(*specs: dict[str, Any]) -> dict[str, Any]:
    scenario = _scenario([_node("n0"), _node("n1"), _node("n2")], [_pod("p00")])
    scenario["extenders"] = list(specs)
    return scenario


def test_score_step_calls_the_served_extenders() -> None:
    scenario = _served_scenario(SPEC)
    run = _run(KUBESCHED, scenario, [("bound", "n2", "")])
    with served.serving(scenario["extenders"]) as servers:
        urls = [s.url for s in servers]
        prediction = score_step(
            scenario, run.nodes, [], run.steps[0].created, {}, extender_urls=urls
        )
        assert [v for v, _ in servers[0].requests] == ["filter", "prioritize"]
    assert prediction.feasible == ["n0", "n2"]
    # The plugins tie (empty nodes alike); the extender's 9 × 2 (× 10) decides.
    assert prediction.by_plugin["extenders"] == {"n0": 40, "n2": 180}
    assert prediction.best == ["n2"] and prediction.unique


def test_score_step_predicts_a_failing_extender_s_error() -> None:
    erring = {**SPEC, "fails": {"how": "error", "pods": ["p00"]}}
    skipped = {**erring, "ignorable": True}
    scenario = _served_scenario(erring)
    run = _run(KUBESCHED, scenario, [("error", None, "")])
    with served.serving([erring]) as servers:
        url = servers[0].url
        prediction = score_step(
            scenario, run.nodes, [], run.steps[0].created, {}, extender_urls=[url]
        )
    assert prediction.error
    assert prediction.message == f"failed filter with extender at URL {url}/filter, code 500"
    # An ignorable one is skipped: the pod is placed as if it were not there.
    scenario = _served_scenario(skipped)
    with served.serving([skipped]) as servers:
        prediction = score_step(
            scenario, run.nodes, [], run.steps[0].created, {}, extender_urls=[servers[0].url]
        )
    assert not prediction.error and prediction.feasible == ["n0", "n1", "n2"]


def test_score_step_predicts_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(served, "SLOW_SECONDS", 0.6)
    slow = {**SPEC, "fails": {"how": "timeout", "pods": None}}
    scenario = _served_scenario(slow)
    run = _run(KUBESCHED, scenario, [("error", None, "")])
    with served.serving([slow]) as servers:
        url = servers[0].url
        prediction = score_step(
            scenario, run.nodes, [], run.steps[0].created, {}, extender_urls=[url]
        )
    assert prediction.error
    assert prediction.message == (
        f'Post "{url}/filter": context deadline exceeded '
        "(Client.Timeout exceeded while awaiting headers)"
    )


def test_score_step_s_preemption_keeps_the_candidates_the_extender_keeps() -> None:
    # n0 holds a diff-low pod, n1 a diff-mid one; the diff-high pod would preempt on
    # n0 (the lowest victim), but the extender keeps only n1.
    scenario = _scenario(
        [_node("n0", cpu="2"), _node("n1", "zone-b", cpu="2")],
        [
            _pod("p00", cpu="2", priorityClassName="diff-low"),
            _pod("p01", cpu="2", priorityClassName="diff-mid"),
            _pod("p02", cpu="2", priorityClassName="diff-high"),
        ],
    )
    scenario["config"] = gen.profile_config("default", ["preemption"])
    spec = {**SPEC, "preempt": {"keep": ["n1"]}}
    del spec["filter"], spec["prioritize"]
    scenario["extenders"] = [spec]
    run = _run(KUBESCHED, scenario, [("bound", "n0", ""), ("bound", "n1", ""), ("bound", "n1", "")])
    values = {pc["name"]: pc["value"] for pc in gen.PRIORITY_CLASSES}
    bound = []
    for step, pod in zip(run.steps, scenario["pods"], strict=True):
        step.created["spec"]["priority"] = values[pod["spec"]["priorityClassName"]]
        step.created["metadata"]["uid"] = f"uid-{pod['name']}"
    for step in run.steps[:2]:
        obj = copy.deepcopy(step.created)
        obj["spec"]["nodeName"] = step.node
        bound.append(obj)
    pending = run.steps[2].created
    alone = score_step({**scenario, "extenders": []}, run.nodes, bound, pending, {})
    assert alone.preemption == ["n0"]
    with served.serving([spec]) as servers:
        prediction = score_step(
            scenario, run.nodes, bound, pending, {}, extender_urls=[servers[0].url]
        )
        # Once for PostFilter's nomination, once more for the tied candidates.
        assert [v for v, _ in servers[0].requests] == ["preempt", "preempt"]
    assert prediction.preemption == ["n1"] and prediction.victims == {"n1": ["p01"]}
