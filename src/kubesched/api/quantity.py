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
    rf"^(?P<number>{_NUMBER})(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?|[eE](?P<exp>[+-]?\d+))$"
)


class QuantityError(ValueError):
    """A string that is not a valid resource.Quantity."""


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    number = Fraction(match["number"])
    if match["exp"] is not None:
        return number * Fraction(10) ** int(match["exp"])
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    return number * _DECIMAL[suffix]


def parse_quantity(value: str | int | float) -> Fraction:
    """Parse a quantity as it appears in YAML or JSON (a string or a bare number)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must be strings or numbers, got {value!r}")
    if isinstance(value, int):
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
