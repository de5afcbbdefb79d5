"""Opportunistic batching as v1.36.3 has it (framework/runtime/batch.go and the
plugins' SignPod): which pods get a signature, which never do, and how the next
pod of a run of equal pods reuses the previous cycle's ranking."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import Pod
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.features import (
    DEFAULT_GATES,
    FeatureGateError,
    parse_feature_gates,
)
from kubesched.framework.interfaces import FilterPlugin, NodeVerdicts
from kubesched.framework.profile import PluginRef, ProfileConfig
from kubesched.framework.registry import Registry
from kubesched.framework.runtime.batch import MAX_BATCH_AGE, SortedNodes
from kubesched.framework.signature import SignFragment, SignPlugin
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.registry import default_registry
from kubesched.scheduler import Scheduler
from kubesched.server.metrics import SchedulerMetrics
from kubesched.simulation.memory import InMemoryCluster
from kubesched.testing import make_node, make_pod

PROFILE = "default-scheduler"


def batchable_profile(**plugin_config: dict[str, Any]) -> ProfileConfig:
    """The default profile with no cluster-default spread constraints: the
    System defaulting gives every pod constraints, so no pod would be signed."""
    profile = ProfileConfig.default()
    profile.plugin_config["PodTopologySpread"] = {"defaultingType": "List"}
    profile.plugin_config.update(plugin_config)
    return profile


def scheduler(
    profile: ProfileConfig | None = None,
    nodes: Sequence[Any] = (),
    *,
    gates: dict[str, bool] | None = None,
    registry: Registry | None = None,
) -> tuple[Scheduler, InMemoryCluster, SimClock, SchedulerMetrics]:
    clock = SimClock()
    cluster = InMemoryCluster(nodes={n.metadata.name: n for n in nodes})
    metrics = SchedulerMetrics()
    sched = Scheduler(
        [profile or batchable_profile()],
        cluster,
        clock=clock,
        seed=1,
        observer=metrics,
        gates=parse_feature_gates(gates or {}),
        registry=registry,
    )
    cluster.watch(sched)
    return sched, cluster, clock, metrics


def sign(sched: Scheduler, pod: Pod) -> bytes | None:
    return sched.frameworks[PROFILE].signer.sign(PodInfo(pod))


# --- the signature ---------------------------------------------------------------------


def test_the_default_profile_signs_no_pod_because_of_its_default_spread_constraints() -> None:
    """Every default plugin signs, but PodTopologySpread's System defaulting gives
    every pod constraints, so it refuses every pod, as upstream's does."""
    sched, *_ = scheduler(ProfileConfig.default())
    signer = sched.frameworks[PROFILE].signer
    assert signer.enabled and signer.unsupported == []
    assert sign(sched, make_pod("a", cpu="1")) is None
    listed = batchable_profile()
    listed.plugin_config["PodTopologySpread"] = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}
        ],
    }
    sched, *_ = scheduler(listed)
    assert sign(sched, make_pod("a", cpu="1")) is None


def test_each_default_plugin_contributes_its_fragment() -> None:
    sched, *_ = scheduler()
    pod = make_pod(
        "a",
        cpu="1",
        image="nginx",
        labels={"app": "web"},
        spec={
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    )
    signature = sign(sched, pod)
    assert signature is not None
    fragments = json.loads(signature)
    assert sorted(fragments) == sorted(
        [
            "v1.Pod.Spec.SchedulerName",  # the framework's own
            "v1.Pod.Spec.ContainerRequestsAndOverheads()",  # NodeResourcesFit, Balanced...
            "v1.Pod.Spec.Volumes.NonSyntheticSources()",  # the four volume plugins
            "v1.Pod.Spec.Tolerations",  # TaintToleration, NodeUnschedulable
            "v1.Pod.Spec.Affinity.NodeAffinity",  # NodeAffinity
            "v1.Pod.Spec.Affinity.NodeSelector",  # NodeAffinity
            "v1.Pod.Spec.HostPorts()",  # NodePorts
            "v1.Pod.Spec.NodeName",  # NodeName
            "v1.Pod.Spec.CanonicalImageNames()",  # ImageLocality
            "v1.Pod.Labels",  # InterPodAffinity
            "v1.Pod.Spec.RequiredFeatures()",  # NodeDeclaredFeatures
        ]
    )
    assert fragments["v1.Pod.Spec.SchedulerName"] == PROFILE
    assert fragments["v1.Pod.Spec.CanonicalImageNames()"] == ["nginx:latest"]
    assert fragments["v1.Pod.Labels"] == {"app": "web"}
    assert fragments["v1.Pod.Spec.Affinity.NodeSelector"] == {"disk": "ssd"}
    assert fragments["v1.Pod.Spec.Affinity.NodeAffinity"] is None


def test_equal_pods_sign_alike_whatever_their_names_and_list_orders() -> None:
    sched, *_ = scheduler()

    def pod(name: str, namespace: str, tolerations: list[dict[str, str]], ports: list[int]) -> Pod:
        return make_pod(
            name,
            namespace=namespace,
            cpu="1",
            memory="1Gi",
            image="nginx:latest",
            spec={
                "tolerations": tolerations,
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                        "ports": [{"containerPort": p, "hostPort": p} for p in ports],
                    }
                ],
            },
        )

    a = pod("a", "ns1", [{"key": "x", "value": "1"}, {"key": "y", "value": "2"}], [80, 443])
    b = pod("b", "ns2", [{"key": "y", "value": "2"}, {"key": "x", "value": "1"}], [443, 80])
    assert sign(sched, a) is not None
    assert sign(sched, a) == sign(sched, b)


