"""resource.Quantity with kube's exact semantics.

A quantity is held as an exact Fraction so that "0.1", "100m" and "1e-1" are
equal and nothing is lost to binary floating point. Scheduling works in
integers: CPU in milli-units and everything else in units, both rounded up,
as Quantity.MilliValue() and Quantity.Value() do upstream.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_QUANTITY = re.compile(
    rf"^(?P<number>{_NUMBER})(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?|[eE](?P<exp>[+-]?\d+))$",
    re.ASCII,  # ASCII digits only, as parseQuantityString reads them
)


class QuantityError(ValueError):
    """A string that is not a valid resource.Quantity."""


# The largest amount a Quantity holds as an int64 (maxAllowed upstream): ParseQuantity
# caps binary-suffixed values there; decimal ones beyond it are refused here, since
# Value() and MilliValue() would overflow upstream.
MAX_AMOUNT = 2**63 - 1
MAX_MILLI_VALUE = MAX_AMOUNT // 1000  # MaxMilliValue: the most MilliValue() holds
_NANO = 10**9
_LOG2 = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_POWER = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# Digits kept below the nano place when a long fraction is cut short: with at least
# 61 (more than log10 of the largest binary factor, 2**60), the dropped tail can only
# add one nano, never change a kept digit (see _nanos).
_GUARD_DIGITS = 61


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    """ParseQuantity: the value rounded up (in magnitude) to a whole nano, in time
    bounded by the text's length whatever its exponent ("1e999999999" is refused at
    once, never computed)."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    number = match["number"]
    negative = number.startswith("-")
    whole, _, fraction = number.lstrip("+-").partition(".")
    significant = (whole + fraction).lstrip("0")
    digits = significant.rstrip("0")
    if not digits:
        return Fraction(0)
    # value = int(digits) * 10**power * 2**binary
    power = len(significant) - len(digits) - len(fraction)
    binary = 0
    if match["exp"] is not None:
        exponent = int(match["exp"]) if len(match["exp"]) <= 20 else None
        if exponent is None or not -(2**63) <= exponent < 2**63:
            # suffixHandler.interpret parses the exponent as an int64.
            raise QuantityError(f"unable to parse quantity's suffix, got {text!r}")
        power += exponent
    elif (match["suffix"] or "") in _LOG2:
        binary = _LOG2[match["suffix"]]
    else:
        power += _POWER[match["suffix"] or ""]
    too_large = len(digits) - 1 + power > 19  # at least 10**20, whatever the factor
    nanos = None if too_large else _nanos(digits, power, binary)
    if nanos is None or nanos > MAX_AMOUNT * _NANO:
        if not binary:
            raise QuantityError(
                f"quantity {text!r} is too large: the most a quantity holds is {MAX_AMOUNT}"
            )
        nanos = MAX_AMOUNT * _NANO  # ParseQuantity caps BinarySI at maxAllowed
    return Fraction(-nanos if negative else nanos, _NANO)


def _nanos(digits: str, power: int, binary: int) -> int:
    """ceil(int(digits) * 10**power * 2**binary * 10**9), `digits` without leading
    or trailing zeros and the value below 10**20: the amount in nanos, rounded up
    as ParseQuantity rounds to inf.Dec scale 9 (inf.RoundUp)."""
    shift = power + 9
    if shift >= 0:
        scale: int = 10**shift
        return (int(digits) << binary) * scale
    below = -shift  # digits of `digits` below the nano place
    if below <= _GUARD_DIGITS:
        divisor: int = 10**below
        return -(-(int(digits) << binary) // divisor)
    # A long fraction: keep _GUARD_DIGITS digits below the nano place. The dropped
    # tail f (0 < f < 1, the last digit is not 0) gives (kept + f) / M with the
    # integer M = 5**binary * 10**(_GUARD_DIGITS - binary), whose ceiling is
    # kept // M + 1 for any such f.
    dropped = below - _GUARD_DIGITS
    kept = int(digits[: len(digits) - dropped]) if len(digits) > dropped else 0
    modulus: int = 5**binary * 10 ** (_GUARD_DIGITS - binary)
    return kept // modulus + 1


def parse_quantity(value: str | int | float) -> Fraction:
    """Parse a quantity as it appears in YAML or JSON (a string or a bare number)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must be strings or numbers, got {value!r}")
    if isinstance(value, int):
        if abs(value) > MAX_AMOUNT:
            raise QuantityError(
                f"quantity {value} is too large: the most a quantity holds is {MAX_AMOUNT}"
            )
        return Fraction(value)
    if isinstance(value, float):
        # repr gives the shortest text that round-trips, i.e. what the user wrote.
        return _parse_text(repr(value))
    if isinstance(value, str):
        return _parse_text(value)
    raise QuantityError(f"quantities must be strings or numbers, got {type(value).__name__}")


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def milli_value(value: str | int | float) -> int:
    """The quantity in milli-units, rounded up (Quantity.MilliValue)."""
    return _ceil(parse_quantity(value) * 1000)


def value(value: str | int | float) -> int:
    """The quantity in units, rounded up (Quantity.Value)."""
    return _ceil(parse_quantity(value))


def resource_amount(resource: str, quantity: str | int | float) -> int:
    """The integer amount scheduling uses: milli-CPU for cpu, units for the rest."""
    return milli_value(quantity) if resource == "cpu" else value(quantity)


def format_amount(resource: str, amount: int) -> str:
    """A short human form of an integer amount, for reports."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount >= factor and amount % factor == 0:
                return f"{amount // factor}{suffix}"
            if amount >= factor * 10:
                return f"{amount / factor:.1f}{suffix}"
    return str(amount)
