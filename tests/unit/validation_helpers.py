"""What the validation tests share: a cluster of one roomy node and two good pods
around the document under test, run through `kubesched simulate -o json` (the
CLI, for the exit code), and the exact problem line expected."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kubesched.cli.main import main

Doc = dict[str, Any]

NODE: Doc = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"zone": "a"}},
    "status": {
        "allocatable": {
            "cpu": "64",
            "memory": "64Gi",
            "pods": "110",
            "example.com/gpu": "8",
            "hugepages-2Mi": "1Gi",
            "ephemeral-storage": "100Gi",
        }
    },
}


def pod(name: str = "bad", **spec: Any) -> Doc:
    """A pod with one container asking for 100m CPU; `spec` fields replace or add."""
    doc: Doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
            ]
        },
    }
    doc["spec"].update(copy.deepcopy(spec))
    return doc


def container(**fields: Any) -> Doc:
    return {"name": "c", "image": "nginx", **fields}


def with_meta(doc: Doc, **meta: Any) -> Doc:
    doc = copy.deepcopy(doc)
    doc["metadata"].update(meta)
    return doc


def run(tmp_path: Path, middle: Doc | str) -> tuple[int, dict[str, Any], Path]:
    """simulate on: the node, pod `first`, the document under test, pod `last`."""
    text = middle if isinstance(middle, str) else json.dumps(middle)
    docs = [json.dumps(NODE), json.dumps(pod("first")), text, json.dumps(pod("last"))]
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join(docs) + "\n")
    result = CliRunner().invoke(main, ["simulate", "-f", str(path), "-o", "json", "--seed", "1"])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, json.loads(result.stdout), path


def assert_refused(tmp_path: Path, middle: Doc | str, what: str, field: str, body: str) -> None:
    """The document (3rd) is refused with exactly one line naming file, document,
    object and field; the good pods are still scheduled; the exit code is 1."""
    code, out, path = run(tmp_path, middle)
    assert out["problems"] == [f"{path}: document 3 ({what}): field {field}: {body}"]
    assert {
        k: v for k, v in out["placements"].items() if k in ("default/first", "default/last")
    } == {
        "default/first": "n1",
        "default/last": "n1",
    }
    assert code == 1


def assert_accepted(tmp_path: Path, middle: Doc | str) -> dict[str, Any]:
    code, out, _ = run(tmp_path, middle)
    assert out["problems"] == []
    assert code == 0
    return out
