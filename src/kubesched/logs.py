"""Logging in kube-scheduler's formats: klog text or component-base's JSON.

Set up once, from the CLI::

    configure_logging("json", verbosity=2)      # or "text"; -v=2

Log through the standard ``logging`` module. Structured key/values go in
``extra=kv(...)`` (the same as ``extra={"kv": {...}}``); verbosity levels are
``V(n)``, klog's ``V(n).InfoS``::

    log = logging.getLogger("kubesched.scheduler")
    log.info("Successfully bound pod to node", extra=kv(pod=kobj(pod), node="n1"))
    log.log(V(4), "Attempting to schedule pod", extra=kv(pod=kobj(pod)))
    log.error("Error scheduling pod", exc_info=exc, extra=kv(pod=kobj(pod)))  # klog.ErrorS

``logging.INFO`` is V(0) and ``V(n)`` is ``INFO - n``, so ``logging.DEBUG`` is
V(10); ``verbosity`` n shows everything up to V(n). Warnings are V(0). An error
comes from ``exc_info`` or from a key/value named ``err``.

Text, as klog writes it (header, quoted message, ``key=value``; strings and
objects quoted, numbers/bools/lists/dicts as JSON, multi-line strings as
klog's ``key=<`` block)::

    I1122 10:00:00.000000   12345 scheduler.py:311] "Bound" pod="default/web-0" node="n1"
    E1122 10:00:00.000000   12345 scheduler.py:311] "Error scheduling pod" err="boom" pod="a/b"

JSON, as k8s.io/component-base/logs/json writes it (zap): ``ts`` is the epoch
time in *milliseconds* (a float, as upstream's epochMillisTimeEncoder),
``caller`` the last directory and file (zap's ShortCallerEncoder), ``v`` only on
info and warning lines, the key/values in order, then ``err`` on errors::

    {"ts":1763805600000.123,"caller":"scheduler/scheduler.py:311","msg":"Bound","v":0,
     "pod":{"name":"web-0","namespace":"default"},"node":"n1"}          (one line)
    {"ts":1763805600000.123,"caller":"scheduler/scheduler.py:311","msg":"Error scheduling pod",
     "pod":{"name":"b","namespace":"a"},"err":"boom"}                   (one line)

Neither klog nor zap prints a traceback; at verbosity 4 and up the text format
adds it under the line and the JSON format in a ``stacktrace`` field.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, Protocol, TextIO

__all__ = [
    "JSONFormatter",
    "ObjectRef",
    "TextFormatter",
    "V",
    "configure_logging",
    "kobj",
    "kv",
]


def V(n: int) -> int:
    """The logging level of klog's ``V(n)``: ``logging.INFO - n`` (V(0) is INFO)."""
    return logging.INFO - max(0, n)


def kv(**fields: Any) -> dict[str, Any]:
    """``extra=`` for structured key/values: ``log.info("msg", extra=kv(pod=..., node=...))``."""
    return {"kv": fields}


