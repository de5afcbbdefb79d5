"""`kubesched run`: schedule the pods of a real cluster.

Informers feed the same Scheduler that `simulate` drives; the scheduling loop
starts once the caches are synced and this replica holds the leader lease.
SIGTERM stops taking new pods, lets in-flight binds finish and releases the
lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import ssl
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from kubesched.config import SchedulerConfig, check_plugin_names, load_config
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock, RealClock
from kubesched.framework.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.handle import Listers
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.registry import Registry
from kubesched.framework.status import Status, code_name
from kubesched.framework.waiting import WaitingPods
from kubesched.kube.api_worker.frames import Start
from kubesched.kube.api_worker.spawn import SpawnedWorker
from kubesched.kube.api_worker.supervisor import ApiWorker, WorkerCluster, WorkerFailed
from kubesched.kube.claims import KubeClaimWriter
from kubesched.kube.client import KubeClient
from kubesched.kube.cluster import KubeCluster
from kubesched.kube.config import load_connection
from kubesched.kube.cpu_budget import HOUSEKEEPING, SCHEDULING_CYCLE, CpuBudget
from kubesched.kube.delegated_auth import SubjectAccessReviewAuthorizer, TokenReviewAuthenticator
from kubesched.kube.explain_endpoint import DEFAULT_KEEP, ExplainStore
from kubesched.kube.fence import Fence
from kubesched.kube.inflight import AdaptiveLimiter
from kubesched.kube.informer import Informer
from kubesched.kube.informers import SchedulerInformers, needed_kinds, scheduler_informers
from kubesched.kube.leader import LeaderElectionConfig, LeaderElector
from kubesched.kube.startup_checks import StartupError, listen_error, require_served
from kubesched.kube.storage import KubeVolumeWriter
from kubesched.kube.writer import EventWriter, StatusWriter
from kubesched.plugins.registry import default_registry
from kubesched.scheduler import Scheduler
from kubesched.scheduler.batch_window import BatchOptions
from kubesched.scheduler.extender import build_extenders
from kubesched.scheduler.scheduler import freeze_after_sync
from kubesched.server.auth import (
    ALWAYS_ALLOW_PATHS,
    CachedPathAuthorizer,
    CachedTokenAuthenticator,
    RequestGuard,
)
from kubesched.server.health import CheckFailed, HealthServer
from kubesched.server.metrics import SchedulerMetrics
from kubesched.server.tls import self_signed_serving_certificate, server_ssl_context

log = logging.getLogger("kubesched.run")

DEFAULT_SCHEDULER_NAME = "kubesched"
BIND_DRAIN_SECONDS = 30.0
# How long a stopping scheduler keeps writing the events and pod conditions it
# has queued, once its binds are done (kube-scheduler's event broadcaster also
# hands queued events on as it shuts down).
WRITER_FLUSH_SECONDS = 5.0
# The leader-election watchdog's tolerance past the lease duration
# (NewLeaderHealthzAdaptor(time.Second * 20) in kube-scheduler's options).
LEADER_HEALTHZ_TIMEOUT = 20.0
# kube-scheduler's secure serving: --secure-port, and the name its
# self-signed certificate is for (MaybeDefaultWithSelfSignedCerts("localhost", ...)).
SECURE_PORT = 10259
SELF_SIGNED_HOST = "localhost"
SELF_SIGNED_IPS = ("127.0.0.1",)


@dataclass
class RunOptions:
    kubeconfig: str | None = None
    context: str | None = None
    config: str | None = None
    # The plain-HTTP health port (/healthz, /livez, /readyz only; no /metrics):
    # off unless given (upstream removed its insecure port).
    health_host: str = "0.0.0.0"
    health_port: int | None = None
    seed: int | None = None
    leader_elect: bool | None = None  # None: as the configuration says
    # The secure port, as kube-scheduler's flags; port 0: none.
    bind_address: str = "0.0.0.0"
    secure_port: int = SECURE_PORT
    tls_cert_file: str | None = None
    tls_private_key_file: str | None = None
    authentication_kubeconfig: str | None = None
    authorization_kubeconfig: str | None = None
    authorization_always_allow_paths: tuple[str, ...] = ALWAYS_ALLOW_PATHS
    # `--explain`: explain every attempt, serve the last ones on the secure port.
    explain: bool = False
    explain_keep: int = DEFAULT_KEEP
    registry: Registry | None = None  # None: the default one (`--plugin` adds to it)
    # The configuration as the command line made it (--config with --enable and
    # --disable applied); None: `config` is loaded (or the default one).
    scheduler_config: SchedulerConfig | None = None
    gates: FeatureGates = DEFAULT_GATES  # --feature-gates
    # `--batch-window`: the batch placement fallback (scheduler/batch_window.py); off
    # (None) by default, which is kube-scheduler's behaviour.
    batch_window: float | None = None
    batch_timeout: float = 1.0
    # `--api-worker` (the default): binds, events and PodScheduled conditions are
    # written by a process of their own (kube/api_worker), off the scheduling
    # thread's core; `--no-api-worker` writes them from the scheduling process.
    api_worker: bool = True
    # The API worker's process if `run_command` started it ahead (spawn.py); None:
    # started here.
    api_worker_process: SpawnedWorker | None = None
    logging_format: str = "text"  # the API worker logs as the scheduler does
    verbosity: int = 0


def default_config(gates: FeatureGates = DEFAULT_GATES) -> SchedulerConfig:
    return SchedulerConfig(
        profiles=[ProfileConfig.default(DEFAULT_SCHEDULER_NAME, gates)],
        lease_name=DEFAULT_SCHEDULER_NAME,
    )


class Runner:
    def __init__(self, options: RunOptions, config: SchedulerConfig) -> None:
        self.options = options
        self.config = config
        self.stop = asyncio.Event()
        self.metrics = SchedulerMetrics()
        if options.gates.generic_workload:
            self.metrics.enable_pod_group_metrics()
        self.tasks: list[asyncio.Task[None]] = []
        self.scheduler: Scheduler | None = None
        self.elector: LeaderElector | None = None
        self.informers: list[Informer[Any]] = []
        self.servers: list[HealthServer] = []
        self.client: KubeClient | None = None
        self.events: EventWriter | None = None
        self.statuses: StatusWriter | None = None
        self.api_worker: ApiWorker | None = None
        # What the binds of this process check (without an API worker).
        self.fence = Fence()
        self.fatal: str | None = None  # why the scheduler stops on its own
        self.budget = CpuBudget(lambda: self.api_worker.pid if self.api_worker else None)
        self.lease_client: KubeClient | None = None  # leader election's own
        # Review clients of their own (--authentication/authorization-kubeconfig).
        self.review_clients: list[KubeClient] = []
        self.scheduling = asyncio.Event()  # set while the scheduling loop runs
        # Set once every informer has delivered its initial list: "sched-handler-sync".
        self.handlers_synced = asyncio.Event()
        self.explained = ExplainStore(options.explain_keep) if options.explain else None

    def _spawn(self, coro: Awaitable[None], name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        task.set_name(name)
        self.tasks.append(task)
        return task

    async def run(self) -> int:
        cfg = self.config
        connection = await load_connection(
            self.options.kubeconfig or cfg.kubeconfig or None, self.options.context
        )
        self.client = client = KubeClient(
            connection, content_type=cfg.content_type, accept=cfg.accept_content_type
        )
        log.info(
            "API wire format: %s for built-in kinds' lists and watches, %s for writes",
            cfg.accept_content_type,
            cfg.content_type,
        )
        leader_elect = (
            cfg.leader_elect if self.options.leader_elect is None else self.options.leader_elect
        )
        # Without leader election this replica may always bind; with it, only
        # until its lease's renewDeadline runs out (kube/fence.py).
        if leader_elect:
            self.fence.close()
        cluster: ClusterClient
        if self.options.api_worker:
            try:
                cluster = await self.start_api_worker(client)
            except WorkerFailed as exc:
                log.error("%s", exc)
                await client.aclose()
                return 1
        else:
            qps, burst = cfg.qps / 2, max(1, cfg.burst // 2)
            self.events = events = EventWriter(client, qps=qps, burst=burst)
            self.statuses = statuses = StatusWriter(client, qps=qps, burst=burst)
            cluster = KubeCluster(client, events, statuses, self.fence)
        clock = RealClock()
        # The stores the informers keep current; PodTopologySpread's default
        # constraints read the selectors of Services and controllers from them.
        listers = Listers(workload_selectors={})
        listers.storage.writer = KubeVolumeWriter(client)
        listers.dra.writer = KubeClaimWriter(client)
        self.scheduler = sched = self.new_scheduler(cluster, clock, listers)
        try:
            # Before any informer or the lease: a kind that is not served would
            # keep the informers from syncing for ever.
            await require_served(
                client, needed_kinds(sched, generic_workload=self.options.gates.generic_workload)
            )
            await self.start_servers(client, leader_elect)
        except StartupError:
            await self._shutdown()
            raise
        informers = scheduler_informers(
            client,
            sched,
            listers,
            generic_workload=self.options.gates.generic_workload,
            # Only the leader writes statuses (a standby's informers see the same).
            may_write_pod_groups=lambda: (
                not leader_elect or (self.elector is not None and self.elector.is_leader.is_set())
            ),
        )
        nodes, pods = informers.nodes, informers.pods
        self.informers = informers.all

        # Where the CPU goes (kubesched_cpu_seconds_total{stage}).
        for informer in self.informers:
            informer.budget = self.budget
        self.metrics.set_cpu_budget(self.budget.read)

        if self.events is not None and self.statuses is not None:
            self._spawn(self.events.run(), "events")
            self._spawn(self.statuses.run(), "statuses")
        await self.start_informers(informers)
        # The listed nodes and pods stay for long: out of the collector's way, as
        # simulate does (scheduler.freeze_after_sync; large clusters only).
        freeze_after_sync(len(nodes.store) + len(pods.store))

        if leader_elect and not self.stop.is_set():
            # A client of its own, as resourcelock.NewFromKubeconfig makes one (with
            # a timeout of renewDeadline/2, at least 1 s): lease renewals must not
            # wait behind binds for a slot of the shared client's in-flight limit.
            self.lease_client = KubeClient(connection, timeout=max(1.0, cfg.renew_deadline / 2))
            self.elector = LeaderElector(
                self.lease_client,
                LeaderElectionConfig(
                    cfg.lease_namespace,
                    cfg.lease_name,
                    cfg.lease_duration,
                    cfg.renew_deadline,
                    cfg.retry_period,
                ),
                on_renewed=self.renewed,
            )
            self._spawn(self.elector.run(), "leader-election")
            await self._until(self.elector.is_leader.wait(), self.elector.lost.wait())

        exit_code = 0
        if not self.stop.is_set():
            self._spawn(self._schedule_forever(), "scheduling")
            self._spawn(self._housekeeping(), "housekeeping")
            waits = [self.stop.wait()]
            if self.elector is not None:
                waits.append(self.elector.lost.wait())
            await self._until(*waits)
            if self.elector is not None and self.elector.lost.is_set():
                exit_code = 1
        if self.elector is not None and self.elector.lost.is_set():
            # Fenced at once: nothing more is bound or written on the lost lease's
            # behalf (kube-scheduler exits on OnStoppedLeading).
            self.fence.close()
            if self.api_worker is not None:
                self.api_worker.kill()
        if self.fatal is not None:
            exit_code = 1
        await self._shutdown()
        return exit_code

    async def start_api_worker(self, client: KubeClient) -> ClusterClient:
        """The API worker (kube/api_worker) with the connection and the writers'
        rate limits this process would use."""
        cfg = self.config
        options = self.options
        qps, burst = cfg.qps / 2, max(1, cfg.burst // 2)
        start = Start(
            kubeconfig=options.kubeconfig or cfg.kubeconfig or None,
            context=options.context,
            events_qps=qps,
            events_burst=burst,
            statuses_qps=qps,
            statuses_burst=burst,
            log_format=options.logging_format,
            verbosity=options.verbosity,
            bind_until=self.fence.until,
            content_type=cfg.content_type,
        )
        self.api_worker = worker = ApiWorker(start, self.stop_on_fatal, options.api_worker_process)
        await worker.start()
        return WorkerCluster(worker, client)

    def renewed(self, until: float) -> None:
        """The lease was renewed: binds are allowed until UNTIL."""
        self.fence.until = until
        if self.api_worker is not None:
            self.api_worker.fence(until)

    def stop_on_fatal(self, message: str) -> None:
        log.error("%s", message)
        self.fatal = message
        self.stop.set()

    async def start_servers(self, client: KubeClient, leader_elect: bool) -> None:
        """The secure port (and the plain health port if asked), with
        kube-scheduler's checks (Run in cmd/kube-scheduler/app/server.go):
        /healthz "leaderElection" (with leader election; else "ping"), /livez
        "ping", /readyz "leaderElection", "shutdown" and "sched-handler-sync"."""
        options = self.options
        servers: list[HealthServer] = []
        if options.secure_port:
            secure = HealthServer(
                self.metrics,
                options.bind_address,
                options.secure_port,
                ssl_context=self.serving_ssl_context(),
                guard=await self.request_guard(client),
            )
            # --explain: behind the same authentication and authorization as
            # /metrics (a non-resource path, as kube-scheduler's /debug/ ones).
            if self.explained is not None:
                for path, handler in self.explained.routes():
                    secure.add_get(path, handler)
            servers.append(secure)
        elif self.explained is not None:
            log.warning("--explain needs the secure port: explanations are not served")
        if options.health_port is not None:
            servers.append(
                HealthServer(
                    self.metrics,
                    options.health_host,
                    options.health_port,
                    serve_metrics=False,
                    checks=servers[0].checks if servers else None,
                )
            )
        if not servers:
            log.warning("Serving neither the secure port nor the health port")
            return
        first = servers[0]
        if leader_elect:
            first.add_check("leaderElection", self.leader_election_check, ("healthz", "readyz"))
        first.add_check("shutdown", self.shutdown_check, ("readyz",))
        first.add_check("sched-handler-sync", self.handler_sync_check, ("readyz",))
        for server in servers:
            try:
                await server.start()
            except OSError as exc:  # the port is taken, or the address is not this host's
                flags = (
                    "--secure-port, --bind-address"
                    if server.ssl_context is not None
                    else "--health-port, --health-address"
                )
                raise listen_error(server.host, server.port, flags, exc) from None
            self.servers.append(server)

    def leader_election_check(self) -> bool:
        """HealthzAdaptor.Check: healthy until an elector exists, then its Check."""
        elector = self.elector
        failure = elector.check(LEADER_HEALTHZ_TIMEOUT) if elector is not None else None
        if failure is not None:
            raise CheckFailed(failure)
        return True

    def shutdown_check(self) -> bool:
        # NewShutdownHealthz
        if self.stop.is_set():
            raise CheckFailed("process is shutting down")
        return True

    def handler_sync_check(self) -> bool:
        if not self.handlers_synced.is_set():
            raise CheckFailed("handlers are not fully synchronized")
        return True

    def serving_ssl_context(self) -> ssl.SSLContext:
        """--tls-cert-file and --tls-private-key-file, else a self-signed
        certificate made now and kept in memory (kube-scheduler writes its own
        to --cert-dir)."""
        options = self.options
        if options.tls_cert_file and options.tls_private_key_file:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(options.tls_cert_file, options.tls_private_key_file)
            return context
        cert, key = self_signed_serving_certificate(SELF_SIGNED_HOST, SELF_SIGNED_IPS)
        log.info("Generated self-signed cert (in memory)")
        return server_ssl_context(cert, key)

    async def request_guard(self, client: KubeClient) -> RequestGuard:
        """The delegated authenticator and authorizer: TokenReview and
        SubjectAccessReview through --authentication-kubeconfig and
        --authorization-kubeconfig, or through the scheduler's own connection."""
        options = self.options
        authn_client = await self._review_client(client, options.authentication_kubeconfig)
        authz_client = await self._review_client(client, options.authorization_kubeconfig)
        return RequestGuard(
            CachedTokenAuthenticator(TokenReviewAuthenticator(authn_client)),
            CachedPathAuthorizer(SubjectAccessReviewAuthorizer(authz_client)),
            options.authorization_always_allow_paths,
        )

    async def _review_client(self, client: KubeClient, kubeconfig: str | None) -> KubeClient:
        if not kubeconfig:
            return client
        review_client = KubeClient(await load_connection(kubeconfig))
        self.review_clients.append(review_client)
        return review_client

    async def _until(self, *waits: Awaitable[object]) -> None:
        """Wait for the first of `waits`, or for the stop signal."""
        futures = [asyncio.ensure_future(w) for w in (*waits, self.stop.wait())]
        _, pending = await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
        for future in pending:
            future.cancel()

    async def _schedule_forever(self) -> None:
        sched = self.scheduler
        assert sched is not None
        limiter: ApiWorker | AdaptiveLimiter | None = (
            self.api_worker
            if self.api_worker is not None
            else self.client.limiter
            if self.client is not None
            else None
        )
        self.scheduling.set()
        while True:
            if limiter is not None and not limiter.has_room():
                # The binds of the pods already assumed fill the in-flight limit
                # and one more round waits behind it: the next pod waits in the
                # scheduling queue, where a change of the cluster still reaches it.
                await limiter.wait_for_room()
            qpi = await sched.queue.pop()
            if qpi is None:
                return
            started = time.thread_time()
            try:
                sched.schedule_one(qpi)
            except Exception:  # never let one pod stop the scheduler
                log.exception("scheduling %s failed", qpi.pod_info.key)
                sched.queue.requeue_failed(qpi)
            self.budget.add(SCHEDULING_CYCLE, time.thread_time() - started)
            # Let informer events and binding tasks run between cycles.
            await asyncio.sleep(0)

    async def _housekeeping(self) -> None:
        sched = self.scheduler
        assert sched is not None
        ticks = 0
        while True:
            # On the second, as upstream's ticker: backoffQ is flushed per one-second
            # window, and a flush mid-window would hold pods up to a second longer.
            await asyncio.sleep(1.0 - time.monotonic() % 1.0)
            ticks += 1
            started = time.thread_time()
            sched.queue.flush_backoff_completed()
            if ticks % 30 == 0:
                sched.queue.flush_unschedulable_left_over()
            self.update_metrics()
            self.budget.add(HOUSEKEEPING, time.thread_time() - started)

    def new_scheduler(self, cluster: ClusterClient, clock: Clock, listers: Listers) -> Scheduler:
        """The scheduler `run` drives, as the configuration says, reporting to the
        metrics at construction: the scheduling loop, the framework (extension points,
        plugin durations and evaluations) and the plugins (preemption) through its
        Observer, which it hands to every framework on the Handle; Permit's waits
        (WaitOnPermit upstream) through the WaitingPods it is built with."""
        cfg = self.config
        options = self.options
        batch = None
        if options.batch_window is not None:
            # The solve in a thread: the loop goes on with the cycles, the
            # informers and the lease meanwhile.
            batch = BatchOptions(options.batch_window, options.batch_timeout, off_loop=True)
            log.info(
                "Batch placement on: window %gs, engine time limit %gs",
                options.batch_window,
                options.batch_timeout,
            )
        return Scheduler(
            cfg.profiles,
            cluster,
            clock=clock,
            seed=self.options.seed,
            percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score,
            pod_initial_backoff=cfg.pod_initial_backoff,
            pod_max_backoff=cfg.pod_max_backoff,
            observer=self.metrics,
            listers=listers,
            waiting_pods=WaitingPods(clock, observe=self.observe_permit_wait),
            registry=self.options.registry,
            explain_observer=self.explained,
            gates=self.options.gates,
            batch=batch,
            batch_observer=self.metrics.observe_batch,
            extenders=build_extenders(cfg.extenders),
        )

    async def start_informers(self, informers: SchedulerInformers) -> None:
        """Start the informers and wait for them to sync: nodes first, so that pods
        arriving find their nodes (as upstream waits for sync), then the other kinds,
        then pods; handlers_synced is set once all have listed."""
        self._spawn(informers.nodes.run(), "informer-nodes")
        for informer in informers.others:
            self._spawn(informer.run(), f"informer-{informer.name}")
        await self._until(informers.nodes.synced.wait())
        for informer in informers.others:
            await self._until(informer.synced.wait())
        self._spawn(informers.pods.run(), "informer-pods")
        await self._until(informers.pods.synced.wait())
        if all(informer.synced.is_set() for informer in informers.all):
            self.handlers_synced.set()

    def observe_permit_wait(self, status: Status, seconds: float) -> None:
        self.metrics.observe_permit_wait(code_name(status.code), seconds)

    def update_metrics(self) -> None:
        """The gauges and counters read off the queue and the cache (once a second)."""
        sched = self.scheduler
        assert sched is not None
        self.metrics.set_pending(sched.queue.pending_counts())
        self.metrics.set_incoming(sched.queue.incoming)
        self.metrics.set_unschedulable(sched.queue.unschedulable_plugin_counts())
        # cache.updateMetrics, which upstream runs every second too.
        cache = sched.cache
        self.metrics.set_cache_size(
            nodes=len(cache.table), pods=len(cache.placed), assumed_pods=len(cache.assumed)
        )
        if self.api_worker is not None:
            self.metrics.set_api_inflight_limit(self.api_worker.limit)
        elif self.client is not None:
            self.metrics.set_api_inflight_limit(self.client.limiter.limit)

    async def _flush_writers(self) -> None:
        """The queued events and conditions written before the writers stop (the
        binds' own Scheduled events among them)."""
        if self.api_worker is not None:
            if self.api_worker.closing:
                return  # killed on purpose (the lease is lost)
            events_left, statuses_left = await self.api_worker.flush(WRITER_FLUSH_SECONDS)
            if events_left < 0:
                log.warning("the API worker is gone: its queued events were not written")
                return
        elif self.events is None or self.statuses is None:
            return
        else:
            started = time.monotonic()
            events_left = await self.events.flush(WRITER_FLUSH_SECONDS)
            left = max(0.0, WRITER_FLUSH_SECONDS - (time.monotonic() - started))
            statuses_left = await self.statuses.flush(left)
        if events_left or statuses_left:
            log.warning(
                "stopping with %d events and %d pod conditions not written (%gs were not enough)",
                events_left,
                statuses_left,
                WRITER_FLUSH_SECONDS,
            )

    async def _shutdown(self) -> None:
        sched = self.scheduler
        if sched is not None:
            sched.queue.close()
            if not self.fence.allows():
                # The lease is lost: the binds in flight end now, unsent if not sent.
                for task in list(sched.binding_tasks):
                    task.cancel()
            if sched.binding_tasks:
                log.info("waiting for %d in-flight binds", len(sched.binding_tasks))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        asyncio.gather(*sched.binding_tasks, return_exceptions=True),
                        BIND_DRAIN_SECONDS,
                    )
        await self._flush_writers()
        if self.elector is not None:
            await self.elector.release()
        if self.api_worker is not None:
            await self.api_worker.stop()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for server in self.servers:
            await server.stop()
        for review_client in self.review_clients:
            await review_client.aclose()
        if self.client is not None:
            await self.client.aclose()
        if self.lease_client is not None:
            await self.lease_client.aclose()


def scheduler_config(
    path: str | None, gates: FeatureGates, registry: Registry | None = None
) -> SchedulerConfig:
    """The --config file (its plugins known to REGISTRY), or the default configuration;
    a ConfigError naming the file."""
    if not path:
        return default_config(gates)
    config = load_config(path, gates)
    check_plugin_names(config, registry or default_registry(), path)
    return config


async def run(options: RunOptions) -> int:
    """Run until stopped; the exit code. A StartupError when it cannot start."""
    config = options.scheduler_config
    if config is None:
        config = scheduler_config(options.config, options.gates, options.registry)
    for warning in config.warnings:
        log.warning("%s", warning)
    for extender in config.extenders:
        log.info("Using extender %s", extender.url_prefix)
    runner = Runner(options, config)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, runner.stop.set)
    return await runner.run()
