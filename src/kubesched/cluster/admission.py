"""What the apiserver does to the objects of the manifests besides storing them:
the built-in PriorityClasses, the namespaces that exist without being created,
and the Priority admission plugin (plugin/pkg/admission/priority, admitPod)
that turns a pod's `spec.priorityClassName` into `spec.priority` and
`spec.preemptionPolicy`.
"""

from __future__ import annotations

from collections.abc import Mapping

from kubesched.api.objects import Namespace, ObjectMeta, PodSpec, PriorityClass
from kubesched.cluster.generated_names import _uid

# The classes the apiserver creates at start-up (scheduling.SystemPriorityClasses).
BUILTIN_PRIORITY_CLASSES: Mapping[str, int] = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"

# Namespaces the apiserver always creates.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def builtin_priority_classes() -> dict[str, PriorityClass]:
    return {
        name: PriorityClass(
            metadata=ObjectMeta(name=name, uid=_uid("PriorityClass", "", name)),
            value=value,
            preemption_policy=PREEMPT_LOWER_PRIORITY,
        )
        for name, value in BUILTIN_PRIORITY_CLASSES.items()
    }


def _implicit_namespace(name: str) -> Namespace:
    return Namespace(
        metadata=ObjectMeta(
            name=name, uid=_uid("Namespace", "", name), labels={NAMESPACE_NAME_LABEL: name}
        )
    )


def _admit_priority(
    spec: PodSpec,
    classes: Mapping[str, PriorityClass],
    default_class: PriorityClass | None,
    kept: list[str],
    key: str,
) -> str | None:
    """The Priority admission plugin; an error message if it rejects the pod.

    A pod that already carries spec.priority (a dump of admitted pods) keeps
    it, also when its class is not in the input; that is listed in a note."""
    if spec.priority_class_name:
        pc = classes.get(spec.priority_class_name)
        if pc is None:
            if spec.priority is None:
                return f"no PriorityClass with name {spec.priority_class_name} was found"
            kept.append(key)
            if spec.preemption_policy is None:
                spec.preemption_policy = PREEMPT_LOWER_PRIORITY
            return None
        value, policy = pc.value, pc.preemption_policy
    elif default_class is not None:
        value, policy = default_class.value, default_class.preemption_policy
        if spec.priority is None:
            spec.priority_class_name = default_class.metadata.name
    else:
        value, policy = 0, PREEMPT_LOWER_PRIORITY
    if spec.priority is None:
        spec.priority = value
    elif spec.priority != value:
        kept.append(key)
    if spec.preemption_policy is None:
        spec.preemption_policy = policy or PREEMPT_LOWER_PRIORITY
    return None
