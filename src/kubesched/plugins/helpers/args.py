"""What the plugins' args modules share: decoding with msgspec, field paths, field errors.

Upstream keeps plugin args apart from the plugins: pkg/scheduler/apis/config/v1
declares the types and their defaults, apis/config/validation
(validation_pluginargs.go) checks them, and each plugin's factory receives the
decoded, defaulted args. Each built-in plugin with args has an `args.py` that
does the same here; this module gives them one decoder and upstream's
field.Error texts, so that the config file and the plugin report the same
error, the file with the path of the pluginConfig entry in front
("profiles[0].pluginConfig[2].args.hardPodAffinityWeight: Invalid value: ...").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

import msgspec

S = TypeVar("S", bound=msgspec.Struct)


class ArgsError(ValueError):
    """Plugin args kube-scheduler would refuse. `errors` are the field errors, each
    naming its field; the text is their aggregate (utilerrors.Aggregate)."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = tuple(errors)
        super().__init__(aggregate(self.errors))


def aggregate(errors: Sequence[str]) -> str:
    """utilerrors.Aggregate's Error(): the one error, or all of them in brackets."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


# --- field paths (field.Path) -------------------------------------------------------------


def child(path: str, name: str) -> str:
    """path.Child(name); the empty path is the args themselves (a nil field.Path)."""
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


# --- field errors (field.Error's texts) --------------------------------------------------


def go_quote(text: str) -> str:
    """fmt's %q of a string: double quotes, Go escapes, printable runes kept."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def go_value(value: object) -> str:
    """How field.Error prints a bad value: strings quoted, numbers and booleans as Go
    prints them, anything else as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int | float):
        return str(value)
    return msgspec.json.encode(msgspec.to_builtins(value)).decode()


def invalid(path: str, value: object, detail: str) -> str:
    """field.Invalid."""
    return f"{path}: Invalid value: {go_value(value)}: {detail}"


def required(path: str, detail: str) -> str:
    """field.Required."""
    return f"{path}: Required value: {detail}" if detail else f"{path}: Required value"


def forbidden(path: str, detail: str) -> str:
    """field.Forbidden."""
    return f"{path}: Forbidden: {detail}"


def duplicate(path: str, value: object) -> str:
    """field.Duplicate."""
    return f"{path}: Duplicate value: {go_value(value)}"


def not_supported(path: str, value: object, supported: Iterable[str]) -> str:
    """field.NotSupported, the supported values in the order given (upstream passes
    them sorted, sets.List, or as a literal list)."""
    values = ", ".join(go_quote(s) for s in supported)
    return f"{path}: Unsupported value: {go_value(value)}: supported values: {values}"


# --- decoding -------------------------------------------------------------------------------


_AT = re.compile(r" - at `\$\.?(.*)`$")


def _without_nulls(value: object) -> object:
    """A null field is an unset one, as Go's JSON decoding leaves a field it reads
    null from at its zero value (nil pointer, nil slice): the default applies."""
    if isinstance(value, Mapping):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_nulls(v) for v in value]
    return value


SCHEDULER_CONFIG_API = "kubescheduler.config.k8s.io/v1"


def _without_type_meta(data: Mapping[str, Any], kind: str, path: str) -> dict[str, Any]:
    """The args without their optional TypeMeta, which must name this plugin's args
    type: upstream decodes the args as the kind they name, and the plugin then refuses
    args of another type."""
    rest = dict(data)
    errors = []
    api_version = rest.pop("apiVersion", SCHEDULER_CONFIG_API)
    if api_version != SCHEDULER_CONFIG_API:
        errors.append(not_supported(child(path, "apiVersion"), api_version, [SCHEDULER_CONFIG_API]))
    given = rest.pop("kind", kind)
    if given != kind:
        errors.append(not_supported(child(path, "kind"), given, [kind]))
    if errors:
        raise ArgsError(errors)
    return rest


def decode_args(
    raw: Mapping[str, Any] | None,
    type_: type[S],
    *,
    strict: bool,
    path: str = "",
    aliases: Mapping[str, str] | None = None,
) -> S:
    """msgspec.convert of pluginConfig args (API spelling) into `type_`.

    `strict` is msgspec's: False lets numbers and booleans be given as strings
    (and integral floats as ints), as the plugins that took int()/str() of their
    args did. An unknown field is an error, as in upstream's strict decoding (each
    args struct forbids them), and so is a TypeMeta naming another kind. `aliases`
    maps older spellings a plugin also accepted to the API name, which wins when
    both are given. A value of the wrong type raises ArgsError naming the field
    under `path`.
    """
    data: object = raw if raw is not None else {}
    if isinstance(data, Mapping) and ("apiVersion" in data or "kind" in data):
        data = _without_type_meta(data, type_.__name__, path)
    if isinstance(data, Mapping) and aliases:
        data = dict(data)
        for old, new in aliases.items():
            if old in data:
                value = data.pop(old)
                data.setdefault(new, value)
    try:
        return msgspec.convert(_without_nulls(data), type_, strict=strict)
    except msgspec.ValidationError as exc:
        raise ArgsError([decode_error(exc, path)]) from None


def load_args(
    args: S | Mapping[str, Any] | None,
    type_: type[S],
    validate: Callable[[S, str], list[str]],
    *,
    strict: bool,
    path: str = "",
    aliases: Mapping[str, str] | None = None,
    default: Callable[[S], S] | None = None,
) -> S:
    """The args a plugin runs with, as its factory gets them upstream: decoded (unless
    already typed), defaulted, validated. Raises ArgsError naming the field under `path`."""
    if isinstance(args, type_):
        typed = args
    else:
        raw = cast("Mapping[str, Any] | None", args)  # not typed yet: the args as written
        typed = decode_args(raw, type_, strict=strict, path=path, aliases=aliases)
    if default is not None:
        typed = default(typed)
    errors = validate(typed, path)
    if errors:
        raise ArgsError(errors)
    return typed


def decode_error(exc: msgspec.ValidationError, path: str) -> str:
    """msgspec's "Expected `int`, got `str` - at `$.a.b[0]`" as "<path>.a.b[0]: Expected ..."."""
    text = str(exc)
    match = _AT.search(text)
    if match is None:
        return f"{path}: {text}" if path else text
    # The args are an object: msgspec's path, past "$", starts with a field name.
    where = child(path, match.group(1)) if match.group(1) else path
    detail = text[: match.start()]
    return f"{where}: {detail}" if where else detail


def raw_args(args: Mapping[str, Any] | msgspec.Struct | None) -> Mapping[str, Any] | None:
    """Plugin.args stays the mapping in API spelling (what plugins and
    Framework.plugin_args read), also when a plugin is given its typed args."""
    if isinstance(args, msgspec.Struct):
        built = msgspec.to_builtins(args)
        return built if isinstance(built, dict) else None
    return args
