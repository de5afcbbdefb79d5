"""DynamicResources at each extension point, with upstream's texts, on a fake
allocator (the structured allocator is written apart)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from kubesched.api.objects import ObjectMeta, Pod
from kubesched.api.resource import (
    DELETE_PROTECTION_FINALIZER,
    AllocationResult,
    CELDeviceSelector,
    DeviceClass,
    DeviceClassSpec,
    DeviceRequest,
    DeviceSelector,
    ResourceClaim,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.state.dra import ClaimConflict, DraState
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.plugins.dynamicresources.args import dynamic_resources_args
from kubesched.plugins.helpers.args import ArgsError
from kubesched.testing import make_node, make_pod, make_table

UID = "pod-uid"


def claim(name: str, **status: Any) -> ResourceClaim:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": status,
    }
    return msgspec.convert(body, ResourceClaim)


def pod_with(*claims: str) -> PodInfo:
    spec = {"resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims]}
    pod = make_pod("p", spec=spec)
    pod = msgspec.structs.replace(pod, metadata=msgspec.structs.replace(pod.metadata, uid=UID))
    return PodInfo(pod)


class FakeAllocator:
    def __init__(self, fits: set[str], *_: Any) -> None:
        self.fits = fits
        self.claims: list[ResourceClaim] = []

    def allocate(self, node: Any, deadline: float | None = None) -> list[AllocationResult] | None:
        if node.metadata.name not in self.fits:
            return None
        return [AllocationResult() for _ in self.claims]


def setup(*claims: ResourceClaim, fits: set[str] | None = None) -> tuple[DynamicResources, Any]:
    dra = DraState()
    dra.upsert_class(msgspec.convert({"metadata": {"name": "gpu"}}, DeviceClass))
    for c in claims:
        dra.upsert_claim(c)
    table = make_table([make_node("n1"), make_node("n2")])
    handle = Handle(table, listers=Listers(dra=dra))
    chosen = {"n1", "n2"} if fits is None else fits
    plugin = DynamicResources(
        None,
        handle,
        allocator_factory=lambda claims, *rest: FakeAllocator(chosen),  # type: ignore[arg-type]
    )
    return plugin, table


def test_pre_enqueue_texts() -> None:
    plugin, _ = setup()
    status = plugin.pre_enqueue(pod_with("x"))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'could not find ResourceClaim "default/x"'
    deleted = msgspec.convert(
        {
            "metadata": {
                "name": "x",
                "namespace": "default",
                "deletionTimestamp": "2026-01-01T00:00:00Z",
            }
        },
        ResourceClaim,
    )
    plugin, _ = setup(deleted)
    assert plugin.pre_enqueue(pod_with("x")).message() == 'resourceclaim "x" is being deleted'


def test_pre_filter_skips_without_claims_but_writes_state() -> None:
    plugin, table = setup()
    state = CycleState()
    _, status = plugin.pre_filter(state, pod_with(), table)
    assert status.is_skip()
    _, status = plugin.post_filter(state, pod_with(), Diagnosis.empty())
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, "no new claims to deallocate")


def test_post_filter_without_state_is_not_found() -> None:
    plugin, _ = setup()
    _, status = plugin.post_filter(CycleState(), pod_with(), Diagnosis.empty())
    assert (status.code, status.message()) == (Code.ERROR, "not found")


def test_pre_filter_rejections() -> None:
    full = [{"resource": "pods", "name": f"o{i}", "uid": f"u{i}"} for i in range(256)]
    plugin, table = setup(claim("c", allocation={}, reservedFor=full))
    _, status = plugin.pre_filter(CycleState(), pod_with("c"), table)
    assert status.message() == "resourceclaim in use"
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    missing = msgspec.structs.replace(claim("d"))
    missing.spec.devices.requests[0].exactly.device_class_name = "nope"  # type: ignore[union-attr]
    plugin, table = setup(missing)
    _, status = plugin.pre_filter(CycleState(), pod_with("d"), table)
    assert status.message() == "request req: device class nope does not exist"
    plugin, table = setup(claim("e"))
    plugin.dra.signal_claim_pending_allocation(claim("e", allocation={}))
    _, status = plugin.pre_filter(CycleState(), pod_with("e"), table)
    assert status.message() == "resource claim default/e is in the process of being allocated"


def test_filter_allocates_per_node() -> None:
    plugin, table = setup(claim("c"), fits={"n1"})
    state = CycleState()
    pod = pod_with("c")
    _, status = plugin.pre_filter(state, pod, table)
    assert status.is_success()
    assert plugin.filter_node(state, pod, NodeInfo(table, table.row_of("n1"))).is_success()
    status = plugin.filter_node(state, pod, NodeInfo(table, table.row_of("n2")))
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cannot allocate all claims",
    )
    _, status = plugin.post_filter(state, pod, Diagnosis.empty())
    assert status.message() == "still not schedulable"


def test_filter_allocated_claim_node_selector() -> None:
    selector = {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
        ]
    }
    plugin, table = setup(claim("c", allocation={"nodeSelector": selector}))
    state = CycleState()
    pod = pod_with("c")
    plugin.pre_filter(state, pod, table)
    assert plugin.filter_node(state, pod, NodeInfo(table, table.row_of("n1"))).is_success()
    status = plugin.filter_node(state, pod, NodeInfo(table, table.row_of("n2")))
    assert status.message() == "resourceclaim not available on the node"


class Writer:
    def __init__(self, dra: DraState, conflicts: int = 0) -> None:
        self.dra = dra
        self.conflicts = conflicts
        self.calls: list[str] = []

    async def get_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        self.calls.append("get")
        return self.dra.claims.get(f"{namespace}/{name}")

    async def update_claim(self, claim: ResourceClaim) -> ResourceClaim:
        self.calls.append("update")
        if self.conflicts:
            self.conflicts -= 1
            raise ClaimConflict()
        return claim

    async def update_claim_status(self, claim: ResourceClaim) -> ResourceClaim:
        self.calls.append("status")
        return claim

    async def create_claim(self, claim: ResourceClaim) -> ResourceClaim:
        self.calls.append("create")
        return claim

    async def delete_claim(self, namespace: str, name: str) -> None:
        self.calls.append("delete")


def test_reserve_and_pre_bind_write_allocation() -> None:
    plugin, table = setup(claim("c"))
    writer = Writer(plugin.dra, conflicts=1)
    plugin.dra.writer = writer
    state = CycleState()
    pod = pod_with("c")
    plugin.pre_filter(state, pod, table)
    plugin.filter_node(state, pod, NodeInfo(table, table.row_of("n1")))
    assert plugin.reserve(state, pod, "n1").is_success()
    assert plugin.dra.claim_has_pending_allocation("default/c")
    status = asyncio.run(plugin.pre_bind(state, pod, "n1"))
    assert status.is_success(), status.message()
    assert writer.calls == ["update", "get", "update", "status"]
    assert not plugin.dra.claim_has_pending_allocation("default/c")
    written = plugin.dra.claim("default/c")
    assert written is not None and written.status.allocation is not None
    assert DELETE_PROTECTION_FINALIZER in written.metadata.finalizers
    assert [r.uid for r in written.status.reserved_for] == [UID]


def test_pre_bind_without_writer_is_an_error() -> None:
    plugin, table = setup(claim("c"))
    state = CycleState()
    pod = pod_with("c")
    plugin.pre_filter(state, pod, table)
    plugin.filter_node(state, pod, NodeInfo(table, table.row_of("n1")))
    plugin.reserve(state, pod, "n1")
    status = asyncio.run(plugin.pre_bind(state, pod, "n1"))
    assert status.code == Code.ERROR
    plugin.unreserve(state, pod, "n1")
    assert not plugin.dra.claim_has_pending_allocation("default/c")


def test_args() -> None:
    args = dynamic_resources_args({"filterTimeout": "1m30s", "bindingTimeout": "20s"})
    assert (args.filter_timeout, args.binding_timeout) == (90.0, 20.0)
    assert dynamic_resources_args(None).filter_timeout == 10.0
    with pytest.raises(ArgsError) as err:
        dynamic_resources_args({"filterTimeout": "-1s", "bindingTimeout": "500ms"})
    assert err.value.errors == (
        "filterTimeout: Invalid value: -1s: must be zero or positive",
        "bindingTimeout: Invalid value: 500ms: must be at least 1 second",
    )


def test_unused_pod_type() -> None:
    assert isinstance(pod_with().pod, Pod)


def test_selectors_are_compiled_as_classes_and_claims_arrive() -> None:
    """Not in the first scheduling cycle that needs them: the first compile loads the
    CEL library (about 0.5 s; seed47-078 bound a retry 0.5 s after kube-scheduler)."""
    from kubesched.plugins.dynamicresources.plugin import _SharedCachesAllocator

    dra = DraState()
    plugin = DynamicResources(None, Handle(make_table([make_node("n")]), listers=Listers(dra=dra)))
    factory = plugin.allocator_factory
    assert isinstance(factory, _SharedCachesAllocator)
    expression = 'device.driver == "gpu.example.com"'
    selector = DeviceSelector(cel=CELDeviceSelector(expression=expression))
    dra.upsert_class(
        DeviceClass(metadata=ObjectMeta(name="gpu"), spec=DeviceClassSpec(selectors=[selector]))
    )
    assert expression in factory.cel_cache._compiled
    held = claim("c")
    held.spec.devices.requests = msgspec.convert(
        [
            {
                "name": "r",
                "exactly": {
                    "deviceClassName": "gpu",
                    "selectors": [{"cel": {"expression": "device.attributes['x'].y == 1"}}],
                },
            }
        ],
        list[DeviceRequest],
    )
    dra.upsert_claim(held)
    assert "device.attributes['x'].y == 1" in factory.cel_cache._compiled
