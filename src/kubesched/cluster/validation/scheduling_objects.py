"""Nodes, PriorityClasses and PodDisruptionBudgets, as the apiserver validates
them: ValidateNode (pkg/apis/core/validation), ValidatePriorityClass
(pkg/apis/scheduling/validation) and ValidatePodDisruptionBudget
(pkg/apis/policy/validation), each after its ObjectMeta.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import msgspec

from kubesched.api.names import (
    label_value_errors,
    regex_error,
)
from kubesched.api.objects import IntOrString, Node, PodDisruptionBudget, PriorityClass
from kubesched.cluster.validation.field_errors import (
    FieldErrors,
    forbidden,
    invalid,
)
from kubesched.cluster.validation.names_labels import (
    name_is_dns_subdomain,
    path_segment_name,
    validate_label_name,
    validate_label_selector,
    validate_object_meta,
)
from kubesched.cluster.validation.pod_spec import validate_preemption_policy, validate_taint_effect
from kubesched.cluster.validation.resources import validate_resource_values

# scheduling.SystemPriorityClasses: name -> (value, globalDefault).
SYSTEM_PRIORITY_CLASSES: Mapping[str, tuple[int, bool]] = {
    "system-node-critical": (2000001000, False),
    "system-cluster-critical": (2000000000, False),
}
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000
_PERCENT = re.compile(r"[0-9]+%")


def _go_json(value: object) -> str:
    """json.Marshal's compact text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def validate_node(node: Node) -> FieldErrors:
    """ValidateNode: its ObjectMeta, taints (which upstream reports under
    `metadata.taints`, not `spec.taints`) and the quantities of its resources."""
    yield from validate_object_meta(node.metadata, name_is_dns_subdomain, namespaced=False)
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(node.spec.taints):
        where = f"metadata.taints[{i}]"
        yield from validate_label_name(taint.key, f"{where}.key")
        errors = label_value_errors(taint.value)
        if errors:
            yield invalid(f"{where}.value", taint.value, ";".join(errors))
        yield from validate_taint_effect(taint.effect, f"{where}.effect")
        if (taint.effect, taint.key) in seen:
            # The bad value is the internal core.Taint, whose fields have no JSON tags.
            shown = {
                "Key": taint.key,
                "Value": taint.value,
                "Effect": taint.effect,
                "TimeAdded": taint.time_added,
            }
            yield (
                where,
                f"Duplicate value: {_go_json(shown)}: taints must be unique by key and effect pair",
            )
            continue
        seen.add((taint.effect, taint.key))
    yield from validate_resource_values(node.status.capacity, "status.capacity")
    yield from validate_resource_values(node.status.allocatable, "status.allocatable")


def validate_priority_class(pc: PriorityClass) -> FieldErrors:
    """ValidatePriorityClass: the system- prefix is reserved for the built-in
    classes (with their values), user classes go up to 1,000,000,000."""
    yield from validate_object_meta(pc.metadata, name_is_dns_subdomain, namespaced=False)
    name = pc.metadata.name
    if name.startswith("system-"):
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        reason = None
        if known is None:
            reason = f"{name} is not a known system priority class"
        elif known[0] != pc.value:
            reason = f"value of {name} PriorityClass must be {known[0]}"
        elif known[1] != pc.global_default:
            reason = f"globalDefault of {name} PriorityClass must be {str(known[1]).lower()}"
        if reason is not None:
            yield forbidden(
                "metadata.name",
                "priority class names with 'system-' prefix are reserved for system use only. "
                f"error: {reason}",
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        yield forbidden(
            "value",
            "maximum allowed value of a user defined priority is "
            f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
        )
    if pc.preemption_policy is not None:
        yield from validate_preemption_policy(pc.preemption_policy, "preemptionPolicy")


def _validate_int_or_percent(value: IntOrString, path: str) -> FieldErrors:
    """ValidatePositiveIntOrPercent and IsNotMoreThan100Percent."""
    if isinstance(value, str):
        if _PERCENT.fullmatch(value) is None:
            message = "a valid percent string must be a numeric string followed by an ending '%'"
            yield invalid(path, value, regex_error(message, "[0-9]+%", "1%", "93%"))
        elif int(value[:-1]) > 100:
            yield invalid(path, value, "must not be greater than 100%")
    elif value < 0:
        yield invalid(path, value, "must be greater than or equal to 0")


def validate_pdb(pdb: PodDisruptionBudget, raw_spec: object) -> FieldErrors:
    """ValidatePodDisruptionBudget, then the generic registry's ObjectMeta check (a
    PDB's name is only a path segment)."""
    spec = pdb.spec
    if spec.min_available is not None and spec.max_unavailable is not None:
        # The bad value is the internal policy.PodDisruptionBudgetSpec (no JSON tags
        # of its own; the selector is metav1's, which has them).
        policy = raw_spec.get("unhealthyPodEvictionPolicy") if isinstance(raw_spec, dict) else None
        selector = None
        if spec.selector is not None:
            selector = {
                key: value for key, value in msgspec.to_builtins(spec.selector).items() if value
            }
        shown = {
            "MinAvailable": spec.min_available,
            "Selector": selector,
            "MaxUnavailable": spec.max_unavailable,
            "UnhealthyPodEvictionPolicy": policy,
        }
        yield (
            "spec",
            f"Invalid value: {_go_json(shown)}: minAvailable and maxUnavailable cannot be both set",
        )
    if spec.min_available is not None:
        yield from _validate_int_or_percent(spec.min_available, "spec.minAvailable")
    if spec.max_unavailable is not None:
        yield from _validate_int_or_percent(spec.max_unavailable, "spec.maxUnavailable")
    yield from validate_label_selector(spec.selector, "spec.selector")
    yield from validate_object_meta(pdb.metadata, path_segment_name, namespaced=True)
