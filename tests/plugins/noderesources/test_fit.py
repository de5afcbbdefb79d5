"""NodeResourcesFit's Filter against the v1.36 rules (cpu, memory, pod count,
ephemeral-storage, extended, scalar and ignored resources, init containers, sidecars
and overhead; which shortfalls preemption could help) and its queueing hints.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.objects import Node, PodStatus
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.noderesources import NodeResourcesFit
from kubesched.testing import make_node, make_pod
from tests.plugins.noderesources.test_noderesources import (
    make_table,
    placed,
    rows_of,
    run_filter,
)

# --- Filter ------------------------------------------------------------------------------


def test_cpu_and_memory_both_short_give_two_reasons() -> None:
    # n1: 2 cpu / 4Gi with 1500m / 3Gi taken; the pod asks 1 cpu / 2Gi.
    # cpu: 1000 > 2000 - 1500 = 500; memory: 2Gi > 4Gi - 3Gi = 1Gi. Neither
    # request exceeds the node's allocatable, so preemption could help.
    table = make_table(
        [make_node("n1", cpu="2", memory="4Gi"), make_node("n2", cpu="2", memory="4Gi")],
        [placed("old", "n1", cpu="1500m", memory="3Gi")],
    )
    verdicts, per_node = run_filter(
        NodeResourcesFit(), make_pod("p", cpu="1", memory="2Gi"), table, "n1", "n2"
    )
    assert per_node["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu", "Insufficient memory"])
    assert per_node["n2"] == (Code.SUCCESS, [])
    assert verdicts.passed().tolist() == [False, True]


def test_request_over_node_allocatable_is_unresolvable() -> None:
    # 8 cpu > 4 allocatable: even an empty n1 cannot take it. Memory 20Gi is short
    # (16Gi - 1Gi used) yet within allocatable: the node code is still unresolvable.
    table = make_table([make_node("n1", cpu="4", memory="16Gi")], [placed("o", "n1", memory="1Gi")])
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", cpu="8"), table, "n1")
    assert per_node["n1"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["Insufficient cpu"])

    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", cpu="8", memory="16Gi"), table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient cpu", "Insufficient memory"],
    )


def test_too_many_pods_comes_first_and_is_not_unresolvable() -> None:
    # n1 allows 2 pods and runs 2: 2 + 1 > 2. The pod also wants more cpu than is left.
    table = make_table(
        [make_node("n1", cpu="2", pods=2)],
        [placed("a", "n1", cpu="1"), placed("b", "n1", cpu="500m")],
    )
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", cpu="1"), table, "n1")
    assert per_node["n1"] == (Code.UNSCHEDULABLE, ["Too many pods", "Insufficient cpu"])


def test_pod_without_requests_fits_a_full_node_but_not_a_node_out_of_pods() -> None:
    # full: all 1000m cpu and 1Gi memory taken; an empty pod requests nothing, so
    # only the pod count matters. crowded: 1 pod allowed, 1 running.
    table = make_table(
        [make_node("full", cpu="1", memory="1Gi"), make_node("crowded", pods=1)],
        [placed("a", "full", cpu="1", memory="1Gi"), placed("b", "crowded")],
    )
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p"), table, "full", "crowded")
    assert per_node["full"] == (Code.SUCCESS, [])
    assert per_node["crowded"] == (Code.UNSCHEDULABLE, ["Too many pods"])


def test_ephemeral_storage() -> None:
    table = make_table([make_node("n1", extra={"ephemeral-storage": "10Gi"}), make_node("n2")])
    pod = make_pod("p", requests={"ephemeral-storage": "5Gi"})
    _, per_node = run_filter(NodeResourcesFit(), pod, table, "n1", "n2")
    assert per_node["n1"] == (Code.SUCCESS, [])
    # n2 reports no ephemeral-storage: allocatable 0 < 5Gi.
    assert per_node["n2"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient ephemeral-storage"],
    )


def test_extended_resources() -> None:
    # gpu-free: 2 gpus, none used; gpu-busy: 2 gpus, 2 used; plain: no gpu at all.
    table = make_table(
        [
            make_node("gpu-free", extra={"nvidia.com/gpu": 2}),
            make_node("gpu-busy", extra={"nvidia.com/gpu": 2}),
            make_node("plain"),
        ],
        [placed("user", "gpu-busy", requests={"nvidia.com/gpu": 2})],
    )
    pod = make_pod("p", cpu="1", requests={"nvidia.com/gpu": 1})
    _, per_node = run_filter(NodeResourcesFit(), pod, table, "gpu-free", "gpu-busy", "plain")
    assert per_node["gpu-free"] == (Code.SUCCESS, [])
    # 1 > 2 - 2 but 1 <= 2: preemption could free a gpu.
    assert per_node["gpu-busy"] == (Code.UNSCHEDULABLE, ["Insufficient nvidia.com/gpu"])
    # 1 > 0 allocatable.
    assert per_node["plain"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient nvidia.com/gpu"],
    )


def test_resource_no_node_has_and_scalar_reason_order() -> None:
    # example.com/foo exists nowhere (no table column): short everywhere, for good.
    # Scalar reasons follow cpu/memory/ephemeral-storage, by name.
    table = make_table([make_node("n1", cpu="1")])
    pod = make_pod(
        "p", cpu="2", requests={"example.com/foo": 1, "acme.io/bar": 1, "hugepages-2Mi": "4Mi"}
    )
    _, per_node = run_filter(NodeResourcesFit(), pod, table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        [
            "Insufficient cpu",
            "Insufficient acme.io/bar",
            "Insufficient example.com/foo",
            "Insufficient hugepages-2Mi",
        ],
    )


def test_resources_the_scheduler_does_not_track_are_not_checked() -> None:
    # "foo" has no domain: it is neither base nor scalar, so Filter never looks at it.
    table = make_table([make_node("n1")])
    _, per_node = run_filter(NodeResourcesFit(), make_pod("p", requests={"foo": 3}), table, "n1")
    assert per_node["n1"] == (Code.SUCCESS, [])


def test_ignored_resources_and_groups() -> None:
    table = make_table([make_node("n1", cpu="4")])
    pod = make_pod(
        "p", requests={"nvidia.com/gpu": 1, "example.com/foo": 1, "hugepages-2Mi": "2Mi"}
    )
    plugin = NodeResourcesFit(
        {"ignoredResources": ["nvidia.com/gpu", "hugepages-2Mi"], "ignoredResourceGroups": []}
    )
    _, per_node = run_filter(plugin, pod, table, "n1")
    # hugepages are not extended resources, so ignoring them has no effect.
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient example.com/foo", "Insufficient hugepages-2Mi"],
    )

    plugin = NodeResourcesFit({"ignoredResourceGroups": ["example.com", "nvidia.com"]})
    _, per_node = run_filter(plugin, pod, table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient hugepages-2Mi"],
    )


def test_kubernetes_io_resources_cannot_be_ignored() -> None:
    # From upstream fit_test.go: kubernetes.io/ names are scalar but not extended, so
    # neither ignoredResources nor ignoredResourceGroups skip them.
    table = make_table([make_node("n1", cpu="10")])
    pod = make_pod("p", cpu="1", requests={"example.com/bbb": 1, "kubernetes.io/something": 1})
    plugin = NodeResourcesFit(
        {
            "ignoredResources": ["kubernetes.io/something"],
            "ignoredResourceGroups": ["example.com", "kubernetes.io"],
        }
    )
    _, per_node = run_filter(plugin, pod, table, "n1")
    assert per_node["n1"] == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ["Insufficient kubernetes.io/something"],
    )


def test_init_containers_sidecars_and_overhead() -> None:
    # n1: 4 cpu with 2 taken, so 2000m left.
    table = make_table([make_node("n1", cpu="4")], [placed("o", "n1", cpu="2")])
    fit = NodeResourcesFit()

    def init(cpu: str, sidecar: bool = False) -> dict[str, Any]:
        c: dict[str, Any] = {"name": f"i{cpu}", "resources": {"requests": {"cpu": cpu}}}
        if sidecar:
            c["restartPolicy"] = "Always"
        return c

    # A regular init container runs alone: max(1000 app, 3000 init) = 3000 > 2000.
    pod = make_pod("a", cpu="1", spec={"initContainers": [init("3")]})
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu"])
    # A sidecar runs beside the app: 1000 + 1000 = 2000 <= 2000.
    pod = make_pod("b", cpu="1", spec={"initContainers": [init("1", sidecar=True)]})
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.SUCCESS, [])
    # An init container after a sidecar runs beside it: max(1000 + 1000, 1000 + 1500) = 2500.
    pod = make_pod("c", cpu="1", spec={"initContainers": [init("1", sidecar=True), init("1500m")]})
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu"])
    # Overhead is added: 1000 + 1000 + 500 = 2500 > 2000.
    pod = make_pod(
        "d",
        cpu="1",
        spec={"initContainers": [init("1", sidecar=True)], "overhead": {"cpu": "500m"}},
    )
    assert run_filter(fit, pod, table, "n1")[1]["n1"] == (Code.UNSCHEDULABLE, ["Insufficient cpu"])


def test_filter_without_pre_filter_is_an_error() -> None:
    table = make_table([make_node("n1")])
    with pytest.raises(RuntimeError, match="PreFilterNodeResourcesFit"):
        NodeResourcesFit().filter(CycleState(), PodInfo(make_pod("p")), table, rows_of(table, "n1"))


# --- queueing hints ----------------------------------------------------------------------


def test_events_to_register() -> None:
    events = NodeResourcesFit().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        # DRAExtendedResource (on in v1.36.3): a class may now back a requested resource.
        (Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
    ]
    assert all(e.hint is not None for e in events)


def test_pod_event_hints() -> None:
    fit = NodeResourcesFit()
    target = PodInfo(make_pod("t", cpu="1"))
    assert fit.is_schedulable_after_pod_event(target, placed("x", "n1"), None)
    assert not fit.is_schedulable_after_pod_event(target, make_pod("x"), None)
    nominated = msgspec.structs.replace(make_pod("x"), status=PodStatus(nominated_node_name="n1"))
    assert fit.is_schedulable_after_pod_event(target, nominated, None)
    # A placed pod shrinking its cpu helps a pod that wants cpu...
    before, after = placed("x", "n1", cpu="2"), placed("x", "n1", cpu="1")
    assert fit.is_schedulable_after_pod_event(target, before, after)
    # ...but shrinking memory does not.
    before, after = placed("x", "n1", memory="2Gi"), placed("x", "n1", memory="1Gi")
    assert not fit.is_schedulable_after_pod_event(target, before, after)
    # An unplaced pod shrinking frees nothing; the target itself shrinking always counts.
    assert not fit.is_schedulable_after_pod_event(
        target, make_pod("x", cpu="2"), make_pod("x", cpu="1")
    )
    assert fit.is_schedulable_after_pod_event(
        target, make_pod("t", cpu="2"), make_pod("t", cpu="1")
    )


def test_node_event_hints() -> None:
    fit = NodeResourcesFit()
    pod = PodInfo(make_pod("t", cpu="2", requests={"nvidia.com/gpu": 1}))
    small = make_node("n", cpu="1", extra={"nvidia.com/gpu": 1})
    big = make_node("n", cpu="4", extra={"nvidia.com/gpu": 1})
    bigger = make_node("n", cpu="8", extra={"nvidia.com/gpu": 1})
    no_gpu = make_node("n", cpu="8")
    assert fit.is_schedulable_after_node_change(pod, None, big)
    assert not fit.is_schedulable_after_node_change(pod, None, small)
    assert not fit.is_schedulable_after_node_change(pod, None, no_gpu)
    assert fit.is_schedulable_after_node_change(pod, small, big)
    assert fit.is_schedulable_after_node_change(pod, big, bigger)
    # Fits, but nothing the pod wants grew (only memory did).
    more_memory = make_node("n", cpu="4", memory="32Gi", extra={"nvidia.com/gpu": 1})
    assert not fit.is_schedulable_after_node_change(pod, big, more_memory)
    # More pods allowed counts, even for a pod that requests nothing.
    empty = PodInfo(make_pod("e"))
    assert fit.is_schedulable_after_node_change(
        empty, make_node("n", pods=1), make_node("n", pods=2)
    )
    assert not fit.is_schedulable_after_node_change(empty, None, make_node("n", pods=0))
    assert isinstance(big, Node)
