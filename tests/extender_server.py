"""A scheduler extender for tests: an HTTP server on loopback that speaks
kube-scheduler's extender protocol (extenderv1: filter, prioritize, preempt, bind),
with its answers decided by the test. It records every request it is sent.

The same server serves the unit tests (kubesched's client in `simulate`) and the
integration tests, where kube-scheduler v1.36.3 and `kubesched run` call it alike.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# What a verb handler gets (the decoded request) and gives (the answer's JSON
# value, or an int: answer with that HTTP status and no body).
Handler = Callable[[dict[str, Any]], Any]


def node_names(args: dict[str, Any]) -> list[str]:
    """The candidate nodes of an ExtenderArgs, whether sent by name or as Nodes."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or []]


def pod_name(args: dict[str, Any]) -> str:
    return str(args["Pod"]["metadata"]["name"])


def filter_answer(
    args: dict[str, Any],
    keep: Callable[[str], bool],
    message: str = "rejected by the test extender",
    unresolvable: bool = False,
) -> dict[str, Any]:
    """An ExtenderFilterResult keeping the nodes `keep` accepts, in the same form
    (names or Nodes) as the request."""
    names = node_names(args)
    kept = [n for n in names if keep(n)]
    failed = {n: message for n in names if not keep(n)}
    answer: dict[str, Any] = {
        "FailedNodes": {} if unresolvable else failed,
        "FailedAndUnresolvableNodes": failed if unresolvable else {},
        "Error": "",
    }
    if args.get("NodeNames") is not None:
        answer["NodeNames"] = kept
    else:
        items = [n for n in args["Nodes"]["items"] if n["metadata"]["name"] in kept]
        answer["Nodes"] = {"metadata": {}, "items": items}
    return answer


@dataclass
class TestExtender:
    """The verbs the server answers, by name; each may be replaced by a test."""

    __test__ = False  # not a pytest class, despite its name

    verbs: dict[str, Handler] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering any verb
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    url: str = ""

    def calls(self, verb: str) -> list[dict[str, Any]]:
        return [args for name, args in self.requests if name == verb]


def _handler_class(ext: TestExtender) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            verb = self.path.strip("/").split("/")[-1]
            length = int(self.headers.get("Content-Length", "0"))
            args = json.loads(self.rfile.read(length) or b"{}")
            ext.requests.append((verb, args))
            if ext.delay:
                time.sleep(ext.delay)
            handler = ext.verbs.get(verb)
            answer: Any = 404 if handler is None else handler(args)
            # The client may have given up waiting (an extender timing out on purpose).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._answer(answer)

        def _answer(self, answer: Any) -> None:
            if isinstance(answer, int):
                self.send_response(answer)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: pytest shows the requests the test recorded instead

    return _Handler


@contextmanager
def serve_extender(
    ext: TestExtender | None = None, host: str = "127.0.0.1"
) -> Iterator[TestExtender]:
    """Run `ext` on a free loopback port for the block; ext.url is its urlPrefix."""
    ext = TestExtender() if ext is None else ext
    server = ThreadingHTTPServer((host, 0), _handler_class(ext))
    server.daemon_threads = True
    ext.url = f"http://{host}:{server.server_address[1]}/scheduler"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield ext
    finally:
        server.shutdown()
        server.server_close()
