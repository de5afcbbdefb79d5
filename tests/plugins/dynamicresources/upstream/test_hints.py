"""DynamicResources' events and queueing hints with upstream's verdicts
(TestIsSchedulableAfterClaimChange and TestIsSchedulableAfterPodChange of v1.36.3;
Queue is True, QueueSkip False). ResourceSlice and DeviceClass events carry no hint
upstream: every add or update requeues."""

from __future__ import annotations

import msgspec
import pytest

from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.framework.interfaces import HintIndex, QueueingHint
from kubesched.framework.state.dra import DraState
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.dynamicresources.events import (
    events_to_register,
    schedulable_after_claim_change,
    schedulable_after_pod_change,
)
from tests.plugins.dynamicresources.upstream.kit import (
    CLAIM,
    RESOURCE_2,
    allocation,
    by_template,
    claim,
    consumer,
    owner,
    pod,
    pod_with_claim_name,
    pod_with_template_in_status,
)

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def state(*claims: ResourceClaim) -> DraState:
    dra = DraState()
    for c in claims:
        dra.upsert_claim(c)
    return dra


def allocated() -> ResourceClaim:
    return claim(allocation=allocation())


def other_allocated() -> ResourceClaim:
    return claim("other", owned=False, allocation=allocation(), reserved_for=[consumer("o", "uo")])


def renamed(c: ResourceClaim, name: str, uid: str) -> ResourceClaim:
    return msgspec.structs.replace(
        c, metadata=msgspec.structs.replace(c.metadata, name=name, uid=uid)
    )


def with_finalizer(c: ResourceClaim, finalizer: str) -> ResourceClaim:
    meta = msgspec.structs.replace(c.metadata, finalizers=[*c.metadata.finalizers, finalizer])
    return msgspec.structs.replace(c, metadata=meta)


def with_status(c: ResourceClaim, other: ResourceClaim) -> ResourceClaim:
    return msgspec.structs.replace(c, status=other.status)


def wrong_owner() -> ResourceClaim:
    return claim(allocation=allocation(), owned=False, ownerReferences=[owner(uid="1234123")])


pending = claim()


CLAIM_CASES = [
    # The pod's template claim does not exist yet: a deleted claim changes nothing.
    pytest.param(pod(by_template()), [], allocated(), None, SKIP, id="skip-deletes"),
    # A wrong object is an error upstream, which requeues.
    pytest.param(pod(by_template()), [], None, "not-a-claim", QUEUE, id="wrong-new-object"),
    pytest.param(pod(by_template()), [], None, wrong_owner(), SKIP, id="skip-wrong-claim"),
    pytest.param(
        pod(by_template()),
        [allocated()],
        None,
        renamed(allocated(), CLAIM + "-foo", "uid-foo"),
        SKIP,
        id="skip-unrelated-claim",
    ),
    pytest.param(pod_with_claim_name(), [pending], None, pending, QUEUE, id="queue-on-add"),
    pytest.param(
        pod_with_claim_name(), [pending], "not-a-claim", pending, QUEUE, id="wrong-old-object"
    ),
    pytest.param(
        pod_with_claim_name(),
        [with_finalizer(pending, "foo")],
        pending,
        with_finalizer(pending, "foo"),
        SKIP,
        id="skip-adding-finalizer",
    ),
    pytest.param(
        pod_with_claim_name(),
        [with_status(pending, claim(allocation={}))],
        pending,
        with_status(pending, claim(allocation={})),
        QUEUE,
        id="queue-on-status-change",
    ),
    pytest.param(
        pod_with_claim_name(),
        [pending, with_status(other_allocated(), claim())],
        other_allocated(),
        with_status(other_allocated(), claim()),
        QUEUE,
        id="claim-deallocate",
    ),
    # Our own: another claim that only changed its reservations.
    pytest.param(
        pod_with_claim_name(),
        [pending, other_allocated()],
        with_status(other_allocated(), claim(allocation=allocation())),
        other_allocated(),
        SKIP,
        id="unrelated-reservation-change",
    ),
    # A deallocated claim frees devices even for a pod whose own claims are fine
    # but were not the one that changed; a pod with a missing claim still skips.
    pytest.param(
        pod(by_template()),
        [other_allocated()],
        other_allocated(),
        with_status(other_allocated(), claim()),
        SKIP,
        id="deallocate-but-pod-waits-for-its-claim",
    ),
]


@pytest.mark.parametrize(("p", "stored", "old", "new", "hint"), CLAIM_CASES)
def test_schedulable_after_claim_change(
    p: Pod, stored: list[ResourceClaim], old: object, new: object, hint: bool
) -> None:
    assert schedulable_after_claim_change(state(*stored), p, old, new) is hint


