"""A victim's DELETE refused by the API: the preemptor is not retried at once (which
loops at API speed), but after its backoff, and then it preempts again."""

from __future__ import annotations

import asyncio

from kubesched.api.objects import Pod
from kubesched.framework.clock import SimClock
from kubesched.framework.profile import ProfileConfig
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.testing import make_node, make_pod


class RefusingDeletes(InMemoryCluster):
    deletes = 0

    async def delete_pod(self, pod: Pod, reason: str) -> None:
        self.deletes += 1
        raise RuntimeError('admission denied the request: "this pod stays"')


def test_a_refused_victim_deletion_retries_the_preemptor_after_its_backoff() -> None:
    async def scenario() -> tuple[bool, int, bool, int]:
        clock = SimClock()
        cluster = RefusingDeletes(nodes={"n": make_node("n", cpu="2")})
        for pod in (
            make_pod("victim", cpu="2", node_name="n", priority=0),
            make_pod("preemptor", cpu="2", priority=100),
        ):
            cluster.pods[pod.key] = pod
        sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=1)
        cluster.watch(sched)
        queue = sched.queue
        qpi = queue.pop_nowait()
        assert qpi is not None and qpi.pod.metadata.name == "preemptor"
        sched.schedule_one(qpi)
        for _ in range(10):  # the preemption task runs and fails
            await asyncio.sleep(0)
        retried_at_once = queue.pop_nowait() is not None
        first = cluster.deletes
        clock.advance_to(clock.now() + 2.0)
        queue.flush_backoff_completed()
        again = queue.pop_nowait()
        retried_later = again is not None and again.pod.metadata.name == "preemptor"
        if again is not None:
            sched.schedule_one(again)
            for _ in range(10):
                await asyncio.sleep(0)
        return retried_at_once, first, retried_later, cluster.deletes

    retried_at_once, first, retried_later, deletes = asyncio.run(scenario())
    assert first == 1
    assert not retried_at_once
    assert retried_later
    assert deletes == 2
