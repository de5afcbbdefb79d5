"""RuntimeClasses: their validation, and the RuntimeClass admission plugin the API
server runs on every new pod (plugin/pkg/admission/runtimeclass/admission.go).

Admission sets `spec.overhead` from the pod's RuntimeClass (setOverhead) and merges
the class's `scheduling` into the pod's node selector and tolerations
(setScheduling); then it checks the overhead (validateOverhead). The scheduler
reads the result: NodeResourcesFit counts the overhead, NodeAffinity the node
selector, TaintToleration the tolerations.

A pod that names a RuntimeClass missing from the input but already carries an
overhead was admitted in its cluster (a dump whose RuntimeClasses were not dumped
with it): it keeps what it has, and a note lists it, as Priority admission does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubesched.api.node import RuntimeClass
from kubesched.api.objects import PodSpec, ResourceRequirements, Toleration
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.cluster.validation.field_errors import FieldErrors, duplicate, invalid, required
from kubesched.cluster.validation.names_labels import (
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_labels,
    validate_object_meta,
)
from kubesched.cluster.validation.pod_spec import validate_tolerations
from kubesched.cluster.validation.resources import validate_requirements


def validate_runtime_class(rc: RuntimeClass) -> FieldErrors:
    """ValidateRuntimeClass (pkg/apis/node/validation)."""
    yield from validate_object_meta(rc.metadata, name_is_dns_subdomain, namespaced=False)
    if not rc.handler:
        yield required("handler")
    else:
        for message in name_is_dns_label(rc.handler, False):
            yield invalid("handler", rc.handler, message)
    if rc.overhead is not None:
        # validateOverhead: the container rules, with the overhead as limits.
        limits = ResourceRequirements(limits=dict(rc.overhead.pod_fixed))
        yield from validate_requirements(limits, "overhead")
    if rc.scheduling is not None:
        if rc.scheduling.node_selector is not None:
            yield from validate_labels(rc.scheduling.node_selector, "scheduling.nodeSelector")
        tolerations = rc.scheduling.tolerations
        yield from validate_tolerations(tolerations, "scheduling.tolerations")
        seen: set[tuple[str, str, str, str]] = set()
        for i, t in enumerate(tolerations):
            key = (t.key, t.operator, t.value, t.effect)
            if key in seen:
                yield duplicate(f"scheduling.tolerations[{i}]", _toleration_text(t))
            seen.add(key)


def _toleration_text(t: Toleration) -> dict[str, object]:
    shown: dict[str, object] = {"key": t.key, "operator": t.operator, "value": t.value}
    shown["effect"] = t.effect
    if t.toleration_seconds is not None:
        shown["tolerationSeconds"] = t.toleration_seconds
    return shown


def _same_resources(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """apiequality.Semantic.DeepEqual of two ResourceLists: quantities compare by
    value ("1" equals "1000m")."""
    if a.keys() != b.keys():
        return False
    try:
        return all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)  # type: ignore[arg-type]
    except QuantityError:
        return a == b


def admit_runtime_class(
    spec: PodSpec, classes: Mapping[str, RuntimeClass], kept: list[str], key: str
) -> tuple[str, str] | None:
    """The RuntimeClass admission plugin on a new pod (Admit, then Validate): the
    spec field and the reason it is forbidden, or None. `spec` is the pod's own (a
    workload's pods share their template's maps and lists: they are replaced,
    never changed)."""
    name = spec.runtime_class_name
    rc = None if name is None else classes.get(name)
    if name is not None and rc is None:
        if spec.overhead:
            kept.append(key)
            return None
        return "runtimeClassName", f'pod rejected: RuntimeClass "{name}" not found'
    overhead = None if rc is None or rc.overhead is None else rc.overhead.pod_fixed
    if overhead is not None:
        # setOverhead; an overhead already set must be the class's.
        if spec.overhead and not _same_resources(overhead, spec.overhead):
            return "overhead", _OVERHEAD_MISMATCH
        spec.overhead = dict(overhead)
    elif spec.overhead:
        # validateOverhead: an overhead needs a RuntimeClass that defines one.
        return "overhead", _OVERHEAD_WITHOUT_CLASS
    if rc is not None and rc.scheduling is not None:
        error = _set_scheduling(spec, rc)
        if error is not None:
            return "nodeSelector", error
    return None


_OVERHEAD_MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
_OVERHEAD_WITHOUT_CLASS = (
    "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
)


def _set_scheduling(spec: PodSpec, rc: RuntimeClass) -> str | None:
    """setScheduling: the class's node selector joins the pod's (a key both set to
    different values is a conflict), and the tolerations are merged."""
    assert rc.scheduling is not None
    selector = rc.scheduling.node_selector or {}
    if spec.node_selector:
        merged = dict(spec.node_selector)
        for label, value in selector.items():
            pod_value = merged.get(label)
            if pod_value is not None and pod_value != value:
                return (
                    f"conflict: runtimeClass.scheduling.nodeSelector[{label}] = {value}; "
                    f"pod.spec.nodeSelector[{label}] = {pod_value}"
                )
            merged[label] = value
        spec.node_selector = merged
    elif selector:
        spec.node_selector = dict(selector)
    spec.tolerations = merge_tolerations(spec.tolerations, rc.scheduling.tolerations)
    return None


def merge_tolerations(
    first: Sequence[Toleration], second: Sequence[Toleration]
) -> list[Toleration]:
    """tolerations.MergeTolerations (pkg/util/tolerations): both lists, less each
    toleration another one already covers (of two equal ones, the first stays)."""
    everything = [*first, *second]
    merged: list[Toleration] = []
    for i, t in enumerate(everything):
        if any(_is_superset(kept, t) for kept in merged):
            continue
        if any(t != later and _is_superset(later, t) for later in everything[i + 1 :]):
            continue
        merged.append(t)
    return merged


def _is_superset(ss: Toleration, t: Toleration) -> bool:
    """isSuperset: whether `ss` tolerates everything `t` does."""
    if ss == t:
        return True
    if t.key != ss.key and (ss.key or ss.operator != "Exists"):
        return False
    if t.effect != ss.effect and ss.effect:
        return False
    if (
        ss.effect == "NoExecute"
        and ss.toleration_seconds is not None
        and (t.toleration_seconds is None or t.toleration_seconds > ss.toleration_seconds)
    ):
        return False
    if ss.operator in ("Equal", ""):
        return t.operator == "Equal" and t.value == ss.value
    return ss.operator == "Exists"
