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

from kubesched.api.bounded_yaml import (
    MAX_DEPTH,
    DuplicateKeyError,
    YamlLoader,
    may_exceed_limits,
    yaml_limits,
)
from kubesched.cluster.validation.fields import DuplicateKeyDict

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")

# What one input may cost, reported as a problem of its file, never a crash
# (issue #12); the depth and aliasing limits are bounded_yaml's.
MAX_INPUT_BYTES = 1 << 30  # one file, or stdin


class _Reports(Protocol):
    """Where reading reports empty folders and unreadable files: the loader."""

    notes: list[str]

    def file_problem(self, source: str, message: str) -> None: ...


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
    check_limits = may_exceed_limits(text, lines)
    index = 0
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        complete = newline_at_end or k + 1 < len(starts)  # the last line ends with "\n"
        chunk = "\n".join(lines[start:end]) + ("\n" if complete else "")
        refused = yaml_limits(chunk) if check_limits else None
        if refused is not None:
            index += 1
            report(index, refused)
            continue
        try:
            for obj in yaml.load_all(chunk, Loader=YamlLoader):
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
    data: bytes, report: Callable[[int, str], None], *, find_duplicates: bool = True
) -> Iterator[tuple[int, object]]:
    """One JSON value (the usual case, decoded fast), or a stream of them.

    With find_duplicates (`--validate=strict` or `warn`), a document whose objects
    name a key twice is read again by json with a hook that marks them
    (DuplicateKeyDict, which cluster.validation.fields reports): the check costs an
    encoding of what msgspec decoded and two counts of ":"."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        obj = msgspec.json.decode(data)
        duplicates = find_duplicates and _may_name_a_key_twice(data, obj)
    except msgspec.DecodeError:
        pass
    except RecursionError:  # msgspec stops at the interpreter's recursion limit
        report(1, f"JSON nested too deeply (the limit is about {MAX_DEPTH} levels)")
        return
    else:
        if not duplicates:
            yield 1, obj
            return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        report(1, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
        return
    decoder = json.JSONDecoder(object_pairs_hook=_marking_duplicates if find_duplicates else None)
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


def _may_name_a_key_twice(data: bytes, decoded: object) -> bool:
    """Whether the JSON text may name a key twice in an object, which msgspec (like
    encoding/json) decodes keeping the last value; the apiserver's strict decoding
    refuses it (`duplicate field "x"`). Cheap, for cluster dumps of 30,000 pods:
    each member of an object has one ":" outside strings, and msgspec writes every
    ":" of a string as is, so encoding what was decoded gives as many colons as the
    text has unless a member was dropped, or the text escaped a ":" as \\u003a
    (then the slow reading decides)."""
    if b"\\u003" in data and (b"\\u003a" in data or b"\\u003A" in data):
        return True  # one scan for the usual text, where "\\u003" is rare
    return data.count(b":") != msgspec.json.encode(decoded).count(b":")


def _marking_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """json's object_pairs_hook: an object that names a key twice, or holds one
    that does (its members are made first), becomes a DuplicateKeyDict for
    cluster.validation.fields to report; the last value is kept, as msgspec keeps it."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        twice: dict[str, None] = {}
        for key, _ in pairs:
            if key in seen:
                twice[key] = None
            seen.add(key)
        return DuplicateKeyDict(obj, tuple(twice))
    # A list's items are made before the list: look into lists for marked objects
    # (without recursion: lists may nest as deep as the reader allows).
    pending = list(obj.values())
    while pending:
        value = pending.pop()
        if isinstance(value, DuplicateKeyDict):
            return DuplicateKeyDict(obj, ())
        if isinstance(value, list):
            pending.extend(value)
    return obj
