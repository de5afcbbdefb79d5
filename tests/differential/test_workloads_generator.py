"""The `workloads` generator feature (Services, ReplicationControllers, ReplicaSets,
StatefulSets and RuntimeClasses) and what the harness makes of it, without a cluster."""

from __future__ import annotations

import copy
from typing import Any

from tests.differential import generator as gen
from tests.differential.harness import KUBESCHED, score_step
from tests.differential.harness.inprocess import workload_selectors
from tests.differential.scenario_builders import _node, _pod, _run, _scenario


def _workloads_series(n: int = 40) -> list[dict[str, Any]]:
    return [gen.generate(81, i, features=gen.parse_features("")) for i in range(n)]


def test_workloads_is_part_of_every_feature_and_turns_no_plugin_on() -> None:
    assert "workloads" in gen.FEATURES and "workloads" in gen.parse_features("")
    assert gen.parse_features("workloads") == ["workloads"]
    assert gen.FEATURE_PLUGINS["workloads"] == ()
    assert gen.disabled_plugins(["workloads"]) == gen.disabled_plugins([])
    assert gen.profile_config("weights", ["workloads"]) == gen.profile_config("weights", [])
    assert not gen.unsupported_features(["workloads"])
    every = gen.parse_features("")
    assert gen.generate(81, 3, features=every) == gen.generate(81, 3, features=every)
    assert gen.generate(81, 3, features=every) != gen.generate(81, 4, features=every)
    assert "workloads" not in gen.generate(81, 3, features=["spread"])
    assert not any(p.get("owner") for p in gen.generate(81, 3, features=["spread"])["pods"])


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A controller's selector (a label map, or matchLabels/matchExpressions)."""
    if selector is None:
        return False
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        selector = {"matchLabels": selector}
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    return all(
        e["operator"] == "In" and labels.get(e["key"]) in e["values"]
        for e in selector.get("matchExpressions", [])
    )


def test_pods_name_controllers_of_the_right_kinds_that_select_them() -> None:
    series = _workloads_series()
    kinds_seen: set[str] = set()
    for scenario in series:
        objects = scenario["workloads"]
        controllers = {(c["kind"], c["name"]): c for c in objects["controllers"]}
        owned: dict[tuple[str, str], int] = {}
        for pod in scenario["pods"]:
            if not pod.get("owner"):
                continue
            key = (pod["owner"]["kind"], pod["owner"]["name"])
            assert key in controllers, key
            assert _selects(controllers[key]["selector"], pod["labels"])
            owned[key] = owned.get(key, 0) + 1
            uids = {key: "uid-" + key[1]}
            manifest = gen.pod_manifest(pod, "d1-kube", "differential", {}, owners=uids)
            assert manifest["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": {"ReplicationController": "v1"}.get(key[0], "apps/v1"),
                    "kind": key[0],
                    "name": key[1],
                    "uid": "uid-" + key[1],
                    "controller": True,
                }
            ]
        for key, controller in controllers.items():
            assert controller["replicas"] == owned.get(key, 0)
            kinds_seen.add(key[0])
        manifests = gen.workload_manifests(objects, "d1-kube")
        assert [m["kind"] for m in manifests] == ["Service"] * len(objects["services"]) + [
            c["kind"] for c in objects["controllers"]
        ]
        for m in manifests:
            assert m["metadata"]["namespace"] == "d1-kube"
            if m["kind"] == "Service":
                assert m["spec"]["clusterIP"] == "None" and m["spec"]["ports"]
                continue
            # What validation asks for: the template's labels satisfy the selector.
            assert _selects(m["spec"]["selector"], m["spec"]["template"]["metadata"]["labels"])
            assert m["apiVersion"] == gen.CONTROLLER_API_VERSIONS[m["kind"]]
    assert kinds_seen == set(gen.CONTROLLER_KINDS)


def test_services_select_one_app_two_apps_or_nothing() -> None:
    series = _workloads_series()
    services = [(s, sc) for sc in series for s in sc["workloads"]["services"]]
    assert any(s["selector"] is None for s, _ in services)
    for service, scenario in services:
        selected = [p for p in scenario["pods"] if _selects(service["selector"], p["labels"])]
        apps = {p["labels"]["app"] for p in selected}
        if service["selector"] is None:
            assert (
                not selected
                and "selector"
                not in gen.workload_manifests({"services": [service]}, "ns")[0]["spec"]
            )
        elif "stack" in service["selector"]:
            assert len(apps) <= 2
    assert any(
        len({p["labels"]["app"] for p in sc["pods"] if _selects(s["selector"], p["labels"])}) == 2
        for s, sc in services
        if s["selector"] and "stack" in s["selector"]
    )


