"""`kubesched run --explain`: a live scheduler says why, on its health port.

Off by default. When on, every scheduling attempt is explained (as `kubesched
explain` explains a simulated one: framework/explain.py) and the last
explanation of each of the most recently attempted pods is kept, at most
`keep` of them (least recently attempted forgotten first), so nothing grows
without bound. Upstream has no such endpoint: kube-scheduler logs every plugin's
score per node at -v=10 (prioritizeNodes); this serves the same figures, per pod,
on request:

* ``GET /debug/explain``: the pods with an explanation, most recent last;
* ``GET /debug/explain/{namespace}/{name}``: the pod's last explanation (JSON),
  404 if there is none.

Served by the health server (server.py) through its ``add_get``, so it is behind
whatever guards that port; kept in this module so the server stays as it is.
"""

from __future__ import annotations

from collections import OrderedDict

import msgspec
from aiohttp import web

from kubesched.framework.explain import Explanation
from kubesched.server.health import Handler

DEFAULT_KEEP = 1000
_JSON = "application/json"


class ExplainStore:
    """The ExplainObserver of `run --explain`: the last explanation of each of the
    `keep` most recently attempted pods."""

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        self.keep = keep
        self.last: OrderedDict[str, Explanation] = OrderedDict()
        self._encoder = msgspec.json.Encoder()

    def wants(self, key: str) -> bool:
        return True

    def explained(self, explanation: Explanation) -> None:
        self.last[explanation.pod] = explanation
        self.last.move_to_end(explanation.pod)
        while len(self.last) > self.keep:
            self.last.popitem(last=False)

    async def list_pods(self, _request: web.Request) -> web.Response:
        return web.Response(body=self._encoder.encode(list(self.last)), content_type=_JSON)

    async def pod(self, request: web.Request) -> web.Response:
        key = f"{request.match_info['namespace']}/{request.match_info['name']}"
        explanation = self.last.get(key)
        if explanation is None:
            raise web.HTTPNotFound(text=f"no explanation of pod {key}: not attempted lately\n")
        return web.Response(body=self._encoder.encode(explanation), content_type=_JSON)

    def routes(self) -> list[tuple[str, Handler]]:
        """The GET endpoints, for HealthServer.add_get."""
        return [
            ("/debug/explain", self.list_pods),
            ("/debug/explain/{namespace}/{name}", self.pod),
        ]
