"""Requeueing as kube-scheduler does it: which events wake which unschedulable pods,
with what objects, and what happens to events that arrive while a pod is in flight.

The binding of a pod reaches the scheduler as an update (unassigned -> assigned);
upstream treats it as an assigned-pod add, so the queueing hints see (None, pod).
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from kubesched.api.objects import Pod, PodCondition, PodResourceClaimStatus
from kubesched.framework.clock import SimClock
from kubesched.framework.interfaces import ClusterEventWithHint
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.status import Status
from kubesched.framework.types import (
    EVENT_ASSIGNED_POD_ADD,
    ActionType,
    ClusterEvent,
    PodInfo,
    Resource,
)
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.queue.pod_events import pod_scheduling_properties_change
from kubesched.queue.scheduling_queue import QueueProfile, SchedulingQueue
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def node(name: str, cpu: str = "4", zone: str = "z1") -> Any:
    return make_node(name, cpu=cpu, labels={ZONE: zone, HOST: name})


def with_uid(pod: Pod) -> Pod:
    pod.metadata.uid = f"uid-{pod.metadata.name}"
    return pod


def start(nodes: list[Any], pods: list[Pod]) -> tuple[Scheduler, InMemoryCluster, SimClock]:
    clock = SimClock()
    cluster = InMemoryCluster(nodes={n.metadata.name: n for n in nodes})
    for p in pods:
        cluster.pods[p.key] = p
    sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=1)
    cluster.watch(sched)
    return sched, cluster, clock


# --- a binding wakes pods through the AssignedPodAdd hints -------------------------------


def test_binding_a_matching_pod_wakes_a_pod_waiting_for_its_pod_affinity() -> None:
    """seed1-013: p03 needs an app=cache pod in its zone; kube-scheduler binds it as
    soon as p07 (app=cache) is bound there."""
    waiter = with_uid(
        make_pod(
            "waiter",
            cpu="500m",
            spec={
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "labelSelector": {"matchLabels": {"app": "cache"}},
                                "topologyKey": ZONE,
                            }
                        ]
                    }
                }
            },
        )
    )

    async def scenario() -> None:
        sched, cluster, clock = start([node("a"), node("b", zone="z2")], [waiter])
        await run_until_quiet(sched, clock)
        assert "default/waiter" in sched.queue.unschedulable
        assert sched.queue.unschedulable["default/waiter"].unschedulable_plugins == {
            "InterPodAffinity"
        }
        cache = with_uid(
            make_pod(
                "cache", cpu="100m", labels={"app": "cache"}, spec={"nodeSelector": {HOST: "b"}}
            )
        )
        cluster.add_pod(cache)
        qpi = sched.queue.pop_nowait()
        assert qpi is not None and qpi.pod_info.key == "default/cache"
        sched.schedule_one(qpi)
        await asyncio.gather(*sched.binding_tasks)
        assert cluster.pods["default/cache"].spec.node_name == "b"
        # The binding moved the waiter out of the pool...
        assert "default/waiter" not in sched.queue.unschedulable
        await run_until_quiet(sched, clock)
        # ...and it went to the zone of the cache pod.
        assert cluster.pods["default/waiter"].spec.node_name == "b"

    asyncio.run(scenario())


def test_binding_a_pod_in_another_domain_wakes_a_pod_rejected_by_topology_spread() -> None:
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": HOST,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    }
    placed = with_uid(make_pod("placed", cpu="100m", labels={"app": "web"}, node_name="a"))
    # "b" is too small for the waiter (NodeResourcesFit); "a" would make the skew 2.
    waiter = with_uid(make_pod("waiter", cpu="2", labels={"app": "web"}, spec=spread))

    async def scenario() -> None:
        sched, cluster, clock = start([node("a"), node("b", cpu="1")], [placed, waiter])
        await run_until_quiet(sched, clock)
        assert sched.queue.unschedulable["default/waiter"].unschedulable_plugins == {
            "NodeResourcesFit",
            "PodTopologySpread",
        }
        other = with_uid(
            make_pod("other", cpu="100m", labels={"app": "web"}, spec={"nodeSelector": {HOST: "b"}})
        )
        cluster.add_pod(other)
        await run_until_quiet(sched, clock)
        assert cluster.pods["default/other"].spec.node_name == "b"
        assert cluster.pods["default/waiter"].spec.node_name == "a"

    asyncio.run(scenario())


def test_bind_update_reaches_the_queue_as_an_add_without_the_old_pod() -> None:
    seen: list[tuple[ClusterEvent, object, object]] = []
    sched, _cluster, _clock = start([node("a")], [])
    real = sched.queue.on_event

    def spy(
        event: ClusterEvent, old: object = None, new: object = None, precheck: Any = None
    ) -> int:
        seen.append((event, old, new))
        return real(event, old, new, precheck)

    sched.queue.on_event = spy  # type: ignore[method-assign]
    pending = with_uid(make_pod("p", labels={"app": "x"}))
    bound = msgspec.structs.replace(
        pending, spec=msgspec.structs.replace(pending.spec, node_name="a")
    )
    sched.on_pod_update(pending, bound)
    assert seen == [(EVENT_ASSIGNED_POD_ADD, None, bound)]
    # An assigned pod's update is told apart by what changed (PodSchedulingPropertiesChange).
    seen.clear()
    relabeled = msgspec.structs.replace(
        bound, metadata=msgspec.structs.replace(bound.metadata, labels={"app": "y"})
    )
    sched.on_pod_update(bound, relabeled)
    assert [(e.resource, e.action) for e, _, _ in seen] == [
        (Resource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL)
    ]
    assert seen[0][1] is bound and seen[0][2] is relabeled


def test_a_status_update_naming_a_generated_claim_reaches_the_queue() -> None:
    """isPodUpdated keeps status.resourceClaimStatuses: the resourceclaim controller
    naming a template's claim there is what lets in a pod that DynamicResources'
    PreEnqueue held back (the claim itself was created just before)."""
    sched, _cluster, _clock = start([node("a")], [])
    updated: list[Pod] = []
    sched.queue.update = lambda pod_info, old=None: updated.append(pod_info.pod)  # type: ignore[method-assign]
    pending = with_uid(make_pod("p"))
    named = msgspec.structs.replace(
        pending,
        status=msgspec.structs.replace(
            pending.status,
            resource_claim_statuses=[PodResourceClaimStatus("gpu", "p-gpu-x2b4c")],
        ),
    )
    sched.on_pod_update(pending, named)
    assert updated == [named]
    # Other status writes (the scheduler's own condition) still change nothing.
    updated.clear()
    condition = msgspec.structs.replace(
        named,
        status=msgspec.structs.replace(
            named.status, conditions=[PodCondition(type="PodScheduled", status="False")]
        ),
    )
    sched.on_pod_update(named, condition)
    assert updated == []


def test_pod_scheduling_properties_change() -> None:
    old = make_pod("p", cpu="2", labels={"a": "1"})
    assert [e.action for e in pod_scheduling_properties_change(old, old)] == [ActionType.UPDATE]
    new = make_pod("p", cpu="1", labels={"a": "2"}, spec={"tolerations": [{"operator": "Exists"}]})
    assert [e.action for e in pod_scheduling_properties_change(new, old)] == [
        ActionType.UPDATE_POD_LABEL,
        ActionType.UPDATE_POD_SCALE_DOWN,
        ActionType.UPDATE_POD_TOLERATION,
    ]
    assert {e.resource for e in pod_scheduling_properties_change(new, old)} == {
        Resource.UNSCHEDULED_POD
    }


def test_a_plain_update_matches_only_registrations_for_every_update() -> None:
    label = ClusterEvent(Resource.POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL)
    plain = ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE)
    assert not plain.matches(label)
    assert plain.matches(ClusterEvent(Resource.POD, ActionType.ALL))
    assert ClusterEvent(Resource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL).matches(label)


def test_a_changed_nomination_requeues_lower_or_equal_priority_pods() -> None:
    sched, _cluster, _clock = start([node("n", cpu="1")], [])
    full = with_uid(make_pod("full", cpu="1", priority=1000, node_name="n"))
    sched.on_pod_add(full)
    for name, priority in (("low", 10), ("high", 500)):
        sched.on_pod_add(with_uid(make_pod(name, cpu="1", priority=priority)))
    for _ in range(2):
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.schedule_one(qpi)
    assert set(sched.queue.unschedulable) == {"default/low", "default/high"}
    before = with_uid(make_pod("mid", cpu="1", priority=100))
    before = msgspec.structs.replace(
        before, status=msgspec.structs.replace(before.status, nominated_node_name="n")
    )
    after = msgspec.structs.replace(
        before, status=msgspec.structs.replace(before.status, nominated_node_name="")
    )
    sched.on_pod_update(before, after)
    assert set(sched.queue.unschedulable) == {"default/high"}


# --- events that come while a pod is in flight --------------------------------------------


def queue(events: dict[str, list[ClusterEventWithHint]]) -> SchedulingQueue:
    profile = QueueProfile(PrioritySort().less, lambda _p: Status(), events)
    return SchedulingQueue({"default-scheduler": profile}, SimClock())


def test_in_flight_events_are_judged_by_the_rejecting_plugins_hints() -> None:
    """determineSchedulingHintForInFlightPod: an event while the pod was being tried
    sends it to backoffQ only if a hint of a plugin that rejected it says so."""
    events = {
        "X": [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD), lambda _p, _o, new: new == "good"
            )
        ],
        "Y": [ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD))],
    }
    node_add = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
    pv_add = ClusterEvent(Resource.PERSISTENT_VOLUME, ActionType.ADD, "PersistentVolumeAdd")

    q = queue(events)
    q.add(PodInfo(make_pod("p")))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.on_event(node_add, None, "bad")  # X's hint declines it
    q.on_event(pv_add)  # only Y cares, and Y did not reject p
    qpi.unschedulable_plugins = {"X"}
    q.requeue_failed(qpi)
    assert "default/p" in q.unschedulable

    q = queue(events)
    q.add(PodInfo(make_pod("p")))
    qpi = q.pop_nowait()
    assert qpi is not None
    q.on_event(node_add, None, "good")
    qpi.unschedulable_plugins = {"X"}
    q.requeue_failed(qpi)
    assert "default/p" in q.backoff
    assert not q.in_flight_events  # nothing in flight: the events are dropped


def test_events_before_a_pods_pop_do_not_count_for_it() -> None:
    events = {"X": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    node_add = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
    q = queue(events)
    q.add(PodInfo(make_pod("first")))
    q.add(PodInfo(make_pod("second")))
    first = q.pop_nowait()
    assert first is not None
    q.on_event(node_add)  # while "first" is in flight
    second = q.pop_nowait()
    assert second is not None
    second.unschedulable_plugins = {"X"}
    q.requeue_failed(second)
    assert "default/second" in q.unschedulable  # the event came before its pop
    first.unschedulable_plugins = {"X"}
    q.requeue_failed(first)
    assert "default/first" in q.backoff
    assert not q.in_flight_events


def test_a_pending_plugins_hint_skips_the_backoff() -> None:
    events = {"P": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    node_add = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
    q = queue(events)
    q.add(PodInfo(make_pod("p")))
    qpi = q.pop_nowait()
    assert qpi is not None
    qpi.pending_plugins = {"P"}
    q.requeue_failed(qpi)
    assert "default/p" in q.unschedulable
    q.on_event(node_add)
    assert "default/p" in q.active  # queueImmediately, although its backoff is not over


def test_pre_enqueue_runs_when_an_event_requeues_a_pod() -> None:
    """moveToActiveQ / moveToBackoffQ run the PreEnqueue plugins: a pod an event would
    requeue stays parked, gated, while a PreEnqueue plugin (DefaultPreemption while
    the pod's victims are being deleted) holds it; the gating plugin joins its
    rejectors, and only events the gating plugin registered for reach it."""
    holding = {"on": True}

    def pre_enqueue(_pod: PodInfo) -> Status:
        return Status.unresolvable("wait").with_plugin("G") if holding["on"] else Status()

    pod_delete = ClusterEvent(Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
    node_add = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
    events = {
        "Fit": [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ],
        "G": [
            ClusterEventWithHint(ClusterEvent(Resource.POD, ActionType.DELETE), lambda *_: False)
        ],
    }
    q = SchedulingQueue(
        {"default-scheduler": QueueProfile(PrioritySort().less, pre_enqueue, events)}, SimClock()
    )
    holding["on"] = False
    q.add(PodInfo(make_pod("p")))
    qpi = q.pop_nowait()
    assert qpi is not None
    qpi.unschedulable_plugins = {"Fit"}
    q.requeue_failed(qpi)
    assert "default/p" in q.unschedulable and not qpi.gated

    holding["on"] = True
    assert q.on_event(pod_delete) == 1  # Fit's hint says Queue ...
    assert "default/p" in q.unschedulable and qpi.gated  # ... but G holds it back
    assert qpi.unschedulable_plugins == {"Fit", "G"}
    q.on_event(node_add)  # not an event G registered for: not even considered
    assert "default/p" in q.unschedulable and qpi.gated

    holding["on"] = False
    q.on_event(pod_delete)  # G's own hint declines; Fit's hint lets it through
    assert "default/p" not in q.unschedulable
    assert "default/p" in q.active or "default/p" in q.backoff
    assert not qpi.gated
