"""Affinity terms and topology spread constraints, as pkg/apis/core/validation
checks them (validateAffinity and its helpers, validateTopologySpreadConstraints).

Before validating a new pod the apiserver merges each matchLabelKeys entry the
pod has a label for into the term's labelSelector as an `In` requirement (and
each mismatchLabelKeys entry as `NotIn`): mutatePodAffinity (MatchLabelKeysInPodAffinity,
GA) and mutateTopologySpreadConstraints (MatchLabelKeysInPodTopologySpreadSelectorMerge,
beta and on in v1.36). ValidateMatchLabelKeysAndMismatchLabelKeys then finds a key
named twice; the merge is done here only in thought (`pod_labels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubesched.api.names import (
    dns1123_subdomain_errors,
    label_value_errors,
)
from kubesched.api.objects import (
    Affinity,
    LabelSelector,
    NodeSelectorTerm,
    PodAffinity,
    PodAffinityTerm,
    TopologySpreadConstraint,
)
from kubesched.cluster.validation.field_errors import (
    FieldErrors,
    duplicate,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
)
from kubesched.cluster.validation.names_labels import (
    name_is_dns_label,
    validate_label_name,
    validate_label_selector,
)

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _validate_node_selector_term(
    term: NodeSelectorTerm, path: str, allow_invalid: bool
) -> FieldErrors:
    """ValidateNodeSelectorTerm: ValidateNodeSelectorRequirement for expressions,
    ValidateNodeFieldSelectorRequirement (metadata.name only) for fields."""
    for j, req in enumerate(term.match_expressions):
        where = f"{path}.matchExpressions[{j}]"
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
        elif req.operator in ("Gt", "Lt"):
            if len(req.values) != 1:
                yield required(
                    f"{where}.values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
        else:
            yield invalid(f"{where}.operator", req.operator, "not a valid selector operator")
        yield from validate_label_name(req.key, f"{where}.key")
        if not allow_invalid:
            for k, value in enumerate(req.values):
                yield from invalid_each(f"{where}.values[{k}]", value, label_value_errors(value))
    for j, req in enumerate(term.match_fields):
        where = f"{path}.matchFields[{j}]"
        if req.operator in ("In", "NotIn"):
            if len(req.values) != 1:
                yield required(
                    f"{where}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
        else:
            yield invalid(f"{where}.operator", req.operator, "not a valid selector operator")
        if req.key != "metadata.name":
            yield invalid(f"{where}.key", req.key, "not a valid field selector key")
        else:
            for k, value in enumerate(req.values):
                yield from invalid_each(
                    f"{where}.values[{k}]", value, dns1123_subdomain_errors(value)
                )


def _validate_weight(weight: int, path: str) -> FieldErrors:
    if weight <= 0 or weight > 100:
        yield invalid(f"{path}.weight", weight, "must be in the range 1-100")


def _validate_pod_affinity_term(
    term: PodAffinityTerm, path: str, pod_labels: Mapping[str, str]
) -> FieldErrors:
    """validatePodAffinityTerm."""
    yield from validate_label_selector(term.label_selector, f"{path}.labelSelector")
    yield from validate_label_selector(term.namespace_selector, f"{path}.namespaceSelector")
    for name in term.namespaces:
        yield from invalid_each(f"{path}.namespace", name, name_is_dns_label(name, False))
    yield from validate_match_label_keys(
        path, term.match_label_keys, term.mismatch_label_keys, term.label_selector, pod_labels
    )
    if not term.topology_key:
        yield required(f"{path}.topologyKey", "can not be empty")
    yield from validate_label_name(term.topology_key, f"{path}.topologyKey")


def _validate_pod_affinity(
    affinity: PodAffinity, path: str, pod_labels: Mapping[str, str]
) -> FieldErrors:
    """validatePodAffinity / validatePodAntiAffinity."""
    for i, term in enumerate(affinity.required_during_scheduling_ignored_during_execution):
        yield from _validate_pod_affinity_term(term, f"{path}.{_REQUIRED}[{i}]", pod_labels)
    for i, weighted in enumerate(affinity.preferred_during_scheduling_ignored_during_execution):
        where = f"{path}.{_PREFERRED}[{i}]"
        yield from _validate_weight(weighted.weight, where)
        yield from _validate_pod_affinity_term(
            weighted.pod_affinity_term, f"{where}.podAffinityTerm", pod_labels
        )


def validate_affinity(
    affinity: Affinity | None, path: str, pod_labels: Mapping[str, str]
) -> FieldErrors:
    """validateAffinity; `pod_labels` as for validate_match_label_keys."""
    if affinity is None:
        return
    node = affinity.node_affinity
    if node is not None:
        where = f"{path}.nodeAffinity"
        selector = node.required_during_scheduling_ignored_during_execution
        if selector is not None:
            terms_path = f"{where}.{_REQUIRED}.nodeSelectorTerms"
            if not selector.node_selector_terms:
                yield required(terms_path, "must have at least one node selector term")
            for i, term in enumerate(selector.node_selector_terms):
                yield from _validate_node_selector_term(term, f"{terms_path}[{i}]", False)
        for i, preferred in enumerate(node.preferred_during_scheduling_ignored_during_execution):
            term_path = f"{where}.{_PREFERRED}[{i}]"
            yield from _validate_weight(preferred.weight, term_path)
            # Preferred terms always allow invalid label values (ValidatePreferredSchedulingTerms).
            yield from _validate_node_selector_term(
                preferred.preference, f"{term_path}.preference", True
            )
    if affinity.pod_affinity is not None:
        yield from _validate_pod_affinity(affinity.pod_affinity, f"{path}.podAffinity", pod_labels)
    if affinity.pod_anti_affinity is not None:
        yield from _validate_pod_affinity(
            affinity.pod_anti_affinity, f"{path}.podAntiAffinity", pod_labels
        )


def validate_match_label_keys(
    path: str,
    match_label_keys: Sequence[str],
    mismatch_label_keys: Sequence[str],
    selector: LabelSelector | None,
    pod_labels: Mapping[str, str] | None = None,
) -> FieldErrors:
    """ValidateMatchLabelKeysAndMismatchLabelKeys. `pod_labels` stand for the
    requirements the pod strategy's PrepareForCreate merged into the selector
    before (mutatePodAffinity, mutateTopologySpreadConstraints)."""
    for field_name, keys in (
        ("matchLabelKeys", match_label_keys),
        ("mismatchLabelKeys", mismatch_label_keys),
    ):
        if not keys:
            continue
        if selector is None:
            yield forbidden(
                f"{path}.{field_name}", "must not be specified when labelSelector is not set"
            )
            continue
        for i, key in enumerate(keys):
            yield from validate_label_name(key, f"{path}.{field_name}[{i}]")
    if selector is not None:
        index = {key: i for i, key in enumerate(match_label_keys)}
        seen = set(selector.match_labels)
        expression_keys = [req.key for req in selector.match_expressions]
        if pod_labels is not None:  # applyLabelKeysToLabelSelector: In, then NotIn
            expression_keys += [k for k in match_label_keys if k in pod_labels]
            expression_keys += [k for k in mismatch_label_keys if k in pod_labels]
        for key in expression_keys:
            if key in index and key in seen:
                yield invalid(
                    f"{path}[{index[key]}]", key, "exists in both matchLabelKeys and labelSelector"
                )
            seen.add(key)
    mismatched = set(mismatch_label_keys)
    for i, key in enumerate(match_label_keys):
        if key in mismatched:
            yield invalid(
                f"{path}.matchLabelKeys[{i}]",
                key,
                "exists in both matchLabelKeys and mismatchLabelKeys",
            )


_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_NODE_INCLUSION_POLICIES = ("Honor", "Ignore")


def validate_topology_spread(
    constraints: Sequence[TopologySpreadConstraint], path: str, pod_labels: Mapping[str, str]
) -> FieldErrors:
    """validateTopologySpreadConstraints."""
    for i, constraint in enumerate(constraints):
        where = f"{path}[{i}]"
        if constraint.max_skew <= 0:
            yield invalid(f"{where}.maxSkew", constraint.max_skew, "must be greater than zero")
        if not constraint.topology_key:
            yield required(f"{where}.topologyKey", "can not be empty")
        action = constraint.when_unsatisfiable
        if action not in _WHEN_UNSATISFIABLE:
            yield not_supported(f"{where}.whenUnsatisfiable", action, _WHEN_UNSATISFIABLE)
        for other in constraints[i + 1 :]:
            if (other.topology_key, other.when_unsatisfiable) == (constraint.topology_key, action):
                yield duplicate(
                    f"{where}.{{topologyKey, whenUnsatisfiable}}",
                    f"{{{constraint.topology_key}, {action}}}",
                )
                break
        if constraint.min_domains is not None:
            if constraint.min_domains <= 0:
                yield invalid(
                    f"{where}.minDomains", constraint.min_domains, "must be greater than zero"
                )
            if action != "DoNotSchedule":
                yield invalid(
                    f"{where}.minDomains",
                    constraint.min_domains,
                    f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}",
                )
        for field_name, policy in (
            ("nodeAffinityPolicy", constraint.node_affinity_policy),
            ("nodeTaintsPolicy", constraint.node_taints_policy),
        ):
            if policy is not None and policy not in _NODE_INCLUSION_POLICIES:
                yield not_supported(f"{where}.{field_name}", policy, _NODE_INCLUSION_POLICIES)
        yield from validate_match_label_keys(
            where, constraint.match_label_keys, [], constraint.label_selector, pod_labels
        )
        yield from validate_label_selector(constraint.label_selector, f"{where}.labelSelector")
