"""The field schemas against what the validator reports: a document of each kind
with every field the schema knows set (built here from the committed compact
schema, independently of the validator), an unknown field added to every object
at every depth, every int32 pushed out of range; and the committed schema file
against its generator."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from kubesched.cluster.validation import fields
from kubesched.cluster.validation.fields import DuplicateKeyDict, check_fields, schema_version

ROOT = Path(__file__).resolve().parents[2]
SCHEMA: dict[str, Any] = json.loads(
    gzip.decompress(
        files("kubesched.cluster.validation").joinpath("field_schemas.json.gz").read_bytes()
    )
)
UNKNOWN = "zzUnknownField"
SCALARS: dict[str, object] = {
    "s": "x",
    "y": "eA==",
    "t": "2026-01-01T00:00:00Z",
    "b": True,
    "i": 7,
    "l": 7,
    "n": 1.5,
    "I": "50%",
    "q": "100m",
}


class Full:
    """A document with every field of a definition set, and the problems the
    validator must report for it: (loader path, strict path) of every object,
    in the order a walk of the document meets them after their fields."""

    def __init__(self, *, unknown: bool = False, int32: object = 7) -> None:
        self.unknown = unknown
        self.int32 = int32
        self.expected: list[tuple[str, str]] = []  # (field, message)

    def value(self, code: str, path: str, strict: str, owner: str, stack: str) -> object:
        if code[0] == "[":
            return [self.value(code[1:], f"{path}[0]", f"{strict}[0]", owner, stack)]
        if code[0] == "{":
            return {"k": self.value(code[1:], f"{path}[k]", f"{strict}.k", owner, stack)}
        if code[0] == "@":
            return self.struct(code[1:], path, strict, stack)
        if code == "*":  # any JSON: deep, and never entered
            deep: object = {"f:leaf": {}}
            for _ in range(200):
                deep = {"f:x": [deep, {UNKNOWN: 1}]}
            return deep
        if code == "i" and self.int32 != 7:
            self.expected.append(
                (
                    path,
                    f"json: cannot unmarshal number {self.int32} into Go struct field "
                    f"{owner}.{stack} of type int32",
                )
            )
            return self.int32
        return SCALARS[code]

    def struct(self, name: str, path: str, strict: str, stack: str) -> dict[str, object]:
        owner = name.rsplit(".", 1)[1]
        obj: dict[str, object] = {}
        for field, code in SCHEMA["definitions"][name].items():
            obj[field] = self.value(
                code,
                f"{path}.{field}" if path else field,
                f"{strict}.{field}" if strict else field,
                owner,
                f"{stack}.{field}" if stack else field,
            )
        if self.unknown:
            obj[UNKNOWN] = {"value": ["of", {"any": "shape"}]}
            at = f"{strict}.{UNKNOWN}" if strict else UNKNOWN
            self.expected.append(
                (f"{path}.{UNKNOWN}" if path else UNKNOWN, f'unknown field "{at}"')
            )
        return obj


def kind_of(key: str) -> tuple[str, str]:
    api_version, _, kind = key.rpartition("/")
    return api_version, kind


KINDS = sorted(SCHEMA["kinds"])


@pytest.mark.parametrize("key", KINDS)
def test_a_full_document_of_each_kind_has_no_problem(key: str) -> None:
    full = Full()
    doc = full.struct(SCHEMA["kinds"][key], "", "", "")
    assert check_fields(doc, *kind_of(key)) == []  # msgspec's structs accept it
    # ... and so does the Python walk (a DuplicateKeyDict is always walked).
    assert check_fields(DuplicateKeyDict(doc, ()), *kind_of(key)) == []


@pytest.fixture
def unlimited(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every problem, not the first MAX_PROBLEMS."""
    monkeypatch.setattr(fields, "MAX_PROBLEMS", 10**6)


@pytest.mark.usefixtures("unlimited")
@pytest.mark.parametrize("key", KINDS)
def test_an_unknown_field_in_every_object_at_every_depth_is_reported(key: str) -> None:
    full = Full(unknown=True)
    doc = full.struct(SCHEMA["kinds"][key], "", "", "")
    found = check_fields(doc, *kind_of(key))
    assert found is not None
    assert [(p.field, p.message.split(";")[0]) for p in found] == full.expected
    assert len(full.expected) > 3


@pytest.mark.usefixtures("unlimited")
@pytest.mark.parametrize("key", ["v1/Pod", "apps/v1/Deployment", "batch/v1/Job"])
def test_every_int32_out_of_range_is_reported(key: str) -> None:
    full = Full(int32=2**31)
    doc = full.struct(SCHEMA["kinds"][key], "", "", "")
    found = check_fields(doc, *kind_of(key))
    assert found is not None
    assert [(p.field, p.message) for p in found] == full.expected
    assert len(full.expected) > 20


def test_a_full_pod_reaches_the_depths_it_should() -> None:
    full = Full(unknown=True)
    full.struct(SCHEMA["kinds"]["v1/Pod"], "", "", "")
    fields = {field for field, _ in full.expected}
    for path in (
        "spec.containers[0].resources.claims[0]",
        "spec.volumes[0].projected.sources[0].downwardAPI.items[0].resourceFieldRef",
        "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
        ".podAffinityTerm.labelSelector.matchExpressions[0]",
        "status.containerStatuses[0].state.terminated",
        "metadata.ownerReferences[0]",
    ):
        assert f"{path}.{UNKNOWN}" in fields


def test_unknown_fields_deep_in_a_hostile_document_cost_no_recursion() -> None:
    value: object = 1
    for _ in range(100_000):  # far deeper than the reader allows
        value = {"a": [value]}
    # Values of any type (FieldsV1) and of unknown fields are never entered, by
    # msgspec's structs or by the walk (which a DuplicateKeyDict forces).
    clean = {"metadata": {"managedFields": [{"fieldsV1": value}]}}
    assert check_fields(clean, "v1", "Pod") == []
    assert check_fields(DuplicateKeyDict(clean, ()), "v1", "Pod") == []
    found = check_fields({**clean, "spec": {"bad": value}}, "v1", "Pod")
    assert found is not None and [p.field for p in found] == ["spec.bad"]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location(
        "gen_field_schemas", ROOT / "hack/gen-field-schemas.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_schemas_are_what_the_generator_makes() -> None:
    """Regenerated from the OpenAPI documents when the Go module cache has them;
    else at least the release: the committed file names hack/k8s-version's."""
    version = (ROOT / "hack/k8s-version").read_text().strip()
    assert SCHEMA["kubernetes"] == version == schema_version()
    assert SCHEMA["generator"] == "hack/gen-field-schemas.py"
    cache = os.environ.get("GOMODCACHE") or str(Path.home() / "go/pkg/mod")
    openapi = Path(cache, f"k8s.io/kubernetes@{version}/api/openapi-spec/v3")
    if openapi.is_dir():
        generator = _generator()
        made = generator.generate(openapi, version)
        assert made == SCHEMA
        assert json.loads(gzip.decompress(generator.encode(made))) == SCHEMA
