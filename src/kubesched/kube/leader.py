"""Leader election through a coordination.k8s.io/v1 Lease, as client-go does it.

Only the holder of the lease schedules. A candidate takes the lease when its
holder has not renewed it for leaseDuration (judged by our own clock since we
last saw the record change, so clocks need not agree); the leader renews it
every retryPeriod and steps down if it cannot renew within renewDeadline. On a
graceful stop the lease is released so another replica takes over at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import msgspec

from kubesched.kube.client import ApiError, KubeClient
from kubesched.kube.writer import micro_time

log = logging.getLogger("kubesched.leader")


class LeaseSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: str | None = None
    renew_time: str | None = None
    lease_transitions: int | None = None


class LeaseMeta(msgspec.Struct, rename="camel", omit_defaults=True):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class Lease(msgspec.Struct, rename="camel", omit_defaults=True):
    metadata: LeaseMeta = msgspec.field(default_factory=LeaseMeta)
    spec: LeaseSpec = msgspec.field(default_factory=LeaseSpec)
    api_version: str = "coordination.k8s.io/v1"
    kind: str = "Lease"


@dataclass
class LeaderElectionConfig:
    namespace: str = "kube-system"
    name: str = "kubesched"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = ""

    def __post_init__(self) -> None:
        if not self.identity:
            self.identity = f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        config: LeaderElectionConfig,
        on_renewed: Callable[[float], None] | None = None,
    ) -> None:
        """ON_RENEWED(until): called after each acquisition or renewal with the time
        (time.monotonic()) until which this replica may act: renewDeadline after the
        renewal was sent (its fence, kube/fence.py)."""
        self.client = client
        self.config = config
        self.on_renewed = on_renewed
        self.is_leader = asyncio.Event()
        self.lost = asyncio.Event()
        self._observed: Lease | None = None
        self._told_holder = False
        self._observed_at = 0.0
        # The task of run(), once it started (release stops it first).
        self._task: asyncio.Task[None] | None = None
        self._path = (
            f"/apis/coordination.k8s.io/v1/namespaces/{config.namespace}/leases/{config.name}"
        )

    async def run(self) -> None:
        """Acquire, then renew until the lease is lost (sets `lost`) or we are cancelled."""
        self._task = asyncio.current_task()
        cfg = self.config
        while True:
            sent = time.monotonic()
            if await self._try_acquire_or_renew():
                break
            await asyncio.sleep(cfg.retry_period * (1 + 0.2 * (os.getpid() % 5) / 5))
        log.info("became leader: lease %s/%s as %s", cfg.namespace, cfg.name, cfg.identity)
        self._renewed(sent)
        self.is_leader.set()
        last_renew = time.monotonic()
        while True:
            await asyncio.sleep(cfg.retry_period)
            sent = time.monotonic()
            if await self._try_acquire_or_renew():
                last_renew = time.monotonic()
                self._renewed(sent)
            elif time.monotonic() - last_renew > cfg.renew_deadline:
                log.error(
                    "leader election lost: could not renew lease %s/%s within %.0fs",
                    cfg.namespace,
                    cfg.name,
                    cfg.renew_deadline,
                )
                self.is_leader.clear()
                self.lost.set()
                return

    def _renewed(self, sent: float) -> None:
        # From when the request was sent, not answered: the other candidates count
        # leaseDuration from when they see the record change, which is later.
        if self.on_renewed is not None:
            self.on_renewed(sent + self.config.renew_deadline)

    async def _try_acquire_or_renew(self) -> bool:
        cfg = self.config
        now = micro_time()
        try:
            current = await self.client.get(self._path, Lease)
        except ApiError as exc:
            if exc.status != 404:
                log.warning("lease %s/%s: %s", cfg.namespace, cfg.name, exc)
                return False
            lease = Lease(
                LeaseMeta(cfg.name, cfg.namespace),
                LeaseSpec(cfg.identity, int(cfg.lease_duration), now, now, 0),
            )
            try:
                await self.client.post(
                    f"/apis/coordination.k8s.io/v1/namespaces/{cfg.namespace}/leases", lease
                )
            except Exception as create_error:
                log.warning("lease %s/%s not created: %s", cfg.namespace, cfg.name, create_error)
                return False
            self._observe(lease)
            return True
        except Exception as exc:
            log.warning("lease %s/%s: %s", cfg.namespace, cfg.name, exc)
            return False

        if self._observed is None or self._observed.spec != current.spec:
            self._observe(current)
        holder = current.spec.holder_identity or ""
        duration = current.spec.lease_duration_seconds or int(cfg.lease_duration)
        held_by_other = holder not in ("", cfg.identity)
        if held_by_other and time.monotonic() - self._observed_at < duration:
            if not self._told_holder:
                log.info("lease %s/%s is held by %s", cfg.namespace, cfg.name, holder)
                self._told_holder = True
            return False
        spec = LeaseSpec(
            cfg.identity,
            int(cfg.lease_duration),
            current.spec.acquire_time if holder == cfg.identity else now,
            now,
            (current.spec.lease_transitions or 0) + (0 if holder == cfg.identity else 1),
        )
        updated = Lease(current.metadata, spec)
        try:
            await self.client.put(self._path, updated)
        except ApiError as exc:
            if exc.status != 409:  # 409: someone else renewed or took it first
                log.warning("lease %s/%s not updated: %s", cfg.namespace, cfg.name, exc)
            return False
        except Exception as exc:
            log.warning("lease %s/%s not updated: %s", cfg.namespace, cfg.name, exc)
            return False
        self._observe(updated)
        return True

    def check(self, max_tolerable_expired_lease: float) -> str | None:
        """Why /healthz should fail, or None: LeaderElector.Check (client-go). A
        leader that has not renewed its lease for leaseDuration plus the tolerance
        is stuck (it should have stepped down); a candidate is always healthy."""
        if not self.is_leader.is_set():
            return None
        if time.monotonic() - self._observed_at > (
            self.config.lease_duration + max_tolerable_expired_lease
        ):
            return f"failed election to renew leadership on lease {self.config.name}"
        return None

    def _observe(self, lease: Lease) -> None:
        self._observed = lease
        self._observed_at = time.monotonic()

    async def release(self) -> None:
        """Give the lease up (graceful stop), so another replica need not wait it out.

        The election is stopped first, and the lease read back: an acquire (or a
        renewal) cut short by the stop may still have reached the API server after
        this replica stopped counting itself the leader, and the lease would then
        stay ours for its whole duration (ReleaseOnCancel in client-go releases
        only after the election loop has returned, for the same reason). A
        release that meets a write of that acquire (409) reads the lease again."""
        task = self._task
        if task is None:
            return  # never ran: no request of ours can hold the lease
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.is_leader.clear()
        for attempt in range(2):
            try:
                current = await self.client.get(self._path, Lease)
                if current.spec.holder_identity != self.config.identity:
                    return
                now = micro_time()
                released = Lease(
                    current.metadata,
                    LeaseSpec("", 1, now, now, current.spec.lease_transitions),
                )
                await self.client.put(self._path, released)
            except ApiError as exc:
                if exc.status == 409 and not attempt:
                    continue
                log.warning("lease not released: %s", exc)
                return
            except Exception as exc:
                log.warning("lease not released: %s", exc)
                return
            log.info("released lease %s/%s", self.config.namespace, self.config.name)
            return
