"""The allocator's outcome cache (structured/outcomes.py): an outcome kept for a node
is given back only while the claims' specs, their classes, the features, the Node,
its pools and the allocated devices among them are what it was made from; all of
upstream's allocator cases give the same answers with it, first and second time."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import msgspec
import pytest

from kubesched.api.objects import Node
from kubesched.api.quantity import parse_quantity
from kubesched.api.resource import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.framework.state.dra import AllocatedState, DraState, device_id
from kubesched.plugins.dynamicresources.structured import search as search_module
from kubesched.plugins.dynamicresources.structured.allocator import (
    AllocationError,
    Allocator,
    Features,
)
from kubesched.plugins.dynamicresources.structured.celenv import CelCache
from kubesched.plugins.dynamicresources.structured.outcomes import OutcomeCache
from kubesched.plugins.dynamicresources.structured.pools import PoolCache, SelectorCache
from tests.plugins.dynamicresources.structured.upstream import (
    test_upstream_capacity,
    test_upstream_devices,
    test_upstream_requests,
)
from tests.plugins.dynamicresources.structured.upstream.kit import (
    CLASS_A,
    DRIVER_A,
    NODE_1,
    NODE_2,
    TAINT_NO_SCHEDULE,
    attrs,
    cel,
    claim,
    dev,
    device_class,
    node,
    normalise,
    numbered,
    req,
    rslice,
)


class Shared:
    """The caches the DynamicResources plugin shares across its allocators."""

    def __init__(self) -> None:
        self.cel = CelCache()
        self.selectors = SelectorCache()
        self.pools = PoolCache()
        self.outcomes = OutcomeCache()

    def allocator(
        self,
        claims: list[ResourceClaim],
        slices: list[ResourceSlice],
        classes: list[DeviceClass] | None = None,
        allocated: AllocatedState | None = None,
        features: Features | None = None,
    ) -> Allocator:
        counter = itertools.count()
        return Allocator(
            claims,
            allocated or AllocatedState(),
            {c.metadata.name: c for c in (classes if classes is not None else [device_class()])},
            slices,
            features or Features(),
            cel_cache=self.cel,
            share_ids=lambda: f"share-{next(counter)}",
            selector_cache=self.selectors,
            pool_cache=self.pools,
            outcome_cache=self.outcomes,
        )


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the nodes searched (Search.run calls), in order."""
    runs: list[str] = []
    real_run = search_module.Search.run

    def counting_run(self: search_module.Search) -> bool:
        runs.append(self.node.metadata.name)
        return real_run(self)

    monkeypatch.setattr(search_module.Search, "run", counting_run)
    yield runs


def replace_status(claim_: ResourceClaim, allocation: AllocationResult) -> ResourceClaim:
    return msgspec.structs.replace(
        claim_,
        metadata=msgspec.structs.replace(claim_.metadata, namespace="ns", resource_version="1"),
        status=msgspec.structs.replace(claim_.status, allocation=allocation),
    )


def pod_claim(i: int, count: int = 1) -> ResourceClaim:
    """The claim of pod i, made from one template: its own object, an equal spec."""
    return claim(f"pod-{i}-claim", req("req-0", CLASS_A, count))


def devices(results: list[AllocationResult] | None) -> list[str]:
    assert results is not None
    return [r.device for result in results for r in result.devices.results]


def two_nodes() -> list[ResourceSlice]:
    return [
        rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(2)),
        rslice("slice-2", NODE_2, "pool-2", DRIVER_A, *numbered(2)),
    ]


def test_claims_with_equal_specs_reuse_the_outcome(searches: list[str]) -> None:
    shared, slices, n1 = Shared(), two_nodes(), node()
    first = shared.allocator([pod_claim(0)], slices).allocate(n1)
    second = shared.allocator([pod_claim(1)], list(slices)).allocate(n1)
    assert devices(first) == devices(second) == ["device-0"]
    assert [normalise(r) for r in first or []] == [normalise(r) for r in second or []]
    assert searches == [NODE_1]


