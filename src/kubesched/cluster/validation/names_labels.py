"""Names, label keys and values, annotations, label selectors and ObjectMeta, as
apimachinery validates them (pkg/util/validation, pkg/api/validate/content,
pkg/apis/meta/v1/validation, pkg/api/validation ValidateObjectMeta).

The texts are upstream's, including its two spellings of the length limit:
util/validation's IsDNS1123Label/Subdomain say "characters" (object names),
content's say "bytes" (the prefix of a label key, label values).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

from kubesched.api.objects import LabelSelector, ObjectMeta
from kubesched.cluster.validation.field_errors import (
    FieldErrors,
    forbidden,
    invalid,
    invalid_each,
    required,
    too_long,
)

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY = re.compile(_LABEL_KEY_FMT)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * (1 << 10)  # TotalAnnotationSizeLimitB


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """validation.RegexError."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}'" for e in examples)
    return f"{message} (e.g. {shown}, regex used for validation is '{fmt}')"


def _byte_length(value: str) -> int:
    return len(value.encode())  # Go's len() counts bytes


@lru_cache(maxsize=4096)
def dns1123_label_errors(value: str) -> tuple[str, ...]:
    """validation.IsDNS1123Label."""
    errors = []
    if _byte_length(value) > 63:
        errors.append("must be no more than 63 characters")
    if _DNS1123_LABEL.fullmatch(value) is None:
        if _DNS1123_SUBDOMAIN.fullmatch(value) is not None:
            errors.append("must not contain dots")
        else:
            errors.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return tuple(errors)


@lru_cache(maxsize=4096)
def dns1123_subdomain_errors(value: str, unit: str = "characters") -> tuple[str, ...]:
    """validation.IsDNS1123Subdomain ("characters"); content.IsDNS1123Subdomain ("bytes")."""
    errors = []
    if _byte_length(value) > 253:
        errors.append(f"must be no more than 253 {unit}")
    if _DNS1123_SUBDOMAIN.fullmatch(value) is None:
        errors.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return tuple(errors)


@lru_cache(maxsize=4096)
def qualified_name_errors(value: str) -> tuple[str, ...]:
    """validation.IsQualifiedName (content.IsLabelKey): an optional DNS-subdomain
    prefix and '/', then a name of at most 63 characters."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in dns1123_subdomain_errors(prefix, "bytes"))
    else:
        return (
            "a valid label key "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errors.append("name part must be non-empty")
    elif _byte_length(name) > 63:
        errors.append("name part must be no more than 63 bytes")
    if _LABEL_KEY.fullmatch(name) is None:
        errors.append(
            "name part "
            + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(errors)


@lru_cache(maxsize=4096)
def label_value_errors(value: str) -> tuple[str, ...]:
    """validation.IsValidLabelValue (content.IsLabelValue)."""
    errors = []
    if _byte_length(value) > 63:
        errors.append("must be no more than 63 bytes")
    if _LABEL_VALUE.fullmatch(value) is None:
        errors.append(
            regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345")
        )
    return tuple(errors)


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
    total = sum(_byte_length(k) + _byte_length(v) for k, v in annotations.items())
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
