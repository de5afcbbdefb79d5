"""Logging in klog text and component-base JSON."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import time
from collections.abc import Iterator

import pytest

from kubesched.logs import V, configure_logging, kobj, kv
from kubesched.testing import make_pod

log = logging.getLogger("kubesched.test_logs")
HERE = os.path.basename(__file__)
CALLER = f"{os.path.basename(os.path.dirname(__file__))}/{HERE}"


@pytest.fixture(autouse=True)
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
    root.setLevel(level)


def lines(out: io.StringIO) -> list[str]:
    return out.getvalue().splitlines()


def test_json_lines_have_klog_shape() -> None:
    out = io.StringIO()
    configure_logging("json", 2, stream=out)
    before = time.time() * 1000
    log.info("Successfully bound pod to node", extra=kv(pod="ns/name", node="n1", nodes=3))
    line_no = _lineno_of("Successfully bound pod to node")
    log.log(V(2), "Attempting", extra=kv(pod=kobj(make_pod("web-0", namespace="prod"))))
    log.log(V(3), "hidden at -v=2")
    log.warning("low on %s", "memory")
    after = time.time() * 1000
    records = [json.loads(line) for line in lines(out)]
    assert len(records) == 3
    first = records[0]
    assert list(first) == ["ts", "caller", "msg", "v", "pod", "node", "nodes"]
    assert isinstance(first["ts"], float)
    assert before <= first["ts"] <= after  # epoch milliseconds, as upstream
    assert first["caller"] == f"{CALLER}:{line_no}"
    assert first["msg"] == "Successfully bound pod to node"
    assert (first["v"], first["pod"], first["node"], first["nodes"]) == (0, "ns/name", "n1", 3)
    assert records[1]["v"] == 2
    assert records[1]["pod"] == {"name": "web-0", "namespace": "prod"}
    assert (records[2]["msg"], records[2]["v"]) == ("low on memory", 0)


def test_json_errors_have_err_last_and_no_v() -> None:
    out = io.StringIO()
    configure_logging("json", 0, stream=out)
    try:
        raise ValueError("bad value")
    except ValueError as exc:
        log.error("Error scheduling pod", exc_info=exc, extra=kv(pod="a/b"))
    log.error("Bind failed", extra=kv(err=RuntimeError("conflict"), node="n1"))
    first, second = (json.loads(line) for line in lines(out))
    assert list(first) == ["ts", "caller", "msg", "pod", "err"]
    assert first["err"] == "bad value"
    assert list(second) == ["ts", "caller", "msg", "node", "err"]
    assert second["err"] == "conflict"
    assert "stacktrace" not in first  # only at -v=4 and up


def test_json_stacktrace_at_v4() -> None:
    out = io.StringIO()
    configure_logging("json", 4, stream=out)
    try:
        raise ValueError("bad value")
    except ValueError:
        log.exception("failed")
    (record,) = (json.loads(line) for line in lines(out))
    assert record["err"] == "bad value"
    assert "Traceback" in record["stacktrace"]


def test_text_is_klog_like() -> None:
    out = io.StringIO()
    configure_logging("text", 0, stream=out)
    log.info("Bound", extra=kv(pod=kobj(make_pod("p", namespace="ns")), node="n1", ok=True))
    line_no = _lineno_of('log.info("Bound"')
    log.log(V(1), "hidden at -v=0")
    log.error("Failed", exc_info=RuntimeError("boom"), extra=kv(count=1))
    log.warning("two\nlines", extra=kv(text="a\nb"))
    got = lines(out)
    header = r"(\d{4} \d\d:\d\d:\d\d\.\d{6}) +(\d+) " + re.escape(HERE)
    m = re.fullmatch(rf"I{header}:{line_no}\] (.*)", got[0])
    assert m is not None, got[0]
    assert int(m.group(2)) == os.getpid()
    assert m.group(3) == '"Bound" pod="ns/p" node="n1" ok=true'
    assert re.fullmatch(rf"E{header}:\d+\] \"Failed\" err=\"boom\" count=1", got[1])
    assert got[2].startswith("W") and got[2].endswith('"two\\nlines" text=<')
    assert got[3:] == ["\ta", "\tb", " >"]
    # klog's fixed-width pid column: "hh:mm:ss.uuuuuu" + 7-wide pid + space.
    assert got[0][21:30] == f" {os.getpid():7d} "


def test_verbosity_levels() -> None:
    assert V(0) == logging.INFO
    assert V(10) == logging.DEBUG
    out = io.StringIO()
    configure_logging("json", 10, stream=out)
    log.debug("debug is V(10)")
    log.log(V(11), "hidden")
    (record,) = (json.loads(line) for line in lines(out))
    assert record["v"] == 10


def test_reconfigure_replaces_handler() -> None:
    out1, out2 = io.StringIO(), io.StringIO()
    configure_logging("text", 0, stream=out1)
    configure_logging("json", 0, stream=out2)
    log.info("once")
    assert out1.getvalue() == ""
    assert json.loads(out2.getvalue())["msg"] == "once"
    with pytest.raises(ValueError):
        configure_logging("yaml", 0)  # type: ignore[arg-type]


def _lineno_of(snippet: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if snippet in line and "_lineno_of" not in line:
                return i
    raise AssertionError(snippet)
