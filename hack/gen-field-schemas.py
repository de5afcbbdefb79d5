#!/usr/bin/env python3
"""The field schemas `kubesched simulate` checks manifests against
(src/kubesched/cluster/validation/field_schemas.json.gz, `make field-schemas`):
the properties of every kind the loader reads, from the OpenAPI v3 documents of
k8s.io/kubernetes at the release in hack/k8s-version (api/openapi-spec/v3). Only
regenerating needs Go and the network (when the module is not in the Go module
cache yet); the file is committed.

The compact form: {"kubernetes": version, "kinds": {"group/version/Kind" or
"v1/Kind": definition}, "definitions": {name: {field: code}}}, a name being the
OpenAPI one without "io.k8s.", and a code one of
    s string   b boolean   i int32   l int64   n number   y byte string (base64)
    t Time (date-time)   I IntOrString   q Quantity   * any JSON value
    @name an object of that definition   [code a list of   {code a map of.
Usage: hack/gen-field-schemas.py [--openapi DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "src/kubesched/cluster/validation/field_schemas.json.gz"
GENERATOR = "hack/gen-field-schemas.py"

sys.path.insert(0, str(REPO / "src"))
from kubesched.api import kinds as _kinds  # noqa: E402  (the one list of kinds read)
from kubesched.cluster.dra_manifests import DRA_KINDS  # noqa: E402


def kinds_read() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(group, version, kinds): the built-in kinds of api/kinds.py's list (CRDs such as
    Coscheduling's PodGroup have no OpenAPI here), and the DRA kinds once more at
    resource.k8s.io/v1beta2, which the loader reads as v1."""
    by_version: dict[tuple[str, str], list[str]] = {}
    for kind in _kinds.SIMULATOR_KINDS:
        if kind not in _kinds.PLUGIN_KINDS:
            by_version.setdefault((kind.group, kind.version), []).append(kind.kind)
    by_version[_kinds.RESOURCE_CLAIM.group, "v1beta2"] = sorted(DRA_KINDS)
    return tuple(
        (group, version, tuple(sorted(names)))
        for (group, version), names in sorted(by_version.items())
    )


KINDS = kinds_read()

# Definitions whose Go types unmarshal themselves (UnmarshalJSON): their codes.
SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "q",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "I",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "t",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "t",
}
# Definitions whose UnmarshalJSON keeps whatever JSON there is. Every other
# definition of `type: object` without properties is an empty struct (e.g.
# scheduling's BasicSchedulingPolicy), where any field is unknown.
ANY = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
}
REF_PREFIX = "#/components/schemas/"


def k8s_version() -> str:
    return (REPO / "hack/k8s-version").read_text().strip()


def openapi_dir(version: str) -> Path:
    """api/openapi-spec/v3 of k8s.io/kubernetes@version: the Go module cache's, or
    downloaded into it as hack/build-k8s.sh does."""
    gomodcache = os.environ.get("GOMODCACHE") or str(Path.home() / "go/pkg/mod")
    found = Path(gomodcache, f"k8s.io/kubernetes@{version}/api/openapi-spec/v3")
    if found.is_dir():
        return found
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run(
            ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
            cwd=work,
            env={**os.environ, "GOFLAGS": "-mod=mod"},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    return Path(json.loads(out)["Dir"], "api/openapi-spec/v3")


def document_name(group: str, version: str) -> str:
    return f"api__{version}_openapi.json" if not group else f"apis__{group}__{version}_openapi.json"


def short(name: str) -> str:
    return name.removeprefix("io.k8s.")


class Compactor:
    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas
        self.definitions: dict[str, dict[str, str]] = {}

    def code(self, prop: dict[str, Any]) -> str:
        """The code of one property's schema (see the module docstring)."""
        if "$ref" in prop:
            return self.ref(prop["$ref"])
        if "allOf" in prop:  # {"allOf": [{"$ref": ...}], "default": ...}: a field's ref
            (only,) = prop["allOf"]
            return self.code(only)
        if prop.get("x-kubernetes-preserve-unknown-fields"):
            return "*"
        fmt = prop.get("format")
        if fmt == "int-or-string":
            return "I"
        kind = prop.get("type")
        if kind == "string":
            return {"byte": "y", "date-time": "t"}.get(fmt or "", "s")
        if kind == "integer":
            if fmt not in ("int32", "int64"):
                raise SystemExit(f"integer of format {fmt!r}: {prop}")
            return "i" if fmt == "int32" else "l"
        if kind == "number":
            return "n"
        if kind == "boolean":
            return "b"
        if kind == "array":
            return "[" + self.code(prop["items"])
        if kind == "object" or kind is None:
            if isinstance(prop.get("additionalProperties"), dict):
                return "{" + self.code(prop["additionalProperties"])
            if "properties" in prop:
                raise SystemExit(f"an inline object schema: {prop}")
            # An inline object without a schema of its own: whatever JSON there is.
            return "*"
        if "oneOf" in prop:  # Quantity's [string, number] when not by ref
            return "q"
        raise SystemExit(f"a schema not understood: {prop}")

    def ref(self, ref: str) -> str:
        name = ref.removeprefix(REF_PREFIX)
        if name in SPECIAL:
            return SPECIAL[name]
        if name in ANY or self.schemas[name].get("x-kubernetes-preserve-unknown-fields"):
            return "*"
        schema = self.schemas[name]
        is_struct = schema.get("type") == "object" and "additionalProperties" not in schema
        if "properties" not in schema and not is_struct:
            return self.code(schema)
        key = short(name)
        if key not in self.definitions:
            self.definitions[key] = {}  # first, so a recursive type ends here
            properties = schema.get("properties", {})
            fields = {f: self.code(p) for f, p in sorted(properties.items())}
            self.definitions[key] = fields
        return "@" + key


def generate(openapi: Path, version: str) -> dict[str, Any]:
    kinds: dict[str, str] = {}
    definitions: dict[str, dict[str, str]] = {}
    for group, api_version, names in KINDS:
        document = json.loads((openapi / document_name(group, api_version)).read_text())
        schemas = document["components"]["schemas"]
        by_kind = {
            gvk["kind"]: name
            for name, schema in schemas.items()
            for gvk in schema.get("x-kubernetes-group-version-kind", ())
            if gvk["group"] == group and gvk["version"] == api_version
        }
        compactor = Compactor(schemas)
        for kind in names:
            ref = compactor.ref(REF_PREFIX + by_kind[kind])
            kinds[f"{group}/{api_version}/{kind}".lstrip("/")] = ref.removeprefix("@")
        for name, fields in compactor.definitions.items():
            if definitions.setdefault(name, fields) != fields:
                raise SystemExit(f"{name} differs between the OpenAPI documents")
    return {
        "kubernetes": version,
        "generator": GENERATOR,
        "kinds": dict(sorted(kinds.items())),
        "definitions": dict(sorted(definitions.items())),
    }


def encode(schemas: dict[str, Any]) -> bytes:
    text = json.dumps(schemas, separators=(",", ":"), sort_keys=True) + "\n"
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--openapi", type=Path, help="api/openapi-spec/v3 of k8s.io/kubernetes")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    version = k8s_version()
    openapi = args.openapi or openapi_dir(version)
    schemas = generate(openapi, version)
    args.out.write_bytes(encode(schemas))
    print(
        f"wrote {args.out}: {len(schemas['kinds'])} kinds, "
        f"{len(schemas['definitions'])} definitions from k8s.io/kubernetes {version}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
