"""Clocks: real time for `run`, simulated time for `simulate`.

The queue's backoffs, the unschedulable pool's timeout and Permit's Wait all
read time through a Clock, so that `simulate` can jump over a 10 s backoff
instead of sleeping through it.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable


class Clock:
    def now(self) -> float:
        raise NotImplementedError

    def call_at(self, when: float, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` at time `when`; returns a function that cancels it."""
        raise NotImplementedError


class RealClock(Clock):
    def __init__(self) -> None:
        import asyncio

        self._loop = asyncio.get_event_loop

    def now(self) -> float:
        return time.monotonic()

    def call_at(self, when: float, callback: Callable[[], None]) -> Callable[[], None]:
        loop = self._loop()
        handle = loop.call_later(max(0.0, when - self.now()), callback)
        return handle.cancel


class SimClock(Clock):
    """Time that moves only when the simulator says so."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._cancelled: set[int] = set()
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> Callable[[], None]:
        seq = next(self._seq)
        heapq.heappush(self._timers, (when, seq, callback))
        return lambda: self._cancelled.add(seq)

    def next_timer(self) -> float | None:
        while self._timers and self._timers[0][1] in self._cancelled:
            self._cancelled.discard(heapq.heappop(self._timers)[1])
        return self._timers[0][0] if self._timers else None

    def advance_to(self, when: float) -> None:
        """Move time forward to `when`, firing the timers that fall due on the way."""
        while True:
            due = self.next_timer()
            if due is None or due > when:
                break
            _, _seq, callback = heapq.heappop(self._timers)
            self._now = max(self._now, due)
            callback()
        self._now = max(self._now, when)
