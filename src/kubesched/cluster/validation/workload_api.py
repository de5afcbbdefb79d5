"""scheduling.k8s.io/v1alpha2 Workload and PodGroup as kube-apiserver v1.36.3 validates
them (pkg/apis/scheduling/validation, and the declarative +k8s: tags of
k8s.io/api/scheduling/v1alpha2 types.go), for the fields the scheduler relies on:
the name, the scheduling policy union, gang.minCount, and the features kubesched
does not implement (schedulingConstraints needs TopologyAwareWorkloadScheduling,
priority and disruptionMode need WorkloadAwarePreemption; both gates are off, so
the fields are forbidden as the apiserver forbids them).
"""

from __future__ import annotations

from kubesched.api.scheduling import (
    WORKLOAD_MAX_POD_GROUP_TEMPLATES,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
    PodGroupTemplate,
    Workload,
)
from kubesched.cluster.validation.field_errors import FieldErrors, invalid, required
from kubesched.cluster.validation.names_labels import (
    name_is_dns_label,
    name_is_dns_subdomain,
    path_segment_name,
    validate_object_meta,
)

_UNION = "must specify one of: `basic`, `gang`"
_UNION_EXACTLY = "must specify exactly one of: `basic`, `gang`"


def _policy(policy: PodGroupSchedulingPolicy, path: str) -> FieldErrors:
    """The +union of basic and gang, and gang.minCount's +k8s:minimum=1."""
    members = [name for name, value in (("basic", policy.basic), ("gang", policy.gang)) if value]
    if not members:
        yield invalid(path, "", _UNION)
    elif len(members) > 1:
        yield invalid(path, "{" + ", ".join(members) + "}", _UNION_EXACTLY)
    if policy.gang is not None and policy.gang.min_count < 1:
        yield invalid(
            f"{path}.gang.minCount", policy.gang.min_count, "must be greater than or equal to 1"
        )


def validate_pod_group(pod_group: PodGroup) -> FieldErrors:
    yield from validate_object_meta(pod_group.metadata, name_is_dns_subdomain, namespaced=True)
    spec = pod_group.spec
    ref = spec.pod_group_template_ref
    if ref is not None and ref.workload is not None:
        path = "spec.podGroupTemplateRef.workload"
        for field, value in (
            ("workloadName", ref.workload.workload_name),
            ("podGroupTemplateName", ref.workload.pod_group_template_name),
        ):
            if not value:
                yield required(f"{path}.{field}")
    yield from _policy(spec.scheduling_policy, "spec.schedulingPolicy")
    yield from _unsupported(spec, "spec")


def validate_workload(workload: Workload) -> FieldErrors:
    yield from validate_object_meta(workload.metadata, name_is_dns_subdomain, namespaced=True)
    templates = workload.spec.pod_group_templates
    path = "spec.podGroupTemplates"
    if not templates:
        yield required(path)
    if len(templates) > WORKLOAD_MAX_POD_GROUP_TEMPLATES:
        yield path, f"Too many: {len(templates)}: must have at most 8 items"
    seen: set[str] = set()
    for i, template in enumerate(templates):
        item = f"{path}[{i}]"
        if not template.name:
            yield required(f"{item}.name")
        else:
            for message in name_is_dns_label(template.name, False):
                yield invalid(f"{item}.name", template.name, message)
            if template.name in seen:
                yield f"{item}", f'Duplicate value: {{"name":"{template.name}"}}'
            seen.add(template.name)
        yield from _policy(template.scheduling_policy, f"{item}.schedulingPolicy")
        yield from _unsupported(template, item)
    ref = workload.spec.controller_ref
    if ref is not None:
        if not ref.kind:
            yield required("spec.controllerRef.kind")
        if not ref.name:
            yield required("spec.controllerRef.name")
        for message in path_segment_name(ref.name, False) if ref.name else ():
            yield invalid("spec.controllerRef.name", ref.name, message)


def _unsupported(spec: PodGroupSpec | PodGroupTemplate, path: str) -> FieldErrors:
    """The fields of gates that are off (+k8s:ifDisabled(...)=+k8s:forbidden):
    field.Forbidden with no detail prints as "Forbidden"."""
    for field, value in (
        ("schedulingConstraints", spec.scheduling_constraints),
        ("resourceClaims", spec.resource_claims or None),
        ("disruptionMode", spec.disruption_mode),
        ("priorityClassName", spec.priority_class_name or None),
        ("priority", spec.priority),
    ):
        if value is not None:
            yield f"{path}.{field}", "Forbidden"