def test_an_allocated_device_of_the_node_is_searched_again(searches: list[str]) -> None:
    shared, slices, n1, n2 = Shared(), two_nodes(), node(), node(NODE_2)
    assert devices(shared.allocator([pod_claim(0)], slices).allocate(n1)) == ["device-0"]
    assert devices(shared.allocator([pod_claim(0)], slices).allocate(n2)) == ["device-0"]
    # pod-0 got node-2's device-0: node-1's outcome stands, node-2 is searched again.
    taken = AllocatedState(devices={(DRIVER_A, "pool-2", "device-0")})
    a = shared.allocator([pod_claim(1)], slices, allocated=taken)
    assert devices(a.allocate(n1)) == ["device-0"]
    assert devices(a.allocate(n2)) == ["device-1"]
    assert searches == [NODE_1, NODE_2, NODE_2]
    # Both of node-1's devices taken: it does not fit any more.
    full = AllocatedState(devices={(DRIVER_A, "pool-1", f"device-{i}") for i in range(2)})
    assert shared.allocator([pod_claim(2)], slices, allocated=full).allocate(n1) is None
    assert shared.allocator([pod_claim(3)], slices, allocated=full).allocate(n1) is None
    assert searches == [NODE_1, NODE_2, NODE_2, NODE_1]


def test_a_changed_class_selector_is_a_new_context(searches: list[str]) -> None:
    shared, n1 = Shared(), node()
    slices = [
        rslice(
            "slice-1",
            NODE_1,
            "pool-1",
            DRIVER_A,
            dev("device-0", attributes=attrs(model="A")),
            dev("device-1", attributes=attrs(model="B")),
        )
    ]
    assert devices(shared.allocator([pod_claim(0)], slices).allocate(n1)) == ["device-0"]
    model_b = device_class(expr=f'device.attributes["{DRIVER_A}"].model == "B"')
    a = shared.allocator([pod_claim(1)], slices, classes=[model_b])
    assert devices(a.allocate(n1)) == ["device-1"]
    # A class replaced by an equal one (an update that changed nothing it reads)
    # is the same context: the outcome stands.
    equal = device_class(expr=f'device.attributes["{DRIVER_A}"].model == "B"')
    assert devices(shared.allocator([pod_claim(2)], slices, [equal]).allocate(n1)) == ["device-1"]
    assert searches == [NODE_1, NODE_1]
    # And the first class again: searched again, as the context changed twice.
    assert devices(shared.allocator([pod_claim(3)], slices).allocate(n1)) == ["device-0"]
    assert searches == [NODE_1, NODE_1, NODE_1], searches


def test_a_deleted_or_changed_slice_is_searched_again(searches: list[str]) -> None:
    shared, n1, slices = Shared(), node(), two_nodes()
    assert devices(shared.allocator([pod_claim(0)], slices).allocate(n1)) == ["device-0"]
    assert shared.allocator([pod_claim(1)], slices[1:]).allocate(n1) is None
    fewer = [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(1, start=1)), slices[1]]
    assert devices(shared.allocator([pod_claim(2)], fewer).allocate(n1)) == ["device-1"]
    assert searches == [NODE_1, NODE_1, NODE_1], searches


def test_an_updated_node_or_claim_spec_is_searched_again(searches: list[str]) -> None:
    shared, slices = Shared(), two_nodes()
    assert devices(shared.allocator([pod_claim(0)], slices).allocate(node())) == ["device-0"]
    # node() makes a new Node object for node-1, as an update stores one.
    assert devices(shared.allocator([pod_claim(1)], slices).allocate(node())) == ["device-0"]
    pair = shared.allocator([pod_claim(2, count=2)], slices).allocate(node())
    assert devices(pair) == ["device-0", "device-1"]
    assert searches == [NODE_1, NODE_1, NODE_1], searches


def test_features_are_part_of_the_context(searches: list[str]) -> None:
    shared, n1 = Shared(), node()
    slices = [
        rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-0", taints=[TAINT_NO_SCHEDULE]))
    ]
    assert shared.allocator([pod_claim(0)], slices).allocate(n1) is None
    off = replace(Features(), device_taints=False)
    got = shared.allocator([pod_claim(1)], slices, features=off).allocate(n1)
    assert devices(got) == ["device-0"]
    assert searches == [NODE_1, NODE_1]