@pytest.mark.parametrize(
    "change",
    [
        {"cpu": "2"},
        {"labels": {"app": "other"}},
        {"image": "redis"},
        {"spec": {"nodeSelector": {"disk": "hdd"}}},
        {"spec": {"tolerations": [{"key": "x", "operator": "Exists"}]}},
        {"spec": {"schedulerName": "other"}},
        {
            "spec": {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 1,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": "k", "operator": "In", "values": ["v"]}
                                    ]
                                },
                            }
                        ]
                    }
                }
            }
        },
        {
            "spec": {
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "c1"}}],
            }
        },
    ],
)
def test_pods_that_differ_in_what_a_plugin_reads_sign_differently(change: dict[str, Any]) -> None:
    sched, *_ = scheduler()
    base: dict[str, Any] = {"cpu": "1", "labels": {"app": "web"}, "image": "nginx"}
    assert sign(sched, make_pod("a", **base)) != sign(sched, make_pod("b", **(base | change)))


def test_labels_leave_the_signature_with_ignore_preferred_terms_of_existing_pods() -> None:
    sched, *_ = scheduler(
        batchable_profile(InterPodAffinity={"ignorePreferredTermsOfExistingPods": True})
    )
    a = sign(sched, make_pod("a", cpu="1", labels={"app": "a"}))
    assert a is not None and "v1.Pod.Labels" not in json.loads(a)
    assert a == sign(sched, make_pod("b", cpu="1", labels={"app": "b"}))


AFFINITY_TERM = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}


@pytest.mark.parametrize(
    "spec",
    [
        {
            "affinity": {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [AFFINITY_TERM]}
            }
        },
        {
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [AFFINITY_TERM]
                }
            }
        },
        {"affinity": {"podAffinity": {}}},  # set, if empty, is enough upstream
        {
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "x"}},
                }
            ]
        },
        {"resourceClaims": [{"name": "gpu", "resourceClaimName": "claim"}]},
    ],
    ids=["pod-affinity", "pod-anti-affinity", "empty-pod-affinity", "spread", "dra-claim"],
)
def test_pods_that_are_never_batched(spec: dict[str, Any]) -> None:
    sched, *_ = scheduler()
    assert sign(sched, make_pod("plain", cpu="1")) is not None
    assert sign(sched, make_pod("a", cpu="1", spec=spec)) is None


class Unsigned(FilterPlugin):
    """A user's filter that does not sign pods."""

    name = "test-batching-Unsigned"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        return NodeVerdicts.passing(len(rows))


class SignedByTier(SignPlugin, FilterPlugin):
    """A user's filter that reads the pod's "tier" label, and signs with it."""

    name = "test-batching-SignedByTier"

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        return NodeVerdicts.passing(len(rows))

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        tier = pod.pod.metadata.labels.get("tier")
        if tier == "refuse":
            return (), Status.unschedulable("not signable")
        return [("example.com/tier", tier)], Status.success()


def user_profile(plugin: str) -> tuple[ProfileConfig, Registry]:
    registry = default_registry([Unsigned, SignedByTier])
    profile = batchable_profile(InterPodAffinity={"ignorePreferredTermsOfExistingPods": True})
    profile.plugins["multiPoint"].enabled.append(PluginRef(plugin))
    return profile, registry


