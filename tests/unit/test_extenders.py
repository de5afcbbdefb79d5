"""Scheduler extenders in `simulate`: kubesched's HTTP client against a real HTTP
extender on loopback (tests/extender_server.py), in kube-scheduler v1.36.3's order
(schedule_one.go: findNodesThatPassExtenders after the Filter plugins,
prioritizeNodes adding extender scores after normalisation; preemption.go:
callExtenders)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from click.testing import CliRunner

from kubesched.cli.main import main
from kubesched.config.file import ConfigError, SchedulerConfig, parse_config
from kubesched.kube.extender_server import ReadOnlyCluster
from kubesched.plugins.noderesources.args import NodeResourcesFitArgs
from kubesched.scheduler import Scheduler
from kubesched.scheduler.extender import build_extenders
from kubesched.simulation.simulator import SimulationResult, simulate
from kubesched.testing import make_node, make_pod
from tests.extender_server import TestExtender, filter_answer, node_names, pod_name, serve_extender

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def config(*extenders: dict[str, Any], source: str = "sched.yaml") -> SchedulerConfig:
    return parse_config({**HEADER, "extenders": list(extenders)}, source)


def run(cfg: SchedulerConfig, pods: list[Any], nodes: list[Any] | None = None) -> SimulationResult:
    nodes = nodes or [make_node(f"n{i}", cpu="4") for i in range(3)]
    return simulate(nodes, pods, cfg.profiles, seed=1, extenders=cfg.extenders)


# --- configuration --------------------------------------------------------------------


def test_the_configuration_is_validated_as_kube_scheduler_validates_it() -> None:
    with pytest.raises(ConfigError) as err:
        config(
            {"urlPrefix": "http://a", "prioritizeVerb": "prioritize", "bindVerb": "bind"},
            {
                "urlPrefix": "http://b",
                "bindVerb": "bind",
                "managedResources": [{"name": "cpu"}, {"name": "example.com/gpu"}],
            },
            {"urlPrefix": "http://c", "managedResources": [{"name": "example.com/gpu"}]},
        )
    text = str(err.value)
    assert "sched.yaml: extenders[0].weight: Invalid value: 0: must have a positive weight" in text
    assert (
        'extenders[1].managedResources[0].name: Invalid value: "cpu": is an invalid extended '
        "resource name" in text
    )
    assert (
        'extenders[2].managedResources[0].name: Invalid value: "example.com/gpu": duplicate '
        "extender managed resource name" in text
    )
    assert 'found 2 extenders implementing bind": only one extender can implement bind' in text


def test_an_unknown_field_of_an_extender_is_refused_with_its_path() -> None:
    with pytest.raises(ConfigError, match=r"extenders\[0\].*unknown field `filterverb`"):
        config({"urlPrefix": "http://a", "filterverb": "filter"})


def test_ignored_by_scheduler_resources_are_left_to_the_extender_by_node_resources_fit() -> None:
    cfg = config(
        {
            "urlPrefix": "http://a",
            "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
        },
        {"urlPrefix": "http://b", "ignorable": True, "filterVerb": "filter"},
    )
    args = cfg.profiles[0].plugin_config["NodeResourcesFit"]
    assert isinstance(args, NodeResourcesFitArgs)
    assert args.ignored_resources == ("example.com/gpu",)
    assert [e.ignorable for e in cfg.extenders] == [False, True]
    # A pod asking for the ignored resource fits a node that has none of it.
    result = simulate(
        [make_node("n0")],
        [make_pod("p", cpu="1", requests={"example.com/gpu": 1})],
        cfg.profiles,
    )
    assert result.placements["default/p"] == "n0"


# --- filter ---------------------------------------------------------------------------


def test_the_extender_filters_the_nodes_the_plugins_found_feasible() -> None:
    ext = TestExtender()
    ext.verbs["filter"] = lambda args: filter_answer(
        args, lambda n: n == "n2", "node(s) are not in the gpu pool"
    )
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "filterVerb": "filter"})
        nodes = [make_node("n0", cpu="4"), make_node("n1", cpu="1"), make_node("n2", cpu="4")]
        result = run(cfg, [make_pod("fits", cpu="2"), make_pod("big", cpu="3")], nodes)
    assert result.placements["default/fits"] == "n2"
    # n1 is too small (NodeResourcesFit), n0 the extender's, n2 taken by `fits`.
    assert result.reasons["default/big"] == (
        "0/3 nodes are available: 1 node(s) are not in the gpu pool, 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is "
        "not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )
    # Only the nodes the plugins found feasible are sent, as whole Node objects.
    first = ext.calls("filter")[0]
    assert sorted(node_names(first)) == ["n0", "n2"]
    assert first["NodeNames"] is None and first["Pod"]["metadata"]["name"] == "fits"


def test_a_node_cache_capable_extender_is_sent_node_names_only() -> None:
    ext = TestExtender()
    ext.verbs["filter"] = lambda args: filter_answer(args, lambda n: n != "n0")
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True})
        result = run(cfg, [make_pod("p", cpu="1")])
    assert result.placements["default/p"] in {"n1", "n2"}
    assert ext.calls("filter")[0]["Nodes"] is None
    assert sorted(ext.calls("filter")[0]["NodeNames"]) == ["n0", "n1", "n2"]


def test_an_extender_that_fails_fails_the_pod_with_upstreams_text() -> None:
    ext = TestExtender(verbs={"filter": lambda args: 500})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "filterVerb": "filter"})
        result = run(cfg, [make_pod("p", cpu="1")])
    assert result.placements["default/p"] is None
    assert result.reasons["default/p"] == (
        f"failed filter with extender at URL {ext.url}/filter, code 500"
    )


def test_an_extender_error_field_fails_the_pod_with_its_text() -> None:
    ext = TestExtender(verbs={"filter": lambda args: {"Error": "the gpu pool is offline"}})
    with serve_extender(ext):
        result = run(config({"urlPrefix": ext.url, "filterVerb": "filter"}), [make_pod("p")])
    assert result.reasons["default/p"] == "the gpu pool is offline"


def test_an_ignorable_extender_that_fails_is_skipped() -> None:
    ext = TestExtender(verbs={"filter": lambda args: 503})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "filterVerb": "filter", "ignorable": True})
        result = run(cfg, [make_pod("p", cpu="1")])
    assert result.placements["default/p"] is not None
    assert len(ext.calls("filter")) == 1


def test_an_extender_that_times_out_fails_the_pod_as_gos_client_says() -> None:
    ext = TestExtender(verbs={"filter": lambda args: filter_answer(args, lambda n: True)})
    ext.delay = 0.5
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "filterVerb": "filter", "httpTimeout": "100ms"})
        result = run(cfg, [make_pod("p", cpu="1")])
    assert result.reasons["default/p"] == (
        f'Post "{ext.url}/filter": context deadline exceeded '
        "(Client.Timeout exceeded while awaiting headers)"
    )


def test_an_extender_that_is_not_there_fails_the_pod_as_gos_client_says() -> None:
    with serve_extender() as ext:
        url = ext.url
    cfg = config({"urlPrefix": url, "filterVerb": "filter"})
    result = run(cfg, [make_pod("p", cpu="1")])
    port = url.split(":")[2].split("/")[0]
    assert result.reasons["default/p"] == (
        f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (b"{not json", "the answer to filter is not JSON"),
        ([], "the answer to filter is not a JSON object"),
        ({"NodeNames": ["n0", "elsewhere"]}, "claims a filtered node 'elsewhere'"),
        ({"NodeNames": "n0"}, "NodeNames is not a JSON array"),
    ],
)
def test_a_malformed_filter_answer_fails_the_pod_and_the_run_goes_on(
    answer: Any, needle: str
) -> None:
    ext = TestExtender(verbs={"filter": lambda args: answer})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True})
        result = run(cfg, [make_pod("a", cpu="1"), make_pod("b", cpu="1")])
    assert result.placements == {"default/a": None, "default/b": None}
    assert needle in result.reasons["default/a"]


def test_pods_without_the_managed_resource_are_not_sent_to_the_extender() -> None:
    ext = TestExtender(verbs={"filter": lambda args: filter_answer(args, lambda n: n == "n1")})
    with serve_extender(ext):
        cfg = config(
            {
                "urlPrefix": ext.url,
                "filterVerb": "filter",
                "managedResources": [{"name": "example.com/gpu"}],
            }
        )
        nodes = [make_node(f"n{i}", extra={"example.com/gpu": 2}) for i in range(3)]
        pods = [make_pod("plain", cpu="1"), make_pod("gpu", requests={"example.com/gpu": 1})]
        result = run(cfg, pods, nodes)
    assert [pod_args["Pod"]["metadata"]["name"] for pod_args in ext.calls("filter")] == ["gpu"]
    assert result.placements["default/gpu"] == "n1"


# --- prioritize -----------------------------------------------------------------------


def test_extender_scores_are_weighted_and_added_on_the_plugins_scale() -> None:
    def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"Host": n, "Score": 10 if n == "n0" else 0} for n in node_names(args)]

    ext = TestExtender(verbs={"prioritize": prioritize})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 5})
        # n0 is the fullest: every default score plugin prefers n1 or n2.
        nodes = [make_node("n0", cpu="4"), make_node("n1", cpu="4"), make_node("n2", cpu="4")]
        busy = make_pod("busy", cpu="3", node_name="n0")
        result = run(cfg, [busy, make_pod("p", cpu="500m")], nodes)
        explained = simulate(
            nodes,
            [busy, make_pod("p", cpu="500m")],
            cfg.profiles,
            seed=1,
            extenders=cfg.extenders,
            explain=["default/p"],
        )
    # 10 × 5 × (100 / 10) = 500 outweighs the plugins' few hundred at most.
    assert result.placements["default/p"] == "n0"
    scores = explained.explanations["default/p"][0]
    assert f"Extender {ext.url}" in str(scores)


@pytest.mark.parametrize("bad", [11, -1, "10"])
def test_a_score_out_of_the_protocols_range_gives_no_score(bad: Any) -> None:
    def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"Host": n, "Score": bad if n == "n0" else 0} for n in node_names(args)]

    ext = TestExtender(verbs={"prioritize": prioritize})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 100})
        nodes = [make_node("n0", cpu="4"), make_node("n1", cpu="4")]
        result = run(
            cfg, [make_pod("busy", cpu="3", node_name="n0"), make_pod("p", cpu="1")], nodes
        )
    # A failed prioritize adds nothing (upstream logs it at V(5) and goes on).
    assert result.placements["default/p"] == "n1"


# --- preemption -----------------------------------------------------------------------


def test_preemption_keeps_only_the_candidates_and_victims_the_extender_agrees_to() -> None:
    def preempt(args: dict[str, Any]) -> dict[str, Any]:
        # Keep n1 only, with the victims the scheduler proposed there.
        victims = args["NodeNameToMetaVictims"]
        return {"NodeNameToMetaVictims": {"n1": victims["n1"]}}

    ext = TestExtender(verbs={"preempt": preempt})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "preemptVerb": "preempt", "nodeCacheCapable": True})
        nodes = [make_node("n0", cpu="2"), make_node("n1", cpu="2")]
        low = [
            make_pod("low0", cpu="2", node_name="n0", priority=0),
            make_pod("low1", cpu="2", node_name="n1", priority=0),
        ]
        result = run(cfg, [*low, make_pod("high", cpu="2", priority=100)], nodes)
    assert result.evicted == ["default/low1"]
    assert result.placements["default/high"] == "n1"
    sent = ext.calls("preempt")[0]["NodeNameToMetaVictims"]
    assert sorted(sent) == ["n0", "n1"]
    assert len(sent["n1"]["Pods"]) == 1 and "UID" in sent["n1"]["Pods"][0]


def test_an_extender_that_names_a_pod_not_on_the_node_fails_the_preemption() -> None:
    ext = TestExtender(
        verbs={
            "preempt": lambda args: {
                "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "nope"}], "NumPDBViolations": 0}}
            }
        }
    )
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "preemptVerb": "preempt", "nodeCacheCapable": True})
        nodes = [make_node("n0", cpu="2")]
        low = make_pod("low", cpu="2", node_name="n0", priority=0)
        result = run(cfg, [low, make_pod("high", cpu="2", priority=100)], nodes)
    assert result.evicted == []
    assert "claims to preempt pod (UID: &{nope}) on node: n0" in result.reasons["default/high"]


# --- bind -----------------------------------------------------------------------------


def test_simulate_does_not_call_the_bind_verb() -> None:
    ext = TestExtender(verbs={"bind": lambda args: {"Error": ""}})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "bindVerb": "bind"})
        result = run(cfg, [make_pod("p", cpu="1")])
    assert result.placements["default/p"] is not None
    assert ext.calls("bind") == []


# --- the commands ---------------------------------------------------------------------


def _manifest(objects: list[tuple[str, Any]]) -> str:
    return yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": kind, **msgspec.to_builtins(obj)} for kind, obj in objects]
    )


@pytest.mark.parametrize("command", ["simulate", "capacity", "explain"])
def test_every_command_calls_the_configurations_extenders(tmp_path: Path, command: str) -> None:
    ext = TestExtender(verbs={"filter": lambda args: filter_answer(args, lambda n: n == "n1")})
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        _manifest([("Node", make_node("n0")), ("Node", make_node("n1")), ("Pod", make_pod("p"))])
    )
    probe = tmp_path / "probe.yaml"
    probe.write_text(_manifest([("Pod", make_pod("probe", cpu="1"))]))
    args = {
        "simulate": ["simulate", "-f", str(cluster)],
        "capacity": ["capacity", "-f", str(cluster), "--podspec", str(probe), "--max", "3"],
        "explain": ["explain", "-f", str(cluster), "p"],
    }[command]
    with serve_extender(ext):
        cfg = tmp_path / "sched.yaml"
        extender = {"urlPrefix": ext.url, "filterVerb": "filter"}
        cfg.write_text(yaml.safe_dump({**HEADER, "extenders": [extender]}))
        result = CliRunner().invoke(main, [*args, "--config", str(cfg), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert ext.calls("filter"), "the extender was not called"
    out = json.loads(result.output)
    if command == "simulate":
        assert out["placements"]["default/p"] == "n1"
    elif command == "capacity":
        assert out["specs"][0]["nodes"] == {"n1": 3}
    else:
        assert "rejected by the test extender" in result.output


def test_no_extenders_leaves_them_out_and_the_report_says_so(tmp_path: Path) -> None:
    ext = TestExtender(verbs={"filter": lambda args: filter_answer(args, lambda n: n == "n1")})
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(_manifest([("Node", make_node("n0")), ("Pod", make_pod("p"))]))
    with serve_extender(ext):
        cfg = tmp_path / "sched.yaml"
        extender = {"urlPrefix": ext.url, "filterVerb": "filter", "bindVerb": "bind"}
        cfg.write_text(yaml.safe_dump({**HEADER, "extenders": [extender]}))
        base = ["simulate", "-f", str(cluster), "--config", str(cfg), "-o", "json"]
        called = CliRunner().invoke(main, base)
        left_out = CliRunner().invoke(main, [*base, "--no-extenders"])
    assert json.loads(called.output)["placements"]["default/p"] is None  # n0 refused
    assert f"extender {ext.url} called (filter); its bind verb is not" in called.output
    assert json.loads(left_out.output)["placements"]["default/p"] == "n0"
    assert "--no-extenders: the 1 extender(s) of" in left_out.output
    assert len(ext.calls("filter")) == 1  # the first run's only


def test_a_pod_an_extender_rejected_is_retried_on_any_cluster_event() -> None:
    """Extenders have no queueing hints: kube-scheduler registers every event for
    "Extender" (NewFramework's defaultEnqueueExtension), so the pod is tried again
    when another pod binds, and the extender, which changed its mind, lets it in."""
    refused: list[str] = []

    def filter_verb(args: dict[str, Any]) -> dict[str, Any]:
        if pod_name(args) == "picky" and not refused:
            refused.append("once")
            return filter_answer(args, lambda n: False, "node(s) are not ready yet")
        return filter_answer(args, lambda n: True)

    ext = TestExtender(verbs={"filter": filter_verb})
    with serve_extender(ext):
        cfg = config({"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True})
        result = run(cfg, [make_pod("picky", cpu="1"), make_pod("other", cpu="1")])
    assert result.placements["default/picky"] is not None
    picky = [a for a in ext.calls("filter") if a["Pod"]["metadata"]["name"] == "picky"]
    assert len(picky) == 2
    assert result.outcomes["default/picky"].attempts == 2


def test_nodes_answered_whole_are_scored_as_new_node_infos_as_upstream_does() -> None:
    """An extender that is not nodeCacheCapable answers with Node objects, and
    kube-scheduler scores the NodeInfos it makes of them: no pods, no images
    (HTTPExtender.Filter: NewNodeInfo + SetNode). n0 holds the pod's image, which
    ImageLocality favours; through such an extender only the free room counts."""
    image = "registry.example.com/app:1"
    nodes = [
        make_node("n0", cpu="4", images=[([image], 800 * 1024 * 1024)]),
        make_node("n1", cpu="8"),
    ]
    pods = [make_pod("p", cpu="1", image=image)]
    plain = simulate(nodes, pods, config().profiles, seed=1)
    ext = TestExtender(verbs={"filter": lambda args: filter_answer(args, lambda n: True)})
    with serve_extender(ext):
        by_name = run(
            config({"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True}),
            pods,
            nodes,
        )
        whole = run(config({"urlPrefix": ext.url, "filterVerb": "filter"}), pods, nodes)
    assert plain.placements["default/p"] == "n0"
    assert by_name.placements["default/p"] == "n0"  # names only: the real NodeInfos
    assert whole.placements["default/p"] == "n1"


def test_a_profile_with_extenders_signs_no_pod() -> None:
    """computeBatchablePlugins: with extenders configured, a profile's signatures are
    off (an extender's answers are in no signature), so OpportunisticBatching never
    reuses a ranking across pods that the extenders would have to judge."""
    cfg = config({"urlPrefix": "http://127.0.0.1:1/x", "filterVerb": "filter"})
    with_extenders = Scheduler(
        cfg.profiles, ReadOnlyCluster(), extenders=build_extenders(cfg.extenders)
    )
    without = Scheduler(cfg.profiles, ReadOnlyCluster())
    assert [fw.signer.enabled for fw in with_extenders.frameworks.values()] == [False]
    assert [fw.signer.enabled for fw in without.frameworks.values()] == [True]
