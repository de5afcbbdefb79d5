"""The health and metrics endpoints of `kubesched run`, as kube-scheduler serves them.

``/healthz`` and ``/livez`` run the health checks, ``/readyz`` the ready checks
(the caller adds leader election, informer sync and the like), in the way of
k8s.io/apiserver/pkg/server/healthz:

* all pass: 200 ``ok`` (with ``?verbose``: one ``[+]name ok`` line per check,
  then ``healthz check passed``);
* one fails: 500 listing every check, ``[-]name failed: reason withheld`` for
  the failing ones, then ``healthz check failed`` (the reason goes to the log);
* ``?exclude=name`` skips a check, ``/readyz/name`` runs a single one;
* with no checks registered an endpoint has the single check ``ping``.

A check is a plain ``() -> bool``; one that raises counts as failed (raise
``CheckFailed`` to give the reason the log shows, as a Go check's error).
``/metrics`` serves ``SchedulerMetrics.render()``.

The server listens on plain HTTP, or on HTTPS when given an ``ssl.SSLContext``;
a ``RequestGuard`` (kubesched.server.auth) in front of every handler does what
kube-scheduler's handler chain does with its delegated authenticator and
authorizer (buildHandlerChain, cmd/kube-scheduler/app/server.go).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web

from kubesched.logs import V, kv
from kubesched.server.auth import RequestGuard
from kubesched.server.metrics import SchedulerMetrics

__all__ = ["Check", "CheckFailed", "Handler", "HealthServer"]

log = logging.getLogger("kubesched.server")

Check = Callable[[], bool]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ENDPOINTS = ("healthz", "livez", "readyz")


class CheckFailed(Exception):
    """A check's failure with its reason (the error a Go HealthChecker returns)."""


_TEXT = "text/plain; charset=utf-8"
_HEADERS = {"Content-Type": _TEXT, "X-Content-Type-Options": "nosniff"}


def _ping() -> bool:
    return True


def _run(fn: Check) -> tuple[bool, str]:
    """Run a check: (passed, reason when it did not)."""
    try:
        ok = bool(fn())
    except CheckFailed as exc:
        return False, str(exc)
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return ok, "" if ok else "check returned false"


class HealthServer:
    """/healthz, /livez, /readyz and /metrics on one port (0 picks a free one).

    SSL_CONTEXT: serve HTTPS. GUARD: authenticate and authorize every request
    first. SERVE_METRICS=False leaves /metrics out (the plain-HTTP health port).
    CHECKS: share the checks of another server (both answer the same)."""

    def __init__(
        self,
        metrics: SchedulerMetrics,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        guard: RequestGuard | None = None,
        serve_metrics: bool = True,
        checks: dict[str, dict[str, Check]] | None = None,
    ) -> None:
        self.metrics = metrics
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.guard = guard
        self.serve_metrics = serve_metrics
        # endpoint -> check name -> check, in the order they were added.
        self.checks: dict[str, dict[str, Check]] = (
            checks if checks is not None else {endpoint: {} for endpoint in ENDPOINTS}
        )
        self._runner: web.AppRunner | None = None
        self._more: list[tuple[str, Handler]] = []

    # --- checks ----------------------------------------------------------------

    def add_check(self, name: str, fn: Check, endpoints: Iterable[str]) -> None:
        """A check run by each of ENDPOINTS ("healthz", "livez", "readyz"); a second
        one by a name replaces it."""
        for endpoint in endpoints:
            self.checks[endpoint][name] = fn

    def add_health_check(self, name: str, fn: Check) -> None:
        """A liveness check, run by /healthz and /livez."""
        self.add_check(name, fn, ("healthz", "livez"))

    def add_ready_check(self, name: str, fn: Check) -> None:
        """A readiness check, run by /readyz."""
        self.add_check(name, fn, ("readyz",))

    def add_get(self, path: str, handler: Handler) -> None:
        """One more GET endpoint on this port (before start): `run --explain`'s."""
        self._more.append((path, handler))

    def _checks(self, endpoint: str) -> dict[str, Check]:
        # InstallPathHandler: an endpoint with no checks gets "ping".
        return self.checks[endpoint] or {"ping": _ping}

    # --- handlers --------------------------------------------------------------

    async def _root(self, request: web.Request) -> web.Response:
        endpoint = request.path.strip("/")
        excluded = set(request.query.getall("exclude", []))
        unknown = set(excluded)
        lines: list[str] = []
        failed: list[str] = []
        reasons: list[str] = []
        for name, fn in self._checks(endpoint).items():
            if name in excluded:
                unknown.discard(name)
                lines.append(f"[+]{name} excluded: ok\n")
                continue
            ok, reason = _run(fn)
            if ok:
                lines.append(f"[+]{name} ok\n")
            else:
                lines.append(f"[-]{name} failed: reason withheld\n")
                reasons.append(f"[-]{name} failed: {reason}")
                failed.append(name)
        if unknown:
            quoted = ",".join(f'"{n}"' for n in sorted(unknown))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
        if failed:
            log.log(
                V(2),
                "Health check failed",
                extra=kv(endpoint=endpoint, checks=",".join(failed), reasons="\n".join(reasons)),
            )
            body = "".join(lines) + f"{endpoint} check failed\n"
            return web.Response(status=500, text=body, headers=_HEADERS)
        if "verbose" not in request.query:
            return web.Response(text="ok", headers=_HEADERS)
        body = "".join(lines) + f"{endpoint} check passed\n"
        return web.Response(text=body, headers=_HEADERS)

    async def _single(self, request: web.Request) -> web.Response:
        endpoint = request.path.strip("/").split("/")[0]
        fn = self._checks(endpoint).get(request.match_info["check"])
        if fn is None:
            raise web.HTTPNotFound(text="404 page not found\n")
        ok, reason = _run(fn)
        if ok:
            return web.Response(text="ok", headers=_HEADERS)
        return web.Response(status=500, text=f"internal server error: {reason}\n", headers=_HEADERS)

    async def _metrics(self, _request: web.Request) -> web.Response:
        return web.Response(
            body=self.metrics.render(), headers={"Content-Type": self.metrics.content_type}
        )

    def app(self) -> web.Application:
        """The aiohttp application (for embedding or aiohttp's test client)."""
        middlewares = [self.guard.middleware] if self.guard is not None else []
        app = web.Application(middlewares=middlewares)
        for endpoint in ENDPOINTS:
            app.router.add_get(f"/{endpoint}", self._root)
            app.router.add_get(f"/{endpoint}/{{check}}", self._single)
        if self.serve_metrics:
            app.router.add_get("/metrics", self._metrics)
        for path, handler in self._more:
            app.router.add_get(path, handler)
        return app

    # --- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Listen on host:port; ``port`` becomes the actual port when 0 was given."""
        if self._runner is not None:
            return
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self.ssl_context)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        addresses = runner.addresses
        if addresses:
            self.port = int(addresses[0][1])
        log.info(
            "Serving securely" if self.ssl_context is not None else "Serving insecurely",
            extra=kv(address=f"{self.host}:{self.port}"),
        )

    async def stop(self) -> None:
        """Stop listening and close open connections."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