def test_runtime_classes_schedule_onto_the_scenarios_nodes() -> None:
    series = _workloads_series()
    named = 0
    for scenario in series:
        classes = {c["name"]: c for c in scenario["workloads"]["runtimeClasses"]}
        assert classes
        taints = [t for n in scenario["nodes"] for t in n.get("taints", [])] + list(gen.TAINTS)
        for c in classes.values():
            assert set(c["overhead"]) == {"cpu", "memory"}
            scheduling = c.get("scheduling") or {}
            for key, value in (scheduling.get("nodeSelector") or {}).items():
                assert any(n["labels"].get(key) == value for n in scenario["nodes"])
                assert key in gen.referenced_label_keys(scenario)
            for tol in scheduling.get("tolerations") or []:
                assert any(
                    t["key"] == tol["key"]
                    and tol.get("effect", t["effect"]) == t["effect"]
                    and (tol["operator"] == "Exists" or tol["value"] == t.get("value"))
                    for t in taints
                )
        manifests = gen.runtime_class_manifests(scenario["workloads"], "d7")
        assert [m["metadata"]["name"] for m in manifests] == [f"d7-{c}" for c in classes]
        real = gen.runtime_class_names(scenario["workloads"], "d7")
        for pod in scenario["pods"]:
            name = pod["spec"].get("runtimeClassName")
            if name is None:
                continue
            named += 1
            own = pod["spec"].get("nodeSelector") or {}
            theirs = (classes[name].get("scheduling") or {}).get("nodeSelector") or {}
            assert all(own.get(k, v) == v for k, v in theirs.items())  # admission accepts it
            manifest = gen.pod_manifest(pod, "ns", "differential", {}, runtime_classes=real)
            assert manifest["spec"]["runtimeClassName"] == f"d7-{name}"
    assert named
    with_selector = [
        c
        for sc in series
        for c in sc["workloads"]["runtimeClasses"]
        if (c.get("scheduling") or {}).get("nodeSelector")
    ]
    with_tolerations = [
        c
        for sc in series
        for c in sc["workloads"]["runtimeClasses"]
        if (c.get("scheduling") or {}).get("tolerations")
    ]
    assert with_selector and with_tolerations


def test_workload_selectors_are_keyed_as_kubesched_run_keeps_them() -> None:
    objects = {
        "services": [
            {"name": "svc-web", "selector": {"app": "web"}},
            {"name": "svc-external", "selector": None},
        ],
        "controllers": [
            {
                "kind": "ReplicationController",
                "name": "rc-db",
                "labels": {"app": "db"},
                "selector": {"app": "db"},
                "replicas": 1,
            },
            {
                "kind": "ReplicaSet",
                "name": "rs-web",
                "labels": {"app": "web"},
                "selector": {
                    "matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]
                },
                "replicas": 1,
            },
        ],
    }
    manifests = gen.workload_manifests(objects, "ns")
    selectors = workload_selectors(manifests)
    assert set(selectors) == {
        ("ns", "Service", "svc-web"),
        ("ns", "ReplicationController", "rc-db"),
        ("ns", "ReplicaSet", "rs-web"),
    }  # a Service without a selector selects nothing: kept by no informer either
    assert selectors["ns", "Service", "svc-web"].match_labels == {"app": "web"}
    assert selectors["ns", "ReplicationController", "rc-db"].match_labels == {"app": "db"}
    assert selectors["ns", "ReplicaSet", "rs-web"].match_expressions[0].key == "app"


def test_score_step_spreads_by_the_services_and_controllers_of_the_run() -> None:
    # PodTopologySpread's system default constraints: with a Service selecting app=web,
    # the pod avoids the zone and node of the web pod already bound; without one
    # (nor a controller) it has no default selector and scores every node alike.
    scenario = _scenario([_node("n0"), _node("n1", "zone-b")], [_pod("p0"), _pod("p1")])
    scenario["features"] = ["spread", "workloads"]
    scenario["config"] = gen.profile_config("default", ["spread", "workloads"])
    run = _run(KUBESCHED, scenario, [("bound", "n0", ""), ("bound", "n1", "")])
    bound = copy.deepcopy(run.steps[0].created)
    bound["spec"]["nodeName"] = "n0"
    pod = run.steps[1].created

    def spread(objects: list[dict[str, Any]]) -> dict[str, int]:
        prediction = score_step(scenario, run.nodes, [bound], pod, {}, objects)
        return prediction.by_plugin.get("PodTopologySpread", {})

    assert not spread([])  # no default selector: PreScore skips the plugin
    service = gen.workload_manifests(
        {"services": [{"name": "svc-web", "selector": {"app": "web"}}]}, "ns-" + KUBESCHED
    )
    assert spread(service)["n0"] < spread(service)["n1"]
    # A ReplicaSet the pod names as controller does the same.
    owned = copy.deepcopy(pod)
    owned["metadata"]["ownerReferences"] = [
        gen.owner_reference({"kind": "ReplicaSet", "name": "rs-web"}, {})
    ]
    replica_set = gen.workload_manifests(
        {
            "controllers": [
                {
                    "kind": "ReplicaSet",
                    "name": "rs-web",
                    "labels": {"app": "web"},
                    "selector": {"matchLabels": {"app": "web"}},
                    "replicas": 2,
                }
            ]
        },
        "ns-" + KUBESCHED,
    )
    for obj in replica_set:
        obj["metadata"]["uid"] = "u-rs"
    by_rs = score_step(scenario, run.nodes, [bound], owned, {}, replica_set)
    assert by_rs.by_plugin["PodTopologySpread"]["n0"] < by_rs.by_plugin["PodTopologySpread"]["n1"]
    # Nothing of them reaches the manifest loader (a ReplicaSet would make pods).
    assert by_rs.feasible == ["n0", "n1"]