def test_shared_devices_and_counters_are_not_kept(searches: list[str]) -> None:
    shared, n1 = Shared(), node()
    multi = [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-0", multi=True))]
    for i in range(2):
        got = shared.allocator([pod_claim(i)], multi).allocate(n1)
        assert got is not None and got[0].devices.results[0].share_id == "share-0"
    counters = [
        rslice(
            "slice-1",
            NODE_1,
            "pool-1",
            DRIVER_A,
            dev("device-0", counters=[("set-0", {"mem": "1Gi"})]),
            count=2,
        ),
        rslice(
            "slice-2", NODE_1, "pool-1", DRIVER_A, count=2, counter_sets=[("set-0", {"mem": "1Gi"})]
        ),
    ]
    for i in range(2):
        assert devices(shared.allocator([pod_claim(i)], counters).allocate(n1)) == ["device-0"]
    assert searches == [NODE_1] * 4


def test_errors_are_not_kept(searches: list[str]) -> None:
    shared, n1, slices = Shared(), node(), two_nodes()
    bad = claim("pod-0-claim", req("req-0", CLASS_A, 1, cel("device.nosuchfield(")))
    for _ in range(2):
        with pytest.raises(AllocationError, match="CEL compile error"):
            shared.allocator([copy.deepcopy(bad)], slices).allocate(n1)
    assert searches == [NODE_1, NODE_1]


# --- upstream's cases, twice through one cache ----------------------------------------

CASES: dict[str, dict[str, Any]] = {
    f"{module.__name__.rsplit('_', 1)[-1]}/{name}": case
    for module in (test_upstream_capacity, test_upstream_devices, test_upstream_requests)
    for name, case in module.CASES.items()
}


def _state(case: dict[str, Any]) -> AllocatedState:
    """The case's allocated state, as kit.run_case builds it."""
    return AllocatedState(
        devices={tuple(d.split("/")) for d in case.get("allocated", ())},
        consumed_capacity={
            tuple(d.split("/")): {k: int(parse_quantity(v) * 1000) for k, v in amounts.items()}
            for d, amounts in case.get("consumed", {}).items()
        },
    )


def _answer(case: dict[str, Any], target: Node, shared: Shared | None) -> object:
    """The case's outcome (normalised results, or the error's text); claims copied,
    so that a second run sees equal claims that are not the same objects."""
    classes = case.get("classes", [device_class()])
    features = replace(Features(), **case.get("features", {}))
    claims = copy.deepcopy(case.get("claims", []))
    counter = itertools.count()
    if shared is None:
        allocator = Allocator(
            claims,
            _state(case),
            {c.metadata.name: c for c in classes},
            case.get("slices", []),
            features,
            share_ids=lambda: f"share-{next(counter)}",
        )
    else:
        allocator = shared.allocator(
            claims, case.get("slices", []), classes, _state(case), features
        )
    try:
        results = allocator.allocate(target)
    except AllocationError as e:
        return f"error: {e}"
    return sorted((normalise(r) for r in results or []), key=repr)


def test_upstream_cases_agree_with_the_outcome_cache(searches: list[str]) -> None:
    shared = Shared()
    second_searches = 0
    for name, case in CASES.items():
        target = case.get("node") or node()
        plain = _answer(case, target, None)
        first = _answer(case, target, shared)
        before = len(searches)
        second = _answer(case, target, shared)
        second_searches += len(searches) - before
        assert plain == first == second, name
    # Most cases use plain devices on node-1 and come out of the cache the second time.
    assert len(CASES) > 100
    assert second_searches < len(CASES) // 2, second_searches


# --- the per-cycle inputs: the slices list and the pools ------------------------------


def test_slice_list_is_one_list_until_a_slice_changes() -> None:
    dra = DraState()
    first, second = two_nodes()
    dra.upsert_slice(first)
    listed = dra.slice_list()
    assert listed == [first] and dra.slice_list() is listed
    dra.upsert_slice(second)
    grown = dra.slice_list()
    assert grown == [first, second] and grown is not listed
    updated = rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(1))
    dra.upsert_slice(updated)
    assert dra.slice_list() == [updated, second]
    dra.delete_slice("slice-2")
    assert dra.slice_list() == [updated]


