"""Workload controllers' objects, as lean msgspec structs.

Only what expanding a workload into the pods its controller would create needs
is declared: replica counts, the selector, the pod template and, for
StatefulSets, the names of the volume claim templates. Everything else in the
manifest is skipped while decoding.
"""

from __future__ import annotations

import msgspec

from kubesched.api.objects import LabelSelector, ObjectMeta, PersistentVolumeClaimSpec, PodSpec


class _Api(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class PodTemplateSpec(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)


class PersistentVolumeClaimTemplate(_Api):
    """A StatefulSet's volumeClaimTemplates entry: the claims its pods get are made from it."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)


class StatefulSetOrdinals(_Api):
    start: int = 0


class DeploymentSpec(_Api):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class ReplicaSetSpec(_Api):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class StatefulSetSpec(_Api):
    replicas: int | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)
    volume_claim_templates: list[PersistentVolumeClaimTemplate] = []
    ordinals: StatefulSetOrdinals | None = None
    service_name: str = ""


class DaemonSetSpec(_Api):
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class ReplicationControllerSpec(_Api):
    """A ReplicaSet's spec with a plain label map for selector (defaulted to the
    template's labels, SetDefaults_ReplicationController)."""

    replicas: int | None = None
    selector: dict[str, str] = {}
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class JobSpec(_Api):
    parallelism: int | None = None
    completions: int | None = None
    completion_mode: str | None = None
    suspend: bool | None = None
    manual_selector: bool | None = None
    selector: LabelSelector | None = None
    template: PodTemplateSpec = msgspec.field(default_factory=PodTemplateSpec)


class Deployment(_Api):
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DeploymentSpec = msgspec.field(default_factory=DeploymentSpec)


class ReplicaSet(_Api):
    api_version: str = "apps/v1"
    kind: str = "ReplicaSet"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicaSetSpec = msgspec.field(default_factory=ReplicaSetSpec)


class StatefulSet(_Api):
    api_version: str = "apps/v1"
    kind: str = "StatefulSet"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: StatefulSetSpec = msgspec.field(default_factory=StatefulSetSpec)


class DaemonSet(_Api):
    api_version: str = "apps/v1"
    kind: str = "DaemonSet"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: DaemonSetSpec = msgspec.field(default_factory=DaemonSetSpec)


class Job(_Api):
    api_version: str = "batch/v1"
    kind: str = "Job"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: JobSpec = msgspec.field(default_factory=JobSpec)


class ReplicationController(_Api):
    api_version: str = "v1"
    kind: str = "ReplicationController"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ReplicationControllerSpec = msgspec.field(default_factory=ReplicationControllerSpec)


Workload = Deployment | ReplicaSet | StatefulSet | DaemonSet | Job | ReplicationController


class ServiceSpec(_Api):
    """A Service's spec, as far as the scheduler reads it: its selector, a plain
    label map (nil and empty select nothing)."""

    selector: dict[str, str] | None = None


class Service(_Api):
    """Read only for its selector (PodTopologySpread's default constraints)."""

    api_version: str = "v1"
    kind: str = "Service"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: ServiceSpec = msgspec.field(default_factory=ServiceSpec)


def selector_of(
    obj: Service | ReplicationController | ReplicaSet | StatefulSet,
) -> LabelSelector | None:
    """The selector helper.DefaultSelector reads: a Service's or ReplicationController's
    label map as matchLabels, a ReplicaSet's or StatefulSet's LabelSelector. None
    selects nothing (a nil map; DefaultSelector skips the object)."""
    if isinstance(obj, Service):
        labels = obj.spec.selector
        return None if labels is None else LabelSelector(match_labels=dict(labels))
    if isinstance(obj, ReplicationController):
        return LabelSelector(match_labels=dict(obj.spec.selector))
    return obj.spec.selector


# The labels that differ between the pods of one controller.
PER_POD_LABELS = frozenset(
    {
        "controller-revision-hash",
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
    }
)
PER_POD_LABEL_PREFIXES = ("batch.kubernetes.io/",)


def stand_in_selector(labels: dict[str, str]) -> LabelSelector:
    """Where a pod's controller is not known, its labels less PER_POD_LABELS stand in
    for the controller's selector: they select its siblings."""
    return LabelSelector(
        match_labels={
            k: v
            for k, v in labels.items()
            if k not in PER_POD_LABELS and not k.startswith(PER_POD_LABEL_PREFIXES)
        }
    )
