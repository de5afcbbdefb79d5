"""Score and NormalizeScore of DynamicResources for prioritized lists: computeScore's
cases (Test_computesScore of v1.36.3) and the scoring cases of TestPlugin on the real
allocator."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from kubesched.api.resource import AllocationResult, ResourceClaim
from kubesched.plugins.dynamicresources.plugin import compute_score
from tests.plugins.dynamicresources.upstream.kit import (
    ATTR,
    BROKEN_SELECTOR,
    CLAIM,
    CLAIM_2,
    CLASS,
    NODE,
    NODE_2,
    NODE_3,
    RESOURCE,
    RESOURCE_2,
    Env,
    allocation,
    by_name,
    claim,
    device,
    device_class,
    first_available,
    pod,
    pod_with_claim_name,
    resource_slice,
    result,
    run_cycle,
)


def listed(name: str, n: int) -> dict[str, Any]:
    """A prioritized list `name` of n subrequests subreq-1..subreq-n, one device each."""
    return first_available(name, *((f"subreq-{i}", 1) for i in range(1, n + 1)))


def results(*requests: str) -> AllocationResult:
    return msgspec.convert(
        {"devices": {"results": [{"request": r} for r in requests]}}, AllocationResult
    )


def claims(*lists: list[dict[str, Any]]) -> list[ResourceClaim]:
    return [claim(f"c{i}", *requests) for i, requests in enumerate(lists)]


@pytest.mark.parametrize(
    ("claim_list", "allocations", "score"),
    [
        pytest.param(
            claims([listed("req-1", 1)]),
            [results("req-1/subreq-1")],
            8,
            id="single-request-only-subrequest-allocated",
        ),
        pytest.param(
            claims([listed("req-1", 8)]),
            [results("req-1/subreq-8")],
            1,
            id="single-request-last-subrequest-allocated",
        ),
        pytest.param(
            claims([listed("req-1", 4), listed("req-2", 5)]),
            [results("req-1/subreq-4", "req-2/subreq-5")],
            9,
            id="multiple-requests-with-middle-subrequests-allocated",
        ),
        pytest.param(
            claims([listed("req-1", 8), listed("req-2", 1)]),
            [results("req-1/subreq-8", "req-2/subreq-1")],
            9,
            id="multiple-requests-with-top-subrequests-allocated",
        ),
        pytest.param(
            claims([listed("req-1", 8)], [listed("req-2", 8)]),
            [results("req-1/subreq-8"), results("req-2/subreq-8")],
            2,
            id="multiple-claims-with-last-subrequests-allocated",
        ),
        pytest.param(
            claims([listed("req-1", 1)], [listed("req-2", 1)]),
            [results("req-1/subreq-1"), results("req-2/subreq-1")],
            16,
            id="multiple-claims-with-top-subrequests-allocated",
        ),
    ],
)
def test_compute_score(
    claim_list: list[ResourceClaim], allocations: list[AllocationResult], score: int
) -> None:
    assert compute_score(claim_list, allocations) == score


def test_compute_score_more_claims_than_allocations() -> None:
    with pytest.raises(ValueError, match="number of allocations 0 is smaller"):
        compute_score(claims([listed("req-1", 1)], [listed("req-2", 1)]), [])


def test_compute_score_mix_of_allocated_and_unallocated_claims() -> None:
    """An allocated claim takes its allocation from its status, not from Filter's
    results (which only cover the claims to allocate)."""
    done = claim(CLAIM, allocation=allocation())
    pending = claim(CLAIM_2)
    assert compute_score([done, pending], [results("req-1")]) == 0


def test_compute_score_counts_allocated_prioritized_lists() -> None:
    """Upstream iterates over all claims: an allocated claim whose prioritized list
    got its second choice adds 7 points, and Filter's single result belongs to the
    second claim, not the first."""
    done = claim(CLAIM, listed("req-1", 2), allocation=allocation(result(request="req-1/subreq-2")))
    pending = claim(CLAIM_2, listed("req-1", 3))
    assert compute_score([done, pending], [results("req-1/subreq-1")]) == 7 + 8


def test_single_claim_prioritized_list_scoring() -> None:
    by_selector = {
        "name": "subreq-1",
        "deviceClassName": CLASS,
        "selectors": [{"cel": {"expression": BROKEN_SELECTOR}}],
    }
    prioritized = claim(CLAIM, first_available("req-1", by_selector, ("subreq-2", 1)))
    env = Env(
        claims=[prioritized],
        classes=[device_class()],
        slices=[
            resource_slice(NODE, device("instance-1", attributes={ATTR: {"bool": True}})),
            resource_slice(NODE_2, device("instance-1", attributes={ATTR: {"bool": False}})),
        ],
        nodes=[NODE, NODE_2],
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.scores == ([8, 7], [100, 87])
    assert trace.selected == NODE
    assert trace.pre_bind == ("Success", "")
    chosen = env.stored().status.allocation.devices.results  # type: ignore[union-attr]
    assert [r.request for r in chosen] == ["req-1/subreq-1"]


def test_multiple_claims_prioritized_list_scoring() -> None:
    first = claim(CLAIM, listed("req-1", 1))
    second = claim(
        CLAIM_2,
        first_available(
            "req-1", ("subreq-1", 4), ("subreq-2", 3), ("subreq-3", 2), ("subreq-4", 1)
        ),
    )
    env = Env(
        claims=[first, second],
        classes=[device_class()],
        slices=[
            resource_slice(NODE, *(f"instance-{i}" for i in range(1, 5))),
            resource_slice(NODE_2, "instance-1", "instance-2"),
            resource_slice(NODE_3, "instance-1"),
        ],
        nodes=[NODE, NODE_2, NODE_3],
    )
    trace = run_cycle(env, pod(by_name(RESOURCE, CLAIM), by_name(RESOURCE_2, CLAIM_2)))
    assert trace.filter[NODE_3] == ("UnschedulableAndUnresolvable", "cannot allocate all claims")
    assert trace.scores == ([15, 13], [100, 86])
    assert trace.selected == NODE
    assert trace.in_flight_after_reserve == [f"default/{CLAIM}", f"default/{CLAIM_2}"]


def test_multiple_requests_prioritized_list_scoring() -> None:
    both = claim(
        CLAIM,
        first_available("req-1", ("subreq-1", 2), ("subreq-2", 1)),
        first_available("req-2", ("subreq-1", 2), ("subreq-2", 1)),
    )
    env = Env(
        claims=[both],
        classes=[device_class()],
        slices=[
            resource_slice(NODE, *(f"instance-{i}" for i in range(1, 5))),
            resource_slice(NODE_2, "instance-1", "instance-2", "instance-3"),
            resource_slice(NODE_3, "instance-1", "instance-2"),
        ],
        nodes=[NODE, NODE_2, NODE_3],
    )
    trace = run_cycle(env, pod_with_claim_name())
    assert trace.scores == ([16, 15, 14], [100, 93, 87])


def test_allocated_claims_points_shift_the_normalized_scores() -> None:
    """The flagged difference: with an allocated claim (second choice: 7 points) and
    a pending one (8 or 7 points by node), upstream scores 15 and 14, normalized
    100 and 93; counting the pending claim alone would give 100 and 87."""
    done = claim(
        CLAIM,
        listed("req-1", 2),
        allocation=allocation(result(request="req-1/subreq-2"), node_name=None),
    )
    by_selector = {
        "name": "subreq-1",
        "deviceClassName": CLASS,
        "selectors": [{"cel": {"expression": BROKEN_SELECTOR}}],
    }
    pending = claim(CLAIM_2, first_available("req-1", by_selector, ("subreq-2", 1)))
    env = Env(
        claims=[done, pending],
        classes=[device_class()],
        slices=[
            resource_slice(NODE, device("instance-2", attributes={ATTR: {"bool": True}})),
            resource_slice(NODE_2, device("instance-2", attributes={ATTR: {"bool": False}})),
        ],
        nodes=[NODE, NODE_2],
    )
    trace = run_cycle(env, pod(by_name(RESOURCE, CLAIM), by_name(RESOURCE_2, CLAIM_2)))
    assert trace.scores == ([15, 14], [100, 93])


def test_no_score_when_every_claim_is_allocated() -> None:
    done = claim(
        CLAIM,
        listed("req-1", 2),
        allocation=allocation(result(request="req-1/subreq-2"), node_name=None),
    )
    env = Env(claims=[done], nodes=[NODE, NODE_2])
    trace = run_cycle(env, pod_with_claim_name())
    # No allocator, no node allocations: Score is 0 everywhere (upstream's "not found").
    assert trace.scores == ([0, 0], [0, 0])
