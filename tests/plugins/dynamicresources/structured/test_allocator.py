"""Unit tests of the structured allocator against upstream's rules (v1.36 incubating)."""

from __future__ import annotations

import itertools

import pytest

from kubesched.api.objects import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
)
from kubesched.api.resource import (
    ALL,
    CapacityRequestPolicy,
    CapacityRequestPolicyRange,
    CapacityRequirements,
    CELDeviceSelector,
    Counter,
    CounterSet,
    Device,
    DeviceAttribute,
    DeviceCapacity,
    DeviceClaim,
    DeviceClass,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceCounterConsumption,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    DeviceToleration,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceClaimSpec,
    ResourcePool,
    ResourceSlice,
    ResourceSliceSpec,
)
from kubesched.framework.state.dra import AllocatedState
from kubesched.plugins.dynamicresources.structured.allocator import (
    AllocationError,
    Allocator,
    FailedAllocationOnNode,
    Features,
)
from kubesched.plugins.dynamicresources.structured.celenv import CelCache

DRIVER = "gpu.example.com"


def node(name: str = "n1", labels: dict[str, str] | None = None) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels=labels or {}))


def sel(expr: str) -> DeviceSelector:
    return DeviceSelector(cel=CELDeviceSelector(expression=expr))


def dclass(name: str = "gpu", *exprs: str) -> DeviceClass:
    return DeviceClass(
        metadata=ObjectMeta(name=name), spec=DeviceClassSpec(selectors=[sel(e) for e in exprs])
    )


def dev(name: str, **kw: object) -> Device:
    attrs = kw.pop("attrs", {})
    assert isinstance(attrs, dict)
    return Device(
        name=name,
        attributes={
            k: DeviceAttribute(
                string_value=v if isinstance(v, str) else None,
                int_value=v if isinstance(v, int) and not isinstance(v, bool) else None,
                bool_value=v if isinstance(v, bool) else None,
            )
            for k, v in attrs.items()
        },
        **kw,  # type: ignore[arg-type]
    )


def rslice(
    name: str, devices: list[Device], node_name: str | None = "n1", pool: str = "p1", **kw: object
) -> ResourceSlice:
    return ResourceSlice(
        metadata=ObjectMeta(name=name),
        spec=ResourceSliceSpec(
            driver=str(kw.pop("driver", DRIVER)),
            pool=ResourcePool(
                name=pool,
                generation=int(kw.pop("generation", 1)),  # type: ignore[call-overload]
                resource_slice_count=int(kw.pop("count", 1)),  # type: ignore[call-overload]
            ),
            node_name=node_name,
            devices=devices,
            **kw,  # type: ignore[arg-type]
        ),
    )


def claim(
    *requests: DeviceRequest, constraints: list[DeviceConstraint] | None = None
) -> ResourceClaim:
    return ResourceClaim(
        metadata=ObjectMeta(name="c", namespace="ns"),
        spec=ResourceClaimSpec(
            devices=DeviceClaim(requests=list(requests), constraints=constraints or [])
        ),
    )


def req(name: str = "r", count: int = 1, **kw: object) -> DeviceRequest:
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(device_class_name=str(kw.pop("cls", "gpu")), count=count, **kw),  # type: ignore[arg-type]
    )


def alloc(
    claims: list[ResourceClaim],
    slices: list[ResourceSlice],
    classes: list[DeviceClass] | None = None,
    allocated: AllocatedState | None = None,
    **kw: object,
) -> Allocator:
    counter = itertools.count()
    return Allocator(
        claims,
        allocated or AllocatedState(),
        {c.metadata.name: c for c in (classes or [dclass()])},
        slices,
        share_ids=lambda: f"share-{next(counter)}",
        **kw,  # type: ignore[arg-type]
    )


def devices_of(results: list | None) -> list[str]:  # type: ignore[type-arg]
    assert results is not None
    return [r.device for res in results for r in res.devices.results]


def test_exact_count_first_fit_and_node_selector() -> None:
    a = alloc([claim(req(count=2))], [rslice("s", [dev("d0"), dev("d1"), dev("d2")])])
    results = a.allocate(node())
    assert devices_of(results) == ["d0", "d1"]
    assert results is not None
    ns = results[0].node_selector
    assert ns is not None
    assert ns.node_selector_terms[0].match_fields[0].values == ["n1"]
    assert a.allocate(node("other")) is None


def test_already_allocated_skipped_and_admin_access() -> None:
    state = AllocatedState(devices={(DRIVER, "p1", "d0")})
    slices = [rslice("s", [dev("d0"), dev("d1")])]
    assert devices_of(alloc([claim(req())], slices, allocated=state).allocate(node())) == ["d1"]
    admin = alloc([claim(req(admin_access=True))], slices, allocated=state).allocate(node())
    assert devices_of(admin) == ["d0"]
    assert admin is not None and admin[0].devices.results[0].admin_access is True


