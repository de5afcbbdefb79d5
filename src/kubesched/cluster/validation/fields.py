"""Field validation of a manifest as the apiserver's strict decoding does it
(kubectl's default `--validate=strict`, i.e. `fieldValidation=Strict`).

kube-apiserver decodes a request body into the kind's Go struct with
sigs.k8s.io/json (UnmarshalCaseSensitivePreserveInts, then UnmarshalStrict with
DisallowUnknownFields and DisallowDuplicateFields). What that refuses, and
kubesched's loader (which decodes only the fields the scheduler reads) would
drop or keep without a word:

- an unknown field: `unknown field "spec.nodeSelecter"` (strictError.Error), with
  `; did you mean "nodeSelector"?` when a known field at that level is close;
- a duplicate field: `duplicate field "spec.nodeName"` (JSON input: the reader marks
  the objects that named a key twice with DuplicateKeyDict; YAML input is refused
  by the reader already);
- a value of the wrong JSON type, or a number out of an int32/int64 field's range
  or not an integer: `json: cannot unmarshal number 99999999999999999999 into Go
  struct field PodSpec.spec.priority of type int32` (UnmarshalTypeError.Error).

The schemas are the OpenAPI v3 documents of the Kubernetes release in
hack/k8s-version, compacted by hack/gen-field-schemas.py into
field_schemas.json.gz (`make field-schemas`; the codes are explained there).

The modes of `simulate --validate` (kubectl's, sent as fieldValidation), which
`triage` applies to check_fields' problems:
- strict (default): an object with any problem is refused, with the one the
  apiserver names (`refusal`);
- warn: unknown and duplicate fields are warnings and the object is kept; a value
  that does not decode still refuses it (the apiserver's decoding fails whatever
  fieldValidation says);
- ignore: unknown and duplicate fields are dropped silently; the same for values.
  The loader may skip check_fields then (its own decoding refuses wrong types in
  the fields it models), at the cost of keeping e.g. an int32 out of range in a
  field it drops.
check_fields returns None for a kind (or version) without a schema here, e.g.
scheduler-plugins' PodGroup (a CRD) or extensions/v1beta1: its fields are then
not validated, and the caller should say so; duplicate_fields still finds its
duplicate JSON keys.

Speed: every object is first converted by msgspec into structs generated from
the schemas (forbid_unknown_fields, int32/int64 bounds), which is C code; only
an object that fails there (or holds a duplicate key) is walked in Python, to
find every problem with the apiserver's text.
"""

from __future__ import annotations

import contextlib
import difflib
import gzip
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from types import GenericAlias
from typing import Annotated, Any, TypeAlias

import msgspec

from kubesched.cluster.validation.field_errors import FieldError

SCHEMA_FILE = "field_schemas.json.gz"
# The most problems one object gets: sigs.k8s.io/json's saveStrictError keeps 100
# ("prevent excessive numbers of accumulated errors"); a hostile document could
# otherwise have millions of warnings.
MAX_PROBLEMS = 100

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
# resource.ErrFormatWrong: Quantity.UnmarshalJSON's error for anything that is not a
# string or a number (the value is parsed as text and fails splitRE).
_QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
# The Go type each scalar code decodes into, as UnmarshalTypeError names it.
_GO_TYPES = {
    "s": "string",
    "b": "bool",
    "i": "int32",
    "l": "int64",
    "n": "float64",
    "y": "[]uint8",
    "t": "v1.Time",
    "I": "intstr.IntOrString",
    "q": "resource.Quantity",
    "*": "runtime.RawExtension",
}


class DuplicateKeyDict(dict[str, Any]):
    """A JSON object that named a key more than once, or that holds one at any
    depth (its `duplicates` are then empty). The last value is kept, as msgspec and
    encoding/json keep it; the reader (manifest_reader._json_documents) makes these
    only when a document has a duplicate, so check_fields knows from the document's
    own type whether it must look for them."""

    __slots__ = ("duplicates",)

    def __init__(self, pairs: Mapping[str, Any], duplicates: tuple[str, ...]) -> None:
        super().__init__(pairs)
        self.duplicates = duplicates


