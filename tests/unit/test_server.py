"""The health and metrics server: /healthz, /livez, /readyz, /metrics on a real port."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp

from kubesched.server.health import HealthServer
from kubesched.server.metrics import SchedulerMetrics

Get = Callable[[str], Awaitable[tuple[int, str, str]]]


def serve(setup: Callable[[HealthServer], None], body: Callable[[Get], Awaitable[None]]) -> None:
    """Start a server on port 0, run ``body`` with a GET helper, stop the server."""
    metrics = SchedulerMetrics()
    metrics.observe_attempt("scheduled", "default-scheduler", 0.01)
    server = HealthServer(metrics, "127.0.0.1", 0)
    setup(server)

    async def main() -> None:
        await server.start()
        assert server.port != 0
        try:
            async with aiohttp.ClientSession() as session:

                async def get(path: str) -> tuple[int, str, str]:
                    url = f"http://127.0.0.1:{server.port}{path}"
                    async with session.get(url) as resp:
                        return resp.status, await resp.text(), resp.headers["Content-Type"]

                await body(get)
        finally:
            await server.stop()

    asyncio.run(main())


def test_all_healthy_answers_ok() -> None:
    async def body(get: Get) -> None:
        for path in ("/healthz", "/livez", "/readyz"):
            status, text, ctype = await get(path)
            assert (status, text) == (200, "ok"), path
            assert ctype == "text/plain; charset=utf-8"
        status, text, _ = await get("/readyz?verbose")
        assert (status, text) == (200, "[+]ping ok\nreadyz check passed\n")

    serve(lambda s: None, body)


def test_failing_ready_check_lists_checks() -> None:
    leader = {"is": False}

    def setup(s: HealthServer) -> None:
        s.add_ready_check("leaderElection", lambda: leader["is"])
        s.add_ready_check("sched-handler-sync", lambda: True)
        s.add_health_check("log", lambda: True)

    async def body(get: Get) -> None:
        status, text, _ = await get("/readyz")
        assert status == 500
        assert text == (
            "[-]leaderElection failed: reason withheld\n"
            "[+]sched-handler-sync ok\n"
            "readyz check failed\n"
        )
        # Liveness has its own checks.
        assert await get("/healthz?verbose") == (
            200,
            "[+]log ok\nhealthz check passed\n",
            "text/plain; charset=utf-8",
        )
        assert (await get("/livez"))[:2] == (200, "ok")
        # One check by itself, and excluding one.
        assert (await get("/readyz/sched-handler-sync"))[:2] == (200, "ok")
        assert (await get("/readyz/leaderElection"))[0] == 500
        assert (await get("/readyz/nope"))[0] == 404
        status, text, _ = await get("/readyz?exclude=leaderElection")
        assert (status, text) == (200, "ok")
        leader["is"] = True
        assert (await get("/readyz"))[:2] == (200, "ok")

    serve(setup, body)


def test_raising_health_check_fails_healthz_and_livez() -> None:
    def boom() -> bool:
        raise RuntimeError("boom")

    async def body(get: Get) -> None:
        for path in ("/healthz", "/livez"):
            status, text, _ = await get(path)
            assert status == 500
            assert "[-]watchdog failed: reason withheld\n" in text
        assert (await get("/readyz"))[:2] == (200, "ok")

    serve(lambda s: s.add_health_check("watchdog", boom), body)


def test_metrics_endpoint() -> None:
    async def body(get: Get) -> None:
        status, text, ctype = await get("/metrics")
        assert status == 200
        assert ctype == "text/plain; version=0.0.4; charset=utf-8"
        assert (
            'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0'
            in text.splitlines()
        )
        assert "# TYPE scheduler_pending_pods gauge" in text

    serve(lambda s: None, body)


def test_start_stop_twice_and_port_taken() -> None:
    async def main() -> None:
        first = HealthServer(SchedulerMetrics(), "127.0.0.1", 0)
        await first.start()
        await first.start()  # no-op
        second = HealthServer(SchedulerMetrics(), "127.0.0.1", first.port)
        try:
            await second.start()
        except OSError:
            pass
        else:
            raise AssertionError("two servers on one port")
        finally:
            await first.stop()
            await first.stop()
            await second.stop()

    asyncio.run(main())
