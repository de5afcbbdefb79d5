"""field.Error as the apiserver prints it (apimachinery pkg/util/validation/field,
Error.ErrorBody): a field path and a body such as `Invalid value: "x": detail`.

A FieldError is (path, body); validators yield them in upstream's order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence

FieldError = tuple[str, str]
FieldErrors = Iterator[FieldError]


def go_value(value: object) -> str:
    """A bad value as ErrorBody shows it: %q for strings, %v for numbers and
    booleans, JSON for the rest."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def invalid(path: str, value: object, detail: str) -> FieldError:
    """field.Invalid."""
    return path, f"Invalid value: {go_value(value)}: {detail}"


def required(path: str, detail: str = "") -> FieldError:
    """field.Required."""
    return path, f"Required value: {detail}" if detail else "Required value"


def forbidden(path: str, detail: str) -> FieldError:
    """field.Forbidden."""
    return path, f"Forbidden: {detail}"


def duplicate(path: str, value: object) -> FieldError:
    """field.Duplicate."""
    return path, f"Duplicate value: {go_value(value)}"


def not_supported(path: str, value: object, supported: Sequence[str]) -> FieldError:
    """field.NotSupported: the supported values quoted, in the order given."""
    quoted = ", ".join(json.dumps(v) for v in supported)
    return path, f"Unsupported value: {go_value(value)}: supported values: {quoted}"


def too_long(path: str, max_length: int) -> FieldError:
    """field.TooLong."""
    unit = "byte" if max_length == 1 else "bytes"
    return path, f"Too long: may not be more than {max_length} {unit}"


def invalid_each(path: str, value: object, messages: Iterable[str]) -> FieldErrors:
    """One field.Invalid per message, as the `for _, msg := range ...` loops do."""
    for message in messages:
        yield invalid(path, value, message)
