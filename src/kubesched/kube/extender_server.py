"""`kubesched extender`: a profile's plugins served to a stock kube-scheduler.

The Scheduler is built as `run` builds it (Runner.new_scheduler) and its cache
fed by the same informers (scheduler_informers), so a nodeCacheCapable
kube-scheduler may send node names only; its queue is never popped and nothing
is bound or written. The verbs (kube/extender_verbs.py) are POSTed to
``/scheduler/filter``, ``/scheduler/prioritize`` and ``/scheduler/preempt`` on
the secure port, which
also serves /healthz, /livez, /readyz (ready once the informers synced) and
/metrics, as `run`'s.

Authentication: kube-scheduler's extender client sends no bearer token (its
tlsConfig has client certificates only, which the delegated authenticator here
does not read), so the verbs must be reachable as system:anonymous. They are in
the default --authorization-always-allow-paths (``/scheduler/*``, next to the
health paths), exactly as the health paths are: a verb reads the cache and
writes nothing. /metrics stays behind TokenReview and SubjectAccessReview. The
default --bind-address is 127.0.0.1, the sidecar layout (kube-scheduler in the
same pod); serving on other addresses is a choice the operator makes with the
flag, and dropping ``/scheduler/*`` from the always-allowed paths makes the
verbs need a SubjectAccessReview `post` on the path.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
from aiohttp import web

from kubesched.api.objects import Pod, PodExtendedResourceClaimStatus
from kubesched.config import SchedulerConfig
from kubesched.framework.clock import RealClock
from kubesched.framework.handle import Listers
from kubesched.framework.runtime.errors import PluginError
from kubesched.kube.client import KubeClient
from kubesched.kube.config import load_connection
from kubesched.kube.extender_verbs import (
    BadRequest,
    ExtenderVerbs,
    decode_args,
    decode_preemption_args,
)
from kubesched.kube.informers import needed_kinds, scheduler_informers
from kubesched.kube.runner import Runner, RunOptions, scheduler_config
from kubesched.kube.startup_checks import StartupError, listen_error, require_served
from kubesched.logs import V, kv
from kubesched.server.auth import ALWAYS_ALLOW_PATHS, RequestGuard
from kubesched.server.health import Handler, HealthServer
from kubesched.server.metrics import SchedulerMetrics

log = logging.getLogger("kubesched.extender")

PATH_PREFIX = "/scheduler"
EXTENDER_ALWAYS_ALLOW_PATHS = (*ALWAYS_ALLOW_PATHS, f"{PATH_PREFIX}/*")
# ExtenderArgs of a few thousand full Nodes fit; more is refused with 413.
MAX_BODY_BYTES = 64 * 1024 * 1024
_JSON = "application/json"


class ReadOnlyCluster:
    """The ClusterClient of a Scheduler that never schedules: the extender binds,
    evicts and writes nothing (kube-scheduler does)."""

    async def bind(self, pod: Pod, node_name: str) -> None:
        raise RuntimeError("kubesched extender does not bind")

    async def delete_pod(self, pod: Pod, reason: str) -> None:
        raise RuntimeError("kubesched extender does not evict")

    async def set_disruption_target(self, pod: Pod, reason: str, message: str) -> bool:
        return False

    async def set_extended_resource_claim_status(
        self, pod: Pod, status: PodExtendedResourceClaimStatus
    ) -> None:
        raise RuntimeError("kubesched extender writes no pod status")

    def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        pass

    def set_unschedulable(self, pod: Pod, reason: str, message: str, nominated_node: str) -> None:
        pass


@dataclass
class _Answer:
    status: int
    body: bytes
    error: str = ""  # the metric's reason when the request failed


def handle_verb(verbs: ExtenderVerbs, verb: str, body: bytes) -> _Answer:
    """A verb's HTTP answer to BODY: 200 with the protocol's result, or 400 with a
    one-line reason; a plugin's failure is the filter result's Error (as the
    protocol carries it) or, for prioritize, which has no error field, a 500."""
    try:
        if verb == "preempt":
            return _Answer(200, _encode(verbs.preempt(decode_preemption_args(body))))
        request = decode_args(body)
    except BadRequest as exc:
        return _Answer(400, str(exc).encode(), "bad_request")
    except PluginError as exc:
        return _Answer(500, str(exc).encode(), "plugin_error")
    try:
        if verb == "filter":
            result = verbs.filter(request)
            error = "plugin_error" if result.get("Error") else ""
            return _Answer(200, _encode(result), error)
        return _Answer(200, _encode(verbs.prioritize(request)))
    except PluginError as exc:
        return _Answer(500, str(exc).encode(), "plugin_error")


def _encode(value: object) -> bytes:
    return msgspec.json.encode(value)


class ExtenderServer(HealthServer):
    """The secure port of `kubesched extender`: HealthServer's endpoints and the verbs."""

    def __init__(
        self,
        verbs: ExtenderVerbs,
        metrics: SchedulerMetrics,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        guard: RequestGuard | None = None,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__(metrics, host, port, ssl_context=ssl_context, guard=guard)
        self.verbs = verbs
        # Until the informers have listed the cluster every node would be refused as
        # unknown: kube-scheduler gets a 503 instead, an error it retries the pod
        # after, rather than rejections it would report as the pod's.
        self.ready = ready
        metrics.enable_extender_server_metrics()

    def app(self) -> web.Application:
        app = super().app()
        for verb in ("filter", "prioritize", "preempt"):
            app.router.add_post(f"{PATH_PREFIX}/{verb}", self._verb(verb))
        return app

    def _verb(self, verb: str) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            started = time.perf_counter()
            try:
                body = await _read_limited(request)
                if not self.ready():
                    answer = _Answer(503, b"not ready: the informers have not synced", "not_ready")
                elif body is None:
                    answer = _Answer(413, b"request body too large", "too_large")
                else:
                    answer = handle_verb(self.verbs, verb, body)
            except Exception as exc:  # never a traceback to the caller
                log.exception("extender %s failed", verb)
                answer = _Answer(500, f"internal error: {type(exc).__name__}".encode(), "internal")
            self.metrics.observe_extender_request(
                verb, answer.status, time.perf_counter() - started, answer.error
            )
            if answer.status != 200:
                log.log(V(2), "Extender request failed", extra=kv(verb=verb, code=answer.status))
                return web.Response(status=answer.status, text=answer.body.decode() + "\n")
            return web.Response(body=answer.body, content_type=_JSON)

        return handler


async def _read_limited(request: web.Request) -> bytes | None:
    """The body, or None when it is over MAX_BODY_BYTES (aiohttp's own
    client_max_size of 1 MiB is too small for the Nodes of a large cluster)."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class ExtenderRunner(Runner):
    """`run`'s Runner with neither a scheduling loop nor leader election: the
    informers feed the cache, the secure port answers the verbs."""

    async def run(self) -> int:
        cfg = self.config
        connection = await load_connection(
            self.options.kubeconfig or cfg.kubeconfig or None, self.options.context
        )
        self.client = client = KubeClient(
            connection, content_type=cfg.content_type, accept=cfg.accept_content_type
        )
        listers = Listers(workload_selectors={})
        self.scheduler = sched = self.new_scheduler(ReadOnlyCluster(), RealClock(), listers)
        try:
            await require_served(
                client, needed_kinds(sched, generic_workload=self.options.gates.generic_workload)
            )
            await self.start_extender_server(client, ExtenderVerbs(sched))
        except StartupError:
            await self._shutdown()
            raise
        informers = scheduler_informers(
            client,
            sched,
            listers,
            generic_workload=self.options.gates.generic_workload,
            may_write_pod_groups=lambda: False,
        )
        self.informers = informers.all
        await self.start_informers(informers)
        if self.handlers_synced.is_set():
            log.info("Informers synced: serving the extender verbs")
        await self._until()
        await self._shutdown()
        return 0

    async def start_extender_server(self, client: KubeClient, verbs: ExtenderVerbs) -> None:
        options = self.options
        server = ExtenderServer(
            verbs,
            self.metrics,
            options.bind_address,
            options.secure_port,
            ssl_context=self.serving_ssl_context(),
            guard=await self.request_guard(client),
            ready=self.handlers_synced.is_set,
        )
        server.add_check("shutdown", self.shutdown_check, ("readyz",))
        server.add_check("sched-handler-sync", self.handler_sync_check, ("readyz",))
        try:
            await server.start()
        except OSError as exc:
            raise listen_error(
                server.host, server.port, "--secure-port, --bind-address", exc
            ) from None
        self.servers.append(server)


async def serve(options: RunOptions) -> int:
    """Serve until stopped; the exit code. A StartupError when it cannot start."""
    config: SchedulerConfig | None = options.scheduler_config
    if config is None:
        config = scheduler_config(options.config, options.gates, options.registry)
    for warning in config.warnings:
        log.warning("%s", warning)
    if config.extenders:
        # An extender calling extenders would answer for them too: left out.
        log.warning("The configuration's extenders are ignored by kubesched extender")
        config.extenders = []
    runner = ExtenderRunner(options, config)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, runner.stop.set)
    return await runner.run()