class ObjectRef:
    """klog.KObj: ``ns/name`` in text, ``{"name":..,"namespace":..}`` in JSON."""

    __slots__ = ("name", "namespace")

    def __init__(self, namespace: str, name: str) -> None:
        self.namespace = namespace
        self.name = name

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __repr__(self) -> str:
        return f"ObjectRef({self})"

    def to_json(self) -> dict[str, str]:
        out = {"name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        return out


class _Meta(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...


class _HasMeta(Protocol):
    @property
    def metadata(self) -> _Meta: ...


def kobj(obj: _HasMeta) -> ObjectRef:
    """The ObjectRef of an API object (anything with ``metadata.namespace/name``)."""
    return ObjectRef(obj.metadata.namespace, obj.metadata.name)


# --- record helpers -------------------------------------------------------------


def _verbosity_of(record: logging.LogRecord) -> int:
    return max(0, logging.INFO - record.levelno)


def _fields(record: logging.LogRecord) -> tuple[dict[str, Any], Any]:
    """The record's key/values without ``err``, and the error (or None)."""
    raw = getattr(record, "kv", None)
    fields = dict(raw) if isinstance(raw, Mapping) else {}
    err: Any = fields.pop("err", None)
    if record.exc_info and record.exc_info[1] is not None:
        err = record.exc_info[1]
    return fields, err


def _traceback(record: logging.LogRecord) -> str:
    parts = []
    if record.exc_info and record.exc_info[2] is not None:
        parts.append("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
    if record.stack_info:
        parts.append(record.stack_info.rstrip("\n"))
    return "\n".join(parts)


def _error_text(err: Any) -> str:
    return str(err)


# --- text -----------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, ObjectRef):
        return value.to_json()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def _text_value(value: Any) -> str:
    """klog's KVFormat: strings, Stringers and errors quoted; the rest as JSON."""
    if isinstance(value, str | ObjectRef | BaseException):
        text = str(value)
        if "\n" not in text:
            return "=" + json.dumps(text, ensure_ascii=False)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        return "=<\n" + "".join(f"\t{line}\n" for line in lines) + " >"
    if isinstance(value, bool | int | float | list | dict | tuple | set | frozenset) or (
        value is None
    ):
        return "=" + json.dumps(value, default=_json_default, ensure_ascii=False)
    return "=" + json.dumps(str(value), ensure_ascii=False)


_SEVERITY = ((logging.CRITICAL, "F"), (logging.ERROR, "E"), (logging.WARNING, "W"))


def _severity(levelno: int) -> str:
    for level, char in _SEVERITY:
        if levelno >= level:
            return char
    return "I"


class TextFormatter(logging.Formatter):
    """klog's text format: ``Lmmdd hh:mm:ss.uuuuuu pid file:line] "msg" k=v ...``."""

    def __init__(self, tracebacks: bool = False) -> None:
        super().__init__()
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        now = datetime.fromtimestamp(record.created)
        header = (
            f"{_severity(record.levelno)}{now:%m%d %H:%M:%S}.{now.microsecond:06d} "
            f"{record.process or 0:7d} {os.path.basename(record.pathname)}:{record.lineno}] "
        )
        fields, err = _fields(record)
        parts = [header, json.dumps(record.getMessage(), ensure_ascii=False)]
        if err is not None:
            # klog's ErrorS puts err before the other key/values.
            parts.append(" err" + _text_value(_error_text(err)))
        for key, value in fields.items():
            parts.append(f" {key}{_text_value(value)}")
        line = "".join(parts)
        if self.tracebacks:
            tb = _traceback(record)
            if tb:
                line += "\n" + tb
        return line


# --- JSON -----------------------------------------------------------------------


def _short_caller(pathname: str, lineno: int) -> str:
    """zap's ShortCallerEncoder: the last directory and the file."""
    head, file = os.path.split(pathname)
    directory = os.path.basename(head)
    return f"{directory}/{file}:{lineno}" if directory else f"{file}:{lineno}"


class JSONFormatter(logging.Formatter):
    """component-base/logs/json: ``{"ts","caller","msg","v",key/values...,"err"}``."""

    def __init__(self, tracebacks: bool = False) -> None:
        super().__init__()
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": record.created * 1000.0,
            "caller": _short_caller(record.pathname, record.lineno),
            "msg": record.getMessage(),
        }
        is_error = record.levelno >= logging.ERROR
        if not is_error:
            out["v"] = _verbosity_of(record)
        fields, err = _fields(record)
        for key, value in fields.items():
            if key not in out:
                out[key] = value
        if err is not None:
            out["err"] = _error_text(err)
        if self.tracebacks:
            tb = _traceback(record)
            if tb:
                out["stacktrace"] = tb
        return json.dumps(out, default=_json_default, ensure_ascii=False, separators=(",", ":"))


# --- setup ----------------------------------------------------------------------


class _Handler(logging.StreamHandler[TextIO]):
    """Marks the handler configure_logging installed, so a second call replaces it."""


def configure_logging(
    format: Literal["text", "json"] = "text",
    verbosity: int = 0,
    *,
    stream: TextIO | None = None,
) -> None:
    """Log every logger through the root logger in klog text or JSON to ``stream``
    (stderr, like klog), showing levels up to ``V(verbosity)``."""
    if format not in ("text", "json"):
        raise ValueError(f"unknown log format {format!r}: want text or json")
    tracebacks = verbosity >= 4
    formatter: logging.Formatter = (
        JSONFormatter(tracebacks) if format == "json" else TextFormatter(tracebacks)
    )
    handler = _Handler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(max(1, V(verbosity)))
