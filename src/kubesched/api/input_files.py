"""The project's own input files (`kubesched plan`'s pools, `kubesched sweep`'s SPEC):
read as bounded YAML, decoded into strict records, and refused whole with one line
naming the file and the field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol, TypeVar

import msgspec
import yaml

from kubesched.api.bounded_yaml import YamlLimitError, load_bounded

# msgspec's text: "Expected `int`, got `str` - at `$.pools[0].max`".
_AT = re.compile(r"^(?P<text>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<field>[^`]*)`$")


class InputFileError(ValueError):
    """A file that is refused: str() is the one line to print."""


class StrictRecord(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """A record of an input file: camelCase fields, an unknown one refused."""


class _Typed(Protocol):
    api_version: str
    kind: str


D = TypeVar("D", bound=_Typed)


def file_refusal(
    error: type[InputFileError], source: str, field: str, message: str
) -> InputFileError:
    """ERROR `source: field: message`, on one line."""
    where = f"{source}: {field}" if field else source
    return error(" ".join(f"{where}: {message}".split()))


def decode_document(
    raw: object,
    record: type[D],
    source: str,
    api_version: str,
    kind: str,
    error: type[InputFileError] = InputFileError,
) -> D:
    """RAW as RECORD, whose apiVersion and kind must be API_VERSION and KIND; a
    refusal naming SOURCE and the field otherwise."""
    if not isinstance(raw, dict):
        raise file_refusal(
            error, source, "", f"expected a {kind} object (apiVersion {api_version})"
        )
    try:
        doc = msgspec.convert(raw, record)
    except msgspec.ValidationError as exc:
        raise file_refusal(error, source, *field_and_message(exc)) from None
    if doc.api_version != api_version:
        raise file_refusal(
            error, source, "apiVersion", f"must be {api_version}, got {doc.api_version!r}"
        )
    if doc.kind != kind:
        raise file_refusal(error, source, "kind", f"must be {kind}, got {doc.kind!r}")
    return doc


def read_yaml_file(path: Path, error: type[InputFileError] = InputFileError) -> tuple[str, object]:
    """The file's text and its YAML document; ERROR `path: cannot read` or
    `path: not YAML` (one line)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read: {exc}") from None
    try:
        return text, load_bounded(text)
    except (yaml.YAMLError, YamlLimitError) as exc:
        raise error(f"{path}: not YAML: {' '.join(str(exc).split())}") from None


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