two_templates = pod(by_template(), by_template(RESOURCE_2))


POD_CASES = [
    pytest.param(pod(by_template()), [], "not-a-pod", QUEUE, id="wrong-new-object"),
    pytest.param(
        pod(by_template()), [pending], pod_with_template_in_status(), QUEUE, id="complete"
    ),
    pytest.param(
        pod(by_template(), name="my-pod2", uid="12342"),
        [pending],
        pod_with_template_in_status(),
        SKIP,
        id="wrong-pod",
    ),
    pytest.param(pod(by_template()), [], pod_with_template_in_status(), SKIP, id="missing-claim"),
    pytest.param(
        two_templates,
        [pending],
        pod(
            by_template(),
            by_template(RESOURCE_2),
            statuses=[{"name": "my-resource", "resourceClaimName": CLAIM}],
        ),
        SKIP,
        id="incomplete",
    ),
]


@pytest.mark.parametrize(("p", "stored", "new", "hint"), POD_CASES)
def test_schedulable_after_pod_change(
    p: Pod, stored: list[ResourceClaim], new: object, hint: bool
) -> None:
    assert schedulable_after_pod_change(state(*stored), p, None, new) is hint


def _meet(index: HintIndex, p: Pod, old: object, new: object) -> bool:
    keys = index.event_keys(old, new)
    return keys is None or not set(keys).isdisjoint(index.pod_keys(PodInfo(p)))


@pytest.mark.parametrize(("p", "stored", "old", "new", "hint"), CLAIM_CASES)
def test_the_claim_index_files_every_pod_the_hint_queues(
    p: Pod, stored: list[ResourceClaim], old: object, new: object, hint: bool
) -> None:
    """The HintIndex's promise (the queue asks only the pods it files under the
    event's keys): where the hint says Queue, the pod's keys meet the event's."""
    index = _index_of(Resource.RESOURCE_CLAIM)
    if hint is QUEUE:
        assert _meet(index, p, old, new)


@pytest.mark.parametrize(("p", "stored", "new", "hint"), POD_CASES)
def test_the_pod_index_files_every_pod_the_hint_queues(
    p: Pod, stored: list[ResourceClaim], new: object, hint: bool
) -> None:
    index = _index_of(Resource.POD)
    if hint is QUEUE:
        assert _meet(index, p, None, new)


def test_the_claim_index_narrows_to_the_pods_naming_the_claim() -> None:
    """It does narrow: an added claim concerns the pods naming it, not the others;
    a deallocation, a deletion or a stranger object may concern any pod."""
    index = _index_of(Resource.RESOURCE_CLAIM)
    assert _meet(index, pod_with_claim_name(), None, pending)
    assert _meet(index, pod_with_template_in_status(), None, pending)
    assert not _meet(index, pod(by_template()), None, pending)  # its claim is not named yet
    unrelated = renamed(pending, CLAIM + "-foo", "uid-foo")
    assert not _meet(index, pod_with_claim_name(), None, unrelated)
    freed = with_status(other_allocated(), claim())
    assert index.event_keys(other_allocated(), freed) is None
    assert index.event_keys(pending, None) is None
    assert index.event_keys("not-a-claim", pending) is None


def _index_of(resource: Resource) -> HintIndex:
    found = next(e.index for e in events_to_register(DraState()) if e.event.resource == resource)
    assert found is not None
    return found


def test_events_to_register() -> None:
    """EventsToRegister with queueing hints on (GA): no UpdateNodeTaint; hints for
    claims and pods only."""
    events = events_to_register(DraState())
    found = {(e.event.resource, e.event.action): e.hint is not None for e in events}
    node_actions = (
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    )
    add_or_update = ActionType.ADD | ActionType.UPDATE
    assert found == {
        (Resource.NODE, node_actions): False,
        (Resource.RESOURCE_CLAIM, add_or_update): True,
        (Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM): True,
        (Resource.DEVICE_CLASS, add_or_update): False,
        (Resource.RESOURCE_SLICE, add_or_update): False,
    }


def test_registered_hints_read_the_current_state() -> None:
    dra = DraState()
    events = events_to_register(dra)
    claim_hint = next(e.hint for e in events if e.event.resource == Resource.RESOURCE_CLAIM)
    assert claim_hint is not None
    info = PodInfo(pod_with_claim_name())
    dra.upsert_claim(pending)
    assert claim_hint(info, None, pending) is QUEUE
