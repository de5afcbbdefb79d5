"""Builders and a runner for allocator cases modelled on upstream's shared allocator
tests (k8s.io/dynamic-resource-allocation structured/internal/allocatortesting of
v0.36.3). The names (driver-a, pool-1, node-1 in region-1, ...) follow upstream's so
that a case can be compared with its upstream namesake; the code is our own.

A case is a dict: claims, slices, classes (default: class-a for driver-a), node
(default node-1), allocated (device ids), consumed (device id -> {capacity: qty}),
features (Features overrides), and either `expect` (one (selector, [result]) per claim,
in any order; None or [] for "does not fit") or `error` (a substring of the error).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from kubesched.api.objects import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
)
from kubesched.api.quantity import parse_quantity
from kubesched.api.resource import (
    ALL,
    AllocationResult,
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
    DeviceClaimConfiguration,
    DeviceClass,
    DeviceClassConfiguration,
    DeviceClassSpec,
    DeviceConstraint,
    DeviceCounterConsumption,
    DeviceRequest,
    DeviceSelector,
    DeviceSubRequest,
    DeviceTaint,
    DeviceToleration,
    ExactDeviceRequest,
    OpaqueDeviceConfiguration,
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
    Features,
)

DRIVER_A, DRIVER_B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"
NODE_1, NODE_2 = "node-1", "node-2"
ALL_NODES = "<all>"
PER_DEVICE = "<per-device>"

# Attribute names used by constraints (fully qualified with driver-a's domain).
INT_ATTR = f"{DRIVER_A}/numa"
STRING_ATTR = f"{DRIVER_A}/stringAttribute"
BOOL_ATTR = f"{DRIVER_A}/boolAttribute"
VERSION_ATTR = f"{DRIVER_A}/driverVersion"

TAINT_NO_SCHEDULE = DeviceTaint(key="taint-key", value="taint-value", effect="NoSchedule")
TAINT_NO_EXECUTE = DeviceTaint(key="taint-key", value="taint-value-2", effect="NoExecute")
TAINT_NONE = DeviceTaint(key="taint-key", value="taint-value", effect="None")
TOLERATE_NO_SCHEDULE = DeviceToleration(key="taint-key", operator="Exists", effect="NoSchedule")
TOLERATE_NO_EXECUTE = DeviceToleration(
    key="taint-key", operator="Equal", value="taint-value-2", effect="NoExecute"
)

MAX = 32  # resourceapi.AllocationResultsMaxSize


# --- objects -------------------------------------------------------------------------


def node(name: str = NODE_1, region: str = "region-1") -> Node:
    return Node(metadata=ObjectMeta(name=name, labels={"region": region, "planet": "earth"}))


def cel(expr: str) -> DeviceSelector:
    return DeviceSelector(cel=CELDeviceSelector(expression=expr))


def memory_at_least(qty: str) -> DeviceSelector:
    return cel(f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("{qty}")) >= 0')


def attr_is(name: str, value: str) -> DeviceSelector:
    return cel(f'device.attributes["{DRIVER_A}"].{name} == "{value}"')


def opaque(driver: str, attribute: str) -> OpaqueDeviceConfiguration:
    return OpaqueDeviceConfiguration(driver=driver, parameters={attribute: attribute + "Value"})


def device_class(
    name: str = CLASS_A,
    driver: str = DRIVER_A,
    *,
    expr: str | None = None,
    multi: bool | None = None,
    config: str | None = None,
) -> DeviceClass:
    """class(): selects the driver's devices; `multi` also on allowMultipleAllocations."""
    if expr is None:
        expr = f'device.driver == "{driver}"'
        if multi is not None:
            expr += f" && device.allowMultipleAllocations == {str(multi).lower()}"
    return DeviceClass(
        metadata=ObjectMeta(name=name),
        spec=DeviceClassSpec(
            selectors=[cel(expr)],
            config=[DeviceClassConfiguration(opaque=opaque(driver, config))] if config else [],
        ),
    )


def capacity(amount: str | None) -> CapacityRequirements | None:
    return None if amount is None else CapacityRequirements(requests={"capacity-0": amount})


def req(
    name: str = "req-0",
    cls: str = CLASS_A,
    count: int = 1,
    *selectors: DeviceSelector,
    all_devices: bool = False,
    admin: bool | None = None,
    tolerations: Sequence[DeviceToleration] = (),
    cap: str | None = None,
    mode: str | None = None,
) -> DeviceRequest:
    return DeviceRequest(
        name=name,
        exactly=ExactDeviceRequest(
            device_class_name=cls,
            count=0 if all_devices else count,
            allocation_mode=mode or (ALL if all_devices else "ExactCount"),
            selectors=list(selectors),
            admin_access=admin,
            tolerations=list(tolerations),
            capacity=capacity(cap),
        ),
    )