def test_pools_sorted_and_network_attached_has_no_selector() -> None:
    slices = [
        rslice("b", [dev("x")], node_name=None, pool="zz", all_nodes=True),
        rslice("a", [dev("y")], node_name=None, pool="aa", all_nodes=True),
    ]
    results = alloc([claim(req())], slices).allocate(node())
    assert devices_of(results) == ["y"]
    assert results is not None and results[0].node_selector is None


def test_slice_node_selector_is_copied() -> None:
    selector = NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_expressions=[NodeSelectorRequirement(key="rack", operator="In", values=["1"])]
            )
        ]
    )
    slices = [rslice("s", [dev("d0")], node_name=None, node_selector=selector)]
    a = alloc([claim(req())], slices)
    assert a.allocate(node(labels={"rack": "2"})) is None
    results = a.allocate(node(labels={"rack": "1"}))
    assert results is not None and results[0].node_selector == selector


def test_cel_selectors_class_and_request() -> None:
    slices = [rslice("s", [dev("d0", attrs={"model": "a"}), dev("d1", attrs={"model": "b"})])]
    cls = dclass("gpu", f'device.driver == "{DRIVER}"')
    expr = f'device.attributes["{DRIVER}"].model == "b"'
    results = alloc([claim(req(selectors=[sel(expr)]))], slices, [cls]).allocate(node())
    assert devices_of(results) == ["d1"]


def test_cel_errors_have_upstream_text() -> None:
    slices = [rslice("s", [dev("d0", attrs={"model": "a"})])]
    with pytest.raises(AllocationError, match=r"^claim ns/c: selector #0: CEL compile error: "):
        alloc([claim(req(selectors=[sel("device.driver ==")]))], slices).allocate(node())
    with pytest.raises(
        AllocationError, match=r"^claim ns/c: selector #0: CEL runtime error: no such key: x$"
    ):
        expr = f'device.attributes["{DRIVER}"].x == 1'
        alloc([claim(req(selectors=[sel(expr)]))], slices).allocate(node())
    # A missing domain is an empty map: the error is on the attribute.
    with pytest.raises(AllocationError, match=r"no such key: x$"):
        alloc([claim(req(selectors=[sel('device.attributes["o.com"].x')]))], slices).allocate(
            node()
        )
    with pytest.raises(AllocationError, match=r"^class gpu: selector #0: CEL runtime error: "):
        alloc([claim(req())], slices, [dclass("gpu", "device.driver")]).allocate(node())


