"""The generator and the comparison logic, without a cluster."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesched.config.file import parse_config
from tests.differential import generator as gen
from tests.differential.harness import (
    KUBE,
    KUBESCHED,
    MODE_DIRECT,
    Run,
    compare,
    isomorphic,
    score_step,
    simulate,
    start_times,
)
from tests.differential.harness.dra import allocations, claims_before
from tests.differential.harness.inprocess import dra_state
from tests.differential.harness.records import normalise_claim_names
from tests.differential.scenario_builders import _node, _pod, _run, _scenario


def test_generate_is_a_pure_function_of_its_arguments() -> None:
    assert gen.generate(7, 3) == gen.generate(7, 3)
    assert gen.generate(7, 3) != gen.generate(7, 4)
    assert gen.generate(7, 3, size="small") != gen.generate(7, 3)


def test_profiles_take_turns_and_each_config_is_accepted_by_kubesched() -> None:
    names = [gen.generate(1, i)["profile"] for i in range(len(gen.PROFILES))]
    assert names == list(gen.PROFILES)
    for name in gen.PROFILES:
        scenario = gen.generate(1, 0, profile=name)
        config = parse_config(gen.scheduler_config(scenario, "differential"))
        assert [p.scheduler_name for p in config.profiles] == ["differential"]


def test_plugins_are_disabled_only_when_their_feature_is_off() -> None:
    off = gen.disabled_plugins([])
    assert {"PodTopologySpread", "InterPodAffinity", "DefaultPreemption"} <= set(off)
    assert {"VolumeBinding", "DynamicResources"} <= set(off)
    # No feature covers it: the generator makes nothing it acts on, so it always runs.
    assert "NodeDeclaredFeatures" not in off
    assert not set(off) & {"NodeResourcesFit", "TaintToleration", "ImageLocality"}
    assert "PodTopologySpread" not in gen.disabled_plugins(["spread"])
    assert gen.disabled_plugins(list(gen.FEATURES)) == []
    with pytest.raises(ValueError, match="unknown feature"):
        gen.parse_features("spread,teleport")
    assert gen.parse_features("volumes, spread") == ["spread", "volumes"]


def test_no_features_given_means_all_and_none_means_none() -> None:
    assert gen.parse_features("") == list(gen.FEATURES)
    assert gen.parse_features(None) == list(gen.FEATURES)
    assert "dra" in gen.FEATURES
    assert gen.parse_features(gen.NO_FEATURES) == []
    assert gen.parse_features("dra") == ["dra"]
    # generate's own default stays no feature (old series and regression files).
    assert "dra" not in gen.generate(1, 0) and gen.generate(1, 0)["features"] == []
    full = gen.generate(1, 0, features=gen.parse_features(""))
    assert "disabled" not in full["config"]["plugins"]["multiPoint"]


def test_features_add_their_objects() -> None:
    plain = [gen.generate(3, i) for i in range(20)]
    assert not any("topologySpreadConstraints" in p["spec"] for s in plain for p in s["pods"])
    spread = [gen.generate(3, i, features=["spread"]) for i in range(20)]
    assert any("topologySpreadConstraints" in p["spec"] for s in spread for p in s["pods"])
    both = gen.generate(3, 1, features=["preemption", "volumes"])
    assert "pdbs" in both and "volumes" in both


def test_non_default_profiles_are_what_the_brief_asks_for() -> None:
    most = gen.profile_config("most-allocated", [])
    fit = next(c for c in most["pluginConfig"] if c["name"] == "NodeResourcesFit")
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    assert {"name": "ImageLocality"} in most["plugins"]["multiPoint"]["disabled"]
    assert {"name": "NodeAffinity", "weight": 5} in most["plugins"]["multiPoint"]["enabled"]
    weights = gen.profile_config("weights", [])
    assert {"name": "NodeResourcesBalancedAllocation"} in weights["plugins"]["multiPoint"][
        "disabled"
    ]


def test_generated_scenarios_load_and_schedule_in_kubesched() -> None:
    bound = total = 0
    for i in range(12):
        result = simulate(gen.generate(5, i))
        total += len(result.placements)
        bound += result.scheduled
    # A useful mix: most pods fit somewhere, and many do not.
    assert 0.3 * total < bound < 0.9 * total


def test_rename_nodes_maps_every_reference() -> None:
    spec = {
        "nodeSelector": {gen.HOSTNAME_LABEL: "n1"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n0"]}
                            ]
                        }
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [
                                {"key": gen.HOSTNAME_LABEL, "operator": "In", "values": ["n2"]}
                            ]
                        },
                    }
                ],
            }
        },
    }
    out = gen.rename_nodes(spec, {"n0": "x-n0", "n1": "x-n1", "n2": "x-n2"})
    text = repr(out)
    assert "'x-n0'" in text and "'x-n1'" in text and "'x-n2'" in text
    assert spec["nodeSelector"][gen.HOSTNAME_LABEL] == "n1"  # the input is left alone


# --------------------------------------------------------------------- comparison
def _compare(scenario: dict[str, Any], kube: Run, ks: Run) -> Any:
    return compare(scenario, kube, ks, {n["name"]: n["name"] for n in scenario["nodes"]})


def test_identical_runs_agree_and_the_unique_best_node_is_checked() -> None:
    scenario = _scenario([_node("n0", cpu="4"), _node("n1", cpu="8")], [_pod("p0"), _pod("p1")])
    runs = [_run(side, scenario, [("bound", "n1", ""), ("bound", "n1", "")]) for side in (KUBE,)]
    ks = _run(KUBESCHED, scenario, [("bound", "n1", ""), ("bound", "n1", "")])
    result = _compare(scenario, runs[0], ks)
    assert result.ok, result.summary()
    assert (result.compared, result.unique, result.unique_agree) == (2, 2, 2)


def test_a_different_node_where_the_best_is_unique_is_a_disagreement() -> None:
    scenario = _scenario([_node("n0", cpu="4"), _node("n1", cpu="8")], [_pod("p0")])
    kube = _run(KUBE, scenario, [("bound", "n1", "")])
    ks = _run(KUBESCHED, scenario, [("bound", "n0", "")])
    result = _compare(scenario, kube, ks)
    assert [(d.kind, d.pod, d.mode) for d in result.disagreements] == [("node", "p0", MODE_DIRECT)]


def test_a_tie_between_interchangeable_nodes_swaps_their_names() -> None:
    scenario = _scenario([_node("n0"), _node("n1")], [_pod("p0"), _pod("p1", cpu="3")])
    kube = _run(KUBE, scenario, [("bound", "n0", ""), ("bound", "n1", "")])
    ks = _run(KUBESCHED, scenario, [("bound", "n1", ""), ("bound", "n0", "")])
    result = _compare(scenario, kube, ks)
    assert result.ok, result.summary()
    assert (result.ties, result.swaps, result.diverged_at, result.unique_agree) == (1, 1, None, 1)


def test_a_tie_between_different_nodes_goes_on_in_process() -> None:
    # Zones differ and a later pod selects on the zone: not interchangeable.
    scenario = _scenario(
        [_node("n0", "zone-a"), _node("n1", "zone-b")],
        [_pod("p0", cpu="3"), _pod("p1", cpu="3", nodeSelector={gen.ZONE_LABEL: "zone-a"})],
    )
    message = (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match Pod's node affinity/selector."
    )
    kube = _run(
        KUBE,
        scenario,
        [("bound", "n0", ""), ("unschedulable", None, message)],
        events={"p1": [message]},
    )
    ks = _run(KUBESCHED, scenario, [("bound", "n1", ""), ("bound", "n0", "")])
    result = _compare(scenario, kube, ks)
    assert result.diverged_at == 0
    assert result.indirect == 1
    assert result.ok, result.summary()


def test_message_and_event_differences_are_reported() -> None:
    scenario = _scenario([_node("n0", cpu="1")], [_pod("p0", cpu="2"), _pod("p1", cpu="2")])
    right = "0/1 nodes are available: 1 Insufficient cpu."
    kube = _run(
        KUBE, scenario, [("unschedulable", None, right)] * 2, {"p0": [right], "p1": [right]}
    )
    wrong = copy.deepcopy(kube)
    wrong.side = KUBESCHED
    wrong.steps[0].message = "0/1 nodes are available: 1 Insufficient cpu"
    wrong.events = {"p0": [right], "p1": [right, "other"]}
    result = _compare(scenario, kube, wrong)
    assert [(d.kind, d.pod) for d in result.disagreements] == [("message", "p0"), ("event", "p1")]
    assert (result.unbound_both, result.message_agree) == (2, 0)


def test_bound_in_one_run_only_is_reported_with_kubesched_in_process_view() -> None:
    scenario = _scenario([_node("n0", cpu="1")], [_pod("p0", cpu="2")])
    message = "0/1 nodes are available: 1 Insufficient cpu."
    kube = _run(KUBE, scenario, [("unschedulable", None, message)], {"p0": [message]})
    ks = _run(KUBESCHED, scenario, [("bound", "n0", "")])
    result = _compare(scenario, kube, ks)
    (d,) = result.disagreements
    assert (d.kind, d.kube, d.kubesched) == ("bound", message, "n0")
    assert "no feasible node" in d.detail


def test_isomorphic_reads_nodes_through_the_permutation() -> None:
    scenario = _scenario([_node("n0"), _node("n1"), _node("n2", cpu="8")], [_pod("p0")])
    assert isomorphic(scenario, {"p0": "n0"}, {"p0": "n1"}, {"n0": "n1", "n1": "n0", "n2": "n2"})
    assert not isomorphic(
        scenario, {"p0": "n0"}, {"p0": "n1"}, {"n0": "n0", "n1": "n1", "n2": "n2"}
    )
    assert not isomorphic(
        scenario, {"p0": "n0"}, {"p0": "n2"}, {"n0": "n2", "n1": "n1", "n2": "n0"}
    )
    assert not isomorphic(
        scenario, {"p0": "n0"}, {"p0": None}, {"n0": "n0", "n1": "n1", "n2": "n2"}
    )


def test_score_step_ranks_like_the_simulator() -> None:
    scenario = _scenario([_node("n0", cpu="2"), _node("n1", cpu="8")], [_pod("p0")])
    run = _run(KUBESCHED, scenario, [("bound", "n1", "")])
    prediction = score_step(scenario, run.nodes, [], run.steps[0].created, {})
    assert prediction.best == ["n1"] and prediction.unique
    assert simulate(scenario).placements["default/p0"] == "n1"


def _preemption_scenario() -> dict[str, Any]:
    """n0 and n1 are full, of a diff-low and a diff-mid pod; a diff-high pod preempts
    the diff-low one (pickOneNodeForPreemption: the lowest highest-priority victim)."""
    scenario = _scenario(
        [_node("n0", cpu="2"), _node("n1", "zone-b", cpu="2")],
        [
            _pod("p0", cpu="2", priorityClassName="diff-low"),
            _pod("p1", cpu="2", priorityClassName="diff-mid"),
            _pod("p2", cpu="2", priorityClassName="diff-high"),
        ],
    )
    scenario["features"] = ["preemption"]
    scenario["config"] = gen.profile_config("default", ["preemption"])
    return scenario


def _preemption_run(side: str, scenario: dict[str, Any], node: str) -> Run:
    """p0 on n0, p1 on n1, then p2 bound on NODE after preemption evicted its pod."""
    message = "0/2 nodes are available: 2 Insufficient cpu."
    run = _run(side, scenario, [("bound", "n0", ""), ("bound", "n1", ""), ("bound", node, "")])
    values = {pc["name"]: pc["value"] for pc in gen.PRIORITY_CLASSES}
    for step, pod in zip(run.steps, scenario["pods"], strict=True):
        step.created["spec"]["priority"] = values[pod["spec"]["priorityClassName"]]
    victim = "p0" if node == "n0" else "p1"
    step = run.steps[2]
    step.message, step.nominated = message, node
    del step.placements[victim]
    run.final = dict(step.placements)
    run.events = {"p2": [message]}
    return run


def test_a_pod_bound_after_preemption_is_checked_against_preemptions_choice() -> None:
    # seed1-030-weights / seed1-032-default: both schedulers bound the pod where
    # preemption made room, while the in-process re-run (on the state before the
    # evictions) finds no feasible node; that is not a disagreement, but the node
    # must be the one kubesched's preemption nominates.
    scenario = _preemption_scenario()
    kube = _preemption_run(KUBE, scenario, "n0")
    result = _compare(scenario, kube, _preemption_run(KUBESCHED, scenario, "n0"))
    assert result.ok, result.summary()
    prediction = result.predictions["p2"]
    assert (prediction.feasible, prediction.preemption) == ([], ["n0"])
    assert prediction.victims == {"n0": ["p0"]} and prediction.unique
    assert (result.unique, result.unique_agree) == (2, 2)  # p0 ties; p1 and p2 do not

    wrong = _compare(scenario, kube, _preemption_run(KUBESCHED, scenario, "n1"))
    assert [(d.kind, d.pod, d.kube, d.kubesched) for d in wrong.disagreements] == [
        ("node", "p2", "n0", "n1")
    ]
    assert "preemption may nominate ['n0']" in wrong.disagreements[0].detail


# --------------------------------------------------------------------- start times, events
def test_bound_pods_get_distinct_whole_second_start_times_in_scenario_order() -> None:
    scenario = _scenario([_node("n0")], [_pod("p0"), _pod("p1"), _pod("x")])
    assert start_times(scenario) == {
        "p0": "2024-01-01T00:00:00Z",
        "p1": "2024-01-01T00:00:01Z",
        "x": "2024-01-01T00:00:02Z",
    }


def test_preemption_in_process_evicts_the_later_started_of_equal_priority_pods() -> None:
    # seed3-137: two pods of equal priority on a node that has room for one more pod
    # only; the reprieve goes to the more important (earlier started) one
    # (util.MoreImportantPod), so the later started one is the victim.
    scenario = _preemption_scenario()
    scenario["nodes"] = [_node("n0")]
    scenario["nodes"][0]["allocatable"]["pods"] = "2"
    scenario["pods"] = [
        _pod("p0", cpu="1", priorityClassName="diff-low"),
        _pod("p1", cpu="1", priorityClassName="diff-low"),
        _pod("p2", cpu="1", priorityClassName="diff-high"),
    ]
    run = _run(KUBESCHED, scenario, [("bound", "n0", ""), ("bound", "n0", ""), ("bound", "n0", "")])
    values = {pc["name"]: pc["value"] for pc in gen.PRIORITY_CLASSES}
    bound = []
    times = ("2024-01-01T00:00:05Z", "2024-01-01T00:00:01Z")
    for step, when in zip(run.steps[:2], times, strict=True):
        step.created["spec"]["priority"] = values["diff-low"]
        step.created["spec"]["nodeName"] = "n0"
        step.created["status"] = {"startTime": when}
        bound.append(step.created)
    pod = run.steps[2].created
    pod["spec"]["priority"] = values["diff-high"]
    prediction = score_step(scenario, run.nodes, bound, pod, {})
    assert prediction.victims == {"n0": ["p0"]}  # p0 started last
    bound[0]["status"]["startTime"] = "2024-01-01T00:00:00Z"
    prediction = score_step(scenario, run.nodes, bound, pod, {})
    assert prediction.victims == {"n0": ["p1"]}


def test_events_recorded_after_the_states_diverged_are_not_compared_run_against_run() -> None:
    # seed3-134: a tie broken differently at step 1 (nodes not interchangeable: p2
    # selects zone-a); p0's retry after it fails differently in the two runs, or not
    # at all. Only the events recorded before step 1 began are compared.
    scenario = _scenario(
        [_node("n0", "zone-a"), _node("n1", "zone-b")],
        [
            _pod("p0", cpu="16"),
            _pod("p1", cpu="3"),
            _pod("p2", cpu="3", nodeSelector={gen.ZONE_LABEL: "zone-a"}),
        ],
    )
    first = "0/2 nodes are available: 2 Insufficient cpu."
    late = "0/2 nodes are available: 1 Insufficient cpu, 1 other reason."
    p2_message = (
        "0/2 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match Pod's node affinity/selector."
    )
    kube = _run(
        KUBE,
        scenario,
        [("unschedulable", None, first), ("bound", "n0", ""), ("unschedulable", None, p2_message)],
        events={"p0": [first], "p2": [p2_message]},
    )
    ks = _run(
        KUBESCHED,
        scenario,
        [("unschedulable", None, first), ("bound", "n1", ""), ("bound", "n0", "")],
        events={"p0": [first, late]},
    )
    for run in (kube, ks):
        for i, step in enumerate(run.steps):
            step.began = 100.0 + 10 * i
    kube.event_times = {"p0": [101.0], "p2": [121.0]}
    ks.event_times = {"p0": [101.0, 112.0]}  # after step 1 began
    result = _compare(scenario, kube, ks)
    assert result.diverged_at == 1
    assert result.ok, result.summary()
    assert (result.unbound_both, result.message_agree) == (2, 2)

    ks.event_times = {"p0": [101.0, 105.0]}  # before: the same state, a real difference
    result = _compare(scenario, kube, ks)
    assert [(d.kind, d.pod, d.kubesched) for d in result.disagreements] == [
        ("event", "p0", [first, late])
    ]


def test_event_notes_may_fold_into_a_series_but_not_differ() -> None:
    from tests.differential.harness import events_agree

    m1, m2, m3 = "first", "second", "third"
    assert events_agree([m1, m2], [m1, m2], m2, m2)
    # kubesched's third attempt joined the second note's series; its condition says m3.
    assert events_agree([m1, m2, m3], [m1, m2], m3, m3)
    assert not events_agree([m1, m2, m3], [m1, m2], m3, m2)  # never saw m3
    assert not events_agree([m2], [m1], m2, m1)  # the pod's own attempt differs
    assert not events_agree([m1, "other"], [m1, m2], "other", m2)


# --------------------------------------------------------------------- dra
def _dra_series(n: int = 60) -> list[dict[str, Any]]:
    return [gen.generate(11, i, features=["dra"]) for i in range(n)]


def test_dra_scenarios_are_deterministic_and_keep_the_other_features_apart() -> None:
    assert gen.generate(11, 4, features=["dra"]) == gen.generate(11, 4, features=["dra"])
    scenario = gen.generate(11, 4, features=["dra"])
    assert "dra" in scenario and "DynamicResources" not in str(scenario["config"])
    assert "dra" not in gen.generate(11, 4, features=["spread"])


def _requests(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec["devices"]["requests"])


def test_dra_objects_have_valid_shapes() -> None:
    for scenario in _dra_series():
        dra = scenario["dra"]
        classes = {c["name"] for c in dra["classes"]}
        assert "gpu" in classes
        for c in dra["classes"]:
            assert c["selectors"] and all("device." in e for e in c["selectors"])
        specs = [c["spec"] for c in dra["claims"]] + [t["spec"] for t in dra["templates"]]
        for spec in specs:
            names = [r["name"] for r in _requests(spec)]
            assert len(names) == len(set(names))
            for request in _requests(spec):
                # Exactly one of exactly and firstAvailable.
                assert ("exactly" in request) != ("firstAvailable" in request)
                parts = [request["exactly"]] if "exactly" in request else request["firstAvailable"]
                if "firstAvailable" in request:
                    assert len(parts) == 2
                for part in parts:
                    assert part["deviceClassName"] in classes | {"missing-class"}
                    if part.get("allocationMode") == "ExactCount":
                        assert part["count"] in (1, 2)
                    if part.get("allocationMode") == "All":
                        assert "count" not in part
            for constraint in spec["devices"].get("constraints", []):
                assert set(constraint["requests"]) <= set(names)
        pools: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for s in dra["slices"]:
            # A v1.36.3 apiserver refuses a slice with both.
            assert ("devices" in s) != ("sharedCounters" in s)
            assert sum(k in s for k in ("node", "allNodes", "nodeSelector")) == 1
            pools.setdefault((s["driver"], s.get("pool") or s["node"]), []).append(s)
        for members in pools.values():
            counter_sets = {c["name"] for s in members for c in s.get("sharedCounters", [])}
            for s in members:
                for device in s.get("devices", []):
                    for use in device.get("consumesCounters", []):
                        assert use["counterSet"] in counter_sets
        available = {c["name"] for c in dra["claims"]}
        templates = {t["name"] for t in dra["templates"]}
        for pod in scenario["pods"]:
            entries = pod["spec"].get("resourceClaims", [])
            for e in entries:
                assert e.get("resourceClaimName") in available or (
                    e.get("resourceClaimTemplateName") in templates
                )
            used = [
                c["name"]
                for c in pod["spec"]["containers"][0].get("resources", {}).get("claims", [])
            ]
            assert used == [e["name"] for e in entries]


def test_dra_series_covers_what_the_issue_asks_for() -> None:
    series = _dra_series()
    text = repr(series)
    for needle in (
        "'allocationMode': 'All'",
        "'count': 2",
        "'firstAvailable'",
        "'matchAttribute'",
        "'sharedCounters'",
        "'consumesCounters'",
        "'allNodes': True",
        "'missing-class'",
        "1000Gi",
        'compareTo(quantity("40Gi"))',
        "'version'",
        "'resourceClaimTemplateName'",
    ):
        assert needle in text, needle
    shared = 0
    mixed = 0
    for scenario in series:
        users: dict[str, int] = {}
        for pod in scenario["pods"]:
            for e in pod["spec"].get("resourceClaims", []):
                if "resourceClaimName" in e:
                    users[e["resourceClaimName"]] = users.get(e["resourceClaimName"], 0) + 1
        shared += users.get("shared-0") == 2
        with_claims = [bool(p["spec"].get("resourceClaims")) for p in scenario["pods"]]
        mixed += any(with_claims) and not all(with_claims)
        assert any(with_claims)
    assert shared >= 10 and mixed >= 30
    assert any("nodeSelector" in s for sc in series for s in sc["dra"]["slices"])


def test_dra_manifests_name_pools_after_nodes_and_count_their_slices() -> None:
    scenario = next(
        s for s in _dra_series() if any("sharedCounters" in x for x in s["dra"]["slices"])
    )
    names = {n["name"]: f"d1-{n['name']}" for n in scenario["nodes"]}
    manifests = gen.dra_cluster_manifests(scenario["dra"], "d1", names)
    classes = [m for m in manifests if m["kind"] == "DeviceClass"]
    slices = [m for m in manifests if m["kind"] == "ResourceSlice"]
    assert all(c["metadata"]["name"].startswith("d1-") for c in classes)
    assert len({m["metadata"]["name"] for m in slices}) == len(slices)
    for m in slices:
        spec = m["spec"]
        members = [x for x in slices if x["spec"]["pool"]["name"] == spec["pool"]["name"]]
        assert spec["pool"]["resourceSliceCount"] == len(members)
        assert spec["pool"]["generation"] == 1
        if "nodeName" in spec:
            assert spec["pool"]["name"] == spec["nodeName"]
    partitioned = [m for m in slices if "sharedCounters" in m["spec"]]
    assert partitioned and partitioned[0]["spec"]["pool"]["resourceSliceCount"] == 2
    # Shrinking drops nodes: their slices go with them.
    fewer = {k: v for k, v in names.items() if k != partitioned[0]["spec"]["nodeName"][3:]}
    assert not any(
        "sharedCounters" in m["spec"]
        for m in gen.dra_cluster_manifests(scenario["dra"], "d1", fewer)
        if m["kind"] == "ResourceSlice"
    )
    ns_objects = gen.dra_namespace_manifests(scenario["dra"], "d1-kube", "d1")
    class_refs = {
        part["deviceClassName"]
        for m in ns_objects
        for r in (m["spec"].get("spec") or m["spec"])["devices"]["requests"]
        for part in [r.get("exactly") or {}, *r.get("firstAvailable", [])]
        if part
    }
    assert class_refs <= {c["metadata"]["name"] for c in classes} | {"missing-class"}
    # kubesched's structs read them all (what score_step feeds into Listers.dra).
    state = dra_state([*manifests, *ns_objects])
    assert len(state.slices) == len(slices) and len(state.classes) == len(classes)


def _claim(name: str, node: str | None, requests: list[str]) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ns", "finalizers": ["f"]},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c"}}]}},
    }
    if node is not None:
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        claim["status"] = {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": r, "driver": "d", "pool": node, "device": f"g{i}"}
                        for i, r in enumerate(requests)
                    ]
                },
                "nodeSelector": {"nodeSelectorTerms": [term]},
            }
        }
    return claim


def test_allocations_and_claims_before_a_step() -> None:
    pod = {
        "spec": {
            "resourceClaims": [
                {"name": "gpu", "resourceClaimName": "shared-0"},
                {"name": "nic", "resourceClaimTemplateName": "tpl-0"},
                {"name": "dev", "resourceClaimName": "nowhere"},
            ]
        }
    }
    claims = {
        "shared-0": _claim("shared-0", "x-n1", ["gpu", "gpu"]),
        "p00-nic-abcde": _claim("p00-nic-abcde", None, []),
    }
    statuses = [{"name": "nic", "resourceClaimName": "p00-nic-abcde"}]
    assert allocations(pod, claims, statuses, {"x-n1": "n1"}) == {
        "gpu": {"nodes": ["n1"], "requests": {"gpu": 2}},
        "nic": "unallocated",
        "dev": "missing",
    }
    before = claims_before(
        {"shared-0": claims["shared-0"]}, {**claims, "new": _claim("new", "n0", ["gpu"])}
    )
    by_name = {c["metadata"]["name"]: c for c in before}
    assert "allocation" in by_name["shared-0"]["status"]
    assert "status" not in by_name["new"] and "finalizers" not in by_name["new"]["metadata"]
    # Made during the step (for the step's pod), so as they were before it allocated them.
    assert set(by_name) == {"shared-0", "new", "p00-nic-abcde"}
    assert normalise_claim_names("claim p03-gpu-x7f2k and p12-nic-ab3de") == (
        "claim p03-gpu-<generated> and p12-nic-<generated>"
    )


def test_claims_allocated_differently_are_a_disagreement() -> None:
    pod = _pod("p0", resourceClaims=[{"name": "gpu", "resourceClaimName": "c0"}])
    scenario = _scenario([_node("n0"), _node("n1", cpu="8")], [pod])
    scenario["dra"] = {"classes": [], "slices": [], "claims": [], "templates": []}
    kube = _run(KUBE, scenario, [("bound", "n1", "")])
    ks = _run(KUBESCHED, scenario, [("bound", "n1", "")])
    kube.steps[0].claims = {"c0": _claim("c0", "n1", ["gpu"])}
    ks.steps[0].claims = {"c0": _claim("c0", "n1", ["gpu"])}
    result = _compare(scenario, kube, ks)
    assert (result.claims, result.claims_agree) == (1, 1), result.summary()
    assert "claims 1/1" in result.summary()
    ks.steps[0].claims = {"c0": _claim("c0", "n1", ["gpu", "gpu"])}
    result = _compare(scenario, kube, ks)
    assert [(d.kind, d.pod) for d in result.disagreements] == [("claims", "p0")]
    assert result.disagreements[0].kubesched == {"nodes": ["n1"], "requests": {"gpu": 2}}
    ks.steps[0].claims = {"c0": _claim("c0", None, [])}
    result = _compare(scenario, kube, ks)
    assert result.disagreements[0].kubesched == "unallocated"


def test_score_step_takes_a_dra_scenarios_pods_and_objects() -> None:
    scenario = next(s for s in _dra_series() if s["dra"]["claims"])
    names = {n["name"]: n["name"] for n in scenario["nodes"]}
    nodes = [gen.node_manifest(n, n["name"]) for n in scenario["nodes"]]
    pod = next(p for p in scenario["pods"] if p["spec"].get("resourceClaims"))
    created = gen.pod_manifest(pod, "d1-kube", "differential", names)
    created["metadata"]["uid"] = "u1"
    objects = [
        *gen.dra_cluster_manifests(scenario["dra"], "d1", names),
        *gen.dra_namespace_manifests(scenario["dra"], "d1-kube", "d1"),
    ]
    prediction = score_step(scenario, nodes, [], created, names, dra_objects=objects)
    assert prediction.feasible or prediction.message


def test_claims_on_each_runs_own_node_agree_after_a_tie() -> None:
    """Two equal nodes with different slices (not interchangeable): the runs broke the
    tie apart; each claim is allocated where its run put the pod, which is alike. A
    claim allocated away from its pod's node is still a disagreement."""
    pod = _pod("p0", resourceClaims=[{"name": "gpu", "resourceClaimName": "c0"}])
    scenario = _scenario([_node("n0"), _node("n1")], [pod])
    scenario["dra"] = {"classes": [], "slices": [], "claims": [], "templates": []}
    kube = _run(KUBE, scenario, [("bound", "n0", "")])
    ks = _run(KUBESCHED, scenario, [("bound", "n1", "")])
    kube.steps[0].claims = {"c0": _claim("c0", "n0", ["gpu"])}
    ks.steps[0].claims = {"c0": _claim("c0", "n1", ["gpu"])}
    result = _compare(scenario, kube, ks)
    assert not [d for d in result.disagreements if d.kind == "claims"], result.summary()
    ks.steps[0].claims = {"c0": _claim("c0", "n0", ["gpu"])}
    result = _compare(scenario, kube, ks)
    assert [d.kind for d in result.disagreements if d.kind == "claims"] == ["claims"]


