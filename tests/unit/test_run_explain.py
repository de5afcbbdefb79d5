"""`kubesched run --explain`: the runner's scheduler explains its attempts, and the
health port serves each pod's last explanation; without the flag nothing is captured
or served."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from kubesched.framework.clock import SimClock
from kubesched.framework.handle import Listers
from kubesched.kube.runner import Runner, RunOptions, default_config
from kubesched.server.health import HealthServer
from kubesched.server.metrics import SchedulerMetrics
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod


def scheduled_runner(explain: bool) -> Runner:
    """A Runner whose scheduler (run's new_scheduler) has scheduled a pod that fits
    and one that does not, on an in-memory cluster."""
    runner = Runner(RunOptions(seed=1, explain=explain, explain_keep=1), default_config())
    cluster = InMemoryCluster(nodes={"n1": make_node("n1", cpu="2")})
    for name, cpu in (("fits", "1"), ("too-big", "3")):
        pod = make_pod(name, cpu=cpu)
        pod.spec.scheduler_name = "kubesched"
        cluster.pods[pod.key] = pod
    clock = SimClock()
    runner.scheduler = runner.new_scheduler(cluster, clock, Listers())
    cluster.watch(runner.scheduler)
    asyncio.run(run_until_quiet(runner.scheduler, clock))
    return runner


def test_explanations_served_on_the_health_port() -> None:
    runner = scheduled_runner(explain=True)
    assert runner.explained is not None
    # keep=1: only the most recently attempted pod stays.
    assert list(runner.explained.last) == ["default/too-big"]

    server = HealthServer(SchedulerMetrics(), "127.0.0.1", 0)
    for path, handler in runner.explained.routes():
        server.add_get(path, handler)

    async def main() -> None:
        await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                base = f"http://127.0.0.1:{server.port}/debug/explain"
                async with session.get(f"{base}/default/too-big") as resp:
                    assert resp.status == 200
                    found = json.loads(await resp.text())
                async with session.get(f"{base}/default/fits") as resp:
                    assert resp.status == 404
                async with session.get(base) as resp:
                    assert json.loads(await resp.text()) == ["default/too-big"]
        finally:
            await server.stop()
        assert found["result"] == "Unschedulable"
        assert found["plugins"]["profile"] == "kubesched"
        (group,) = found["rejected"]
        assert group["nodes"] == ["n1"] and group["plugin"] == "NodeResourcesFit"

    asyncio.run(main())


def test_off_by_default() -> None:
    runner = scheduled_runner(explain=False)
    assert runner.explained is None
    assert runner.scheduler is not None and runner.scheduler.listeners.explain is None
