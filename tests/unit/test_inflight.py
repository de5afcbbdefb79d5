"""The client's in-flight limit (kube/inflight.py): AIMD on the apiserver's answers,
with a fake clock for the arithmetic and the event loop for the waiting."""

from __future__ import annotations

import asyncio

import pytest

from kubesched.kube.inflight import (
    FLOOR,
    INITIAL_LIMIT,
    AdaptiveLimiter,
    AimdController,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _controller(**kwargs: int) -> tuple[AimdController, FakeClock]:
    clock = FakeClock()
    return AimdController(clock=clock, **kwargs), clock


def test_the_limit_grows_by_one_per_round_trip_while_every_slot_is_busy() -> None:
    ctl, _ = _controller(initial=10, ceiling=100)
    for _ in range(10):  # one round trip at limit 10: ten answers
        ctl.on_success(0.01, in_flight=10)
    assert ctl.limit == 10 or ctl.limit == 11
    for _ in range(200):
        ctl.on_success(0.01, in_flight=ctl.limit)
    assert 20 <= ctl.limit <= 30  # additive: about +1 per `limit` answers


def test_the_limit_does_not_grow_when_the_slots_were_not_the_bound() -> None:
    ctl, _ = _controller(initial=10)
    for _ in range(1000):
        ctl.on_success(0.01, in_flight=3)
    assert ctl.limit == 10


def test_the_limit_stops_at_the_ceiling() -> None:
    ctl, _ = _controller(initial=10, ceiling=12)
    for _ in range(1000):
        ctl.on_success(0.01, in_flight=ctl.limit)
    assert ctl.limit == 12


def test_an_overload_halves_the_limit_once_per_round_trip() -> None:
    ctl, clock = _controller(initial=64)
    ctl.on_overload(0.05, None)
    assert ctl.limit == 32
    # Answers to requests sent under the old limit, within one round trip: no more.
    clock.now += 0.01
    ctl.on_overload(0.05, None)
    ctl.on_overload(0.05, None)
    assert ctl.limit == 32
    clock.now += 0.1
    ctl.on_overload(0.05, None)
    assert ctl.limit == 16
    assert ctl.overloads == 4 and ctl.decreases == 2


def test_the_limit_never_goes_below_the_floor() -> None:
    ctl, clock = _controller()
    for _ in range(20):
        clock.now += 1.0
        ctl.on_overload(0.05, None)
    assert ctl.limit == FLOOR


def test_slow_answers_take_a_tenth_off() -> None:
    ctl, clock = _controller(initial=50)
    for _ in range(100):
        ctl.on_success(0.01, in_flight=1)
    assert ctl.limit == 50
    # Latency jumps tenfold: requests queue inside the apiserver.
    clock.now += 1.0
    for _ in range(20):
        ctl.on_success(0.1, in_flight=1)
    assert ctl.limit == 45  # once: the later slow answers came within a round trip
    clock.now += 1.0
    ctl.on_success(0.1, in_flight=1)
    assert ctl.limit == 40


def test_latency_that_stays_high_becomes_the_new_normal() -> None:
    ctl, clock = _controller(initial=50)
    for _ in range(100):
        ctl.on_success(0.01, in_flight=1)
    for _ in range(2000):
        clock.now += 0.001
        ctl.on_success(0.1, in_flight=ctl.limit)
    before = ctl.limit
    for _ in range(500):
        clock.now += 0.001
        ctl.on_success(0.1, in_flight=ctl.limit)
    assert ctl.limit > before  # growing again, not stuck at the floor


def test_retry_after_pauses_until_it_has_passed() -> None:
    ctl, clock = _controller()
    ctl.on_overload(0.01, 2.0)
    assert ctl.pause_left() == pytest.approx(2.0)
    clock.now += 1.5
    assert ctl.pause_left() == pytest.approx(0.5)
    clock.now += 1.0
    assert ctl.pause_left() == 0.0


def test_a_huge_retry_after_is_capped() -> None:
    ctl, _ = _controller()
    ctl.on_overload(0.01, 86400.0)
    assert ctl.pause_left() == pytest.approx(30.0)


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="floor <= initial <= ceiling"):
        AimdController(initial=4, floor=8)


def test_the_limiter_holds_requests_beyond_the_limit_in_order() -> None:
    async def scenario() -> list[int]:
        limiter = AdaptiveLimiter(AimdController(initial=2, floor=1, ceiling=2))
        order: list[int] = []
        assert await limiter.acquire() == 1
        assert await limiter.acquire() == 2
        waiters = [asyncio.ensure_future(_acquire(limiter, i, order)) for i in range(3)]
        await asyncio.sleep(0)
        assert order == [] and limiter.waiting == 3
        limiter.release()
        await asyncio.sleep(0)
        assert order == [0]
        limiter.release()
        limiter.release()
        await asyncio.gather(*waiters)
        assert limiter.in_flight == 2  # waiters 1 and 2 hold both slots
        return order

    assert asyncio.run(scenario()) == [0, 1, 2]


async def _acquire(limiter: AdaptiveLimiter, i: int, order: list[int]) -> None:
    await limiter.acquire()
    order.append(i)


def test_a_cancelled_waiter_does_not_keep_its_slot() -> None:
    async def scenario() -> int:
        limiter = AdaptiveLimiter(AimdController(initial=1, floor=1, ceiling=1))
        await limiter.acquire()
        waiter = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        waiter.cancel()
        limiter.release()
        await asyncio.sleep(0)
        # The slot is free for the next request, which must not hang.
        await asyncio.wait_for(limiter.acquire(), 1.0)
        return limiter.in_flight

    assert asyncio.run(scenario()) == 1


def test_the_limiter_sends_nothing_during_a_retry_after() -> None:
    async def scenario() -> float:
        limiter = AdaptiveLimiter(AimdController(initial=INITIAL_LIMIT))
        limiter.controller.on_overload(0.01, 1.0)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await limiter.acquire()
        return loop.time() - started

    assert asyncio.run(scenario()) >= 0.95


def test_room_waits_until_fewer_requests_queue_than_the_limit() -> None:
    async def scenario() -> list[str]:
        limiter = AdaptiveLimiter(AimdController(initial=2, floor=1, ceiling=2))
        seen: list[str] = []
        for _ in range(2):
            await limiter.acquire()
        queued = [asyncio.ensure_future(limiter.acquire()) for _ in range(2)]
        await asyncio.sleep(0)
        assert limiter.waiting == 2 and not limiter.has_room()

        async def scheduler() -> None:
            await limiter.wait_for_room()
            seen.append("room")

        waiting = asyncio.ensure_future(scheduler())
        await asyncio.sleep(0)
        assert seen == []
        limiter.release()  # one queued request gets the slot: one waits
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert seen == ["room"] and limiter.waiting == 1
        await waiting
        queued[1].cancel()
        await asyncio.gather(*queued, return_exceptions=True)
        assert limiter.waiting == 0
        return seen

    assert asyncio.run(scenario()) == ["room"]
