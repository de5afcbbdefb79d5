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
from typing import Protocol

import msgspec
import yaml

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# Limits on what one input may cost, each reported as a problem of its file or
# document, never a crash (issue #12). The depth is below Python's recursion limit,
# which the decoders (PyYAML's composer, msgspec) and the checks after them recurse
# into; kube objects nest a few dozen levels at most. The apiserver's decoders stop
# at 10000 (go-yaml's max_flow_level and max_indents, encoding/json's
# maxNestingDepth); libyaml's composer overflows the C stack well before that.
MAX_DEPTH = 1000
MAX_INPUT_BYTES = 1 << 30  # one file, or stdin


class _Reports(Protocol):
    """Where reading reports empty folders and unreadable files: the loader."""

    notes: list[str]

    def file_problem(self, source: str, message: str) -> None: ...


class _YamlLoader(_SafeLoader):
    """The safe loader without YAML 1.1 timestamps: `creationTimestamp:
    2024-01-01T00:00:00Z` stays the string the API (and msgspec) expects."""


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
}


def _read_path(path: str | Path, loader: _Reports) -> Iterator[tuple[str, bytes, bool]]:
    if str(path) == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            loader.file_problem("<stdin>", _too_large())
            return
        yield "<stdin>", data, False
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
        if path.stat().st_size > MAX_INPUT_BYTES:
            loader.file_problem(str(path), _too_large())
            return
        data = path.read_bytes()
    except OSError as exc:
        loader.file_problem(str(path), f"cannot read: {exc.strerror or exc}")
        return
    yield str(path), data, path.suffix.lower() == ".json"


def _too_large() -> str:
    return f"larger than {MAX_INPUT_BYTES >> 20} MiB, the most one input may hold"


def _may_exceed_limits(text: str, lines: list[str]) -> bool:
    """Whether the text may nest deeper than MAX_DEPTH or use aliases: the check
    of its events (_yaml_limits) is then needed. A collection nests in another by
    indentation, a `- ` or a flow bracket, so without anchors the depth is at most
    the longest line plus the brackets."""
    if "&" in text or "*" in text:
        return True
    brackets = text.count("[") + text.count("{")
    return brackets + max(map(len, lines), default=0) >= MAX_DEPTH


# go-yaml's allowedAliasRatio (decode.go): how much of a document may come from
# alias expansion, 99% of a small one down to 10% of one of 4,000,000 nodes.
_ALIAS_RATIO_LOW = 400_000
_ALIAS_RATIO_HIGH = 4_000_000


def _allowed_alias_ratio(nodes: int) -> float:
    if nodes <= _ALIAS_RATIO_LOW:
        return 0.99
    if nodes >= _ALIAS_RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * (nodes - _ALIAS_RATIO_LOW) / (_ALIAS_RATIO_HIGH - _ALIAS_RATIO_LOW)


def _yaml_limits(chunk: str) -> str | None:
    """Why a YAML text must not be composed, or None: nesting deeper than
    MAX_DEPTH (libyaml's composer recurses in C), an alias inside its own anchor,
    or excessive aliasing ("billion laughs": PyYAML shares the aliased objects, but
    everything after it walks the expanded tree). Decided on libyaml's events, which
    it produces without recursion; syntax errors are left to the loader."""
    depth = 0
    nodes = aliased = 0  # of the current document, expanded
    sizes: dict[str, int] = {}  # anchor -> nodes of its expanded value
    open_collections: list[tuple[str | None, int]] = []  # (anchor, `nodes` at its start)
    try:
        for event in yaml.parse(chunk, Loader=_YamlLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                nodes += 1
                depth += 1
                if depth > MAX_DEPTH:
                    return f"YAML nested more than {MAX_DEPTH} levels deep"
                open_collections.append((event.anchor, nodes))
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
                anchor, start = open_collections.pop()
                if anchor is not None:
                    sizes[anchor] = nodes - start + 1
            elif isinstance(event, yaml.ScalarEvent):
                nodes += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                size = sizes.get(event.anchor or "")
                if size is None:
                    if any(anchor == event.anchor for anchor, _ in open_collections):
                        # go-yaml: "anchor '%s' value contains itself"
                        return f"YAML anchor {event.anchor!r} value contains itself"
                    continue  # an unknown alias: the composer reports it
                nodes += size
                aliased += size
                if aliased > 100 and nodes > 1000 and aliased / nodes > _allowed_alias_ratio(nodes):
                    return "YAML document contains excessive aliasing"
            elif isinstance(event, yaml.DocumentStartEvent):
                nodes = aliased = 0
                sizes.clear()
    except yaml.YAMLError:
        return None
    return None


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
    check_limits = _may_exceed_limits(text, lines)
    index = 0
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        complete = newline_at_end or k + 1 < len(starts)  # the last line ends with "\n"
        chunk = "\n".join(lines[start:end]) + ("\n" if complete else "")
        refused = _yaml_limits(chunk) if check_limits else None
        if refused is not None:
            index += 1
            report(index, refused)
            continue
        try:
            for obj in yaml.load_all(chunk, Loader=_YamlLoader):
                index += 1
                yield index, obj
        except Exception as exc:  # PyYAML raises KeyError & co. on some odd input too
            index += 1
            report(index, _yaml_error(exc, start))


def _yaml_error(exc: Exception, first_line: int) -> str:
    """A one-line message for a PyYAML error; `first_line` is where its text began."""
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
    except RecursionError:  # msgspec stops at the interpreter's recursion limit
        report(1, f"JSON nested too deeply (the limit is about {MAX_DEPTH} levels)")
        return
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
            report(index, f"JSON nested too deeply (the limit is about {MAX_DEPTH} levels)")
            return
        yield index, obj
