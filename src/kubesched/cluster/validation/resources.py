"""Resource names, quantities, and requests against limits, as
pkg/apis/core/validation does them (validateResourceName,
validateContainerResourceName, validatePodResourceName,
validateResourceRequirements, ValidateResourceQuantityValue), with the
helpers of pkg/apis/core/helper (IsNativeResource, IsExtendedResourceName, ...).

The quantities have been parsed once already (manifest_validation's checks come
first), so parse errors do not reach here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import lru_cache

from kubesched.api.names import (
    is_extended_resource_name,
    is_native_resource,
    qualified_name_errors,
)
from kubesched.api.objects import RawQuantity, ResourceRequirements
from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.cluster.validation.field_errors import (
    FieldError,
    FieldErrors,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
)

HUGEPAGES_PREFIX = "hugepages-"
_REQUESTS_PREFIX = "requests."
# helper.standardResources, for validateResourceName.
_STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "persistentvolumeclaims",
        "configmaps",
        "services.nodeports",
        "services.loadbalancers",
        "requests.storage",
    }
)
_STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
_INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_POD_LEVEL_RESOURCES = ("cpu", "hugepages-", "memory")  # SupportedPodLevelResources, sorted


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


is_native = is_native_resource
is_extended = is_extended_resource_name


def _is_standard(name: str) -> bool:
    """helper.IsStandardResourceName."""
    return (
        name in _STANDARD_RESOURCES
        or is_hugepages(name)
        or name.startswith(_REQUESTS_PREFIX + HUGEPAGES_PREFIX)
    )


def validate_resource_name(name: str, path: str) -> FieldErrors:
    """validateResourceName: a qualified name; unprefixed ones must be standard."""
    errors = qualified_name_errors(name)
    if errors:
        yield from invalid_each(path, name, errors)
        return
    if "/" not in name and not _is_standard(name):
        yield invalid(path, name, "must be a standard resource type or fully qualified")


def _container_resource_name_errors(name: str, path: str) -> FieldErrors:
    yield from validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not is_hugepages(name):
            yield invalid(path, name, "must be a standard resource for containers")
    elif not is_native(name) and not is_extended(name):
        yield invalid(path, name, "doesn't follow extended resource name standard")


def _pod_resource_name_errors(name: str, path: str) -> FieldErrors:
    errors = list(validate_resource_name(name, path))
    if errors:
        yield from errors
        return
    if name not in ("cpu", "memory") and not is_hugepages(name):
        yield not_supported(path, name, _POD_LEVEL_RESOURCES)


# The rules depend on the name only: each name is judged once (pods repeat them).
@lru_cache(maxsize=1024)
def _container_name_bodies(name: str) -> tuple[str, ...]:
    return tuple(body for _, body in _container_resource_name_errors(name, ""))


@lru_cache(maxsize=1024)
def _pod_name_bodies(name: str) -> tuple[str, ...]:
    return tuple(body for _, body in _pod_resource_name_errors(name, ""))


def validate_container_resource_name(name: str, path: str) -> FieldErrors:
    """validateContainerResourceName: cpu, memory, ephemeral-storage, hugepages-*,
    or an extended resource (a domain-prefixed name outside kubernetes.io)."""
    for body in _container_name_bodies(name):
        yield path, body


def validate_pod_resource_name(name: str, path: str) -> FieldErrors:
    """validatePodResourceName: pod-level resources are cpu, memory and hugepages."""
    for body in _pod_name_bodies(name):
        yield path, body


def _amount(quantity: RawQuantity) -> Fraction:
    try:
        return parse_quantity(quantity)
    except QuantityError:  # reported before validation runs
        return Fraction(0)


def validate_quantity_value(name: str, quantity: RawQuantity, path: str) -> FieldErrors:
    """ValidateResourceQuantityValue: not negative; whole for integer resources
    (extended resources among them)."""
    amount = _amount(quantity)
    if amount < 0:
        yield invalid(path, quantity_text(quantity), "must be greater than or equal to 0")
    if (name in _INTEGER_RESOURCES or is_extended(name)) and amount.denominator != 1:
        # MilliValue() % 1000: the amount rounded up to milli-units must be whole.
        milli = -((-amount * 1000) // 1)
        if milli % 1000:
            yield invalid(path, quantity_text(quantity), "must be an integer")


def _hugepage_error(name: str, quantity: RawQuantity) -> str | None:
    """validateResourceQuantityHugePageValue (IsHugePageResourceValueDivisible)."""
    try:
        page = parse_quantity(name[len(HUGEPAGES_PREFIX) :])
    except QuantityError:
        page = Fraction(0)
    amount = _amount(quantity)
    if page > 0 and page.denominator == 1 and amount.denominator == 1 and amount % page == 0:
        return None
    return f"{quantity_text(quantity)} is not positive integer multiple of {name}"


def validate_requirements(
    res: ResourceRequirements, path: str, *, pod_level: bool = False
) -> FieldErrors:
    """validateResourceRequirements (the container rules, or the pod-level ones):
    names and quantities of limits and requests; a request above its limit (or,
    for resources that cannot be overcommitted, other than its limit); limits
    required for those; hugepages need cpu or memory."""
    if not res.requests and not res.limits:
        return
    key = (tuple(res.requests.items()), tuple(res.limits.items()), pod_level)
    for suffix, body in _requirement_errors(*key):
        yield f"{path}{suffix}", body


# Pods made from one template repeat their requirements: each set is judged once.
@lru_cache(maxsize=4096)
def _requirement_errors(
    requests: tuple[tuple[str, RawQuantity], ...],
    limits: tuple[tuple[str, RawQuantity], ...],
    pod_level: bool,
) -> tuple[FieldError, ...]:
    """The errors with paths relative to the requirements (".limits[cpu]")."""
    check = validate_pod_resource_name if pod_level else validate_container_resource_name
    res = ResourceRequirements(requests=dict(requests), limits=dict(limits))
    return tuple(_requirements_errors(res, "", check))


def _requirements_errors(
    res: ResourceRequirements, path: str, name_check: Callable[[str, str], FieldErrors]
) -> FieldErrors:
    limits_path, requests_path = f"{path}.limits", f"{path}.requests"
    has_cpu_or_memory = has_hugepages = False
    for name, quantity in res.limits.items():
        where = f"{limits_path}[{name}]"
        yield from name_check(name, where)
        yield from validate_quantity_value(name, quantity, where)
        if is_hugepages(name):
            has_hugepages = True
            error = _hugepage_error(name, quantity)
            if error is not None:
                yield invalid(where, quantity_text(quantity), error)
        has_cpu_or_memory = has_cpu_or_memory or name in ("cpu", "memory")
    for name, quantity in res.requests.items():
        where = f"{requests_path}[{name}]"
        yield from name_check(name, where)
        yield from validate_quantity_value(name, quantity, where)
        overcommit = is_native(name) and not is_hugepages(name)  # IsOvercommitAllowed
        if name in res.limits:
            request, limit = _amount(quantity), _amount(res.limits[name])
            if request != limit and not overcommit:
                yield invalid(
                    requests_path,
                    quantity_text(quantity),
                    f"must be equal to {name} limit of {quantity_text(res.limits[name])}",
                )
            elif request > limit:
                yield invalid(
                    requests_path,
                    quantity_text(quantity),
                    f"must be less than or equal to {name} limit of "
                    f"{quantity_text(res.limits[name])}",
                )
        elif not overcommit:
            yield required(limits_path, "Limit must be set for non overcommitable resources")
        if is_hugepages(name):
            has_hugepages = True
            error = _hugepage_error(name, quantity)
            if error is not None:
                yield invalid(where, quantity_text(quantity), error)
        has_cpu_or_memory = has_cpu_or_memory or name in ("cpu", "memory")
    if has_hugepages and not has_cpu_or_memory:
        yield forbidden(path, "HugePages require cpu or memory")


def validate_resource_values(resources: Mapping[str, RawQuantity], path: str) -> FieldErrors:
    """ValidateNodeResources: each quantity of a node's capacity or allocatable."""
    for name, quantity in resources.items():
        yield from validate_quantity_value(name, quantity, f"{path}[{name}]")


