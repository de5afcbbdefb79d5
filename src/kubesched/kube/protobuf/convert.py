"""From a parsed Kubernetes protobuf message to kubesched's msgspec struct.

The JSON path decodes straight into the structs (msgspec, in C). For protobuf,
upb parses the bytes (in C) and a converter builds the struct from the message.
A generic walk (ListFields into a dict, then msgspec.convert) cost 390 µs per
pod; so each struct type gets Python source of its own, generated once from the
struct's fields and the message's descriptor and compiled: it reads only the
fields kubesched declares and calls the structs' constructors directly (about
50 µs per pod, measured in docs/develop/benchmarks-log.md).

The rules follow the Go types' two encodings (k8s.io/apimachinery):
- a field is read under its JSON name; the .proto names equal the JSON names
  for every kind kubesched reads;
- a Go field with `json:",inline"` is a message field in the .proto
  (`Volume.volumeSource` and the like, INLINE): its members are looked up there;
- `resource.Quantity` is its canonical string, which JSON carries too;
- `metav1.Time` is RFC 3339 in seconds (Time.MarshalJSON), `MicroTime` in
  microseconds; the zero time is null, as Go's omitempty pointer would be;
- `intstr.IntOrString` is its int or its string (type 0 or 1);
- proto2 presence: Go writes every non-pointer field, zero or not, and only a
  nil pointer is absent. Where the struct's default is not the zero value or is
  None, presence (HasField) decides between the value and the default, as an
  absent JSON field would.

upb's repeated and map containers are slow to iterate from Python (their
iterators are collections.abc mixins): the generated code slices them (`[:]`)
and tests them for truth, both in C.
"""

from __future__ import annotations

import keyword
import time
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect as mi
from google.protobuf.descriptor import Descriptor, FieldDescriptor

QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
MICROTIME = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"
# Go fields tagged `json:",inline"` that the .proto has as a message field
# (k8s.io/api/core/v1/types.go, resource/v1/types.go).
INLINE = frozenset(
    {
        "volumeSource",
        "persistentVolumeSource",
        "handler",
        "ephemeralContainerCommon",
        "localObjectReference",
        "deviceConfiguration",
    }
)

Converter = Callable[[Any], Any]

_times: dict[int, str] = {}


def rfc3339(t: Any) -> str | None:
    """metav1.Time as its JSON (seconds, UTC); the zero time as None."""
    seconds: int = t.seconds
    if not seconds:
        return None
    text = _times.get(seconds)
    if text is None:
        if len(_times) > 4096:
            _times.clear()
        text = _times[seconds] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
    return text


def rfc3339_micro(t: Any) -> str | None:
    """metav1.MicroTime as its JSON (microseconds, UTC); the zero time as None."""
    if not t.seconds and not t.nanos:
        return None
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t.seconds))
    return f"{whole}.{t.nanos // 1000:06d}Z"


def int_or_string(v: Any) -> int | str:
    return v.strVal if v.type == 1 else v.intVal  # type: ignore[no-any-return]


def raw_extension(v: Any) -> object:
    """A RawExtension holds its object as JSON bytes (what the JSON path decodes)."""
    raw: bytes = v.raw
    return msgspec.json.decode(raw) if raw else None


class ConverterError(TypeError):
    """A struct field kubesched declares has no rule for its protobuf field."""


