"""`kubesched run`'s health checks, as kube-scheduler's Run sets them up: /healthz
"leaderElection" (the watchdog), /readyz "leaderElection", "shutdown" and
"sched-handler-sync"."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import cast

import aiohttp

from kubesched.kube.client import KubeClient
from kubesched.kube.leader import LeaderElectionConfig, LeaderElector
from kubesched.kube.runner import LEADER_HEALTHZ_TIMEOUT, Runner, RunOptions, default_config

Get = Callable[[str], Awaitable[tuple[int, str]]]
NO_CLIENT = cast(KubeClient, None)


def elector() -> LeaderElector:
    return LeaderElector(NO_CLIENT, LeaderElectionConfig(name="kubesched", lease_duration=15.0))


def test_leader_watchdog() -> None:
    """LeaderElector.Check: a leader whose last renewal is older than the lease
    duration plus the tolerance is unhealthy; a candidate never is."""
    le = elector()
    le._observed_at = time.monotonic() - 100
    assert le.check(LEADER_HEALTHZ_TIMEOUT) is None  # not the leader
    le.is_leader.set()
    assert le.check(LEADER_HEALTHZ_TIMEOUT) == (
        "failed election to renew leadership on lease kubesched"
    )
    le._observed_at = time.monotonic() - 30  # within 15 s + 20 s
    assert le.check(LEADER_HEALTHZ_TIMEOUT) is None


def run_with_plain_port(leader_elect: bool, body: Callable[[Runner, Get], Awaitable[None]]) -> None:
    """A Runner serving its checks on a plain-HTTP health port (no secure port)."""
    runner = Runner(
        RunOptions(secure_port=0, health_host="127.0.0.1", health_port=0), default_config()
    )

    async def main() -> None:
        await runner.start_servers(NO_CLIENT, leader_elect)
        (server,) = runner.servers
        try:
            async with aiohttp.ClientSession() as session:

                async def get(path: str) -> tuple[int, str]:
                    async with session.get(f"http://127.0.0.1:{server.port}{path}") as resp:
                        return resp.status, await resp.text()

                await body(runner, get)
        finally:
            await server.stop()

    asyncio.run(main())


def test_readyz_waits_for_the_informers_and_fails_on_shutdown() -> None:
    async def body(runner: Runner, get: Get) -> None:
        assert await get("/readyz?verbose") == (
            500,
            "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n",
        )
        assert await get("/readyz/sched-handler-sync") == (
            500,
            "internal server error: handlers are not fully synchronized\n",
        )
        assert await get("/healthz?verbose") == (200, "[+]ping ok\nhealthz check passed\n")
        runner.handlers_synced.set()
        assert await get("/readyz") == (200, "ok")
        runner.stop.set()
        assert await get("/readyz?verbose") == (
            500,
            "[-]shutdown failed: reason withheld\n[+]sched-handler-sync ok\nreadyz check failed\n",
        )
        # The plain port serves health only.
        assert (await get("/metrics"))[0] == 404

    run_with_plain_port(False, body)


def test_healthz_fails_when_the_leader_cannot_renew() -> None:
    async def body(runner: Runner, get: Get) -> None:
        runner.handlers_synced.set()
        # No elector yet (informers still syncing): healthy, as HealthzAdaptor.
        assert await get("/healthz?verbose") == (
            200,
            "[+]leaderElection ok\nhealthz check passed\n",
        )
        assert await get("/livez?verbose") == (200, "[+]ping ok\nlivez check passed\n")
        runner.elector = le = elector()
        le.is_leader.set()
        le._observed_at = time.monotonic()
        assert await get("/readyz?verbose") == (
            200,
            "[+]leaderElection ok\n[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n",
        )
        le._observed_at = time.monotonic() - 15.0 - LEADER_HEALTHZ_TIMEOUT - 1
        assert await get("/healthz?verbose") == (
            500,
            "[-]leaderElection failed: reason withheld\nhealthz check failed\n",
        )
        assert (await get("/readyz"))[0] == 500
        assert await get("/livez") == (200, "ok")

    run_with_plain_port(True, body)
