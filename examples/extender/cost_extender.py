"""A scheduler extender to try kubesched and kube-scheduler with: an HTTP service on
the extender protocol (k8s.io/kube-scheduler/extender/v1) with two verbs.

- filter: refuses nodes whose `example.com/hourly-cost` label is above --max-cost;
- prioritize: scores the cheaper nodes higher (0 to 10).

It reads the nodes from the request, so configure it without nodeCacheCapable.
Run it with `python examples/extender/cost_extender.py --port 8888`; it uses the
standard library only.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

COST_LABEL = "example.com/hourly-cost"


def cost(node: dict[str, Any]) -> float:
    """The node's hourly cost from its label; unlabelled nodes count as free."""
    try:
        return float(node["metadata"].get("labels", {}).get(COST_LABEL, "0"))
    except ValueError:
        return 0.0


def filter_nodes(args: dict[str, Any], max_cost: float) -> dict[str, Any]:
    """An ExtenderFilterResult: the nodes at or under max_cost, the others with why."""
    nodes = (args.get("Nodes") or {}).get("items") or []
    kept = [n for n in nodes if cost(n) <= max_cost]
    failed = {
        n["metadata"]["name"]: f"node(s) cost more than {max_cost:g} an hour"
        for n in nodes
        if cost(n) > max_cost
    }
    return {"Nodes": {"items": kept}, "FailedNodes": failed, "Error": ""}


def prioritize(args: dict[str, Any]) -> list[dict[str, Any]]:
    """A HostPriorityList: 10 for the cheapest node, down to 0 for the dearest."""
    nodes = (args.get("Nodes") or {}).get("items") or []
    costs = {n["metadata"]["name"]: cost(n) for n in nodes}
    low, high = min(costs.values(), default=0.0), max(costs.values(), default=0.0)
    span = (high - low) or 1.0
    return [{"Host": name, "Score": round(10 * (high - c) / span)} for name, c in costs.items()]


def handler(max_cost: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            args = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            verb = self.path.rstrip("/").rsplit("/", 1)[-1]
            if verb == "filter":
                answer: Any = filter_nodes(args, max_cost)
            elif verb == "prioritize":
                answer = prioritize(args)
            else:
                self.send_error(404, f"unknown verb {verb!r}")
                return
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--max-cost", type=float, default=1.0, help="dearest node allowed")
    options = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", options.port), handler(options.max_cost))
    server.serve_forever()


if __name__ == "__main__":
    main()
