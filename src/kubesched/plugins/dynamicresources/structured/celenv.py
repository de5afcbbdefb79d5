"""CEL device selectors (k8s.io/dynamic-resource-allocation/cel) on common-expression-language.

The environment follows upstream's compiler (cel/compile.go, newCompiler with
EnableConsumableCapacity): one variable `device` with `driver`,
`allowMultipleAllocations` (with DRAConsumableCapacity), `attributes` and
`capacity`, the latter two as `domain -> id -> value` maps where an id without a
domain belongs to the device's driver (parseQualifiedName). Versions are Kubernetes'
semver values and capacities its quantities, with the `semver()` and `quantity()`
libraries. The CEL library has no custom types, so both travel as tagged maps
({"$semver": ...}, {"$quantity": ...}) whose text is normalised, so that `==`
compares values as upstream does (1Gi == 1024Mi).

Upstream's maps (newStringInterfaceMapWithDefault) answer a lookup of a missing
domain with an empty map, so `device.attributes["other.example.com"].x` fails with
"no such key: x" rather than on the domain. The library cannot do that; the
domains an expression indexes with a string literal are added as empty maps to
every device instead (`in` and `has()` still see only the real ones there).

Differences left (the library has no type checker and no cost model):
- a result that is not a bool is a runtime error ("CEL result of type ... could
  not be converted to bool"), where upstream rejects a statically non-bool
  expression at compile time;
- functions the library does not know are compile errors only if no CEL or
  Kubernetes library has them; `cel.bind` is not available;
- the cost limit (CELSelectorExpressionMaxCost) is not enforced.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.api.resource import (
    Device,
    DeviceAttribute,
    DeviceClass,
    DeviceSelector,
    ResourceClaim,
)

QTAG = "$quantity"
VTAG = "$semver"

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


class CelEvalError(Exception):
    """A selector failed while evaluating (upstream: the error of Program.ContextEval)."""


# --- semver (k8s.io/apiserver/pkg/cel/library/semver.go, blang/semver) -------------------


@dataclass(frozen=True, slots=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...]

    def text(self) -> str:
        core = f"{self.major}.{self.minor}.{self.patch}"
        return core + ("-" + ".".join(str(p) for p in self.pre) if self.pre else "")

    def compare(self, other: Semver) -> int:
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if not self.pre or not other.pre:
            return (len(other.pre) > 0) - (len(self.pre) > 0)
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            if isinstance(x, int) and isinstance(y, int):
                return -1 if x < y else 1
            if isinstance(x, int):
                return -1
            if isinstance(y, int):
                return 1
            return -1 if str(x) < str(y) else 1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))


def parse_semver(text: str) -> Semver:
    """semver.Parse (strict: no leading "v", no missing parts); build metadata dropped."""
    match = _SEMVER.match(text)
    if match is None:
        raise ValueError(f"could not parse {text!r} as semver")
    pre: tuple[int | str, ...] = ()
    if match[4]:
        pre = tuple(int(p) if p.isdigit() else p for p in match[4].split("."))
    return Semver(int(match[1]), int(match[2]), int(match[3]), pre)


def _tag_semver(v: Semver) -> dict[str, str]:
    return {VTAG: v.text()}


def _tag_quantity(q: Fraction) -> dict[str, str]:
    return {QTAG: str(q)}


def _untag(v: Any) -> Semver | Fraction:
    if isinstance(v, dict):
        if QTAG in v:
            return Fraction(str(v[QTAG]))
        if VTAG in v:
            return parse_semver(str(v[VTAG]))
    raise ValueError(f"no such overload for {type(v).__name__}")


def _compare(a: Any, b: Any) -> int:
    x, y = _untag(a), _untag(b)
    if isinstance(x, Semver) and isinstance(y, Semver):
        return x.compare(y)
    if isinstance(x, Fraction) and isinstance(y, Fraction):
        return (x > y) - (x < y)
    raise ValueError("no such overload: compareTo between different types")


def _quantity(text: Any) -> dict[str, str]:
    try:
        return _tag_quantity(parse_quantity(str(text)))
    except QuantityError as e:
        raise ValueError(f"quantities must match the regular expression: {e}") from e


def _is_quantity(text: Any) -> bool:
    try:
        parse_quantity(str(text))
    except QuantityError:
        return False
    return True


def _semver(text: Any, normalize: bool = False) -> dict[str, str]:
    s = str(text)
    if normalize:
        s = _normalize_semver(s)
    return _tag_semver(parse_semver(s))


def _normalize_semver(s: str) -> str:
    s = s[1:] if s.startswith("v") else s
    core, sep, rest = s.partition("-")
    parts = core.split(".")
    while len(parts) < 3:
        parts.append("0")
    parts = [p.lstrip("0") or "0" for p in parts]
    return ".".join(parts) + (sep + rest if sep else "")


def _is_semver(text: Any, normalize: bool = False) -> bool:
    try:
        _semver(text, normalize)
    except ValueError:
        return False
    return True


def _version_part(index: int) -> Callable[[Any], int]:
    def part(v: Any) -> int:
        x = _untag(v)
        if not isinstance(x, Semver):
            raise ValueError("no such overload")
        return (x.major, x.minor, x.patch)[index]

    return part


def _quantity_of(v: Any) -> Fraction:
    x = _untag(v)
    if not isinstance(x, Fraction):
        raise ValueError("no such overload")
    return x


def _arith(sign: int) -> Callable[[Any, Any], dict[str, str]]:
    def op(a: Any, b: Any) -> dict[str, str]:
        other = Fraction(b) if isinstance(b, int) and not isinstance(b, bool) else _quantity_of(b)
        return _tag_quantity(_quantity_of(a) + sign * other)

    return op


def _as_integer(v: Any) -> int:
    q = _quantity_of(v)
    if q.denominator != 1 or not -(2**63) <= q.numerator < 2**63:
        raise ValueError("cannot convert value to integer")
    return q.numerator


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": _compare,
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "major": _version_part(0),
    "minor": _version_part(1),
    "patch": _version_part(2),
    "sign": lambda v: (_quantity_of(v) > 0) - (_quantity_of(v) < 0),
    "isInteger": lambda v: _quantity_of(v).denominator == 1,
    "asInteger": _as_integer,
    "asApproximateFloat": lambda v: float(_quantity_of(v)),
    "add": _arith(1),
    "sub": _arith(-1),
}

# Functions a selector may call: CEL's standard ones, the macros, Kubernetes'
# libraries in upstream's base environment, and the functions above. Anything
# else is an undeclared reference, a compile error upstream.
_KNOWN_FUNCTIONS = frozenset(FUNCTIONS) | {
    "size", "contains", "startsWith", "endsWith", "matches", "int", "uint", "double",
    "string", "bytes", "bool", "type", "dyn", "duration", "timestamp", "has", "all",
    "exists", "exists_one", "map", "filter", "getDate", "getDayOfMonth", "getDayOfWeek",
    "getDayOfYear", "getFullYear", "getHours", "getMilliseconds", "getMinutes",
    "getMonth", "getSeconds", "charAt", "indexOf", "lastIndexOf", "lowerAscii",
    "upperAscii", "replace", "split", "substring", "trim", "join", "quote", "format",
    "reverse", "isSorted", "sum", "min", "max", "find",
    "findAll", "url", "isURL", "getScheme", "getHost", "getHostname", "getPort",
    "getEscapedPath", "getQuery", "ip", "isIP", "cidr", "isCIDR", "family",
    "isUnspecified", "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast",
    "isGlobalUnicast", "containsIP", "containsCIDR", "prefixLength", "masked",
    "optional", "hasValue", "value", "orValue", "or", "flatten", "slice", "distinct",
    "sort", "sortBy", "first", "last", "range", "bind", "lists", "math", "sets",
    "strings", "base64", "encode", "decode", "greatest", "least", "ceil", "floor",
    "round", "trunc", "abs", "isInf", "isNaN", "isFinite", "equivalent", "intersects",
}  # fmt: skip

# Variables bound by the comprehension macros (one or two of them) and cel.bind.
_BOUND_VARIABLE = re.compile(
    r"(?:\.(?:all|exists|exists_one|existsOne|map|filter|transformList|transformMap"
    r"|transformMapEntry)|\bcel\.bind)\s*\(\s*([A-Za-z_]\w*)\s*(?:,\s*([A-Za-z_]\w*)\s*)?,"
)
_DOMAIN_INDEX = re.compile(r"""\b(attributes|capacity)\s*\[\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\]""")


@dataclass(slots=True)
class CompiledSelector:
    """One expression, compiled once (CompilationResult)."""

    expression: str
    program: Any = None
    # The compile error's text (apiservercel.Error.Detail); None when it compiled.
    error: str | None = None
    # Domains the expression indexes with a literal: (attributes, capacity).
    attribute_domains: tuple[str, ...] = ()
    capacity_domains: tuple[str, ...] = ()


def selector_expressions(obj: object) -> list[str]:
    """The CEL expressions of a DeviceClass's selectors, or of a ResourceClaim's
    requests and their subrequests; none for anything else."""
    selectors: list[DeviceSelector] = []
    if isinstance(obj, DeviceClass):
        selectors = list(obj.spec.selectors)
    elif isinstance(obj, ResourceClaim):
        for request in obj.spec.devices.requests:
            if request.exactly is not None:
                selectors.extend(request.exactly.selectors)
            for sub in request.first_available:
                selectors.extend(sub.selectors)
    return [s.cel.expression for s in selectors if s.cel is not None and s.cel.expression]


def compile_selector(expression: str) -> CompiledSelector:
    """CompileCELExpression, as far as the library can check."""
    # The CEL library (~25 MB with what it imports) is loaded by the first
    # selector, not with the scheduler: most clusters have no DeviceClass.
    import cel

    try:
        program = cel.compile(expression)
    except Exception as e:
        detail = str(e)
        prefix = f"Failed to parse expression {expression!r}: "
        detail = detail.removeprefix(prefix)
        return CompiledSelector(expression, error=f"compilation failed: {detail}")
    for name in program.functions():
        if name[0] in "_@!-" or name in _KNOWN_FUNCTIONS:
            continue
        return CompiledSelector(
            expression,
            error=f"compilation failed: ERROR: <input>: undeclared reference to {name!r} "
            "(in container '')",
        )
    # The library has no declarations: a variable other than `device` (or one a
    # macro or cel.bind binds) is upstream's checker error "undeclared reference".
    bound = {name for m in _BOUND_VARIABLE.finditer(expression) for name in m.groups() if name}
    for name in program.variables():
        if name == "device" or name in bound or (name == "cel" and "cel.bind" in expression):
            continue
        return CompiledSelector(
            expression,
            error=f"compilation failed: ERROR: <input>: undeclared reference to {name!r} "
            "(in container '')",
        )
    attributes: list[str] = []
    capacity: list[str] = []
    for match in _DOMAIN_INDEX.finditer(expression):
        domain = match[2] if match[2] is not None else match[3]
        (attributes if match[1] == "attributes" else capacity).append(domain)
    return CompiledSelector(
        expression, program, None, tuple(dict.fromkeys(attributes)), tuple(dict.fromkeys(capacity))
    )


def _attribute_value(attr: DeviceAttribute) -> Any:
    """getAttributeValue: the one value that is set; versions as semver values."""
    if attr.int_value is not None:
        return attr.int_value
    if attr.bool_value is not None:
        return attr.bool_value
    if attr.string_value is not None:
        return attr.string_value
    if attr.version_value is not None:
        return _tag_semver(parse_semver(attr.version_value))
    raise ValueError("unsupported attribute value")


def _split_name(name: str, default_domain: str) -> tuple[str, str]:
    """parseQualifiedName."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


