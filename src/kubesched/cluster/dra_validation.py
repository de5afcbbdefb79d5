"""Checks of the DRA objects read from manifests, as a 1.36 apiserver's validation
makes them (pkg/apis/resource/validation: validateDeviceClaim, validateDeviceRequest,
validateDeviceAllocationMode, validateResourceSliceSpec, validateDevice, ...).

Only what would make the apiserver refuse the object, and what the scheduler would
otherwise trip over, is checked; CEL expressions are compiled by the plugin. Each
check gives the first problem as (field, message), or None. Where Go's defaulting
can tell an absent field from a zero one and msgspec cannot (a request's `count`),
the raw document is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.resource import (
    ALL,
    EXACT_COUNT,
    DeviceAttribute,
    DeviceClaim,
    DeviceClass,
    DeviceSelector,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimStatus,
    ResourceSlice,
)

Problem = tuple[str, str]

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_REQUEST_REF = (
    "must be the name of a request in the claim or the name of a request and a "
    "subrequest separated by '/'"
)


def _label(name: str, path: str) -> Problem | None:
    """validateRequestName: a DNS label (RFC 1123)."""
    if not name:
        return path, "Required value"
    if len(name) > 63 or _DNS1123_LABEL.fullmatch(name) is None:
        return path, (
            f"Invalid value: {name!r}: a lowercase RFC 1123 label must consist of lower "
            f"case alphanumeric characters or '-', and must start and end with an "
            f"alphanumeric character"
        )
    return None


def _subdomain(name: str, path: str) -> Problem | None:
    """validateDeviceClassName, validateDriverName: a DNS subdomain (RFC 1123)."""
    if not name:
        return path, "Required value"
    if len(name) > 253 or _DNS1123_SUBDOMAIN.fullmatch(name) is None:
        return path, (
            f"Invalid value: {name!r}: a lowercase RFC 1123 subdomain must consist of "
            f"lower case alphanumeric characters, '-' or '.', and must start and end "
            f"with an alphanumeric character"
        )
    return None


def _duplicate(names: Iterable[str], path: str) -> Problem | None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            return f"{path}[{i}]", f"Duplicate value: {name!r}"
        seen.add(name)
    return None


def _raw(raw: object, *keys: str | int) -> Any:
    """The value at `keys` in the raw document, or None."""
    node: Any = raw
    for key in keys:
        if isinstance(key, int):
            if not isinstance(node, list) or key >= len(node):
                return None
            node = node[key]
        elif isinstance(node, dict):
            node = node.get(key)
        else:
            return None
    return node


def _selectors(selectors: Sequence[DeviceSelector], path: str) -> Problem | None:
    for i, selector in enumerate(selectors):
        if selector.cel is None:
            return f"{path}[{i}].cel", "Required value"
        if not selector.cel.expression.strip():
            return f"{path}[{i}].cel.expression", "Required value: expression is empty"
    return None


def _allocation_mode(mode: str, raw_count: object, path: str) -> Problem | None:
    """validateDeviceAllocationMode, after SetDefaults_ExactDeviceRequest (mode
    ExactCount when empty, count 1 for ExactCount when absent)."""
    if mode == ALL:
        if raw_count not in (None, 0):
            return f"{path}.count", "must not be specified when allocationMode is 'All'"
        return None
    if mode == EXACT_COUNT:
        # An absent or zero count was defaulted to 1; only a negative one is left.
        if isinstance(raw_count, int) and raw_count < 0:
            return f"{path}.count", "must be greater than zero"
        return None
    return (
        f"{path}.allocationMode",
        f'Unsupported value: "{mode}": supported values: "All", "ExactCount"',
    )


def _default_mode(request: ExactDeviceRequest | DeviceSubRequest) -> None:
    """SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest. msgspec gives an
    absent count 1, which Go leaves 0 for mode All."""
    if not request.allocation_mode:
        request.allocation_mode = EXACT_COUNT
    if request.allocation_mode == EXACT_COUNT and request.count == 0:
        request.count = 1
    elif request.allocation_mode == ALL:
        request.count = 0


def check_device_claim(claim: DeviceClaim, raw: object, path: str) -> Problem | None:
    """validateDeviceClaim: `raw` is the raw `devices` mapping, `path` its field path."""
    names: dict[str, set[str]] = {}
    for i, request in enumerate(claim.requests):
        at = f"{path}.requests[{i}]"
        problem = _label(request.name, f"{at}.name")
        if problem is not None:
            return problem
        if request.exactly is None and not request.first_available:
            return at, "Required value: exactly one of `exactly` or `firstAvailable` is required"
        if request.exactly is not None and request.first_available:
            return at, (
                "Invalid value: exactly one of `exactly` or `firstAvailable` is required, "
                "but multiple fields are set"
            )
        exact = request.exactly
        if exact is not None:
            _default_mode(exact)
            problem = (
                _subdomain(exact.device_class_name, f"{at}.exactly.deviceClassName")
                or _selectors(exact.selectors, f"{at}.exactly.selectors")
                or _allocation_mode(
                    exact.allocation_mode,
                    _raw(raw, "requests", i, "exactly", "count"),
                    f"{at}.exactly",
                )
            )
            if problem is not None:
                return problem
            names[request.name] = set()
            continue
        for j, sub in enumerate(request.first_available):
            sub_at = f"{at}.firstAvailable[{j}]"
            _default_mode(sub)
            problem = (
                _label(sub.name, f"{sub_at}.name")
                or _subdomain(sub.device_class_name, f"{sub_at}.deviceClassName")
                or _selectors(sub.selectors, f"{sub_at}.selectors")
                or _allocation_mode(
                    sub.allocation_mode,
                    _raw(raw, "requests", i, "firstAvailable", j, "count"),
                    sub_at,
                )
            )
            if problem is not None:
                return problem
        problem = _duplicate((s.name for s in request.first_available), f"{at}.firstAvailable")
        if problem is not None:
            return problem
        names[request.name] = {s.name for s in request.first_available}
    problem = _duplicate((r.name for r in claim.requests), f"{path}.requests")
    if problem is not None:
        return problem
    for i, constraint in enumerate(claim.constraints):
        at = f"{path}.constraints[{i}]"
        problem = _request_refs(constraint.requests, names, f"{at}.requests")
        if problem is not None:
            return problem
        both = constraint.match_attribute is not None and constraint.distinct_attribute is not None
        if both:
            return at, (
                'Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
                "required, but multiple fields are set"
            )
        if constraint.match_attribute is None and constraint.distinct_attribute is None:
            return f"{at}.matchAttribute", "Required value"
    for i, config in enumerate(claim.config):
        at = f"{path}.config[{i}]"
        problem = _request_refs(config.requests, names, f"{at}.requests") or _opaque(
            config.opaque, at
        )
        if problem is not None:
            return problem
    return None


def _request_refs(refs: Sequence[str], names: Mapping[str, set[str]], path: str) -> Problem | None:
    """validateRequestNameRef: "request" or "request/subrequest" of this claim."""
    for i, ref in enumerate(refs):
        request, _, sub = ref.partition("/")
        known = request in names and (not sub or sub in names[request])
        if not known or sub.count("/"):
            return f"{path}[{i}]", f"Invalid value: {ref!r}: {_REQUEST_REF}"
    return None


def _opaque(opaque: object, path: str) -> Problem | None:
    if opaque is None:
        return f"{path}.opaque", "Required value"
    driver = getattr(opaque, "driver", "")
    return _subdomain(driver, f"{path}.opaque.driver")


def _check_status(status: ResourceClaimStatus, names: set[str]) -> Problem | None:
    """What a claim read with its status (a cluster dump) must hold."""
    if status.reserved_for and status.allocation is None:
        return "status.reservedFor", "Forbidden: may not be specified when `allocated` is not set"
    for i, ref in enumerate(status.reserved_for):
        for field, value in (("resource", ref.resource), ("name", ref.name), ("uid", ref.uid)):
            if not value:
                return f"status.reservedFor[{i}].{field}", "Required value"
    if status.allocation is not None:
        for i, result in enumerate(status.allocation.devices.results):
            at = f"status.allocation.devices.results[{i}]"
            if result.request.partition("/")[0] not in names:
                return f"{at}.request", f"Invalid value: {result.request!r}: {_REQUEST_REF}"
            for field, value in (
                ("driver", result.driver),
                ("pool", result.pool),
                ("device", result.device),
            ):
                if not value:
                    return f"{at}.{field}", "Required value"
    return None


def check_claim(claim: ResourceClaim, raw: Mapping[str, Any]) -> Problem | None:
    return check_device_claim(
        claim.spec.devices, _raw(raw, "spec", "devices"), "spec.devices"
    ) or _check_status(claim.status, {r.name for r in claim.spec.devices.requests})


def check_template_spec(devices: DeviceClaim, raw: Mapping[str, Any]) -> Problem | None:
    return check_device_claim(devices, _raw(raw, "spec", "spec", "devices"), "spec.spec.devices")


def check_class(device_class: DeviceClass) -> Problem | None:
    spec = device_class.spec
    problem = _selectors(spec.selectors, "spec.selectors")
    if problem is not None:
        return problem
    for i, config in enumerate(spec.config):
        problem = _opaque(config.opaque, f"spec.config[{i}]")
        if problem is not None:
            return problem
    return None


def _quantity(raw: object, path: str) -> Problem | None:
    try:
        amount = parse_quantity(raw)  # type: ignore[arg-type]
    except QuantityError as exc:
        return path, str(exc)
    if amount < 0:
        return path, f"must be greater than or equal to 0, got {raw!r}"
    return None


def _attribute(attribute: DeviceAttribute, path: str) -> Problem | None:
    values = (
        attribute.int_value,
        attribute.bool_value,
        attribute.string_value,
        attribute.version_value,
    )
    if sum(v is not None for v in values) != 1:
        return path, "Invalid value: exactly one value must be specified"
    return None


def _node_selection(fields: dict[str, object], path: str, what: str) -> Problem | None:
    """Exactly one of the node selection fields (validateResourceSliceSpec/validateDevice)."""
    chosen: list[str] = []
    for name, value in fields.items():
        if value is None:
            continue
        if name == "nodeName" and value == "":
            return f"{path}.nodeName", "must be either unset or set to a non-empty string"
        if value is False:
            return f"{path}.{name}", "must be either unset or set to true"
        chosen.append(f"`{name}`")
    if len(chosen) == 1:
        return None
    listed = ", ".join(f"`{name}`" for name in fields)
    if not chosen:
        return path, f"Required value: exactly one of {listed} is required{what}"
    return path, (
        f"Invalid value: {{{', '.join(chosen)}}}: exactly one of {listed} is required{what}, "
        f"but multiple fields are set"
    )


def check_slice(resource_slice: ResourceSlice) -> Problem | None:
    spec = resource_slice.spec
    problem = _subdomain(spec.driver, "spec.driver")
    if problem is not None:
        return problem
    if not spec.pool.name:
        return "spec.pool.name", "Required value"
    if spec.pool.resource_slice_count <= 0:
        return "spec.pool.resourceSliceCount", "must be greater than zero"
    if spec.pool.generation < 0:
        return "spec.pool.generation", "must be greater than or equal to zero"
    problem = _node_selection(
        {
            "nodeName": spec.node_name,
            "nodeSelector": spec.node_selector,
            "allNodes": spec.all_nodes,
            "perDeviceNodeSelection": spec.per_device_node_selection,
        },
        "spec",
        "",
    )
    if problem is not None:
        return problem
    if spec.node_selector is not None and len(spec.node_selector.node_selector_terms) != 1:
        return "spec.nodeSelector.nodeSelectorTerms", "must have exactly one node selector term"
    if spec.shared_counters and spec.devices:
        return "spec", "Invalid value: only one of `sharedCounters` or `devices` is allowed"
    per_device = spec.per_device_node_selection is True
    for i, device in enumerate(spec.devices):
        at = f"spec.devices[{i}]"
        problem = _label(device.name, f"{at}.name") or _device_nodes(device, at, per_device)
        if problem is not None:
            return problem
        for name, attribute in device.attributes.items():
            problem = _attribute(attribute, f"{at}.attributes[{name}]")
            if problem is not None:
                return problem
        for name, capacity in device.capacity.items():
            problem = _quantity(capacity.value, f"{at}.capacity[{name}].value")
            if problem is not None:
                return problem
        for j, consumption in enumerate(device.consumes_counters):
            c_at = f"{at}.consumesCounters[{j}]"
            if not consumption.counter_set:
                return f"{c_at}.counterSet", "Required value"
            if not consumption.counters:
                return f"{c_at}.counters", "Required value"
            for name, counter in consumption.counters.items():
                problem = _quantity(counter.value, f"{c_at}.counters[{name}].value")
                if problem is not None:
                    return problem
    problem = _duplicate((d.name for d in spec.devices), "spec.devices")
    if problem is not None:
        return problem
    for i, counter_set in enumerate(spec.shared_counters):
        at = f"spec.sharedCounters[{i}]"
        if not counter_set.name:
            return f"{at}.name", "Required value"
        if not counter_set.counters:
            return f"{at}.counters", "Required value"
        for name, counter in counter_set.counters.items():
            problem = _quantity(counter.value, f"{at}.counters[{name}].value")
            if problem is not None:
                return problem
    return _duplicate((c.name for c in spec.shared_counters), "spec.sharedCounters")


def _device_nodes(device: Any, path: str, per_device: bool) -> Problem | None:
    fields = {
        "nodeName": device.node_name,
        "nodeSelector": device.node_selector,
        "allNodes": device.all_nodes,
    }
    if per_device:
        return _node_selection(
            fields,
            path,
            " when `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        )
    if any(value is not None for value in fields.values()):
        return path, (
            "Invalid value: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
        )
    return None