def test_cel_quantity_and_semver() -> None:
    d = Device(
        name="d0",
        attributes={"v": DeviceAttribute(version_value="1.2.3")},
        capacity={"memory": DeviceCapacity(value="40Gi")},
    )
    slices = [rslice("s", [d])]
    for expr, ok in [
        (f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40960Mi")) == 0', True),
        (f'device.capacity["{DRIVER}"].memory == quantity("40960Mi")', True),
        (f'device.attributes["{DRIVER}"].v.isGreaterThan(semver("1.10.0"))', False),
        (f'device.attributes["{DRIVER}"].v.major() == 1', True),
    ]:
        result = alloc([claim(req(selectors=[sel(expr)]))], slices).allocate(node())
        assert (result is not None) == ok, expr


def test_cel_cache_shared_compiles_once() -> None:
    cache = CelCache()
    expr = 'device.driver == "gpu.example.com"'
    slices = [rslice("s", [dev("d0")])]
    for _ in range(2):
        alloc([claim(req(selectors=[sel(expr)]))], slices, cel_cache=cache).allocate(node())
    assert cache.get_or_compile(expr) is cache.get_or_compile(expr)


def test_all_mode() -> None:
    slices = [rslice("s", [dev("d0"), dev("d1")])]
    results = alloc([claim(req(allocation_mode=ALL))], slices).allocate(node())
    assert devices_of(results) == ["d0", "d1"]
    state = AllocatedState(devices={(DRIVER, "p1", "d1")})
    assert (
        alloc([claim(req(allocation_mode=ALL))], slices, allocated=state).allocate(node()) is None
    )
    incomplete = [rslice("s", [dev("d0")], count=2)]
    with pytest.raises(AllocationError, match="currently being updated"):
        alloc([claim(req(allocation_mode=ALL))], incomplete).allocate(node())
    assert alloc([claim(req(allocation_mode=ALL))], []).allocate(node()) is None


def test_first_available() -> None:
    request = DeviceRequest(
        name="r",
        first_available=[
            DeviceSubRequest(name="big", device_class_name="gpu", count=3),
            DeviceSubRequest(name="small", device_class_name="gpu", count=1),
        ],
    )
    results = alloc([claim(request)], [rslice("s", [dev("d0"), dev("d1")])]).allocate(node())
    assert results is not None
    assert [r.request for r in results[0].devices.results] == ["r/small"]


def test_match_and_distinct_attribute() -> None:
    slices = [
        rslice(
            "s",
            [
                dev("d0", attrs={"numa": 0}),
                dev("d1", attrs={"numa": 1}),
                dev("d2", attrs={"numa": 1}),
            ],
        )
    ]
    match = [DeviceConstraint(match_attribute=f"{DRIVER}/numa")]
    results = alloc([claim(req("a"), req("b"), constraints=match)], slices).allocate(node())
    assert devices_of(results) == ["d1", "d2"]
    distinct = [DeviceConstraint(distinct_attribute=f"{DRIVER}/numa")]
    results = alloc([claim(req("a"), req("b"), constraints=distinct)], slices).allocate(node())
    assert devices_of(results) == ["d0", "d1"]


def test_taints_and_tolerations() -> None:
    tainted = dev("d0", taints=[DeviceTaint(key="k", value="v", effect="NoSchedule")])
    slices = [rslice("s", [tainted])]
    assert alloc([claim(req())], slices).allocate(node()) is None
    tol = [DeviceToleration(key="k", operator="Exists")]
    results = alloc([claim(req(tolerations=tol))], slices).allocate(node())
    assert devices_of(results) == ["d0"]
    off = alloc([claim(req())], slices, features=Features(device_taints=False))
    assert devices_of(off.allocate(node())) == ["d0"]


def test_partitionable_counters() -> None:
    counters = rslice(
        "cs",
        [],
        count=2,
        shared_counters=[CounterSet(name="gpu0", counters={"mem": Counter(value="8Gi")})],
    )

    def part(name: str, amount: str) -> Device:
        return dev(
            name,
            consumes_counters=[
                DeviceCounterConsumption(
                    counter_set="gpu0", counters={"mem": Counter(value=amount)}
                )
            ],
        )

    slices = [
        counters,
        rslice("s", [part("p0", "6Gi"), part("p1", "4Gi"), part("p2", "2Gi")], count=2),
    ]
    results = alloc([claim(req(count=2))], slices).allocate(node())
    assert devices_of(results) == ["p0", "p2"]
    state = AllocatedState(devices={(DRIVER, "p1", "p0")})
    results = alloc([claim(req(count=2))], slices, allocated=state).allocate(node())
    assert results is None


def test_consumable_capacity_shares() -> None:
    shared = dev(
        "d0",
        allow_multiple_allocations=True,
        capacity={
            "bw": DeviceCapacity(
                value="10",
                request_policy=CapacityRequestPolicy(
                    default="1",
                    valid_range=CapacityRequestPolicyRange(min="1", step="2"),
                ),
            )
        },
    )
    slices = [rslice("s", [shared])]
    cap = CapacityRequirements(requests={"bw": "4"})
    # Within one request the search moves past a chosen device: no second share.
    assert alloc([claim(req(count=2, capacity=cap))], slices).allocate(node()) is None
    two = claim(req("a", capacity=cap), req("b", capacity=cap))
    results = alloc([two], slices).allocate(node())
    assert results is not None
    got = results[0].devices.results
    assert [(r.device, r.share_id, r.consumed_capacity) for r in got] == [
        ("d0", "share-0", {"bw": "5"}),
        ("d0", "share-1", {"bw": "5"}),
    ]
    three = claim(req("a", capacity=cap), req("b", capacity=cap), req("c", capacity=cap))
    assert alloc([three], slices).allocate(node()) is None
    state = AllocatedState(consumed_capacity={(DRIVER, "p1", "d0"): {"bw": 6000}})
    assert alloc([claim(req(capacity=cap))], slices, allocated=state).allocate(node()) is None


def test_binding_conditions() -> None:
    bound = dev("d0", binding_conditions=["ready"], binding_failure_conditions=["failed"])
    slices = [rslice("s", [bound])]
    results = alloc([claim(req())], slices).allocate(node())
    assert results is not None
    assert results[0].devices.results[0].binding_conditions == ["ready"]
    off = alloc([claim(req())], slices, features=Features(binding_conditions=False))
    assert off.allocate(node()) is None


def test_missing_class_and_invalid_pool() -> None:
    with pytest.raises(AllocationError, match="could not retrieve device class nope"):
        alloc([claim(req(cls="nope"))], []).allocate(node())
    dup = [rslice("s", [dev("d0"), dev("d0")])]
    with pytest.raises(FailedAllocationOnNode, match="invalid resource pools"):
        alloc([claim(req())], dup).allocate(node())


def test_generations() -> None:
    slices = [
        rslice("old", [dev("d0")], generation=1),
        rslice("new", [dev("d1")], generation=2),
    ]
    assert devices_of(alloc([claim(req())], slices).allocate(node())) == ["d1"]
