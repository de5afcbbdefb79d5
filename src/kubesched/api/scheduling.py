"""scheduling.k8s.io/v1alpha2: Workload and PodGroup (k8s.io/api v0.36.3), the
objects of the GenericWorkload and GangScheduling feature gates, with the few
helpers the scheduler needs (the pod's group, the PodGroupScheduled condition).
"""

from __future__ import annotations

import msgspec

from kubesched.api.objects import ObjectMeta, Pod

API_VERSION = "scheduling.k8s.io/v1alpha2"

# Condition type and reasons of PodGroupStatus (scheduling/v1alpha2 types.go).
POD_GROUP_SCHEDULED = "PodGroupScheduled"
POD_GROUP_REASON_UNSCHEDULABLE = "Unschedulable"
POD_GROUP_REASON_SCHEDULER_ERROR = "SchedulerError"
POD_GROUP_REASON_SCHEDULED = "Scheduled"

# WorkloadMaxPodGroupTemplates.
WORKLOAD_MAX_POD_GROUP_TEMPLATES = 8


class _Api(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """As objects._Api: the API's camelCase names, only the fields read."""


class GangSchedulingPolicy(_Api):
    min_count: int = 0


class BasicSchedulingPolicy(_Api):
    pass


class PodGroupSchedulingPolicy(_Api):
    basic: BasicSchedulingPolicy | None = None
    gang: GangSchedulingPolicy | None = None


class TopologyConstraint(_Api):
    key: str = ""


class PodGroupSchedulingConstraints(_Api):
    topology: list[TopologyConstraint] = []


class _PodGroupPolicy(_Api):
    """The fields a Workload's PodGroupTemplate and a PodGroup's spec share
    (upstream's PodGroupTemplate and PodGroupSpec list them both)."""

    scheduling_policy: PodGroupSchedulingPolicy = msgspec.field(
        default_factory=PodGroupSchedulingPolicy
    )
    scheduling_constraints: PodGroupSchedulingConstraints | None = None
    # Read so that their use is refused (their gates are off): see
    # cluster/validation/workload_api.py.
    resource_claims: list[dict[str, object]] = []
    disruption_mode: str | None = None
    priority_class_name: str = ""
    priority: int | None = None


class PodGroupTemplate(_PodGroupPolicy):
    name: str = ""


class TypedLocalObjectReference(_Api):
    api_group: str = ""
    kind: str = ""
    name: str = ""


class WorkloadSpec(_Api):
    controller_ref: TypedLocalObjectReference | None = None
    pod_group_templates: list[PodGroupTemplate] = []


class Workload(_Api):
    api_version: str = API_VERSION
    kind: str = "Workload"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: WorkloadSpec = msgspec.field(default_factory=WorkloadSpec)


class WorkloadPodGroupTemplateReference(_Api):
    workload_name: str = ""
    pod_group_template_name: str = ""


class PodGroupTemplateReference(_Api):
    workload: WorkloadPodGroupTemplateReference | None = None


class PodGroupSpec(_PodGroupPolicy):
    pod_group_template_ref: PodGroupTemplateReference | None = None


class Condition(_Api):
    """metav1.Condition."""

    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    observed_generation: int | None = None
    last_transition_time: str | None = None


class PodGroupStatus(_Api):
    conditions: list[Condition] = []


class PodGroupMeta(ObjectMeta):
    """ObjectMeta with the generation, which the condition's observedGeneration takes."""

    generation: int = 0


class PodGroup(_Api):
    api_version: str = API_VERSION
    kind: str = "PodGroup"
    metadata: PodGroupMeta = msgspec.field(default_factory=PodGroupMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)

    @property
    def key(self) -> str:
        return self.metadata.key


def pod_group_key(pod: Pod) -> str | None:
    """ "namespace/podGroupName" of the group the pod belongs to, or None."""
    group = pod.spec.scheduling_group
    if group is None or group.pod_group_name is None:
        return None
    return f"{pod.metadata.namespace}/{group.pod_group_name}"


def find_condition(conditions: list[Condition], type_: str) -> Condition | None:
    """apimeta.FindStatusCondition."""
    for condition in conditions:
        if condition.type == type_:
            return condition
    return None


def set_condition(conditions: list[Condition], new: Condition, now: str) -> bool:
    """apimeta.SetStatusCondition: add or update `new` in place; True if anything
    changed. lastTransitionTime moves only when the status does."""
    existing = find_condition(conditions, new.type)
    if existing is None:
        new.last_transition_time = new.last_transition_time or now
        conditions.append(new)
        return True
    changed = False
    if existing.status != new.status:
        existing.status = new.status
        existing.last_transition_time = new.last_transition_time or now
        changed = True
    for field in ("reason", "message", "observed_generation"):
        if getattr(existing, field) != getattr(new, field):
            setattr(existing, field, getattr(new, field))
            changed = True
    return changed