@dataclass(slots=True)
class _DeviceEntry:
    device: Device  # held so that id(device) stays unique while cached
    driver: str
    variables: dict[str, Any] | None
    error: str | None  # the device cannot be converted (a bad version)
    results: dict[str, bool | str] = field(default_factory=dict)  # expression -> result or error


class CelCache:
    """Compiled selectors by expression text and selector results per (expression,
    device), shared by all allocators (upstream's cel.Cache holds the compiled
    expressions; the per-device results are this implementation's addition, safe
    because a result depends only on the expression and the device's driver,
    attributes, capacity and allowMultipleAllocations)."""

    def __init__(self, consumable_capacity: bool = True, max_devices: int = 200_000) -> None:
        self.consumable_capacity = consumable_capacity
        self.max_devices = max_devices
        self._compiled: dict[str, CompiledSelector] = {}
        self._devices: dict[tuple[int, str], _DeviceEntry] = {}

    def get_or_compile(self, expression: str) -> CompiledSelector:
        compiled = self._compiled.get(expression)
        if compiled is None:
            if len(self._compiled) >= 10_000:
                self._compiled.clear()
            compiled = compile_selector(expression)
            self._compiled[expression] = compiled
        return compiled

    def _entry(self, driver: str, device: Device) -> _DeviceEntry:
        key = (id(device), driver)
        entry = self._devices.get(key)
        if entry is not None and entry.device is device:
            return entry
        if len(self._devices) >= self.max_devices:
            self._devices.clear()
        variables: dict[str, Any] | None = None
        error: str | None = None
        try:
            variables = self._variables(driver, device)
        except ValueError as e:
            error = str(e)
        entry = _DeviceEntry(device, driver, variables, error)
        self._devices[key] = entry
        return entry

    def _variables(self, driver: str, device: Device) -> dict[str, Any]:
        attributes: dict[str, dict[str, Any]] = {}
        for name, attr in device.attributes.items():
            domain, ident = _split_name(name, driver)
            try:
                value = _attribute_value(attr)
            except ValueError as e:
                raise ValueError(f"attribute {name}: {e}") from e
            attributes.setdefault(domain, {})[ident] = value
        capacity: dict[str, dict[str, Any]] = {}
        for name, cap in device.capacity.items():
            domain, ident = _split_name(name, driver)
            capacity.setdefault(domain, {})[ident] = _tag_quantity(parse_quantity(cap.value))
        variables: dict[str, Any] = {
            "driver": driver,
            "attributes": attributes,
            "capacity": capacity,
        }
        if self.consumable_capacity:
            variables["allowMultipleAllocations"] = bool(device.allow_multiple_allocations)
        return variables

    def device_matches(self, compiled: CompiledSelector, driver: str, device: Device) -> bool:
        """DeviceMatches: True/False, or CelEvalError with the runtime error's text."""
        entry = self._entry(driver, device)
        cached = entry.results.get(compiled.expression)
        if cached is None:
            cached = self._evaluate(compiled, entry)
            entry.results[compiled.expression] = cached
        if isinstance(cached, str):
            raise CelEvalError(cached)
        return cached

    def _evaluate(self, compiled: CompiledSelector, entry: _DeviceEntry) -> bool | str:
        if entry.error is not None:
            return entry.error
        assert entry.variables is not None and compiled.program is not None
        variables = entry.variables
        if compiled.attribute_domains or compiled.capacity_domains:
            variables = dict(variables)
            variables["attributes"] = _with_empty(
                variables["attributes"], compiled.attribute_domains
            )
            variables["capacity"] = _with_empty(variables["capacity"], compiled.capacity_domains)
        import cel  # loaded by compile_selector already

        try:
            result = compiled.program.execute(
                cel.Context(variables={"device": variables}, functions=FUNCTIONS)
            )
        except Exception as e:
            return runtime_error_text(e)
        if isinstance(result, bool):
            return result
        type_name = _cel_type_name(result)
        return (
            f"CEL result of type {type_name} could not be converted to bool: "
            f"type conversion error from '{type_name}' to 'bool'"
        )


def _with_empty(
    maps: Mapping[str, dict[str, Any]], domains: tuple[str, ...]
) -> dict[str, dict[str, Any]]:
    out = dict(maps)
    for domain in domains:
        out.setdefault(domain, {})
    return out


def _cel_type_name(value: Any) -> str:
    if isinstance(value, dict):
        if QTAG in value:
            return "kubernetes.Quantity"
        if VTAG in value:
            return "kubernetes.Semver"
        return "map"
    return {int: "int", float: "double", str: "string", bytes: "bytes", list: "list"}.get(
        type(value), type(value).__name__
    )


_PY_FUNCTION_ERROR = re.compile(r"Python function call failed: \w+: (.*?)(?:\. Check function|$)")


def runtime_error_text(e: BaseException) -> str:
    """The library's exception as cel-go would word it, where known."""
    if isinstance(e, KeyError):
        return f"no such key: {e.args[0] if e.args else ''}"
    if isinstance(e, ZeroDivisionError):
        return "division by zero"
    if isinstance(e, OverflowError):
        return "integer overflow"
    text = str(e)
    match = _PY_FUNCTION_ERROR.search(text)
    if match is not None:
        return match[1]
    if text.startswith("Undefined variable or function"):
        return "no such overload"
    return text
