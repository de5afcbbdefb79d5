"""How many API requests kubesched keeps in flight: a limit that follows the
apiserver's answers instead of a fixed number.

AIMD, as TCP's congestion window: while requests come back quickly and all the
slots are busy, the limit grows by one per round trip (1/limit per answer); an
overloaded answer (429 Too Many Requests, or any 5xx) halves it, and answers
much slower than usual (the short-term mean latency above LATENCY_TOLERANCE times
the long-term one: requests queueing inside the apiserver) take a tenth off. A
decrease happens at most once per round trip, so that the answers to requests
sent before the first decrease do not shrink the limit again. A Retry-After
pauses every new request until it has passed (client-go's checkWait honours it
per request; the pause keeps the other requests from walking into the same wall).

kube-scheduler has no such limit (a goroutine per binding, bounded by the client's
QPS only); a Python event loop with thousands of open requests spends its time in
connection handling, so kubesched bounds them, between FLOOR and CEILING.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable

INITIAL_LIMIT = 64
FLOOR = 8
CEILING = 512
# Short-term mean latency over the long-term one above which answers count as slow.
LATENCY_TOLERANCE = 2.0
# Weights of one answer in the short- and long-term mean latencies.
SHORT_WEIGHT = 0.1
LONG_WEIGHT = 0.01
SLOW_DECREASE = 0.9
OVERLOAD_DECREASE = 0.5
# The Retry-After honoured at most (a broken header must not stop the scheduler).
MAX_RETRY_AFTER = 30.0


class AimdController:
    """The limit's arithmetic, apart from any waiting: every method takes the time
    (`clock`), so that tests drive it with a fake clock."""

    def __init__(
        self,
        *,
        initial: int = INITIAL_LIMIT,
        floor: int = FLOOR,
        ceiling: int = CEILING,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 1 <= floor <= initial <= ceiling:
            raise ValueError(
                f"need 1 <= floor <= initial <= ceiling, got {floor}/{initial}/{ceiling}"
            )
        self.floor = floor
        self.ceiling = ceiling
        self.clock = clock
        self._limit = float(initial)
        self.short_latency = 0.0
        self.long_latency = 0.0
        # No decrease before this time (one round trip after the last one).
        self._calm_until = 0.0
        self.paused_until = 0.0
        self.overloads = 0  # 429s and 5xxs seen
        self.decreases = 0

    @property
    def limit(self) -> int:
        return int(self._limit)

    def on_success(self, latency: float, in_flight: int) -> None:
        """An answer that was not an overload. IN_FLIGHT: requests in flight when it
        was sent, itself included (the limit grows only when it was the bound)."""
        if self.long_latency == 0.0:
            self.short_latency = self.long_latency = latency
        else:
            self.short_latency += SHORT_WEIGHT * (latency - self.short_latency)
            self.long_latency += LONG_WEIGHT * (latency - self.long_latency)
        if self.short_latency > LATENCY_TOLERANCE * self.long_latency:
            self._decrease(SLOW_DECREASE, latency)
        elif in_flight >= self.limit:
            self._limit = min(float(self.ceiling), self._limit + 1.0 / self._limit)

    def on_overload(self, latency: float, retry_after: float | None) -> None:
        """A 429 or a 5xx; RETRY_AFTER: its Retry-After in seconds, if it had one."""
        self.overloads += 1
        self._decrease(OVERLOAD_DECREASE, latency)
        if retry_after is not None and retry_after > 0:
            until = self.clock() + min(retry_after, MAX_RETRY_AFTER)
            self.paused_until = max(self.paused_until, until)

    def _decrease(self, factor: float, latency: float) -> None:
        now = self.clock()
        if now < self._calm_until:
            return
        self._limit = max(float(self.floor), self._limit * factor)
        # The requests in flight now were sent under the old limit: their answers
        # say nothing of the new one. About one round trip.
        self._calm_until = now + max(latency, self.short_latency)
        self.decreases += 1

    def pause_left(self) -> float:
        return max(0.0, self.paused_until - self.clock())


class RoomWaiters:
    """Who waits until HAS_ROOM() says there is room (the scheduling loop, before it
    assumes another pod): woken together by wake() once it does."""

    def __init__(self, has_room: Callable[[], bool]) -> None:
        self.has_room = has_room
        self._waiters: list[asyncio.Future[None]] = []

    async def wait(self) -> None:
        while not self.has_room():
            room: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(room)
            await room

    def wake(self) -> None:
        if self._waiters and self.has_room():
            for room in self._waiters:
                if not room.done():
                    room.set_result(None)
            self._waiters.clear()


class AdaptiveLimiter:
    """Requests wait here for a slot: at most `controller.limit` in flight, first
    come first served, none while a Retry-After runs."""

    def __init__(self, controller: AimdController | None = None) -> None:
        self.controller = controller or AimdController()
        self.in_flight = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.waiting = 0  # requests waiting for a slot (the live ones of _waiters)
        self._seq = itertools.count()
        self._wake_scheduled = False
        # Who waits for the queue of requests to get shorter (wait_for_room).
        self._room = RoomWaiters(self.has_room)

    @property
    def limit(self) -> int:
        return self.controller.limit

    def has_room(self) -> bool:
        """Fewer requests wait for a slot than the limit: another round of requests
        is not yet queued behind the one in flight."""
        return self.waiting < self.controller.limit

    async def wait_for_room(self) -> None:
        """Until has_room(): the scheduling loop waits here rather than assume
        pods whose binds could only queue (their attempt would count the wait, and
        their node would be chosen from a cluster state older than it need be)."""
        await self._room.wait()

    async def acquire(self) -> int:
        """Wait for a slot; returns the requests in flight with this one."""
        while True:
            pause = self.controller.pause_left()
            if pause > 0:
                await asyncio.sleep(pause)
                continue
            # Earlier waiters first (the limit may have grown since they queued).
            self._wake()
            if self.in_flight < self.controller.limit:
                self.in_flight += 1
                return self.in_flight
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiters, (next(self._seq), waiter))
            self.waiting += 1
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    # Granted a slot and cancelled at once: give it to the next.
                    self.in_flight -= 1
                    self._wake()
                else:
                    self.waiting -= 1
                    self._room.wake()
                raise
            return self.in_flight

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        """Hand free slots to the waiters in order (or later, once a pause ends)."""
        pause = self.controller.pause_left()
        if pause > 0:
            if not self._wake_scheduled and self._waiters:
                self._wake_scheduled = True
                asyncio.get_running_loop().call_later(pause, self._wake_after_pause)
            return
        while self._waiters and self.in_flight < self.controller.limit:
            _, waiter = heapq.heappop(self._waiters)
            if waiter.done():
                continue
            self.in_flight += 1
            self.waiting -= 1
            waiter.set_result(None)
        self._room.wake()

    def _wake_after_pause(self) -> None:
        self._wake_scheduled = False
        self._wake()
