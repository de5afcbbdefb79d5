"""framework/waiting.py: a pod held at Permit is rejected when a plugin's wait runs out,
with the wait printed as upstream's time.Duration does ("5m0s", not "300s")."""

from __future__ import annotations

import asyncio

import pytest

from kubesched.api.durations import format_go_duration
from kubesched.framework.clock import SimClock
from kubesched.framework.waiting import WaitingPod


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(300.0, "5m0s"), (60.0, "1m0s"), (90.0, "1m30s"), (3.0, "3s"), (1.5, "1.5s"), (0.5, "500ms")],
)
def test_a_timeout_names_the_wait_as_a_go_duration(seconds: float, shown: str) -> None:
    async def scenario() -> str:
        clock = SimClock()
        waiting = WaitingPod("default/p", "node-1", {"Gang": seconds}, clock)
        clock.advance_to(seconds - 0.001)
        await asyncio.sleep(0)
        assert waiting.pending == {"Gang"}
        clock.advance_to(seconds)
        status = await waiting.wait()
        return status.message()

    assert asyncio.run(scenario()) == (
        f"rejected due to timeout after waiting {shown} at plugin Gang"
    )


def test_go_durations_print_as_time_duration_string() -> None:
    assert [format_go_duration(s) for s in (0, 3600, 3725.5, 1e-6)] == [
        "0s",
        "1h0m0s",
        "1h2m5.5s",
        "1µs",
    ]
