"""The unschedulable pool's HintIndex (kubesched/queue/pool.py): an event whose
registrations file their pods reaches only the pods filed under its keys, and the
queue ends up exactly as when every pod of the pool is asked."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.clock import SimClock
from kubesched.framework.interfaces import ClusterEventWithHint, HintIndex
from kubesched.framework.status import Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, QueuedPodInfo, Resource
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.queue.scheduling_queue import QueueProfile, SchedulingQueue
from kubesched.testing import make_pod

CLAIM_EVENT = ClusterEvent(Resource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE)
NAMES = ["a", "b", "c", "d"]


@dataclass(frozen=True)
class Thing:
    """A stand-in for a claim: its key, and whether it frees something for anyone."""

    key: str
    frees: bool = False


def wanted(pod: PodInfo) -> list[str]:
    return [k for k in pod.pod.metadata.labels.get("wants", "").split(".") if k]


def hint(pod: PodInfo, _old: object, new: object) -> bool:
    if not isinstance(new, Thing) or new.frees:
        return True
    return new.key in wanted(pod)


def event_keys(_old: object, new: object) -> tuple[str, ...] | None:
    if not isinstance(new, Thing) or new.frees:
        return None
    return (new.key,)


def make_queue(indexed: bool, gated: dict[str, str]) -> SchedulingQueue:
    """GATED: the pods held back, each by the plugin named (none: "", so that the
    pod has no rejector and any event may move it)."""
    index = HintIndex(wanted, event_keys) if indexed else None

    def pre_enqueue(pod: PodInfo) -> Status:
        if pod.key in gated:
            return Status.unresolvable("waiting", plugin=gated[pod.key])
        return Status()

    events = {
        "Claims": [ClusterEventWithHint(CLAIM_EVENT, hint, index)],
        "Other": [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))],
    }
    profile = QueueProfile(PrioritySort().less, pre_enqueue, events)
    return SchedulingQueue({"default-scheduler": profile}, SimClock())


def snapshot(q: SchedulingQueue) -> tuple[list[str], list[str], list[str]]:
    return (
        [qpi.pod_info.key for qpi in q.active],
        sorted(qpi.pod_info.key for qpi in q.backoff),
        list(q.unschedulable),
    )


pods = st.lists(
    st.tuples(
        st.lists(st.sampled_from(NAMES), max_size=2),  # what the pod waits for
        st.sampled_from(["gated", "gated-by-none", "rejected", "rejected-by-other"]),
    ),
    min_size=1,
    max_size=12,
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("event"), st.sampled_from(NAMES), st.booleans()),
        st.tuples(st.just("ungate"), st.integers(0, 11), st.booleans()),
        st.tuples(st.just("update"), st.integers(0, 11), st.sampled_from(NAMES)),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(pods, steps)
def test_an_indexed_pool_moves_the_same_pods_in_the_same_order(
    spec: list[tuple[list[str], str]], actions: list[tuple[str, object, object]]
) -> None:
    gated: dict[bool, dict[str, str]] = {True: {}, False: {}}
    queues = {indexed: make_queue(indexed, gated[indexed]) for indexed in (True, False)}
    for indexed, q in queues.items():
        for i, (wants, how) in enumerate(spec):
            info = PodInfo(make_pod(f"p{i}", labels={"wants": ".".join(wants)}))
            if how.startswith("gated"):
                gated[indexed][info.key] = "Claims" if how == "gated" else ""
                q.add(info)
                continue
            q.add(info)
            qpi = q.pop_nowait()
            assert qpi is not None and qpi.pod_info.key == info.key
            qpi.unschedulable_plugins = {"Claims"} if how == "rejected" else {"Other"}
            q.requeue_failed(qpi)
    assert snapshot(queues[True]) == snapshot(queues[False])
    for action, a, b in actions:
        moved = {}
        for indexed, q in queues.items():
            if action == "event":
                moved[indexed] = q.on_event(CLAIM_EVENT, None, Thing(str(a), frees=bool(b)))
            elif action == "ungate":
                key = f"default/p{int(str(a)) % len(spec)}"
                gated[indexed].pop(key, None)
                if b:  # the claim it waits for arrives
                    moved[indexed] = q.on_event(CLAIM_EVENT, None, Thing("a"))
            else:
                i = int(str(a)) % len(spec)
                found = q.find(f"default/p{i}")
                if found is not None:  # its status now names another claim
                    q.refresh(PodInfo(make_pod(f"p{i}", labels={"wants": str(b)})))
        assert moved.get(True) == moved.get(False)
        assert snapshot(queues[True]) == snapshot(queues[False])


def test_an_event_reaches_only_the_pods_filed_under_its_key() -> None:
    """It does narrow: the hint is asked about the pods waiting for that claim (and
    those any event may move), not about the others."""
    asked: list[str] = []

    def counting_hint(pod: PodInfo, old: object, new: object) -> bool:
        asked.append(pod.key)
        return hint(pod, old, new)

    events = {
        "Claims": [ClusterEventWithHint(CLAIM_EVENT, counting_hint, HintIndex(wanted, event_keys))]
    }
    gate_all = QueueProfile(
        PrioritySort().less, lambda _p: Status.unresolvable("waiting", plugin="Claims"), events
    )
    q = SchedulingQueue({"default-scheduler": gate_all}, SimClock())
    for i in range(50):
        q.add(PodInfo(make_pod(f"p{i}", labels={"wants": f"c{i}"})))
    assert len(q.unschedulable) == 50
    q.on_event(CLAIM_EVENT, None, Thing("c7"))
    assert asked == ["default/p7"]
    asked.clear()
    q.refresh(PodInfo(make_pod("p8", labels={"wants": "c7"})))  # refiled
    q.on_event(CLAIM_EVENT, None, Thing("c7"))
    assert sorted(asked) == ["default/p7", "default/p8"]
    asked.clear()
    q.on_event(CLAIM_EVENT, None, Thing("c7", frees=True))  # may concern anyone
    assert len(asked) == 50


def test_a_pod_without_rejectors_is_reached_by_any_event() -> None:
    """isPodWorthRequeuing moves a pod no plugin rejected on any event, and a pod of
    a scheduler name without a profile: the pool keeps them apart from the filing."""
    q = make_queue(True, {})
    for name, scheduler, rejectors in [
        ("plain", "default-scheduler", set()),
        ("stranger", "other-scheduler", {"Claims"}),
        ("waiting", "default-scheduler", {"Claims"}),
    ]:
        pod = make_pod(name, labels={"wants": "x"})
        pod.spec.scheduler_name = scheduler
        qpi = QueuedPodInfo(PodInfo(pod), 0.0, unschedulable_plugins=rejectors)
        q.unschedulable[qpi.pod_info.key] = qpi
    indexes = [HintIndex(wanted, event_keys)]
    found = q.unschedulable.concerned(CLAIM_EVENT, indexes, None, Thing("y"))
    assert found is not None
    assert [qpi.pod_info.key for qpi in found] == ["default/plain", "default/stranger"]
    del q.unschedulable["default/plain"]
    found = q.unschedulable.concerned(CLAIM_EVENT, indexes, None, Thing("y"))
    assert found is not None and [qpi.pod_info.key for qpi in found] == ["default/stranger"]


def test_the_pool_changes_only_through_methods_that_keep_its_filing() -> None:
    """The pool wraps its dict: no dict method (update, setdefault, clear, popitem)
    can add or drop a pod without the filing knowing, and the three that change it
    file and unfile the pod."""
    q = make_queue(indexed=True, gated={"default/a": "Claims", "default/b": "Claims"})
    pool = q.unschedulable
    for name in ("a", "b"):
        q.add(PodInfo(make_pod(name, labels={"wants": "k"})))
    for name in ("update", "setdefault", "clear", "popitem"):
        assert not hasattr(pool, name), name
    indexes = q._hint_indexes(CLAIM_EVENT)
    assert pool.concerned(CLAIM_EVENT, indexes, None, Thing("k")) == list(pool.values())
    qpi = pool.pop("default/a")
    assert qpi is not None and pool.pop("default/a") is None
    del pool["default/b"]
    assert len(pool) == 0 and pool._filed_as == {} and pool._order == {}
    pool["default/a"] = qpi  # back in: filed again
    assert pool.concerned(CLAIM_EVENT, indexes, None, Thing("k")) == [qpi]