def test_an_all_request_may_count_differently_only_on_different_nodes() -> None:
    """seed43-320: a tie between nodes with different devices; an `All` request took
    each node's devices, 1 on one and 3 on the other. That is alike across the tie;
    on the same node it is a disagreement, and an exact count never differs."""
    pod = _pod(
        "p0",
        resourceClaims=[
            {"name": "gpu", "resourceClaimName": "c0"},
            {"name": "one", "resourceClaimName": "c1"},
        ],
    )
    scenario = _scenario([_node("n0"), _node("n1")], [pod])
    every = {"deviceClassName": "gpu", "allocationMode": "All"}
    exact = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}
    scenario["dra"] = {
        "classes": [],
        "slices": [],
        "claims": [
            {"name": "c0", "spec": {"devices": {"requests": [{"name": "gpu", "exactly": every}]}}},
            {"name": "c1", "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exact}]}}},
        ],
        "templates": [],
    }

    def claims_problems(kube_node: str, counts: tuple[int, int, int, int]) -> list[str]:
        kube = _run(KUBE, scenario, [("bound", kube_node, "")])
        ks = _run(KUBESCHED, scenario, [("bound", "n1", "")])
        kube.steps[0].claims = {
            "c0": _claim("c0", kube_node, ["gpu"] * counts[0]),
            "c1": _claim("c1", kube_node, ["gpu"] * counts[1]),
        }
        ks.steps[0].claims = {
            "c0": _claim("c0", "n1", ["gpu"] * counts[2]),
            "c1": _claim("c1", "n1", ["gpu"] * counts[3]),
        }
        result = _compare(scenario, kube, ks)
        return [d.pod for d in result.disagreements if d.kind == "claims"]

    assert claims_problems("n0", (1, 1, 3, 1)) == []
    assert claims_problems("n1", (1, 1, 3, 1)) == ["p0"]
    assert claims_problems("n0", (1, 1, 1, 2)) == ["p0"]
