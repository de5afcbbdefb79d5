"""Go's time.Duration on the wire: ParseDuration and String, in float seconds.

Upstream: time.ParseDuration and time.Duration.String, which metav1.Duration fields
and messages such as the framework's Permit timeout ("after waiting 5m0s") use.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


class DurationError(ValueError):
    pass


def parse_go_duration(text: str) -> float:
    """time.ParseDuration, in seconds: an optional sign, then number-unit pairs;
    "0" alone is allowed without a unit."""
    rest = text
    sign = 1.0
    if rest[:1] in ("+", "-"):
        sign = -1.0 if rest[0] == "-" else 1.0
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise DurationError(f"time: invalid duration {go_duration_quote(text)}")
    total = 0.0
    position = 0
    while position < len(rest):
        match = _PART.match(rest, position)
        if match is None:
            raise DurationError(f"time: invalid duration {go_duration_quote(text)}")
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    return sign * total


def go_duration_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_go_duration(seconds: float) -> str:
    """time.Duration.String: "1m30s", "500ms", "0s", "-1s"."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(nanos / size) + unit
    hours, nanos = divmod(nanos, 3600 * 1_000_000_000)
    minutes, nanos = divmod(nanos, 60 * 1_000_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + _trim(nanos / 1e9) + "s"


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"