def test_a_user_plugin_that_does_not_sign_turns_signatures_off_for_its_profile() -> None:
    profile, registry = user_profile(Unsigned.name)
    sched, *_ = scheduler(profile, registry=registry)
    signer = sched.frameworks[PROFILE].signer
    assert not signer.enabled and signer.unsupported == [Unsigned.name]
    assert sign(sched, make_pod("a", cpu="1")) is None


def test_a_user_plugin_that_signs_adds_its_fragment_and_may_refuse() -> None:
    profile, registry = user_profile(SignedByTier.name)
    sched, *_ = scheduler(profile, registry=registry)
    gold = sign(sched, make_pod("a", cpu="1", labels={"tier": "gold"}))
    assert gold is not None and json.loads(gold)["example.com/tier"] == "gold"
    assert gold == sign(sched, make_pod("b", cpu="1", labels={"tier": "gold"}))
    assert gold != sign(sched, make_pod("c", cpu="1", labels={"tier": "tin"}))
    assert sign(sched, make_pod("d", cpu="1", labels={"tier": "refuse"})) is None


# --- the feature gate ------------------------------------------------------------------


def test_the_gate_is_on_by_default_and_can_be_turned_off() -> None:
    assert DEFAULT_GATES.opportunistic_batching
    assert not parse_feature_gates("OpportunisticBatching=false").opportunistic_batching
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: Foo"):
        parse_feature_gates("Foo=true")
    with pytest.raises(FeatureGateError, match='parsing "maybe": invalid syntax'):
        parse_feature_gates("OpportunisticBatching=maybe")
    with pytest.raises(FeatureGateError, match="unrecognized feature gate: Foo"):
        parse_feature_gates({"Foo": True})


# --- the ranking's order ---------------------------------------------------------------


def test_sorted_nodes_pop_best_first_with_ties_in_random_order() -> None:
    seen = set()
    for seed in range(20):
        nodes = SortedNodes(
            ["a", "b", "c", "d"], np.array([5, 9, 9, 1]), np.random.default_rng(seed)
        )
        assert len(nodes) == 4
        order = [nodes.pop() for _ in range(4)]
        assert set(order[:2]) == {"b", "c"} and order[2:] == ["a", "d"]
        assert len(nodes) == 0
        seen.add(order[0])
    assert seen == {"b", "c"}


# --- batches in the scheduling cycle ---------------------------------------------------

# Each node holds one 1-CPU pod; the bigger the node, the better it scores.
SIZES = {"n18": "1800m", "n15": "1500m", "n12": "1200m", "n10": "1000m"}


def one_pod_nodes() -> list[Any]:
    return [make_node(name, cpu=cpu, memory="4Gi") for name, cpu in SIZES.items()]


def replica(i: int) -> Pod:
    return make_pod(f"r{i}", cpu="1", memory="1Gi", labels={"app": "web"})


def schedule_next(sched: Scheduler) -> str | None:
    """Pop one pod, run its cycle and its binding; where it went."""

    async def run() -> str | None:
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
        for _ in range(6):
            await asyncio.sleep(0)
        pod = sched.cluster.pods[qpi.pod_info.key]  # type: ignore[attr-defined]
        return pod.spec.node_name or None

    return asyncio.run(run())


def flushed(metrics: SchedulerMetrics, reason: str) -> float:
    value = metrics.value(
        "scheduler_batch_cache_flushed_total", {"profile": PROFILE, "reason": reason}
    )
    return value or 0.0


def attempts(metrics: SchedulerMetrics, result: str) -> float:
    value = metrics.value("scheduler_batch_attempts_total", {"profile": PROFILE, "result": result})
    return value or 0.0


def test_a_run_of_equal_pods_takes_the_next_nodes_of_the_first_ranking() -> None:
    sched, cluster, _clock, metrics = scheduler(nodes=one_pod_nodes())
    for i in range(4):
        cluster.add_pod(replica(i))
    placed = [schedule_next(sched) for _ in range(4)]
    assert placed == ["n18", "n15", "n12", "n10"]
    batch = sched.frameworks[PROFILE].batch
    assert batch.batched_pods == 3
    assert attempts(metrics, "hint_used") == 3
    assert attempts(metrics, "no_hint") == 1
    hint_samples = metrics.value(
        "scheduler_get_node_hint_duration_seconds_count", {"hinted": "hint", "profile": PROFILE}
    )
    assert hint_samples == 3


