"""msgspec's validation errors as (field, message), for one-line refusals of the
project's own input files (`kubesched plan`'s pools, `kubesched sweep`'s SPEC)."""

from __future__ import annotations

import re

import msgspec

# msgspec's text: "Expected `int`, got `str` - at `$.pools[0].max`".
_AT = re.compile(r"^(?P<text>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<field>[^`]*)`$")


def field_and_message(exc: msgspec.ValidationError) -> tuple[str, str]:
    """The field msgspec refused (`pools[0].max`; an unknown field is named as the
    field itself) and what is wrong with it, in lower case and without backticks."""
    text = str(exc)
    match = _AT.match(text)
    path, message = ("", text) if match is None else (match["path"], match["text"])
    unknown = _UNKNOWN.match(message)
    if unknown is not None:
        path, message = f"{path}.{unknown['field']}", "unknown field"
    message = message.replace("`", "")
    return path.lstrip("."), message[0].lower() + message[1:] if message else message