# --- Quantity.String() -------------------------------------------------------------

_BINARY_SUFFIXES: tuple[tuple[str, int], ...] = tuple(
    (suffix, 2 ** (10 * power))
    for power, suffix in ((6, "Ei"), (5, "Pi"), (4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki"))
)
_DECIMAL_SUFFIXES = {18: "E", 15: "P", 12: "T", 9: "G", 6: "M", 3: "k", 0: "", -3: "m"}
_DECIMAL_SUFFIXES |= {-6: "u", -9: "n"}


def quantity_text(quantity: RawQuantity) -> str:
    """The canonical text Quantity.String() gives (CanonicalizeBytes): in the format
    the quantity was written in (binary, decimal or exponent), with the largest
    suffix that keeps the mantissa whole; amounts finer than 1n round up."""
    text = str(quantity).strip() if not isinstance(quantity, float) else repr(quantity)
    try:
        amount = parse_quantity(quantity)
    except QuantityError:
        return text
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    binary = any(text.endswith(s) for s, _ in _BINARY_SUFFIXES)
    exponent_form = not binary and ("e" in text.lower()) and not text.lower().endswith("e")
    if binary and amount >= 1024 and amount.denominator == 1:
        whole = int(amount)
        for suffix, factor in _BINARY_SUFFIXES:
            if whole % factor == 0:
                return f"{sign}{whole // factor}{suffix}"
        return f"{sign}{whole}"
    nanos = -((-amount * 10**9) // 1)  # round up to nano units
    if nanos == 0:
        return "0"
    exponent = -9
    while exponent < 18 and nanos % 1000 == 0:
        nanos //= 1000
        exponent += 3
    if exponent_form:
        return f"{sign}{nanos}" if exponent == 0 else f"{sign}{nanos}e{exponent}"
    return f"{sign}{nanos}{_DECIMAL_SUFFIXES[exponent]}"