def test_a_batched_pod_goes_where_the_stored_ranking_says_not_where_a_new_pass_would() -> None:
    """A node that changes after the ranking was made keeps its old rank for the
    batch (batch.go does not watch nodes): after r0, n10 grows to be the best node,
    yet r1 takes the next node of r0's ranking. With the gate off, a full pass
    sends r1 to n10."""
    placed: dict[bool, list[str | None]] = {}
    for gate in (True, False):
        sched, cluster, _clock, _metrics = scheduler(
            nodes=one_pod_nodes(), gates={"OpportunisticBatching": gate}
        )
        for i in range(2):
            cluster.add_pod(replica(i))
        first = schedule_next(sched)
        cluster.add_node(make_node("n10", cpu="1900m", memory="4Gi"))
        placed[gate] = [first, schedule_next(sched)]
        assert sched.frameworks[PROFILE].batch.batched_pods == (1 if gate else 0)
    assert placed[True] == ["n18", "n15"]
    assert placed[False] == ["n18", "n10"]


def test_the_batch_expires_after_max_batch_age_on_the_schedulers_clock() -> None:
    sched, cluster, clock, metrics = scheduler(nodes=one_pod_nodes())
    for i in range(3):
        cluster.add_pod(replica(i))
    assert schedule_next(sched) == "n18"
    clock.advance_to(MAX_BATCH_AGE)  # just at the age: still good
    assert schedule_next(sched) == "n15"
    assert sched.frameworks[PROFILE].batch.batched_pods == 1
    clock.advance_to(MAX_BATCH_AGE + 0.001)  # r1 was a hint: the list is r0's
    assert schedule_next(sched) == "n12"  # a full pass: n12 is best anyway
    assert flushed(metrics, "expired") == 1
    assert sched.frameworks[PROFILE].batch.batched_pods == 1


def test_a_node_that_fits_again_ends_the_batch() -> None:
    """After r0 goes to n18, n18 grows so r1 fits there too: the ranking cannot
    say where n18 stands now ("node_not_full"), and a full pass picks n18."""
    sched, cluster, _clock, metrics = scheduler(nodes=one_pod_nodes())
    for i in range(2):
        cluster.add_pod(replica(i))
    assert schedule_next(sched) == "n18"
    cluster.add_node(make_node("n18", cpu="8", memory="16Gi"))
    assert schedule_next(sched) == "n18"
    assert flushed(metrics, "node_not_full") == 1
    assert sched.frameworks[PROFILE].batch.batched_pods == 0


def test_the_last_chosen_node_going_away_ends_the_batch() -> None:
    sched, cluster, _clock, metrics = scheduler(nodes=one_pod_nodes())
    for i in range(2):
        cluster.add_pod(replica(i))
    assert schedule_next(sched) == "n18"
    cluster.delete_node("n18")
    assert schedule_next(sched) == "n15"
    assert flushed(metrics, "node_missing") == 1
    assert sched.frameworks[PROFILE].batch.batched_pods == 0


def test_a_hinted_node_that_no_longer_fits_is_passed_over_by_a_full_pass() -> None:
    sched, cluster, _clock, metrics = scheduler(nodes=one_pod_nodes())
    for i in range(2):
        cluster.add_pod(replica(i))
    assert schedule_next(sched) == "n18"
    cluster.add_node(make_node("n15", cpu="1500m", memory="4Gi", unschedulable=True))
    assert schedule_next(sched) == "n12"
    assert attempts(metrics, "hint_not_used") == 1
    assert sched.frameworks[PROFILE].batch.batched_pods == 0


def test_a_different_pod_in_between_ends_the_batch() -> None:
    sched, cluster, _clock, metrics = scheduler(nodes=one_pod_nodes())
    cluster.add_pod(replica(0))
    cluster.add_pod(make_pod("other", cpu="100m", labels={"app": "other"}))
    cluster.add_pod(replica(1))
    assert schedule_next(sched) == "n18"
    schedule_next(sched)  # "other": another signature
    assert flushed(metrics, "pod_incompatible") == 1
    schedule_next(sched)
    assert sched.frameworks[PROFILE].batch.batched_pods == 0


