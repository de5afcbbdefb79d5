"""Fencing: the moment after which a replica must not bind any more.

client-go's leader election (leaderelection.go, renew) lets a leader act until
renewDeadline has passed since its last successful renewal: by then it gives
up, and other candidates wait a whole leaseDuration (longer than renewDeadline)
before they take the lease. kube-scheduler exits on OnStoppedLeading, and its
binding goroutines die with it. kubesched binds in more than one place (the
scheduling process, or its API worker process), so each of them holds a Fence
and checks it as a request is about to go out, after it waited for its slot.

The deadline is a CLOCK_MONOTONIC time (time.monotonic()), which every process
of one machine reads alike, so the scheduling process can hand it to a worker.
"""

from __future__ import annotations

import math
import time


class Fenced(Exception):
    """The replica may no longer bind (it lost, or never held, the lease)."""


class Fence:
    """Binds are allowed until `until` (time.monotonic()); math.inf without
    leader election."""

    def __init__(self, until: float = math.inf) -> None:
        self.until = until

    def allows(self) -> bool:
        return time.monotonic() < self.until

    def check(self) -> None:
        if not self.allows():
            raise Fenced("this replica no longer holds the leader lease: not binding")

    def close(self) -> None:
        """At once: no bind from now on."""
        self.until = -math.inf
