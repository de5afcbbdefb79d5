"""Consumable capacity (structured/internal/incubating/consumable_capacity.go of v1.36).

Amounts are exact Fractions of the quantities' values."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from kubesched.api.objects import RawQuantity
from kubesched.api.quantity import parse_quantity
from kubesched.api.resource import (
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CapacityRequirements,
    DeviceCapacity,
)

Consumed = dict[str, Fraction]


class CapacityError(Exception):
    """A request names a capacity the device does not have."""


def _q(value: RawQuantity) -> Fraction:
    return parse_quantity(value)


def _ceil(value: Fraction) -> int:
    """Quantity.Value(): rounded up to an integer."""
    return math.ceil(value)


def request_over_capacity_ok(
    consumed: Mapping[str, Fraction],
    requested: CapacityRequirements | None,
    capacity: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, Fraction],
) -> bool:
    """CmpRequestOverCapacity: True if the request fits next to what is consumed and
    being allocated; CapacityError if it asks for a capacity the device lacks."""
    if requested is not None and any(name not in capacity for name in requested.requests):
        raise CapacityError("some requested capacity has not been defined")
    for name, cap in capacity.items():
        asked = requested.requests.get(name) if requested is not None else None
        amount = consumed_amount(asked, cap)
        if _violates_policy(amount, cap.request_policy):
            return False
        total = consumed.get(name, Fraction(0)) + amount + allocating.get(name, Fraction(0))
        if total > _q(cap.value):
            return False
    return True


def consumed_amount(requested: RawQuantity | None, cap: DeviceCapacity) -> Fraction:
    """calculateConsumedCapacity: the request rounded up to what the policy allows;
    no request takes the policy's default, or else the whole capacity."""
    policy = cap.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return _q(policy.default)
        return _q(cap.value)
    value = _q(requested)
    if policy is None:
        return value
    if policy.valid_range is not None and policy.valid_range.min is not None:
        return _round_up_range(value, policy.valid_range)
    if policy.valid_values:
        for valid in policy.valid_values:
            if value <= _q(valid):
                return _q(valid)
    return value


def _round_up_range(value: Fraction, valid_range: CapacityRequestPolicyRange) -> Fraction:
    """roundUpRange: below min takes min; else min + n*step, rounded up, in whole units."""
    assert valid_range.min is not None
    low = _q(valid_range.min)
    if value < low:
        return low
    if valid_range.step is None:
        return value
    step = _ceil(_q(valid_range.step))
    base = _ceil(low)
    added = _ceil(value) - base
    n = _go_div(added, step)
    if _go_mod(added, step) != 0:
        n += 1
    return Fraction(base + step * n)


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _go_mod(a: int, b: int) -> int:
    return a - b * _go_div(a, b)


def _violates_policy(value: Fraction, policy: CapacityRequestPolicy | None) -> bool:
    """violatesPolicy."""
    if policy is None:
        return False
    if policy.default is not None and value == _q(policy.default):
        return False
    if policy.valid_range is not None:
        valid_range = policy.valid_range
        if valid_range.max is not None and value > _q(valid_range.max):
            return True
        if valid_range.step is not None:
            step = _ceil(_q(valid_range.step))
            low = _ceil(_q(valid_range.min)) if valid_range.min is not None else 0
            if _go_mod(_ceil(value) - low, step) != 0:
                return True
        return False
    if policy.valid_values:
        return all(value != _q(v) for v in policy.valid_values)
    return False


def consumed_from_request(
    requested: CapacityRequirements | None, capacity: Mapping[str, DeviceCapacity]
) -> Consumed:
    """GetConsumedCapacityFromRequest: every capacity of the device gets an amount."""
    return {
        name: consumed_amount(requested.requests.get(name) if requested is not None else None, cap)
        for name, cap in capacity.items()
    }


_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_DECIMAL = (("E", 10**18), ("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def format_quantity(value: Fraction, binary: bool = True) -> str:
    """A canonical quantity text for a result (resource.Quantity.String() of a
    BinarySI value: the largest binary suffix that divides it; fractions in milli
    or smaller decimal units)."""
    if value.denominator == 1:
        number = value.numerator
        if number == 0:
            return "0"
        for suffix, factor in _BINARY if binary else _DECIMAL:
            if number % factor == 0:
                return f"{number // factor}{suffix}"
        return str(number)
    for suffix, factor in (("m", 10**3), ("u", 10**6), ("n", 10**9)):
        scaled = value * factor
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    return f"{math.ceil(value * 10**9)}n"
