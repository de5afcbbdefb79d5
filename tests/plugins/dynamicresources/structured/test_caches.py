"""The allocator's shortcuts give the answers of the full work: pools kept across
cycles, the search skipped on nodes that see no slice, capacity checks skipped
when nothing asks for capacity."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubesched.api.resource import (
    CapacityRequestPolicy,
    CapacityRequirements,
    DeviceCapacity,
)
from kubesched.framework.state.dra import AllocatedState
from kubesched.plugins.dynamicresources.structured import search as search_module
from kubesched.plugins.dynamicresources.structured.allocator import AllocationError
from kubesched.plugins.dynamicresources.structured.capacity import (
    CapacityError,
    request_over_capacity_ok,
)
from kubesched.plugins.dynamicresources.structured.pools import PoolCache
from tests.plugins.dynamicresources.structured.test_allocator import (
    alloc,
    claim,
    dev,
    devices_of,
    node,
    req,
    rslice,
)


def test_pool_cache_kept_while_slices_and_node_are_the_same() -> None:
    cache = PoolCache()
    slices = [rslice("s", [dev("d0")])]
    n1 = node()
    first = alloc([claim(req())], slices, pool_cache=cache)
    pools = cache.pools(n1, first.selector_cache)
    # Another cycle, a new list of the same slices: the same pools.
    alloc([claim(req())], list(slices), pool_cache=cache)
    assert cache.pools(n1, first.selector_cache) is pools
    # A new Node object (an update) and new slices are looked at afresh.
    assert cache.pools(node(), first.selector_cache) is not pools
    changed = [rslice("s", [dev("d0"), dev("d1")])]
    a = alloc([claim(req(count=2))], changed, pool_cache=cache)
    assert devices_of(a.allocate(n1)) == ["d0", "d1"]


def test_node_without_slices_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[str] = []
    real_run = search_module.Search.run

    def counting_run(self: search_module.Search) -> bool:
        runs.append(self.node.metadata.name)
        return real_run(self)

    monkeypatch.setattr(search_module.Search, "run", counting_run)
    a = alloc([claim(req())], [rslice("s", [dev("d0")])])
    assert [a.allocate(node(f"bare-{i}")) for i in range(3)] == [None, None, None]
    assert runs == ["bare-0"]
    # Other claims (the plugin swaps the special claim per node) search again.
    a.claims = [claim(req("other"))]
    assert a.allocate(node("bare-3")) is None
    # The node with the slice is searched as ever.
    a.claims = [claim(req())]
    assert devices_of(a.allocate(node())) == ["d0"]
    assert runs == ["bare-0", "bare-3", "n1"]


def test_node_without_slices_results_and_errors_not_kept() -> None:
    a = alloc([claim(req(count=0))], [rslice("s", [dev("d0")])])
    first, second = a.allocate(node("bare-1")), a.allocate(node("bare-2"))
    assert first is not None and second is not None and first is not second
    broken = alloc([claim(req(cls="missing"))], [])
    for name in ("bare-1", "bare-2"):
        with pytest.raises(AllocationError, match="could not retrieve device class missing"):
            broken.allocate(node(name))


POLICY = CapacityRequestPolicy(default="1Gi")


@pytest.mark.parametrize(
    ("capacity", "requested", "consumed", "allocating"),
    [
        ({"mem": DeviceCapacity(value="4Gi")}, None, None, None),
        ({"mem": DeviceCapacity(value="4Gi")}, CapacityRequirements(), None, None),
        ({"mem": DeviceCapacity(value="4Gi")}, None, {"mem": Fraction(1)}, None),
        ({"mem": DeviceCapacity(value="4Gi")}, None, None, {"mem": Fraction(1)}),
        ({"mem": DeviceCapacity(value="4Gi", request_policy=POLICY)}, None, None, None),
        (
            {"mem": DeviceCapacity(value="4Gi")},
            CapacityRequirements(requests={"mem": "1Gi"}),
            None,
            None,
        ),
        (
            {"mem": DeviceCapacity(value="4Gi")},
            CapacityRequirements(requests={"x": "1"}),
            None,
            None,
        ),
        ({}, None, None, None),
    ],
)
def test_capacity_shortcut_agrees_with_cmp_request_over_capacity(
    capacity: dict[str, DeviceCapacity],
    requested: CapacityRequirements | None,
    consumed: dict[str, Fraction] | None,
    allocating: dict[str, Fraction] | None,
) -> None:
    device = dev("d0", capacity=capacity)
    rs = rslice("s", [device])
    state = AllocatedState()
    a = alloc([claim(req(capacity=requested))], [rs], allocated=state)
    device_id = (rs.spec.driver, rs.spec.pool.name, "d0")
    if consumed is not None:
        a.consumed_capacity[device_id] = consumed
    search = search_module.Search(a, node(), a.pool_cache.pools(node(), a.selector_cache), None)
    if allocating is not None:
        search.allocating_capacity[device_id] = allocating
    request = search_module._exact(
        "r", claim(req(capacity=requested)).spec.devices.requests[0].exactly
    )
    try:
        expected = request_over_capacity_ok(consumed or {}, requested, capacity, allocating or {})
    except CapacityError:
        expected = False
    assert search._capacity_ok(request, rs, device) is expected