def sub(
    name: str,
    cls: str = CLASS_A,
    count: int = 1,
    *selectors: DeviceSelector,
    all_devices: bool = False,
    tolerations: Sequence[DeviceToleration] = (),
    cap: str | None = None,
) -> DeviceSubRequest:
    return DeviceSubRequest(
        name=name,
        device_class_name=cls,
        count=0 if all_devices else count,
        allocation_mode=ALL if all_devices else "ExactCount",
        selectors=list(selectors),
        tolerations=list(tolerations),
        capacity=capacity(cap),
    )


def first(name: str, *subs: DeviceSubRequest) -> DeviceRequest:
    return DeviceRequest(name=name, first_available=list(subs))


def match(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(match_attribute=attribute, requests=list(requests))


def distinct(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(distinct_attribute=attribute, requests=list(requests))


def claim(
    name: str,
    *requests: DeviceRequest,
    constraints: Sequence[DeviceConstraint] = (),
    config: Sequence[DeviceClaimConfiguration] = (),
) -> ResourceClaim:
    return ResourceClaim(
        metadata=ObjectMeta(name=name),
        spec=ResourceClaimSpec(
            devices=DeviceClaim(
                requests=list(requests), constraints=list(constraints), config=list(config)
            )
        ),
    )


def attrs(**values: Any) -> dict[str, DeviceAttribute]:
    """Attributes; a value "v1.2.3" is a version, ints/bools/strings as such."""
    out: dict[str, DeviceAttribute] = {}
    for key, v in values.items():
        if isinstance(v, bool):
            out[key] = DeviceAttribute(bool_value=v)
        elif isinstance(v, int):
            out[key] = DeviceAttribute(int_value=v)
        elif isinstance(v, str) and v.startswith("v") and v[1:2].isdigit() and v.count(".") == 2:
            out[key] = DeviceAttribute(version_value=v[1:])
        else:
            out[key] = DeviceAttribute(string_value=v)
    return out


def dev(
    name: str,
    *,
    memory: str | None = None,
    caps: dict[str, str] | None = None,
    attributes: dict[str, DeviceAttribute] | None = None,
    taints: Sequence[DeviceTaint] = (),
    counters: Sequence[tuple[str, dict[str, str]]] = (),
    capacity_from_counters: bool = False,
    on: str | NodeSelector | None = None,
    binding: tuple[list[str], list[str]] | None = None,
    binds_to_node: bool | None = None,
    multi: bool = False,
    policy_range: str | None = None,
    policy_values: tuple[str, str, list[str]] | None = None,
) -> Device:
    """device(): `memory` is the capacity "memory"; `caps` others; `policy_range` adds
    capacity-0 of that value with upstream's test policy (default 2, min 2, step 2,
    max 4); `policy_values` = (default, value, extra valid values)."""
    capacities = {k: DeviceCapacity(value=v) for k, v in (caps or {}).items()}
    if memory is not None:
        capacities["memory"] = DeviceCapacity(value=memory)
    consumes = [
        DeviceCounterConsumption(
            counter_set=cs, counters={k: Counter(value=v) for k, v in c.items()}
        )
        for cs, c in counters
    ]
    if capacity_from_counters:
        for _, c in counters:
            for k, v in c.items():
                capacities[k] = DeviceCapacity(value=v)
    if policy_range is not None:
        capacities["capacity-0"] = DeviceCapacity(
            value=policy_range,
            request_policy=CapacityRequestPolicy(
                default="2", valid_range=CapacityRequestPolicyRange(min="2", step="2", max="4")
            ),
        )
    if policy_values is not None:
        default, value, extra = policy_values
        capacities["capacity-0"] = DeviceCapacity(
            value=value,
            request_policy=CapacityRequestPolicy(default=default, valid_values=[default, *extra]),
        )
    d = Device(
        name=name,
        attributes=attributes or {},
        capacity=capacities,
        consumes_counters=consumes,
        taints=list(taints),
        binds_to_node=binds_to_node,
        allow_multiple_allocations=True if multi else None,
    )
    if binding is not None:
        d.binding_conditions, d.binding_failure_conditions = binding
    if isinstance(on, NodeSelector):
        d.node_selector = on
    elif on == ALL_NODES:
        d.all_nodes = True
    elif on is not None:
        d.node_name = on
    return d


def label_selector(key: str, *values: str) -> NodeSelector:
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_expressions=[
                    NodeSelectorRequirement(key=key, operator="In", values=list(values))
                ]
            )
        ]
    )


def field_selector(node_name: str) -> NodeSelector:
    return NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_fields=[
                    NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])
                ]
            )
        ]
    )


