"""Checks of the objects read from manifests, as the apiserver's validation
makes them (ValidatePod's resource quantities, ValidateDeployment's selector,
ValidateJob's counts, ...), and the field paths of msgspec's decoding errors
turned into the ones the API names ("spec.containers[0].resources.requests.cpu").

Each check gives the first problem as (field, message), or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kubesched.api.labels import selects
from kubesched.api.objects import LabelSelector, PodSpec, ResourceList, ResourceRequirements
from kubesched.api.quantity import MAX_AMOUNT, MAX_MILLI_VALUE, QuantityError, parse_quantity
from kubesched.api.workloads import DaemonSet, Job, ReplicationController, StatefulSet, Workload
from kubesched.cluster.validation.field_errors import FieldErrors, required
from kubesched.cluster.validation.names_labels import (
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_annotations,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
)
from kubesched.cluster.validation.pod_spec import validate_pod_spec

MAX_INT32 = 2**31 - 1  # replicas, parallelism, completions, ordinals.start are int32


def _type_word(obj: object) -> str:
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "bool"
    if isinstance(obj, int):
        return "int"
    if isinstance(obj, float):
        return "float"
    if isinstance(obj, str):
        return "str"
    if isinstance(obj, list | tuple):
        return "array"
    if isinstance(obj, dict):
        return "object"
    return type(obj).__name__


_AT_PATH = re.compile(r"^(?P<message>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_AT_KEY = re.compile(r"^(?P<message>.*) - at `key` in `\$(?P<path>[^`]*)`$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<name>[^`]+)`$")
_GOT = re.compile(r"got `(?P<type>[^`]+)`")
_PATH_TOKEN = re.compile(r"\.(?P<key>[^.\[]+)|\[(?P<index>\d+)\]|(?P<any>\[\.\.\.\])")


def _validation_field(error: str, raw: object) -> tuple[str | None, str]:
    """Turn msgspec's "Expected `int`, got `str` - at `$.spec.replicas`" into
    ("spec.replicas", "Expected `int`, got `str`"). msgspec writes a dict key it
    does not name as `[...]`; the key is looked up in the raw document."""
    match = _AT_KEY.match(error)
    if match is not None:
        path = _resolve_path(raw, match["path"], None)
        return path or None, f"{match['message']} (a key)"
    match = _AT_PATH.match(error)
    if match is None:
        return None, error
    message = match["message"]
    got = _GOT.search(message)
    path = _resolve_path(raw, match["path"], got["type"] if got else None)
    missing = _MISSING.match(message)
    if missing is not None:
        path = f"{path}.{missing['name']}" if path else missing["name"]
    return path or None, message


def _resolve_path(raw: object, path: str, got: str | None) -> str:
    tokens: list[tuple[str, str]] = []
    for token in _PATH_TOKEN.finditer(path):
        if token["key"] is not None:
            tokens.append(("key", token["key"]))
        elif token["index"] is not None:
            tokens.append(("index", token["index"]))
        else:
            tokens.append(("any", ""))
    found = _walk(raw, tokens, got) if any(t[0] == "any" for t in tokens) else None
    if found is None:
        found = [
            f".{v}" if k == "key" else f"[{v}]" if k == "index" else "[...]" for k, v in tokens
        ]
    return "".join(found).lstrip(".")


def _walk(node: object, tokens: list[tuple[str, str]], got: str | None) -> list[str] | None:
    if not tokens:
        return [] if got is None or _type_word(node) == got else None
    (kind, value), rest = tokens[0], tokens[1:]
    children: Iterable[tuple[str, object]]
    if kind == "any":
        if isinstance(node, dict):
            children = ((f".{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            children = ((f"[{i}]", v) for i, v in enumerate(node))
        else:
            return None
    elif kind == "key":
        if not isinstance(node, dict) or value not in node:
            return None
        children = ((f".{value}", node[value]),)
    else:
        index = int(value)
        if not isinstance(node, list) or index >= len(node):
            return None
        children = ((f"[{index}]", node[index]),)
    for step, child in children:
        found = _walk(child, rest, got)
        if found is not None:
            return [step, *found]
    return None


def _check_quantities(resources: ResourceList, path: str) -> tuple[str, str] | None:
    for name, quantity in resources.items():
        try:
            amount = parse_quantity(quantity)
        except QuantityError as exc:
            return f"{path}.{name}", str(exc)
        if amount < 0:
            return f"{path}.{name}", f"must be greater than or equal to 0, got {quantity!r}"
        if name == "cpu" and amount * 1000 > MAX_AMOUNT:
            # The scheduler counts cpu in millicores (MilliValue), an int64 upstream.
            return f"{path}.{name}", (
                f"must be less than or equal to {MAX_MILLI_VALUE}m, got {quantity!r}"
            )
    return None


def _check_requirements(res: ResourceRequirements, path: str) -> tuple[str, str] | None:
    return _check_quantities(res.requests, f"{path}.requests") or _check_quantities(
        res.limits, f"{path}.limits"
    )


def _check_pod_spec(spec: PodSpec, path: str) -> tuple[str, str] | None:
    """The first malformed quantity or resource claim entry in a pod spec, as (field,
    message)."""
    for i, claim in enumerate(spec.resource_claims):
        # validatePodResourceClaimSource: a claim by name or from a template.
        by_name = claim.resource_claim_name is not None
        if by_name and claim.resource_claim_template_name is not None:
            return f"{path}.resourceClaims[{i}]", (
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
            )
        if not by_name and claim.resource_claim_template_name is None:
            return f"{path}.resourceClaims[{i}]", (
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
            )
    for group, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        for i, container in enumerate(containers):
            res = container.resources
            if res.requests or res.limits:
                error = _check_requirements(res, f"{path}.{group}[{i}].resources")
                if error:
                    return error
    if spec.overhead:
        error = _check_quantities(spec.overhead, f"{path}.overhead")
        if error:
            return error
    if spec.resources is not None:
        return _check_requirements(spec.resources, f"{path}.resources")
    return None


def _check_workload(workload: Workload) -> tuple[str, str] | None:
    spec = workload.spec
    counts: list[tuple[str, int | None]] = []
    if isinstance(workload, Job):
        counts = [("parallelism", workload.spec.parallelism)]
        counts.append(("completions", workload.spec.completions))
        mode = workload.spec.completion_mode
        if mode not in (None, "NonIndexed", "Indexed"):
            return "spec.completionMode", f"supported values: NonIndexed, Indexed; got {mode!r}"
        if mode == "Indexed" and workload.spec.completions is None:
            return (
                "spec.completions",
                "when completion mode is Indexed, completions is required",
            )
    elif not isinstance(workload, DaemonSet):
        counts = [("replicas", workload.spec.replicas)]
    if isinstance(workload, StatefulSet) and workload.spec.ordinals is not None:
        counts.append(("ordinals.start", workload.spec.ordinals.start))
    for name, count in counts:
        if count is not None and count < 0:
            return f"spec.{name}", f"must be greater than or equal to 0, got {count}"
        if count is not None and count > MAX_INT32:
            # An int32 field: the apiserver cannot decode a larger number into it.
            return f"spec.{name}", f"must be less than or equal to {MAX_INT32}, got {count}"
    if isinstance(workload, StatefulSet):
        for i, claim in enumerate(workload.spec.volume_claim_templates):
            if not claim.metadata.name:
                return f"spec.volumeClaimTemplates[{i}].metadata.name", "name is required"
    selector = (
        LabelSelector(match_labels=workload.spec.selector)
        if isinstance(workload, ReplicationController)
        else workload.spec.selector
    )
    if (
        selector is not None
        and not isinstance(workload, Job)
        and not selects(selector, spec.template.metadata.labels)
    ):
        return (
            "spec.template.metadata.labels",
            "`selector` does not match template `labels`",
        )
    return _check_pod_spec(spec.template.spec, "spec.template.spec")


def validate_workload_object(workload: Workload) -> FieldErrors:
    """ValidateDeployment/ReplicaSet/StatefulSet/DaemonSet/Job: the name (a DNS
    label for StatefulSets, whose pods are named after them), the selector, and
    the pod template (ValidatePodTemplateSpec: its labels, annotations and spec)."""
    meta = workload.metadata
    check = name_is_dns_label if isinstance(workload, StatefulSet) else name_is_dns_subdomain
    yield from validate_object_meta(meta, check, namespaced=True)
    if isinstance(workload, ReplicationController):
        # ValidateReplicationControllerSpec: ValidateNonEmptySelector.
        if not workload.spec.selector:
            yield required("spec.selector")
        yield from validate_labels(workload.spec.selector, "spec.selector")
    else:
        yield from validate_label_selector(workload.spec.selector, "spec.selector")
    template = workload.spec.template
    yield from validate_labels(template.metadata.labels, "spec.template.metadata.labels")
    yield from validate_annotations(
        template.metadata.annotations, "spec.template.metadata.annotations"
    )
    yield from validate_pod_spec(template.spec, template.metadata.labels, "spec.template.spec")