def test_an_unschedulable_pod_in_between_ends_the_batch() -> None:
    """A cycle that fails in PreFilter neither asks for a hint nor stores one, so
    the next pod's cycle is not the one after the stored ranking's ("pod_skipped")."""
    sched, cluster, _clock, metrics = scheduler(nodes=one_pod_nodes())
    cluster.add_pod(replica(0))
    missing_claim = {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "gone"}}]}
    cluster.add_pod(make_pod("claims", cpu="1", labels={"app": "web"}, spec=missing_claim))
    cluster.add_pod(replica(1))
    assert schedule_next(sched) == "n18"
    assert schedule_next(sched) is None
    assert schedule_next(sched) == "n15"
    assert flushed(metrics, "pod_skipped") == 1
    assert sched.frameworks[PROFILE].batch.batched_pods == 0


def test_with_the_gate_off_nothing_is_signed_or_stored() -> None:
    sched, cluster, _clock, metrics = scheduler(
        nodes=one_pod_nodes(), gates={"OpportunisticBatching": False}
    )
    for i in range(3):
        cluster.add_pod(replica(i))
    assert [schedule_next(sched) for _ in range(3)] == ["n18", "n15", "n12"]
    batch = sched.frameworks[PROFILE].batch
    assert batch.state is None and batch.batched_pods == 0
    assert attempts(metrics, "no_hint") == 0


# --- --feature-gates on the command line -----------------------------------------------


def test_simulate_takes_feature_gates_and_refuses_unknown_ones(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from kubesched.cli.main import main

    manifest = tmp_path / "c.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n"
        "spec: {containers: [{name: c, image: x}]}\n"
    )
    ok = CliRunner().invoke(
        main, ["simulate", "-f", str(manifest), "--feature-gates", "OpportunisticBatching=false"]
    )
    assert ok.exit_code == 0, ok.output
    assert "n1" in ok.output
    bad = CliRunner().invoke(
        main, ["simulate", "-f", str(manifest), "--feature-gates", "Nope=true"]
    )
    assert bad.exit_code == 2
    assert "--feature-gates" in bad.output and "unrecognized feature gate: Nope" in bad.output
    bad = CliRunner().invoke(main, ["run", "--feature-gates", "OpportunisticBatching"])
    assert bad.exit_code == 2
    assert "missing bool value for OpportunisticBatching" in bad.output


def test_a_pod_is_signed_once_per_version_not_per_attempt() -> None:
    """Upstream's queue signs a pod as it comes in or is updated, not per attempt."""
    sched, cluster, _clock, metrics = scheduler(nodes=one_pod_nodes())
    cluster.add_pod(make_pod("big", cpu="3", labels={"app": "web"}))
    assert schedule_next(sched) is None  # fits nowhere
    cluster.add_node(make_node("n30", cpu="3", memory="4Gi"))  # wakes it up
    sched.queue.flush_backoff_completed()
    assert schedule_next(sched) == "n30"
    signs = metrics.value(
        "scheduler_framework_extension_point_duration_seconds_count",
        {"extension_point": "Sign", "status": "Success", "profile": PROFILE},
    )
    assert signs == 1


def test_a_pod_asking_for_a_dra_backed_extended_resource_is_not_signed() -> None:
    """NodeResourcesFit and BalancedAllocation refuse a pod requesting a resource a
    DeviceClass backs (shouldDelegateResourceToDRA, DRAExtendedResource on)."""
    import msgspec

    from kubesched.api.resource import DeviceClass
    from kubesched.framework.handle import Handle
    from kubesched.plugins.noderesources.fit import sign_requests
    from kubesched.testing import make_table

    gpu = "example.com/gpu"
    pod = PodInfo(make_pod("a", cpu="1", requests={gpu: 1}))
    table = make_table([make_node("n")])
    fragments, status = sign_requests(Handle(table), pod)
    assert status.is_success() and fragments == [
        ("v1.Pod.Spec.ContainerRequestsAndOverheads()", pod.requests)
    ]
    handle = Handle(table)
    handle.dra.upsert_class(
        msgspec.convert(
            {"metadata": {"name": "gpu"}, "spec": {"extendedResourceName": gpu}}, DeviceClass
        )
    )
    fragments, status = sign_requests(handle, pod)
    assert not status.is_success() and not fragments
    assert (
        status.message() == "signature disabled when dra extended resources are used in the cluster"
    )
    plain = PodInfo(make_pod("b", cpu="1"))
    assert sign_requests(handle, plain)[1].is_success()
