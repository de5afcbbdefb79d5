"""LeaderElector.release on a graceful stop: the lease is given up even when the
stop cut short an acquire that the API server had already applied."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import msgspec

from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.leader import LeaderElectionConfig, LeaderElector, Lease, LeaseMeta, LeaseSpec


class SlowLeases:
    """One Lease in memory, as the API server keeps it (resourceVersion checked on
    PUT). A write is applied at once and answered `delay` seconds later: a caller
    cancelled meanwhile never learns that it landed."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lease: Lease | None = None
        self.version = 0

    async def get(self, path: str, kind: type[Lease]) -> Lease:
        if self.lease is None:
            raise ApiError(404, "NotFound", "not found", "GET", path)
        return msgspec.structs.replace(
            self.lease,
            metadata=msgspec.structs.replace(
                self.lease.metadata, resource_version=str(self.version)
            ),
        )

    async def post(self, path: str, lease: Lease) -> Any:
        self.lease, self.version = lease, self.version + 1
        await asyncio.sleep(self.delay)

    async def put(self, path: str, lease: Lease) -> Any:
        if lease.metadata.resource_version != str(self.version):
            raise ApiError(409, "Conflict", "changed", "PUT", path)
        self.lease, self.version = lease, self.version + 1
        await asyncio.sleep(self.delay)


def elector(api: SlowLeases) -> LeaderElector:
    config = LeaderElectionConfig(name="kubesched", lease_duration=15.0)
    config.identity = "me"
    return LeaderElector(cast(KubeClient, api), config)


def test_a_stop_during_the_acquire_still_releases_the_lease() -> None:
    """The stop comes while the acquiring request is in flight: the replica never
    saw itself the leader, yet the lease names it; release gives it up."""

    async def scenario() -> LeaseSpec:
        api = SlowLeases(delay=0.5)
        le = elector(api)
        task = asyncio.ensure_future(le.run())
        await asyncio.sleep(0.1)  # the lease is created, the answer not yet back
        assert api.lease is not None and api.lease.spec.holder_identity == "me"
        assert not le.is_leader.is_set()
        await le.release()
        assert task.done()
        assert api.lease is not None
        return api.lease.spec

    spec = asyncio.run(scenario())
    assert not spec.holder_identity
    assert spec.lease_duration_seconds == 1


def test_a_lease_held_by_another_is_left_alone() -> None:
    async def scenario() -> LeaseSpec:
        api = SlowLeases(delay=0.0)
        api.lease = Lease(LeaseMeta("kubesched", "kube-system"), LeaseSpec("other", 15))
        le = elector(api)
        task = asyncio.ensure_future(le.run())
        await asyncio.sleep(0.05)
        await le.release()
        assert task.done()
        assert api.lease is not None
        return api.lease.spec

    assert asyncio.run(scenario()).holder_identity == "other"


def test_release_before_the_election_ran_sends_nothing() -> None:
    api = SlowLeases(delay=0.0)
    asyncio.run(elector(api).release())
    assert api.lease is None and api.version == 0
