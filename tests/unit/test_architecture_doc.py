"""docs/explanation/architecture.md's diagram is the packages' import graph: derived here from
the code (every import, deferred ones too), reduced to the arrows no longer path
already implies, and compared with the mermaid flowchart under "## Layers"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "kubesched"
DOC = ROOT / "docs" / "explanation" / "architecture.md"


def import_graph() -> dict[str, set[str]]:
    """Top-level package (or module) -> the others it imports."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        own = path.relative_to(PACKAGE).with_suffix("").parts[0]
        if own in ("__init__", "__main__"):
            continue
        graph.setdefault(own, set())
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "kubesched" and len(parts) > 1 and parts[1] != own:
                    graph[own].add(parts[1])
    return graph


def reduction(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The edges no other path between their ends implies."""

    def reaches(start: str, goal: str, without: tuple[str, str]) -> bool:
        seen: set[str] = set()
        stack = [b for b in graph.get(start, ()) if (start, b) != without]
        while stack:
            node = stack.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(graph.get(node, ()))
        return False

    return {(a, b) for a, bs in graph.items() for b in bs if not reaches(a, b, (a, b))}


def documented() -> set[tuple[str, str]]:
    text = DOC.read_text()
    layers = text[text.index("## Layers") :]
    block = re.search(r"```mermaid\n(.*?)```", layers, re.S)
    assert block is not None, "no mermaid diagram under ## Layers"
    edges: set[tuple[str, str]] = set()
    for line in block.group(1).splitlines():
        if "-->" not in line:
            continue
        left, right = line.split("-->")
        for a in left.split("&"):
            for b in right.split("&"):
                edges.add((a.strip(), b.strip()))
    return edges


def test_the_diagram_is_the_import_graph() -> None:
    actual = reduction(import_graph())
    drawn = documented()
    assert sorted(drawn - actual) == [], "arrows with no import behind them"
    assert sorted(actual - drawn) == [], "imports the diagram leaves out"


def test_the_graph_sees_the_package() -> None:
    graph = import_graph()
    assert {"cli", "framework", "plugins", "scheduler", "kube"} <= set(graph)
    assert "framework" in graph["plugins"]
