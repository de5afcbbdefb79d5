"""Every disagreement `make diff` found (regressions/*.yaml) is re-run through both
schedulers and must now agree.

A file with a top-level ``known_issue: <text>`` is an open kubesched bug: it is
expected to fail (strict xfail), so fixing the bug makes the test say so; then
delete the known_issue line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.differential import generator as gen
from tests.differential.harness import Harness

pytestmark = pytest.mark.integration

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.yaml"))


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def _params() -> list[Any]:
    out = []
    for path in REGRESSIONS:
        doc = _load(path)
        marks = []
        if doc.get("known_issue"):
            marks.append(pytest.mark.xfail(reason=str(doc["known_issue"]), strict=True))
        out.append(pytest.param(path, marks=marks, id=path.stem))
    return out


@pytest.mark.parametrize("path", _params())
def test_regression(harness: Harness, path: Path) -> None:
    scenario = _load(path)["scenario"]
    missing = gen.unsupported_features(scenario.get("features", []))
    if missing:
        pytest.skip(f"kubesched lacks the plugins of {missing}")
    comparison = harness.run(scenario)
    assert comparison.ok, comparison.summary()
