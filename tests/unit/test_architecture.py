"""The structure rules that import-linter does not check (docs/explanation/architecture.md):
small modules (tests and tools included), and every kubesched import at the top of
its module, where the layer contracts can see it (cli/ alone defers its heavy
imports, so that `kubesched --help` stays quick)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "kubesched"
MAX_LINES = 800


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _all_python() -> list[Path]:
    """Every module of the repository: the package, its tests, bench/ and examples/."""
    found: list[Path] = []
    for top in ("src", "tests", "bench", "examples"):
        found.extend(p for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(found)


def _deferred_kubesched_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kubesched"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}")
            elif isinstance(node, ast.Import):
                found.extend(
                    f"{path.relative_to(ROOT)}:{node.lineno} {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("kubesched")
                )
    return found


def test_the_rules_see_the_whole_package() -> None:
    # A wrong root would make both checks below pass on nothing.
    assert len(_modules()) > 100


@pytest.mark.parametrize("path", _all_python(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_over_800_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


def test_no_kubesched_import_inside_a_function_outside_cli() -> None:
    deferred = [
        found
        for path in _modules()
        if "cli" not in path.relative_to(PACKAGE).parts
        for found in _deferred_kubesched_imports(path)
    ]
    assert deferred == []
