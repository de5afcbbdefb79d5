"""The fuzz cases: real manifests (examples/cluster/*.yaml and the unit tests'
documents) mutated by hypothesis, structurally (a value swapped for a hostile one,
a key dropped, a count made huge) and as text (bytes cut, repeated or inserted,
anchors and brackets sprinkled in), written as YAML or JSON."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.unit import manifests_helpers

ROOT = Path(__file__).resolve().parents[2]


def seed_texts() -> list[str]:
    """The manifests the cases start from."""
    # Each with nodes, so that its pods get scheduled (and reported) too.
    folder = ROOT / "examples" / "cluster"
    nodes = (folder / "nodes.yaml").read_text()
    texts = [
        f"{nodes}\n---\n{p.read_text()}"
        for p in sorted(folder.glob("*.yaml"))
        if p.name != "nodes.yaml"
    ]
    # The unit tests' documents, their placeholders filled as the tests fill them.
    test_nodes = textwrap.dedent(manifests_helpers.NODES)
    texts.extend(
        f"{test_nodes}\n---\n{textwrap.dedent(text)}"
        for text in (
            manifests_helpers.DEPLOYMENT.replace("IMAGE", "nginx"),
            manifests_helpers.JOB.replace("SPEC", "parallelism: 3\n  completions: 5"),
            manifests_helpers.DAEMONSET.replace("EXTRA", "hostNetwork: true"),
        )
    )
    return texts


def seed_documents() -> list[list[Any]]:
    return [[d for d in yaml.safe_load_all(text) if d is not None] for text in seed_texts()]


# Values that broke something once (issue #12) or sit on a limit.
HOSTILE_VALUES: list[Any] = [
    2**31 - 1,
    2**31,
    2**63,
    10**30,
    -1,
    0,
    1.5,
    float("1e308"),
    "1e999999999",
    "1e-999999999",
    "9Ei",
    "9223372036854775808",
    "99999999999999999999999m",
    "0." + "0" * 200 + "1",
    "[bold]x[/]",
    ":smile:",
    "[/]",
    "\x00",
    "é" * 10,
    "",
    None,
    True,
    [],
    {},
    "x" * 300,
    ["[red]"],
    {"[b]": "[/b]"},
]
INTERESTING_KEYS = frozenset(
    {
        "replicas",
        "parallelism",
        "completions",
        "cpu",
        "memory",
        "pods",
        "storage",
        "ephemeral-storage",
        "name",
        "kind",
        "namespace",
        "requests",
        "limits",
        "capacity",
        "allocatable",
        "template",
        "labels",
        "value",
        "priority",
    }
)
TEXT_SNIPPETS = [
    "&a ",
    "*a",
    "[",
    "{",
    "]",
    "---\n",
    "\n  - ",
    ": ",
    "!!binary ",
    "<<: *a\n",
    "[" * 2000,
    "1e999999999",
    '"\\u0000"',
    "\t",
]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_paths(value, (*prefix, index)))
    return found


def _replace(node: Any, path: tuple[Any, ...], value: Any, drop: bool) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        copy = dict(node)
        if drop and not rest:
            copy.pop(head, None)
        else:
            copy[head] = _replace(node[head], rest, value, drop)
        return copy
    copy_list = list(node)
    if drop and not rest:
        del copy_list[head]
    else:
        copy_list[head] = _replace(node[head], rest, value, drop)
    return copy_list


@st.composite
def structural(draw: st.DrawFn, documents: list[list[Any]]) -> list[Any]:
    """Documents of one seed with a few values swapped for hostile ones."""
    docs = list(draw(st.sampled_from(documents)))
    for _ in range(draw(st.integers(1, 4))):
        if not docs:
            break
        index = draw(st.integers(0, len(docs) - 1))
        paths = _paths(docs[index])
        # Half the time a field where trouble was found (issue #12): counts,
        # quantities, names and kinds.
        chosen = [p for p in paths if p and p[-1] in INTERESTING_KEYS]
        if chosen and draw(st.booleans()):
            paths = [(), *chosen]
        path = draw(st.sampled_from(paths[1:] or paths))  # rarely the whole document
        if draw(st.booleans()) and path:
            docs[index] = _replace(docs[index], path, None, drop=True)
        else:
            hostile = draw(st.sampled_from(HOSTILE_VALUES) | st.integers() | st.text(max_size=20))
            docs[index] = _replace(docs[index], path, hostile, drop=False)
    return docs


def _dump(docs: list[Any], as_json: bool) -> bytes:
    if as_json:
        return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}).encode()
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True).encode()


@st.composite
def textual(draw: st.DrawFn, texts: list[str]) -> bytes:
    """A seed's text with bytes cut, repeated or inserted."""
    data = draw(st.sampled_from(texts)).encode()
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["cut", "repeat", "insert", "byte"]))
        if action == "cut":
            data = data[:at] + data[at + draw(st.integers(1, 200)) :]
        elif action == "repeat":
            data = data[:at] + data[at : at + draw(st.integers(1, 100))] * 3 + data[at:]
        elif action == "insert":
            data = data[:at] + draw(st.sampled_from(TEXT_SNIPPETS)).encode() + data[at:]
        else:
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    return data


def cases() -> st.SearchStrategy[tuple[str, bytes]]:
    """(file name, content): its suffix says how the loader reads it."""
    documents = seed_documents()
    texts = seed_texts()
    structured = st.tuples(structural(documents), st.booleans()).map(
        lambda pair: ("case.json" if pair[1] else "case.yaml", _dump(pair[0], pair[1]))
    )
    return st.one_of(structured, textual(texts).map(lambda data: ("case.yaml", data)))
