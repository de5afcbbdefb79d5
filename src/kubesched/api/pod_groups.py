"""scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1), as its release v0.35.4-devel
(built against Kubernetes v1.35.4) defines it in apis/scheduling/v1alpha1/types.go, and
the status its PodGroup controller writes (pkg/controllers/podgroup_controller.go).

Pods join a group through the label `scheduling.x-k8s.io/pod-group` (the group's name,
in the pod's namespace).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from kubesched.api.objects import ObjectMeta, Pod, ResourceList, namespaced_name

POD_GROUP_GROUP = "scheduling.x-k8s.io"
POD_GROUP_VERSION = "v1alpha1"
POD_GROUP_API_VERSION = f"{POD_GROUP_GROUP}/{POD_GROUP_VERSION}"
# v1alpha1.PodGroupLabel
POD_GROUP_LABEL = f"{POD_GROUP_GROUP}/pod-group"

# v1alpha1.PodGroupPhase values.
PHASE_PENDING = "Pending"
PHASE_RUNNING = "Running"
PHASE_SCHEDULING = "Scheduling"
PHASE_UNKNOWN = "Unknown"
PHASE_FINISHED = "Finished"
PHASE_FAILED = "Failed"

# The fields of the CRD's schema at that release; others are warned about, not kept.
_SPEC_FIELDS = frozenset({"minMember", "minResources", "scheduleTimeoutSeconds"})
_STATUS_FIELDS = frozenset(
    {"phase", "occupiedBy", "running", "succeeded", "failed", "scheduleStartTime"}
)
_TOP_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})


class _Api(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class PodGroupSpec(_Api):
    # The group is scheduled only when this many of its pods can be (minimum 1 in the
    # CRD; 0, the Go zero value when the field is left out, asks for nothing).
    min_member: int = 0
    min_resources: ResourceList | None = None
    schedule_timeout_seconds: int | None = None


class PodGroupStatus(_Api):
    phase: str = ""
    occupied_by: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: str | None = None


class PodGroup(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)

    @property
    def key(self) -> str:
        return self.metadata.key


def pod_group_name(pod: Pod) -> str:
    """util.GetPodGroupLabel: the name of the pod's group ("" for none)."""
    return pod.metadata.labels.get(POD_GROUP_LABEL, "")


def pod_group_key(pod: Pod) -> str:
    """util.GetPodGroupFullName: "namespace/group" of the pod's group ("" for none)."""
    name = pod_group_name(pod)
    return namespaced_name(pod.metadata.namespace, name) if name else ""


def unknown_fields(raw: Mapping[str, Any]) -> list[str]:
    """The paths of fields a PodGroup carries that the CRD's schema does not have
    (the API server would prune them): read, warned about, and left out."""
    unknown = [k for k in raw if k not in _TOP_FIELDS]
    for section, known in (("spec", _SPEC_FIELDS), ("status", _STATUS_FIELDS)):
        body = raw.get(section)
        if isinstance(body, Mapping):
            unknown.extend(f"{section}.{k}" for k in body if k not in known)
    return sorted(unknown)


def validate_pod_group(group: PodGroup) -> list[tuple[str, str]]:
    """The CRD's openAPI checks: (field, message) pairs, as kube-apiserver words them."""
    errors: list[tuple[str, str]] = []
    spec = group.spec
    if spec.min_member < 0:
        errors.append(
            (
                "spec.minMember",
                f"Invalid value: {spec.min_member}: spec.minMember in body should be "
                "greater than or equal to 1",
            )
        )
    if spec.schedule_timeout_seconds is not None and not (
        -(2**31) <= spec.schedule_timeout_seconds < 2**31
    ):
        errors.append(("spec.scheduleTimeoutSeconds", "must be an int32"))
    return errors


def controller_status(group: PodGroup, pods: Iterable[Pod]) -> PodGroupStatus:
    """What scheduler-plugins' PodGroup controller (PodGroupReconciler.Reconcile) leaves
    in the status once it has reconciled `pods` (the group's pods): each reconcile
    moves the phase one step, so it is repeated until the status stops changing."""
    members = list(pods)
    status = msgspec.structs.replace(group.status)
    for _ in range(4):
        following = _reconcile_once(group.spec.min_member, status, members)
        if following == status:
            break
        status = following
    return status


def _reconcile_once(min_member: int, current: PodGroupStatus, pods: list[Pod]) -> PodGroupStatus:
    if current.phase in (PHASE_FINISHED, PHASE_FAILED):
        return current
    status = msgspec.structs.replace(current)
    if current.phase == "":
        status.phase = PHASE_PENDING
    elif current.phase == PHASE_PENDING:
        if len(pods) >= min_member:
            status.phase = PHASE_SCHEDULING
            if pods:
                status.occupied_by = _occupied_by(pods[0])
    else:
        status.running = sum(1 for p in pods if p.status.phase == "Running")
        status.succeeded = sum(1 for p in pods if p.status.phase == "Succeeded")
        status.failed = sum(1 for p in pods if p.status.phase == "Failed")
        if len(pods) < min_member:
            status.phase = PHASE_PENDING
            return status
        if status.succeeded + status.running < min_member:
            status.phase = PHASE_SCHEDULING
        else:
            status.phase = PHASE_RUNNING
        if status.failed and status.failed + status.running + status.succeeded >= min_member:
            status.phase = PHASE_FAILED
        if status.succeeded >= min_member:
            status.phase = PHASE_FINISHED
    return status


def _occupied_by(pod: Pod) -> str:
    """fillOccupiedObj: the pod's owners, "namespace/name" each, sorted, comma-joined."""
    refs = sorted(f"{pod.metadata.namespace}/{r.name}" for r in pod.metadata.owner_references)
    return ",".join(refs)
