"""SchedulingGates: the PreEnqueue verdict, its message, and the event it waits for."""

from __future__ import annotations

from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.schedulinggates import SchedulingGates
from kubesched.testing import make_node, make_pod


def gated(name: str, *gates: str, uid: str = "") -> PodInfo:
    pod = make_pod(name, spec={"schedulingGates": [{"name": g} for g in gates]})
    pod.metadata.uid = uid
    return PodInfo(pod)


def test_pod_without_gates_is_admitted() -> None:
    status = SchedulingGates().pre_enqueue(PodInfo(make_pod("p")))
    assert status.code == Code.SUCCESS


def test_gated_pod_waits_with_the_upstream_message() -> None:
    status = SchedulingGates().pre_enqueue(gated("p", "gate1", "gate2"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "waiting for scheduling gates: [gate1 gate2]"
    assert status.reasons == ["waiting for scheduling gates: [gate1 gate2]"]


def test_single_gate() -> None:
    status = SchedulingGates().pre_enqueue(gated("p", "example.com/quota"))
    assert status.message() == "waiting for scheduling gates: [example.com/quota]"


def test_events() -> None:
    events = SchedulingGates().events_to_register()
    assert len(events) == 1
    assert events[0].event.resource == Resource.POD
    assert events[0].event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert events[0].hint is not None


def test_hint_queues_only_the_updated_pod() -> None:
    plugin = SchedulingGates()
    target = gated("p", "g", uid="u1")
    same = make_pod("p")
    same.metadata.uid = "u1"
    other = make_pod("q")
    other.metadata.uid = "u2"
    assert plugin.is_schedulable_after_gates_eliminated(target, target.pod, same)
    assert not plugin.is_schedulable_after_gates_eliminated(target, other, other)
    # Pods without UIDs (simulation) compare by namespace/name.
    assert plugin.is_schedulable_after_gates_eliminated(gated("p", "g"), None, make_pod("p"))
    assert not plugin.is_schedulable_after_gates_eliminated(gated("p", "g"), None, make_pod("x"))
    # An object of the wrong kind: retry, as upstream does on a conversion error.
    assert plugin.is_schedulable_after_gates_eliminated(target, None, make_node("n"))
