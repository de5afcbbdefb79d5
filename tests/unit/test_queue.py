"""The scheduling queue: order, backoff, the unschedulable pool and event-driven moves."""

from __future__ import annotations

from kubesched.framework.clock import SimClock
from kubesched.framework.interfaces import ClusterEventWithHint
from kubesched.framework.status import Status
from kubesched.framework.types import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_NODE_ADD,
    ActionType,
    ClusterEvent,
    PodInfo,
    QueuedPodInfo,
    Resource,
)
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.queue.scheduling_queue import QueueProfile, SchedulingQueue
from kubesched.testing import make_pod

SORT = PrioritySort()


def queue(
    events: dict[str, list[ClusterEventWithHint]] | None = None, gate: bool = False
) -> tuple[SchedulingQueue, SimClock]:
    clock = SimClock()

    def pre_enqueue(pod: PodInfo) -> Status:
        if gate and pod.pod.spec.scheduling_gates:
            return Status.unresolvable("gated", plugin="SchedulingGates")
        return Status()

    profile = QueueProfile(SORT.less, pre_enqueue, events or {}, SORT.sort_rank())
    return SchedulingQueue({"default-scheduler": profile}, clock), clock


def pop(q: SchedulingQueue) -> QueuedPodInfo:
    qpi = q.pop_nowait()
    assert qpi is not None
    return qpi


def test_higher_priority_first_then_earlier() -> None:
    q, clock = queue()
    q.add(PodInfo(make_pod("low", priority=1)))
    clock.advance_to(1)
    q.add(PodInfo(make_pod("high-late", priority=10)))
    q.add(PodInfo(make_pod("high-later", priority=10)))
    q.add(PodInfo(make_pod("high-early", priority=10)))
    assert [pop(q).pod_info.name for _ in range(4)] == [
        "high-late",
        "high-later",
        "high-early",
        "low",
    ]


def test_backoff_doubles_from_1s_to_10s() -> None:
    q, _ = queue()
    qpi = QueuedPodInfo(PodInfo(make_pod("p")), 0.0)
    durations = []
    for rejections in range(1, 8):
        qpi.unschedulable_count = rejections
        durations.append(q.backoff_duration(qpi))
    assert durations == [1, 2, 4, 8, 10, 10, 10]


def test_backoff_counts_rejections_or_the_errors_since_the_last_one() -> None:
    """getBackoffTime: the count is UnschedulableCount, or ConsecutiveErrorsCount
    while errors follow each other; attempts (which include successful cycles whose
    binding failed, and errors) are not the count."""
    q, _ = queue()
    q.add(PodInfo(make_pod("p")))
    qpi = pop(q)
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    q.requeue_failed(qpi)  # rejected: 1 s
    assert (qpi.unschedulable_count, qpi.consecutive_errors_count) == (1, 0)
    assert q.backoff_duration(qpi) == 1
    for expected in (1, 2, 4):  # then errors: 1 s, 2 s, 4 s, whatever came before
        q.delete(qpi.pod_info.key)
        q.add(PodInfo(make_pod("p")))
        qpi2 = pop(q)
        qpi2.unschedulable_count = qpi.unschedulable_count
        qpi2.consecutive_errors_count = qpi.consecutive_errors_count
        qpi2.attempts = 5
        q.requeue_failed(qpi2)
        assert q.backoff_duration(qpi2) == expected
        qpi = qpi2
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    q.delete(qpi.pod_info.key)
    q.requeue_failed(qpi)  # a rejection ends the run of errors: the second rejection, 2 s
    assert (qpi.unschedulable_count, qpi.consecutive_errors_count) == (2, 0)
    assert q.backoff_duration(qpi) == 2


def test_a_pod_never_rejected_has_no_backoff() -> None:
    q, _ = queue()
    qpi = QueuedPodInfo(PodInfo(make_pod("p")), 100.0)
    qpi.attempts = 3
    assert q.backoff_duration(qpi) == 0
    assert not q._backing_off(qpi)


def test_error_goes_to_backoff_and_returns_when_it_expires() -> None:
    q, clock = queue()
    q.add(PodInfo(make_pod("p")))
    qpi = pop(q)
    q.requeue_failed(qpi)  # no rejecting plugin: an error
    assert "default/p" in q.backoff
    clock.advance_to(0.5)
    assert q.flush_backoff_completed() == 0
    # The 1 s backoff ends at 1.0, in the window [1, 2): backoffQ is flushed per
    # one-second window (SchedulerPopFromBackoffQ), so the pod leaves at 2.0.
    clock.advance_to(1.0)
    assert q.flush_backoff_completed() == 0
    clock.advance_to(2.0)
    assert q.flush_backoff_completed() == 1
    assert pop(q).attempts == 2


def test_backoff_windows_order_pods_by_priority() -> None:
    """lessBackoffCompletedWithPriority: pods whose backoffs end in the same window
    leave backoffQ in activeQ's order, not in the order they failed."""
    q, clock = queue()
    q.add(PodInfo(make_pod("low", priority=1)))
    low = pop(q)
    q.requeue_failed(low)
    clock.advance_to(0.4)
    q.add(PodInfo(make_pod("high", priority=100)))
    high = pop(q)
    q.requeue_failed(high)  # fails later, same window (1.0-2.0)
    assert q.backoff_expiry(low) == q.backoff_expiry(high) == 1.0
    clock.advance_to(2.0)
    assert q.flush_backoff_completed() == 2
    assert [pop(q).pod_info.name, pop(q).pod_info.name] == ["high", "low"]


