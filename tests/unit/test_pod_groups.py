"""scheduler-plugins' PodGroup: its status as the PodGroup controller computes it, the
fields its CRD does not have, and the store Coscheduling reads."""

from __future__ import annotations

from kubesched.api.objects import ObjectMeta, OwnerReference, Pod, PodCondition
from kubesched.api.pod_groups import (
    POD_GROUP_LABEL,
    PodGroup,
    PodGroupSpec,
    PodGroupStatus,
    controller_status,
    unknown_fields,
)
from kubesched.framework.pod_groups import PodGroupState
from kubesched.framework.types import ActionType, ClusterEvent, Resource
from kubesched.testing import make_pod


def group(min_member: int, phase: str = "") -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name="g", namespace="default"),
        spec=PodGroupSpec(min_member=min_member),
        status=PodGroupStatus(phase=phase),
    )


def member(name: str, phase: str = "Pending", node: str = "") -> Pod:
    pod = make_pod(name, labels={POD_GROUP_LABEL: "g"}, node_name=node)
    pod.status.phase = phase
    return pod


def test_status_pending_until_min_member_pods_exist() -> None:
    assert controller_status(group(3), [member("a"), member("b")]).phase == "Pending"


def test_status_scheduling_once_min_member_pods_exist_with_occupied_by() -> None:
    pods = [member(n) for n in "abc"]
    pods[0].metadata.owner_references = [OwnerReference(kind="Job", name="train")]
    status = controller_status(group(3), pods)
    assert (status.phase, status.occupied_by, status.running) == (
        "Scheduling",
        "default/train",
        0,
    )


def test_status_running_finished_failed() -> None:
    running = controller_status(group(2), [member("a", "Running"), member("b", "Running")])
    assert (running.phase, running.running) == ("Running", 2)
    done = controller_status(group(2), [member("a", "Succeeded"), member("b", "Succeeded")])
    assert (done.phase, done.succeeded) == ("Finished", 2)
    failed = controller_status(group(2), [member("a", "Failed"), member("b", "Running")])
    assert (failed.phase, failed.failed) == ("Failed", 1)


def test_status_stays_once_finished() -> None:
    assert controller_status(group(2, "Finished"), []).phase == "Finished"


def test_unknown_fields_are_named_by_path() -> None:
    raw = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {"minMember": 2, "minTaskMember": {"a": 1}, "queue": "q"},
        "extra": 1,
    }
    assert unknown_fields(raw) == ["extra", "spec.minTaskMember", "spec.queue"]


class RecordingWriter:
    def __init__(self) -> None:
        self.written: list[tuple[str, str]] = []

    def write_status(self, group: PodGroup, status: PodGroupStatus) -> None:
        self.written.append((group.key, status.phase))


def test_state_tracks_members_and_writes_status_changes_only() -> None:
    state = PodGroupState()
    writer = RecordingWriter()
    state.writer = writer
    events: list[ClusterEvent] = []
    state.subscribe(lambda event, old, new: events.append(event))
    state.upsert_group(group(2))
    assert events == [ClusterEvent(Resource.POD_GROUP, ActionType.ADD, f"{Resource.POD_GROUP}Add")]
    assert writer.written == [("default/g", "Pending")]
    state.groups["default/g"].status = PodGroupStatus(phase="Pending")  # the write came back
    state.observe_pod(member("a"))
    state.observe_pod(member("a"))  # an update of the same pod: no new write
    assert writer.written == [("default/g", "Pending")]
    state.observe_pod(member("b", node="n1"))
    assert writer.written[-1] == ("default/g", "Scheduling")
    assert [p.metadata.name for p in state.members("default/g")] == ["a", "b"]
    state.forget_pod(member("a"))
    assert [p.metadata.name for p in state.members("default/g")] == ["b"]
    state.observe_pod(make_pod("loner"))
    assert state.members("") == []


def test_a_members_update_writes_nothing_when_the_group_is_unchanged() -> None:
    """Each FailedScheduling condition written on a member comes back as an update:
    the group must not be seen a member short in between, or its phase flips to
    Pending and back, and each PodGroup write requeues every member (a retry loop)."""
    state = PodGroupState()
    writer = RecordingWriter()
    state.writer = writer
    state.upsert_group(group(2, phase="Scheduling"))
    for name in ("a", "b"):
        state.observe_pod(member(name))
    written = list(writer.written)
    old = member("a")
    new = member("a")
    new.status.conditions = [PodCondition(type="PodScheduled", status="False")]
    state.update_pod(old, new)
    assert writer.written == written
    assert state.members("default/g")[0] is new
    moved = member("a")
    moved.metadata.labels = {POD_GROUP_LABEL: "other"}
    state.update_pod(new, moved)  # relabelled into another group: no longer a member
    assert [p.metadata.name for p in state.members("default/g")] == ["b"]
    assert writer.written[-1] == ("default/g", "Pending")