def rslice(
    name: str,
    on: str | NodeSelector,
    pool: str,
    driver: str,
    *devices: Device,
    count: int = 1,
    generation: int = 1,
    counter_sets: Sequence[tuple[str, dict[str, str]]] = (),
) -> ResourceSlice:
    """slice(): `on` is a node name, ALL_NODES, PER_DEVICE or a node selector."""
    spec = ResourceSliceSpec(
        driver=driver,
        pool=ResourcePool(name=pool, generation=generation, resource_slice_count=count),
        devices=list(devices),
        shared_counters=[
            CounterSet(name=n, counters={k: Counter(value=v) for k, v in c.items()})
            for n, c in counter_sets
        ],
    )
    if isinstance(on, NodeSelector):
        spec.node_selector = on
    elif on == ALL_NODES:
        spec.all_nodes = True
    elif on == PER_DEVICE:
        spec.per_device_node_selection = True
    else:
        spec.node_name = on
    return ResourceSlice(metadata=ObjectMeta(name=name), spec=spec)


def numbered(n: int, start: int = 0) -> list[Device]:
    return [dev(f"device-{i}") for i in range(start, start + n)]


# --- expected results ----------------------------------------------------------------


def res(
    request: str,
    device: str,
    *,
    admin: bool = False,
    tolerations: Sequence[DeviceToleration] = (),
    consumed: dict[str, str] | None = None,
    shared: bool = False,
    binding: tuple[list[str], list[str]] | None = None,
) -> tuple[Any, ...]:
    """One DeviceRequestAllocationResult; `device` is "driver/pool/device"."""
    return (
        request,
        device,
        admin,
        tuple(_toleration_key(t) for t in tolerations),
        tuple(sorted((k, parse_quantity(v)) for k, v in (consumed or {}).items())),
        shared,
        tuple(map(tuple, binding)) if binding else ((), ()),
    )


def _toleration_key(t: DeviceToleration) -> tuple[str, str, str, str]:
    return (t.key, t.operator, t.value, t.effect)


Selector = frozenset[Any] | None


def local(node_name: str = NODE_1) -> Selector:
    return selector(fields=[("metadata.name", node_name)])


def selector(
    fields: Sequence[tuple[str, str]] = (), expressions: Sequence[tuple[str, str]] = ()
) -> Selector:
    """A one-term selector of "In" requirements, compared without order."""
    return frozenset(
        [("f", k, "In", frozenset([v])) for k, v in fields]
        + [("e", k, "In", frozenset([v])) for k, v in expressions]
    )


def alloc(sel: Selector, *results: tuple[Any, ...]) -> tuple[Selector, list[tuple[Any, ...]]]:
    return (sel, sorted(results))


def _normalise_selector(ns: NodeSelector | None) -> Selector:
    if ns is None:
        return None
    assert len(ns.node_selector_terms) == 1
    term = ns.node_selector_terms[0]
    return frozenset(
        [("f", r.key, r.operator, frozenset(r.values)) for r in term.match_fields]
        + [("e", r.key, r.operator, frozenset(r.values)) for r in term.match_expressions]
    )


def normalise(result: AllocationResult) -> tuple[Selector, list[tuple[Any, ...]]]:
    items = []
    for r in result.devices.results:
        items.append(
            (
                r.request,
                f"{r.driver}/{r.pool}/{r.device}",
                bool(r.admin_access),
                tuple(_toleration_key(t) for t in r.tolerations),
                tuple(sorted((k, parse_quantity(v)) for k, v in r.consumed_capacity.items())),
                r.share_id is not None,
                (tuple(r.binding_conditions), tuple(r.binding_failure_conditions)),
            )
        )
    return (_normalise_selector(result.node_selector), sorted(items))


def _sort_key(entry: tuple[Selector, list[tuple[Any, ...]]]) -> str:
    return repr((sorted(map(repr, entry[0] or ())), entry[1]))


def run_case(case: dict[str, Any]) -> list[AllocationResult] | None:
    """RunTestAllocator: allocate on the case's node and check results or error."""
    counter = itertools.count()
    state = AllocatedState(
        devices={tuple(d.split("/")) for d in case.get("allocated", ())},
        consumed_capacity={
            tuple(d.split("/")): {k: int(parse_quantity(v) * 1000) for k, v in amounts.items()}
            for d, amounts in case.get("consumed", {}).items()
        },
    )
    classes = case.get("classes", [device_class()])
    features = replace(Features(), **case.get("features", {}))
    allocator = Allocator(
        case.get("claims", []),
        state,
        {c.metadata.name: c for c in classes},
        case.get("slices", []),
        features,
        share_ids=lambda: f"share-{next(counter)}",
    )
    target = case.get("node") or node()
    if "error" in case:
        with pytest.raises(AllocationError) as info:
            allocator.allocate(target)
        assert case["error"] in str(info.value), str(info.value)
        return None
    results = allocator.allocate(target)
    expect = case.get("expect") or []
    got = [normalise(r) for r in results or []]
    assert sorted(got, key=_sort_key) == sorted(expect, key=_sort_key)
    return results
