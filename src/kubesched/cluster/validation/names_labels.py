"""Names, label keys and values, annotations, label selectors and ObjectMeta as
fields of a manifest, as apimachinery validates them (pkg/apis/meta/v1/validation,
pkg/api/validation ValidateObjectMeta); the rules themselves are api/names.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kubesched.api.names import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    byte_length,
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    qualified_name_errors,
)
from kubesched.api.objects import LabelSelector, ObjectMeta
from kubesched.cluster.validation.field_errors import (
    FieldErrors,
    forbidden,
    invalid,
    invalid_each,
    required,
    too_long,
)

# --- names (apimachinery pkg/api/validation/generic.go) ---------------------------

NameCheck = Callable[[str, bool], Sequence[str]]


def _mask_trailing_dash(name: str) -> str:
    """maskTrailingDash: a generateName may end in '-' (a suffix follows)."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool) -> Sequence[str]:
    """NameIsDNSSubdomain: Pods, Nodes, PriorityClasses, most workloads."""
    return dns1123_subdomain_errors(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> Sequence[str]:
    """NameIsDNSLabel: Namespaces and StatefulSets."""
    return dns1123_label_errors(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> Sequence[str]:
    """NameIsDNS1035Label: Services (ValidateServiceName)."""
    return dns1035_label_errors(_mask_trailing_dash(name) if prefix else name)


def path_segment_name(name: str, prefix: bool) -> list[str]:
    """path.ValidatePathSegmentName: what the generic registry asks of every name
    (PodDisruptionBudgets have no stricter rule)."""
    errors = []
    if not prefix and name in (".", ".."):
        errors.append(f"may not be '{name}'")
    for illegal in ("/", "%"):
        if illegal in name:
            errors.append(f"may not contain '{illegal}'")
    return errors


# --- labels, annotations, selectors (metav1 validation) ----------------------------


def validate_label_name(key: str, path: str) -> FieldErrors:
    """ValidateLabelName."""
    yield from invalid_each(path, key, qualified_name_errors(key))


def validate_labels(labels: Mapping[str, str], path: str) -> FieldErrors:
    """ValidateLabels: the errors name the map, not the key."""
    for key, value in labels.items():
        yield from validate_label_name(key, path)
        yield from invalid_each(path, value, label_value_errors(value))


def validate_annotations(annotations: Mapping[str, str], path: str) -> FieldErrors:
    """ValidateAnnotations: qualified keys (checked lower-cased), 256 KiB in all."""
    for key in annotations:
        yield from invalid_each(path, key, qualified_name_errors(key.lower()))
    total = sum(byte_length(k) + byte_length(v) for k, v in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        yield too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT)


def validate_label_selector(
    selector: LabelSelector | None, path: str, *, allow_invalid_values: bool = False
) -> FieldErrors:
    """ValidateLabelSelector with ValidateLabelSelectorRequirement."""
    if selector is None:
        return
    yield from validate_labels(selector.match_labels, f"{path}.matchLabels")
    for i, req in enumerate(selector.match_expressions):
        where = f"{path}.matchExpressions[{i}]"
        if req.operator in ("In", "NotIn"):
            if not req.values:
                yield required(
                    f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                )
        elif req.operator in ("Exists", "DoesNotExist"):
            if req.values:
                yield forbidden(
                    f"{where}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
        else:
            yield invalid(f"{where}.operator", req.operator, "not a valid selector operator")
        yield from validate_label_name(req.key, f"{where}.key")
        if not allow_invalid_values:
            for j, value in enumerate(req.values):
                yield from invalid_each(f"{where}.values[{j}]", value, label_value_errors(value))


# --- ObjectMeta (ValidateObjectMetaAccessor) ---------------------------------------


def validate_object_meta(
    meta: ObjectMeta, name_check: NameCheck, *, namespaced: bool
) -> FieldErrors:
    """ValidateObjectMeta: generateName, name, namespace (a DNS label), labels,
    annotations. A name to be generated is checked as its generateName."""
    if meta.generate_name:
        yield from invalid_each(
            "metadata.generateName", meta.generate_name, name_check(meta.generate_name, True)
        )
    if meta.name:
        yield from invalid_each("metadata.name", meta.name, name_check(meta.name, False))
    elif not meta.generate_name:
        yield required("metadata.name", "name or generateName is required")
    if namespaced and meta.namespace:
        yield from invalid_each(
            "metadata.namespace", meta.namespace, name_is_dns_label(meta.namespace, False)
        )
    yield from validate_labels(meta.labels, "metadata.labels")
    yield from validate_annotations(meta.annotations, "metadata.annotations")