def copy_object(obj: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """`{**obj, **changes}` that keeps DuplicateKeyDict's mark, for the loader's
    copies of a List's items (which it gives their kind and apiVersion)."""
    if isinstance(obj, DuplicateKeyDict):
        return DuplicateKeyDict({**obj, **changes}, obj.duplicates)
    return {**obj, **changes}


# How sigs.k8s.io/json's decoding meets a problem, which decides the one the
# apiserver names (refusal): an unknown or duplicate field is returned only if
# decoding succeeded (UnmarshalStrictError); a wrong type is saved and decoding goes
# on (saveError keeps the first); an UnmarshalJSON method's error (Quantity,
# IntOrString, Time) is returned at once (decodeState.unmarshal).
STRICT, SAVED, RETURNED = 0, 1, 2


@dataclass(frozen=True, slots=True)
class FieldProblem:
    """One field the apiserver's decoding refuses: the field in the loader's form
    (`spec.containers[0].ports[1].containerPort`, map keys as `[key]`), the
    apiserver's text, and how decoding meets it (STRICT, SAVED or RETURNED)."""

    field: str
    message: str
    stage: int

    @property
    def error(self) -> FieldError:
        """(field, message), as the other validators yield them."""
        return self.field, self.message


def refusal(problems: list[FieldProblem]) -> FieldProblem:
    """The problem the apiserver names when it refuses the object under
    fieldValidation=Strict: the first of the latest stage (see STRICT). Its text
    lists every unknown and duplicate field; the loader reports one line per
    object, the first. `problems` must not be empty."""
    return max(problems, key=lambda p: p.stage)  # max keeps the first of equals


def triage(
    problems: list[FieldProblem], mode: str
) -> tuple[FieldProblem | None, list[FieldProblem]]:
    """(the problem that refuses the object, or None; the warnings) under
    `--validate=mode` (strict, warn or ignore), as the apiserver's fieldValidation
    Strict, Warn and Ignore treat them (see the module's docstring)."""
    if not problems:
        return None, []
    if mode == "strict":
        return refusal(problems), []
    decoding = [p for p in problems if p.stage > STRICT]
    if decoding:
        return refusal(decoding), []
    return None, problems if mode == "warn" else []


class _Struct:
    """An object definition: its fields' nodes, and the Go names errors use."""

    __slots__ = ("fields", "go_name", "go_type", "names")

    def __init__(self, name: str) -> None:
        parts = name.split(".")
        self.go_name = parts[-1]  # reflect.Type.Name(): "PodSpec"
        self.go_type = f"{parts[-2]}.{parts[-1]}"  # reflect.Type.String(): "v1.PodSpec"
        self.fields: dict[str, _Node] = {}
        self.names: list[str] = []


# A schema node: a scalar code (see hack/gen-field-schemas.py), a struct, or
# ("[", element) / ("{", value) for lists and maps.
_Node: TypeAlias = str | _Struct | tuple[str, "_Node"]


@dataclass(frozen=True, slots=True)
class _Schemas:
    version: str
    kinds: dict[str, _Struct]
    builder: _FastTypes  # the msgspec struct of each kind, made on first use


@cache
def _schemas() -> _Schemas:
    data = files(__package__ or __name__).joinpath(SCHEMA_FILE).read_bytes()
    raw = json.loads(gzip.decompress(data))
    definitions: dict[str, dict[str, str]] = raw["definitions"]
    structs: dict[str, _Struct] = {}

    def node(code: str) -> _Node:
        if code[0] in "[{":
            return (code[0], node(code[1:]))
        if code[0] != "@":
            return code
        name = code[1:]
        struct = structs.get(name)
        if struct is None:
            struct = structs[name] = _Struct(name)
            struct.fields = {f: node(c) for f, c in definitions[name].items()}
            struct.names = sorted(struct.fields)
        return struct

    kinds: dict[str, _Struct] = {}
    for key, name in raw["kinds"].items():
        struct = node("@" + name)
        assert isinstance(struct, _Struct)
        kinds[key] = struct
    return _Schemas(raw["kubernetes"], kinds, _FastTypes())


class _FastTypes:
    """msgspec types as strict as the walk below, so that an object msgspec
    converts has no problem to report. Every value may be null (encoding/json
    leaves the zero value); quantities and times are checked for their JSON type
    only, as the walk does."""

    def __init__(self) -> None:
        self.made: dict[int, type] = {}
        self.making: set[int] = set()
        self.count = 0
        int32: Any = Annotated[int, msgspec.Meta(ge=_INT32[0], le=_INT32[1])]
        int64: Any = Annotated[int, msgspec.Meta(ge=_INT64[0], le=_INT64[1])]
        self.scalars: dict[str, Any] = {
            "s": str,
            "b": bool,
            "i": int32,
            "l": int64,
            "n": float,
            "y": str,
            "t": str,
            "I": str | int32,
            "q": str | int | float,
        }

    def type_of(self, node: _Node) -> Any:
        """The msgspec type of a node; types are built at run time, hence Any."""
        made: Any
        if isinstance(node, str):
            if node == "*":
                return Any
            made = self.scalars[node]
        elif isinstance(node, _Struct):
            made = self.struct(node)
        else:
            inner = self.type_of(node[1])
            made = (
                GenericAlias(list, (inner,)) if node[0] == "[" else GenericAlias(dict, (str, inner))
            )
        return made | None

    def struct(self, struct: _Struct) -> type:
        made = self.made.get(id(struct))
        if made is not None:
            return made
        if id(struct) in self.making:
            # A definition that holds itself: the generated structs cannot express
            # it, and a lenient fast path would hide problems.
            raise ValueError(f"{struct.go_type} refers to itself; fields.py cannot check it")
        self.making.add(id(struct))
        # Attribute names f0, f1, ...: JSON names such as "continue" or "$ref" are
        # no Python identifiers; `rename` maps them back.
        names = list(struct.fields)
        self.count += 1
        made = msgspec.defstruct(
            f"_{struct.go_name}{self.count}",
            [(f"f{i}", self.type_of(struct.fields[n]), None) for i, n in enumerate(names)],
            rename={f"f{i}": n for i, n in enumerate(names)},
            forbid_unknown_fields=True,
            gc=False,  # thrown away at once: not worth the collector's tracking
        )
        self.made[id(struct)] = made
        return made


def schema_version() -> str:
    """The Kubernetes release the schemas were generated from ("v1.36.3")."""
    return _schemas().version


def has_schema(api_version: str, kind: str) -> bool:
    return f"{api_version}/{kind}" in _schemas().kinds


def check_fields(obj: Mapping[str, Any], api_version: str, kind: str) -> list[FieldProblem] | None:
    """Every problem of the object's fields (the first MAX_PROBLEMS), in document
    order; [] if none; None if this apiVersion and kind have no schema here (the
    fields are not validated).
    `obj` is the document as read (dicts, lists and scalars, as from YAML or JSON)."""
    schemas = _schemas()
    key = f"{api_version}/{kind}"
    struct = schemas.kinds.get(key)
    if struct is None:
        return None
    if not isinstance(obj, DuplicateKeyDict):
        try:
            msgspec.convert(obj, schemas.builder.struct(struct))
        except msgspec.ValidationError:
            pass
        else:
            return []
    walk = _Walk()
    with contextlib.suppress(_Enough):
        walk.struct(obj, struct, _Where("", "", "", struct.go_name))
    return walk.problems


def duplicate_fields(obj: Mapping[str, Any]) -> list[FieldProblem]:
    """The duplicate keys of a document whose kind has no schema here (check_fields
    returned None), which the apiserver's strict decoding refuses in custom
    resources too. No schema tells maps from objects: every key is written as a
    field (`spec.a.b`). Without recursion: the document may nest as deep as the
    reader allows."""
    found: list[FieldProblem] = []
    pending: list[tuple[object, str]] = [(obj, "")]
    while pending and len(found) < MAX_PROBLEMS:
        value, path = pending.pop()
        children: list[tuple[object, str]] = []
        if isinstance(value, DuplicateKeyDict):
            for key in value.duplicates:
                at = f"{path}.{key}" if path else key
                found.append(FieldProblem(at, f"duplicate field {json.dumps(at)}", STRICT))
            # Only marked objects and lists can hold a duplicate (the reader marks
            # every object on the way down to one).
            children = [(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()]
        elif isinstance(value, list):
            children = [(v, f"{path}[{i}]") for i, v in enumerate(value)]
        pending.extend(reversed(children))  # document order
    return found[:MAX_PROBLEMS]


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a value is, in the three forms errors use: the loader's field path
    (`spec.containers[0]`, map keys `[key]`), sigs.k8s.io/json's strict path
    (strictFieldStack: `spec.containers[0]`, map keys `.key`), and encoding/json's
    errorContext (the struct that holds the field, and the field names from the
    top without indexes or map keys: `PodSpec` and `spec.containers`)."""

    path: str
    strict: str
    stack: str
    owner: str

    def field(self, name: str, owner: str) -> _Where:
        return _Where(
            f"{self.path}.{name}" if self.path else name,
            f"{self.strict}.{name}" if self.strict else name,
            f"{self.stack}.{name}" if self.stack else name,
            owner,
        )

    def index(self, i: int) -> _Where:
        return _Where(f"{self.path}[{i}]", f"{self.strict}[{i}]", self.stack, self.owner)

    def key(self, key: str) -> _Where:
        strict = f"{self.strict}.{key}" if self.strict else key
        return _Where(f"{self.path}[{key}]", strict, self.stack, self.owner)


def _key_text(key: object) -> str:
    """A YAML key that is no string, as sigs.k8s.io/yaml's YAMLToJSON writes it."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def _json_word(value: object, literal: bool) -> str:
    """UnmarshalTypeError.Value: the JSON kind of the value; a number's text too
    where literalStore gives it (a numeric target that cannot hold it)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value!r}" if literal else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _go_type(node: _Node) -> str:
    if isinstance(node, str):
        return _GO_TYPES[node]
    if isinstance(node, _Struct):
        return node.go_type
    inner = _go_type(node[1])
    return f"[]{inner}" if node[0] == "[" else f"map[string]{inner}"


class _Enough(Exception):
    """MAX_PROBLEMS were found: the walk stops."""


class _Walk:
    """The Python walk of one object, which follows the schema and never the
    document: values of any type (`*`, RawExtension) are not entered and no
    definition refers to itself (_FastTypes refuses that), so the recursion is as
    deep as the schema, whatever the input."""

    __slots__ = ("problems",)

    def __init__(self) -> None:
        self.problems: list[FieldProblem] = []

    def add(self, problem: FieldProblem) -> None:
        self.problems.append(problem)
        if len(self.problems) >= MAX_PROBLEMS:
            raise _Enough

    def type_error(
        self, value: object, node: _Node, where: _Where, literal: bool, stage: int = SAVED
    ) -> None:
        # UnmarshalTypeError with addErrorContext's Struct.Name() and FieldStack; an
        # UnmarshalJSON method's json.Unmarshal error gets them too (the type is the
        # method's target then, `node` a scalar code).
        message = (
            f"json: cannot unmarshal {_json_word(value, literal)} into Go struct field "
            f"{where.owner}.{where.stack} of type {_go_type(node)}"
        )
        self.add(FieldProblem(where.path, message, stage))

    def strict_error(self, where: _Where, message: str) -> None:
        self.add(FieldProblem(where.path, message, STRICT))

    def struct(self, obj: Mapping[Any, Any], struct: _Struct, where: _Where) -> None:
        fields = struct.fields
        if isinstance(obj, DuplicateKeyDict):
            # decodeState.object's checkDuplicateField: only the struct's own fields
            # (an unknown key is reported as unknown, once: saveStrictError dedupes).
            for name in obj.duplicates:
                if name in fields:
                    field = where.field(name, struct.go_name)
                    self.strict_error(field, f"duplicate field {json.dumps(field.strict)}")
        for raw_key, value in obj.items():
            name = _key_text(raw_key)
            node = fields.get(name)
            if node is None:
                self.unknown(name, struct, where)
            elif value is not None:
                self.value(value, node, where.field(name, struct.go_name))

    def unknown(self, name: str, struct: _Struct, where: _Where) -> None:
        # decodeState.newFieldError: the strict path of the struct, "." and the key.
        path = f"{where.strict}.{name}" if where.strict else name
        message = f"unknown field {json.dumps(path)}"
        close = difflib.get_close_matches(name, struct.names, n=1)
        if close:
            message += f"; did you mean {json.dumps(close[0])}?"
        field = f"{where.path}.{name}" if where.path else name
        self.add(FieldProblem(field, message, STRICT))

    def value(self, value: object, node: _Node, where: _Where) -> None:
        """One non-null value (null decodes into anything: the zero value)."""
        if isinstance(node, _Struct):
            if isinstance(value, dict):
                self.struct(value, node, where)
            else:
                self.type_error(value, node, where, False)
        elif isinstance(node, tuple):
            self.collection(value, node, where)
        else:
            self.scalar(value, node, where)

    def collection(self, value: object, node: tuple[str, _Node], where: _Where) -> None:
        kind, inner = node
        if kind == "[":
            if not isinstance(value, list):
                self.type_error(value, node, where, False)
                return
            for i, item in enumerate(value):
                if item is not None:
                    self.value(item, inner, where.index(i))
            return
        if not isinstance(value, dict):
            self.type_error(value, node, where, False)
            return
        if isinstance(value, DuplicateKeyDict):
            for key in value.duplicates:  # maps' keys are checked too (checkDuplicateField)
                self.strict_error(
                    where.key(key), f"duplicate field {json.dumps(where.key(key).strict)}"
                )
        for raw_key, item in value.items():
            if item is not None:
                self.value(item, inner, where.key(_key_text(raw_key)))

    def scalar(self, value: object, code: str, where: _Where) -> None:
        if code == "s" or code == "y":
            if not isinstance(value, str):
                self.type_error(value, code, where, False)
        elif code == "b":
            if not isinstance(value, bool):
                self.type_error(value, code, where, False)
        elif code == "i" or code == "l":
            low, high = _INT32 if code == "i" else _INT64
            if not (_is_int(value) and low <= value <= high):  # type: ignore[operator]
                # literalStore: ParseInt fails (a fraction, an exponent) or OverflowInt.
                self.type_error(value, code, where, _is_number(value))
        elif code == "n":
            if not _is_number(value):
                self.type_error(value, code, where, False)
        elif code == "t":
            # Time.UnmarshalJSON: json.Unmarshal(b, &str) first.
            if not isinstance(value, str):
                self.type_error(value, "s", where, False, RETURNED)
        elif code == "I":
            # IntOrString.UnmarshalJSON: a string, else json.Unmarshal into its int32.
            if not isinstance(value, str) and not (
                _is_int(value) and _INT32[0] <= value <= _INT32[1]  # type: ignore[operator]
            ):
                self.type_error(value, "i", where, _is_number(value), RETURNED)
        elif code == "q" and not isinstance(value, str) and not _is_number(value):
            # Quantity.UnmarshalJSON parses the text of whatever is there; its error
            # (resource.ErrFormatWrong) is no UnmarshalTypeError: no context.
            self.add(FieldProblem(where.path, _QUANTITY_FORMAT, RETURNED))