def test_pool_cache_follows_the_slice_list_of_dra_state(searches: list[str]) -> None:
    """The plugin's path: allocators get DraState.slice_list; a changed slice gives
    a new list, and the pools (and the outcome kept for them) are made afresh."""
    dra, shared, n1 = DraState(), Shared(), node()
    for rs in two_nodes():
        dra.upsert_slice(rs)
    assert devices(shared.allocator([pod_claim(0)], dra.slice_list()).allocate(n1)) == ["device-0"]
    pools = shared.pools.pools(n1, shared.selectors)
    assert devices(shared.allocator([pod_claim(1)], dra.slice_list()).allocate(n1)) == ["device-0"]
    assert shared.pools.pools(n1, shared.selectors) is pools
    dra.upsert_slice(rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(1, start=5)))
    assert devices(shared.allocator([pod_claim(2)], dra.slice_list()).allocate(n1)) == ["device-5"]
    assert shared.pools.pools(n1, shared.selectors) is not pools
    dra.delete_slice("slice-1")
    assert shared.allocator([pod_claim(3)], dra.slice_list()).allocate(n1) is None
    assert searches == [NODE_1, NODE_1, NODE_1], searches


# --- allocate_each: all nodes in one go ---------------------------------------------


def answers(
    outcomes: Iterable[list[AllocationResult] | AllocationError | None],
) -> list[object]:
    """Per node: the normalised results, None, or the error's type and text."""
    out: list[object] = []
    for outcome in outcomes:
        if isinstance(outcome, AllocationError):
            out.append((type(outcome).__name__, str(outcome)))
        else:
            out.append(None if outcome is None else [normalise(r) for r in outcome])
    return out


def test_allocate_each_answers_as_allocate_per_node(searches: list[str]) -> None:
    shared, slices = Shared(), two_nodes()
    nodes = [node(), node(NODE_2), node("node-bare")]
    each = answers(shared.allocator([pod_claim(0, count=2)], slices).allocate_each(nodes, 0))
    plain = Shared().allocator([pod_claim(0, count=2)], slices)
    assert each == answers(plain.allocate(n) for n in nodes)
    assert each[2] is None and each[0] != each[1]  # node-1's devices, node-2's devices
    assert searches == [NODE_1, NODE_2, "node-bare"] * 2
    # The next pod: kept outcomes, no search.
    again = shared.allocator([pod_claim(1, count=2)], slices).allocate_each(nodes, 0)
    assert answers(again) == each
    assert len(searches) == 6
    # An error comes back per node, not raised.
    missing = claim("pod-2-claim", req("req-0", "no-such-class"))
    errors = answers(shared.allocator([missing], slices).allocate_each(nodes[:2], 0))
    text = (
        "claim pod-2-claim, request req-0: could not retrieve device class no-such-class: "
        'deviceclass.resource.k8s.io "no-such-class" not found'
    )
    assert errors == [("AllocationError", text)] * 2


def test_allocate_each_deadline_is_per_search(searches: list[str]) -> None:
    """Each search gets the timeout from its start; kept outcomes need no search."""
    shared, slices, n1, n2 = Shared(), two_nodes(), node(), node(NODE_2)
    first = shared.allocator([pod_claim(0)], slices).allocate(n1)
    out = answers(shared.allocator([pod_claim(1)], slices).allocate_each([n1, n2], 1e-9))
    assert out == [
        answers([first])[0],
        ("AllocationTimeout", "filter operation aborted: context deadline exceeded"),
    ]


def test_device_ids_are_one_object_each() -> None:
    """The allocated state and the pools name a device by the very same tuple (the
    outcome cache's set look-ups are identity checks then), equal to a plain one."""
    dra = DraState()
    rs = rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(2))
    dra.upsert_slice(rs)
    got = Shared().allocator([pod_claim(0)], dra.slice_list()).allocate(node())
    assert got is not None
    dra.upsert_claim(
        replace_status(pod_claim(0), got[0])  # the claim as PreBind writes it
    )
    (taken,) = dra.allocated_state().devices
    pools = PoolCache()
    pools.use([rs], True)
    (pool,) = pools.pools(node(), SelectorCache())
    assert taken == (DRIVER_A, "pool-1", "device-0")
    assert taken is pool.device_ids()[0][0]
    assert device_id(DRIVER_A, "pool-1", "device-0") is taken