def test_unschedulable_pod_waits_for_an_event_its_plugin_registered() -> None:
    events = {
        "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]
    }
    q, clock = queue(events)
    q.add(PodInfo(make_pod("p")))
    qpi = pop(q)
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    q.requeue_failed(qpi)
    assert "default/p" in q.unschedulable
    assert q.on_event(EVENT_ASSIGNED_POD_ADD) == 0  # not an event Fit cares about
    assert "default/p" in q.unschedulable
    clock.advance_to(5)
    assert q.on_event(EVENT_NODE_ADD) == 1
    assert "default/p" in q.active  # its 1 s backoff is over


def test_event_during_backoff_moves_to_backoffq() -> None:
    events = {"X": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    q, _clock = queue(events)
    q.add(PodInfo(make_pod("p")))
    qpi = pop(q)
    qpi.unschedulable_plugins = {"X"}
    q.requeue_failed(qpi)
    q.on_event(EVENT_NODE_ADD)
    assert "default/p" in q.backoff


def test_hint_can_decline_the_event() -> None:
    events = {
        "X": [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD), lambda p, o, n: n == "good"
            )
        ]
    }
    q, _clock = queue(events)
    q.add(PodInfo(make_pod("p")))
    qpi = pop(q)
    qpi.unschedulable_plugins = {"X"}
    q.requeue_failed(qpi)
    assert q.on_event(EVENT_NODE_ADD, None, "bad") == 0
    assert q.on_event(EVENT_NODE_ADD, None, "good") == 1


def test_event_while_in_flight_sends_the_pod_to_backoff_not_the_pool() -> None:
    events = {"X": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    q, _ = queue(events)
    q.add(PodInfo(make_pod("p")))
    qpi = pop(q)
    q.on_event(EVENT_NODE_ADD)  # the cluster changed while p was being tried
    qpi.unschedulable_plugins = {"X"}
    q.requeue_failed(qpi)
    assert "default/p" in q.backoff


def test_unschedulable_pods_leave_after_five_minutes() -> None:
    q, clock = queue()
    q.add(PodInfo(make_pod("p")))
    qpi = pop(q)
    qpi.unschedulable_plugins = {"Nobody"}
    q.requeue_failed(qpi)
    clock.advance_to(299)
    assert q.flush_unschedulable_left_over() == 0
    clock.advance_to(301)
    assert q.flush_unschedulable_left_over() == 1
    assert "default/p" in q.active


def test_gated_pods_wait_until_their_gates_are_removed() -> None:
    q, _ = queue(gate=True)
    gated = make_pod("p", spec={"schedulingGates": [{"name": "wait-for-quota"}]})
    q.add(PodInfo(gated))
    assert q.pop_nowait() is None
    assert q.pending_counts()["gated"] == 1
    q.update(PodInfo(make_pod("p")))
    assert pop(q).pod_info.name == "p"


def test_delete_removes_from_every_queue() -> None:
    q, _ = queue()
    q.add(PodInfo(make_pod("a")))
    q.add(PodInfo(make_pod("b")))
    q.delete("default/a")
    assert pop(q).pod_info.name == "b"
    assert q.pop_nowait() is None


def test_idle_queue_pops_event_moved_pods_from_backoff_but_not_errored_ones() -> None:
    """SchedulerPopFromBackoffQ: with activeQ empty, a pod moved by an event is tried
    at once; a pod that failed with an error waits out its backoff."""
    events = {"X": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]}
    q, clock = queue(events)
    q.add(PodInfo(make_pod("moved")))
    q.add(PodInfo(make_pod("errored")))
    moved, errored = pop(q), pop(q)
    moved.unschedulable_plugins = {"X"}
    q.requeue_failed(moved)
    q.requeue_failed(errored)  # no rejecting plugin: an error
    q.on_event(EVENT_NODE_ADD)
    assert "default/moved" in q.backoff and clock.now() < q.backoff_expiry(moved)
    assert pop(q).pod_info.name == "moved"
    assert q.pop_nowait() is None  # the errored one keeps its backoff
    clock.advance_to(2.0)  # the end of the window its backoff ends in
    q.flush_backoff_completed()
    assert pop(q).pod_info.name == "errored"


def test_a_pod_group_member_rejected_by_a_plugin_retries_on_backoff_alone() -> None:
    """determineSchedulingHintForInFlightPod: with GenericWorkload on, a member of a
    pod group goes to backoff after a rejection, not to the unschedulable pool to
    wait for an event; a pod outside a group, or with the gate off, waits."""
    clock = SimClock()
    profile = QueueProfile(SORT.less, lambda pod: Status(), {})

    def rejected(name: str, *, group: bool, generic_workload: bool) -> SchedulingQueue:
        q = SchedulingQueue(
            {"default-scheduler": profile}, clock, generic_workload=generic_workload
        )
        spec = {"schedulingGroup": {"podGroupName": "train"}} if group else {}
        q.add(PodInfo(make_pod(name, spec=spec)))
        qpi = pop(q)
        qpi.unschedulable_plugins = {"NodeResourcesFit"}
        q.requeue_failed(qpi)
        return q

    member = rejected("member", group=True, generic_workload=True)
    assert "default/member" in member.backoff and not member.unschedulable
    single = rejected("single", group=False, generic_workload=True)
    assert "default/single" in single.unschedulable
    gate_off = rejected("gate-off", group=True, generic_workload=False)
    assert "default/gate-off" in gate_off.unschedulable
