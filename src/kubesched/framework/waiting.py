"""Pods held at Permit: each waits for every Wait-ing plugin to allow it, or a rejection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kubesched.api.durations import format_go_duration
from kubesched.framework.clock import Clock
from kubesched.framework.status import Status

# Told how each wait at Permit ended and how long it took (metrics plug in here).
WaitObserver = Callable[[Status, float], None]


class WaitingPod:
    def __init__(
        self,
        key: str,
        node_name: str,
        plugin_timeouts: dict[str, float],
        clock: Clock,
        observe: WaitObserver | None = None,
    ):
        self.key = key
        self.node_name = node_name
        self.pending = set(plugin_timeouts)
        self._observe = observe
        self._result: asyncio.Future[Status] = asyncio.get_event_loop().create_future()
        self._cancel_timers: list[Callable[[], None]] = [
            clock.call_at(clock.now() + timeout, self._timeout(plugin, timeout))
            for plugin, timeout in plugin_timeouts.items()
        ]

    def _timeout(self, plugin: str, timeout: float) -> Callable[[], None]:
        # waitingPod's timer: the wait prints as a time.Duration ("5m0s", "1.5s").
        message = (
            f"rejected due to timeout after waiting {format_go_duration(timeout)} "
            f"at plugin {plugin}"
        )
        return lambda: self.reject(plugin, message)

    def allow(self, plugin: str) -> None:
        self.pending.discard(plugin)
        if not self.pending:
            self._finish(Status())

    def reject(self, plugin: str, message: str) -> None:
        self._finish(Status.unschedulable(message, plugin=plugin))

    def preempt(self, plugin: str, message: str) -> bool:
        """Stop waiting as preempted: an error, not unschedulable, so that the pod is
        retried after its backoff. False if the pod was no longer waiting."""
        if self._result.done():
            return False
        self._finish(Status.as_error(message, plugin))
        return True

    def _finish(self, status: Status) -> None:
        for cancel in self._cancel_timers:
            cancel()
        if not self._result.done():
            self._result.set_result(status)

    async def wait(self) -> Status:
        """WaitOnPermit: the verdict; the wait's duration (real time, as upstream's
        PermitWaitDuration, from the moment the binding cycle starts waiting) and
        result go to the observer."""
        started = time.perf_counter()
        status = await self._result
        if self._observe is not None:
            self._observe(status, time.perf_counter() - started)
        return status


class WaitingPods:
    """The pods waiting at Permit, by key; plugins allow or reject them by key."""

    def __init__(self, clock: Clock, observe: WaitObserver | None = None) -> None:
        self.clock = clock
        self._pods: dict[str, WaitingPod] = {}
        # Given by whoever exports metrics (`kubesched run`): every wait is observed.
        self.observe = observe

    def add(self, key: str, node_name: str, plugin_timeouts: dict[str, float]) -> WaitingPod:
        waiting = WaitingPod(key, node_name, plugin_timeouts, self.clock, self.observe)
        self._pods[key] = waiting
        return waiting

    def get(self, key: str) -> WaitingPod | None:
        return self._pods.get(key)

    def remove(self, key: str) -> None:
        self._pods.pop(key, None)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
