"""The workload of bench/cel_libraries.py: DRA-style devices, the selectors run on
them with the result a plain-Python reference gives, the error cases, and the
Kubernetes quantity and semver values that the libraries' custom functions
(`quantity()`, `semver()`, `.compareTo`, ...) compute with."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from kubesched.api.quantity import parse_quantity as parse_kube_quantity

# --------------------------------------------------------------------------
# Kubernetes quantity and semver, Python side (what the custom functions call)
# --------------------------------------------------------------------------

_SEMVER_RE = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)


class Quantity:
    """A resource.Quantity reduced to its exact value (enough to compare)."""

    __slots__ = ("text", "value")

    def __init__(self, text: str) -> None:
        self.text = text
        # kubesched's own resource.Quantity parser (QuantityError is a ValueError).
        self.value = parse_kube_quantity(text)

    def compare(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"


class Semver:
    """A semantic version, compared as blang/semver (which Kubernetes uses) does."""

    __slots__ = ("key", "major", "minor", "patch", "text")

    def __init__(self, text: str) -> None:
        m = _SEMVER_RE.match(text)
        if m is None:
            raise ValueError(f"invalid semver {text!r}")
        self.text = text
        self.major, self.minor, self.patch = int(m[1]), int(m[2]), int(m[3])
        pre: tuple[tuple[int, int, str], ...] = ()
        if m[4]:
            pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in m[4].split("."))
        # A release sorts after all its pre-releases.
        self.key = (self.major, self.minor, self.patch, 0 if pre else 1, pre)

    def compare(self, other: Semver) -> int:
        return (self.key > other.key) - (self.key < other.key)

    def __repr__(self) -> str:
        return f"Semver({self.text!r})"


parse_quantity = functools.lru_cache(maxsize=4096)(Quantity)
parse_semver = functools.lru_cache(maxsize=4096)(Semver)

# Libraries that cannot carry a Python object inside CEL get these as tagged maps.
QTAG = "$quantity"
VTAG = "$semver"


def untag(v: Any) -> Quantity | Semver:
    """The Quantity or Semver behind a tagged map (or the object itself)."""
    if isinstance(v, Quantity | Semver):
        return v
    if QTAG in v:
        return parse_quantity(str(v[QTAG]))
    if VTAG in v:
        return parse_semver(str(v[VTAG]))
    raise TypeError(f"not a quantity or semver: {v!r}")


def k8s_major(v: Any) -> int:
    x = untag(v)
    if not isinstance(x, Semver):
        raise TypeError(f"major() of {type(x).__name__}")
    return x.major


def k8s_compare(a: Any, b: Any) -> int:
    x, y = untag(a), untag(b)
    if type(x) is not type(y):
        raise TypeError(f"cannot compare {type(x).__name__} with {type(y).__name__}")
    return x.compare(y)  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Devices and selectors
# --------------------------------------------------------------------------

GPU = "gpu.example.com"
MODELS = ("a100", "h100", "t4", "l4", "mi300")
MEMORY = ("16Gi", "40Gi", "80Gi", "40960Mi", "24G", "192Gi")
VERSIONS = ("1.0.0", "1.2.3", "1.10.0", "2.0.0-rc.1", "2.0.0", "1.2.3-alpha")


def make_device(i: int) -> dict[str, Any]:
    """Device i, with plain Python values (quantities and versions as Quantity/Semver)."""
    attrs: dict[str, Any] = {
        "model": MODELS[i % len(MODELS)],
        "cores": 16 * (1 + i % 8),
        "ecc": i % 3 != 0,
        "driverVersion": Semver(VERSIONS[i % len(VERSIONS)]),
    }
    if i % 2 == 0:
        attrs["numa"] = (i // 2) % 2
    return {
        "driver": "cpu.example.com" if i % 7 == 6 else GPU,
        "attributes": {GPU: attrs, "dra.example.com": {"index": i, "healthy": True}},
        "capacity": {GPU: {"memory": Quantity(MEMORY[i % len(MEMORY)])}},
    }


def tagged(v: Any) -> Any:
    """The device with Quantity/Semver replaced by tagged maps."""
    if isinstance(v, Quantity):
        return {QTAG: v.text}
    if isinstance(v, Semver):
        return {VTAG: v.text}
    if isinstance(v, dict):
        return {k: tagged(x) for k, x in v.items()}
    return v


Ref = Callable[[dict[str, Any]], Any]


def _a(d: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = d["attributes"][GPU]
    return attrs


def _mem(d: dict[str, Any]) -> Quantity:
    q: Quantity = d["capacity"][GPU]["memory"]
    return q


def _ver(d: dict[str, Any]) -> Semver:
    v: Semver = _a(d)["driverVersion"]
    return v


A = f'device.attributes["{GPU}"]'
C = f'device.capacity["{GPU}"]'

# (id, expression, reference result for a device, needs Kubernetes functions)
EXPRESSIONS: list[tuple[str, str, Ref, bool]] = [
    ("driver", f'device.driver == "{GPU}"', lambda d: d["driver"] == GPU, False),
    ("str-eq", f'{A}.model == "a100"', lambda d: _a(d)["model"] == "a100", False),
    ("bool-attr", f"{A}.ecc", lambda d: _a(d)["ecc"], False),
    ("int-cmp", f"{A}.cores >= 64", lambda d: _a(d)["cores"] >= 64, False),
    (
        "in-list",
        f'{A}.model in ["a100", "h100"]',
        lambda d: _a(d)["model"] in ("a100", "h100"),
        False,
    ),
    ("startsWith", f'{A}.model.startsWith("h")', lambda d: _a(d)["model"].startswith("h"), False),
    (
        "matches",
        f'{A}.model.matches("^[ah][0-9]+$")',
        lambda d: re.search(r"^[ah][0-9]+$", _a(d)["model"]) is not None,
        False,
    ),
    (
        "in-map-guard",
        f'"numa" in {A} && {A}.numa == 0',
        lambda d: _a(d).get("numa") == 0,
        False,
    ),
    ("has", f"has({A}.numa)", lambda d: "numa" in _a(d), False),
    (
        "exists-keys",
        'device.attributes.exists(k, k.endsWith(".example.com"))',
        lambda d: any(k.endswith(".example.com") for k in d["attributes"]),
        False,
    ),
    (
        "arith-or",
        f"{A}.cores * 2 + 8 > 100 || !{A}.ecc",
        lambda d: _a(d)["cores"] * 2 + 8 > 100 or not _a(d)["ecc"],
        False,
    ),
    ("q-literal", 'quantity("1Gi").compareTo(quantity("1024Mi")) == 0', lambda d: True, True),
    (
        "q-compareTo",
        f'{C}.memory.compareTo(quantity("40Gi")) >= 0',
        lambda d: _mem(d).compare(Quantity("40Gi")) >= 0,
        True,
    ),
    (
        "q-isGreaterThan",
        f'{C}.memory.isGreaterThan(quantity("32Gi"))',
        lambda d: _mem(d).compare(Quantity("32Gi")) > 0,
        True,
    ),
    (
        "v-isGreaterThan",
        f'{A}.driverVersion.isGreaterThan(semver("1.2.3"))',
        lambda d: _ver(d).compare(Semver("1.2.3")) > 0,
        True,
    ),
    (
        "v-compareTo",
        f'{A}.driverVersion.compareTo(semver("1.10.0")) >= 0',
        lambda d: _ver(d).compare(Semver("1.10.0")) >= 0,
        True,
    ),
    ("v-major", f"{A}.driverVersion.major() >= 2", lambda d: _ver(d).major >= 2, True),
    (
        "combined",
        f'device.driver == "{GPU}" && {A}.model in ["a100", "h100"]'
        f' && {C}.memory.compareTo(quantity("40Gi")) >= 0',
        lambda d: (
            d["driver"] == GPU
            and _a(d)["model"] in ("a100", "h100")
            and _mem(d).compare(Quantity("40Gi")) >= 0
        ),
        True,
    ),
]

# (id, expression, what Kubernetes does with it)
ERROR_CASES: list[tuple[str, str, str]] = [
    ("syntax", "device.driver ==", "compile error"),
    ("missing-key", 'device.attributes["missing.example.com"].model == "x"', "runtime error"),
    ("non-bool-dyn", f"{A}.cores", "compiles (attribute type); rejected when evaluated"),
    ("non-bool-static", "size(device.attributes)", "compile error (must evaluate to bool)"),
    ("undeclared-fn", "device.driver.frobnicate()", "compile error (undeclared reference)"),
    ("bad-quantity", 'quantity("12 apples").isGreaterThan(quantity("1"))', "runtime error"),
]