class _Generator:
    def __init__(self) -> None:
        self.source: list[str] = []
        self.names: dict[tuple[type, str], str] = {}
        self.namespace: dict[str, Any] = {
            "rfc3339": rfc3339,
            "rfc3339_micro": rfc3339_micro,
            "int_or_string": int_or_string,
            "raw_extension": raw_extension,
        }
        self._locals = 0

    def function_for(self, cls: type, desc: Descriptor) -> str:
        key = (cls, desc.full_name)
        found = self.names.get(key)
        if found is not None:
            return found
        name = f"to_{cls.__name__}_{len(self.names)}"
        self.names[key] = name
        self.namespace[f"S_{name}"] = cls
        inlined: dict[str, str] = {}
        arguments: list[str] = []
        info = mi.type_info(cls)
        assert isinstance(info, mi.StructType)
        for field in info.fields:
            owner, fd = _find(desc, field.encode_name)
            if fd is None:
                if field.encode_name in ("apiVersion", "kind"):
                    continue  # the envelope's typeMeta, not the object's
                raise ConverterError(f"{cls.__name__}.{field.name}: no field in {desc.full_name}")
            if owner != "m":
                local = "i_" + owner.removeprefix("m.")
                inlined[local] = f"    {local} = {owner}\n"
                owner = local
            arguments.append(f"{field.name}={self._expression(field, owner, fd)}")
        body = f"def {name}(m):\n{''.join(inlined.values())}"
        body += f"    return S_{name}(" + ", ".join(arguments) + ")\n"
        self.source.append(body)
        return name

    def _expression(self, field: mi.Field, owner: str, fd: FieldDescriptor) -> str:
        keyword_name = keyword.iskeyword(fd.name)
        attr = f"getattr({owner}, {fd.name!r})" if keyword_name else f"{owner}.{fd.name}"
        kind, optional = _without_none(field.type)
        message = fd.message_type
        if message is not None and message.GetOptions().map_entry:
            value_fd = message.fields_by_name["value"]
            value_type = kind.value_type if isinstance(kind, mi.DictType) else kind
            self._locals += 1
            local = f"_m{self._locals}"
            value = self._leaf(f"{local}[k]", value_fd, _without_none(value_type)[0])
            return f"({{k: {value} for k in {local}}} if ({local} := {attr}) else {{}})"
        if fd.is_repeated:
            item = kind.item_type if isinstance(kind, mi.ListType) else kind
            if message is None:
                return f"{attr}[:]"
            return f"[{self._leaf('x', fd, item)} for x in {attr}[:]]"
        value = self._leaf(attr, fd, kind)
        default = field.default
        zero = _zero(fd)
        if optional or (default is not msgspec.NODEFAULT and default != zero):
            # Absent (a nil pointer upstream): the struct's default, as in JSON.
            return f"({value} if {owner}.HasField({fd.name!r}) else {default!r})"
        return value

    def _leaf(self, value: str, fd: FieldDescriptor, kind: mi.Type) -> str:
        message = fd.message_type
        if message is None:
            return value
        name = message.full_name
        if name == QUANTITY:
            return f"{value}.string"
        if name == TIME:
            return f"rfc3339({value})"
        if name == MICROTIME:
            return f"rfc3339_micro({value})"
        if name == INT_OR_STRING:
            return f"int_or_string({value})"
        if name == RAW_EXTENSION:
            return f"raw_extension({value})"
        if isinstance(kind, mi.StructType):
            return f"{self.function_for(kind.cls, message)}({value})"
        raise ConverterError(f"{fd.full_name}: no rule for a {name} read as {kind}")


def _find(desc: Descriptor, json_name: str) -> tuple[str, FieldDescriptor | None]:
    """The protobuf field of a JSON name: the message's own, or an inlined member's."""
    fd = desc.fields_by_name.get(json_name)
    if fd is not None:
        return "m", fd
    for sub in desc.fields:
        if sub.name in INLINE and sub.message_type is not None:
            inner = sub.message_type.fields_by_name.get(json_name)
            if inner is not None:
                return f"m.{sub.name}", inner
    return "m", None


def _without_none(kind: mi.Type) -> tuple[mi.Type, bool]:
    if isinstance(kind, mi.UnionType):
        rest = tuple(t for t in kind.types if not isinstance(t, mi.NoneType))
        return (rest[0] if len(rest) == 1 else mi.UnionType(rest)), len(rest) != len(kind.types)
    return kind, False


def _zero(fd: FieldDescriptor) -> object:
    """What Go writes for a zero non-pointer field, as the struct would hold it."""
    if fd.is_repeated:
        return None
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return False
    if fd.type == FieldDescriptor.TYPE_STRING:
        return ""
    if fd.message_type is None:
        return 0
    return None


def compile_converters(pairs: dict[type, Descriptor]) -> dict[type, Converter]:
    """A converter per struct type, from its message's descriptor."""
    generator = _Generator()
    names = {cls: generator.function_for(cls, desc) for cls, desc in pairs.items()}
    code = compile("\n".join(generator.source), "<kubesched.kube.protobuf converters>", "exec")
    exec(code, generator.namespace)
    return {cls: generator.namespace[name] for cls, name in names.items()}
