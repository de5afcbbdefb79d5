"""Reading manifests: files, folders (recursively) and stdin, into documents.

A YAML stream is read one document at a time, a JSON file as one value or a
stream of them. A syntax error costs only its own document and is reported
with its line and column; what is read is handed to the loader
(manifest_loader), which makes the typed objects.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import msgspec
import yaml

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class _Reports(Protocol):
    """Where reading reports empty folders and unreadable files: the loader."""

    notes: list[str]

    def file_problem(self, source: str, message: str) -> None: ...


class DuplicateKeyError(yaml.YAMLError):
    """A mapping names one key twice. PyYAML keeps the last value silently; the
    apiserver's strict decoding (sigs.k8s.io/yaml, goyaml.v2 UnmarshalStrict)
    refuses the object with `line N: key "k" already set in map`."""

    def __init__(self, key: object, line: int) -> None:
        super().__init__(f"key {json.dumps(str(key))} already set in map")
        self.line = line  # 0-based, within the text the loader was given


class _YamlLoader(_SafeLoader):
    """The safe loader without YAML 1.1 timestamps (`creationTimestamp:
    2024-01-01T00:00:00Z` stays the string the API and msgspec expect), and
    refusing duplicate keys in a mapping."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, object]] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *base` keys are merged, and may be overridden
            key = (
                key_node.tag,
                key_node.value if isinstance(key_node.value, str) else id(key_node),
            )
            if key in seen:
                raise DuplicateKeyError(key_node.value, key_node.start_mark.line)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
}


def _read_path(path: str | Path, loader: _Reports) -> Iterator[tuple[str, bytes, bool]]:
    if str(path) == "-":
        yield "<stdin>", sys.stdin.buffer.read(), False
        return
    path = Path(path)
    if path.is_dir():
        files = _manifest_files(path)
        if not files:
            loader.notes.append(f"no *.yaml, *.yml or *.json files in {path}")
        for file in files:
            yield from _read_file(file, loader)
    elif path.exists():
        yield from _read_file(path, loader)
    else:
        loader.file_problem(str(path), "no such file or directory")


def _manifest_files(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(
            Path(folder, f)
            for f in files
            if not f.startswith(".") and f.lower().endswith(MANIFEST_SUFFIXES)
        )
    return sorted(found, key=lambda p: p.relative_to(root).parts)


def _read_file(path: Path, loader: _Reports) -> Iterator[tuple[str, bytes, bool]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        loader.file_problem(str(path), f"cannot read: {exc.strerror or exc}")
        return
    yield str(path), data, path.suffix.lower() == ".json"


def _yaml_documents(text: str, report: Callable[[int, str], None]) -> Iterator[tuple[int, object]]:
    """(1-based index, object) for each document of a YAML stream.

    The stream is cut at its `---` lines and each document is read on its own
    by PyYAML (libyaml), so a syntax error costs only its own document (reported
    through `report`) and reading goes on with the next one. Streams with
    directives or `...` markers are read whole. JSON input is much faster to
    read than YAML for large cluster dumps (`kubectl get ... -o json`)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    newline_at_end = text.endswith("\n")
    if newline_at_end:
        lines.pop()
    starts = [0]
    whole = False
    for number, line in enumerate(lines):
        if line.startswith(("---", "...", "%")):
            if line.startswith("---") and (len(line) == 3 or line[3] in " \t"):
                if number:
                    starts.append(number)
            else:
                whole = True
    if whole:
        starts = [0]
    index = 0
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        complete = newline_at_end or k + 1 < len(starts)  # the last line ends with "\n"
        chunk = "\n".join(lines[start:end]) + ("\n" if complete else "")
        try:
            for obj in yaml.load_all(chunk, Loader=_YamlLoader):
                index += 1
                yield index, obj
        except Exception as exc:  # PyYAML raises KeyError & co. on some odd input too
            index += 1
            report(index, _yaml_error(exc, start))


def _yaml_error(exc: Exception, first_line: int) -> str:
    """A one-line message for a PyYAML error; `first_line` is where its text began."""
    if isinstance(exc, DuplicateKeyError):
        return f"strict decoding error: line {first_line + exc.line + 1}: {exc}"
    if not isinstance(exc, yaml.MarkedYAMLError):
        return f"YAML error: {type(exc).__name__}: {exc}"
    detail = exc.problem or "invalid YAML"
    mark = exc.problem_mark or exc.context_mark
    where = (
        "" if mark is None else f" at line {first_line + mark.line + 1}, column {mark.column + 1}"
    )
    if exc.context:
        context = exc.context
        if exc.context_mark is not None and exc.context_mark is not mark:
            line = first_line + exc.context_mark.line + 1
            context = f"{context} at line {line}, column {exc.context_mark.column + 1}"
        detail = f"{detail} ({context})"
    return f"YAML syntax error{where}: {detail}"


def _json_documents(
    data: bytes, report: Callable[[int, str], None]
) -> Iterator[tuple[int, object]]:
    """One JSON value (the usual case, decoded fast), or a stream of them."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError:
        pass
    else:
        yield 1, obj
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report(1, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
        return
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"\s*")
    position = 0
    index = 0
    while True:
        match = whitespace.match(text, position)
        position = match.end() if match else position
        if position >= len(text):
            return
        index += 1
        try:
            obj, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            report(index, f"JSON syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}")
            return
        except RecursionError:
            report(index, "JSON nested too deeply")
            return
        yield index, obj
