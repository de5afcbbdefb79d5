"""DRA-backed extended resources, piece by piece, with upstream's texts: the class
resolver (ExtendedResourceCache), createRequestsAndMappings (cases of
extendeddynamicresources_test.go), filterExtendedResources' rejections, the PreBind
that creates the claim and writes the pod's status, Unreserve and PostFilter that
delete a created claim, and NodeResourcesFit leaving such resources to DRA."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.resource import AllocationResult, DeviceClass, ResourceClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.state.dra import DraState, extended_resource_classes
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.plugins.dynamicresources.extended import requests_and_mappings
from kubesched.plugins.dynamicresources.state import read_state
from kubesched.plugins.noderesources import NodeResourcesFit
from kubesched.simulation.claim_writer import InMemoryClaimWriter
from kubesched.simulation.memory import InMemoryCluster
from kubesched.testing import make_node, make_pod, make_table

ER = "example.com/gpu"


def device_class(name: str, extended: str | None = None, created: str = "") -> DeviceClass:
    body: dict[str, Any] = {"metadata": {"name": name, "creationTimestamp": created or None}}
    if extended:
        body["spec"] = {"extendedResourceName": extended}
    return msgspec.convert(body, DeviceClass)


def pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] = ()) -> Pod:  # type: ignore[assignment]
    p = make_pod("p", spec={"containers": containers, "initContainers": list(init)})
    return msgspec.structs.replace(p, metadata=msgspec.structs.replace(p.metadata, uid="pod-uid"))


def c(name: str, requests: dict[str, str], sidecar: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "i", "resources": {"requests": requests}}
    if sidecar:
        out["restartPolicy"] = "Always"
    return out


def test_resolver_explicit_implicit_and_conflicts() -> None:
    classes = [
        device_class("b", ER, "2025-01-01T00:00:00Z"),
        device_class("a", ER, "2025-01-01T00:00:00Z"),
        device_class("old", ER, "2024-01-01T00:00:00Z"),
    ]
    mapping = extended_resource_classes(classes)
    # Added in name order: "a" first; "b" is as new with a greater name and "old" is
    # older, so both are skipped, their implicit names too (updateResourceName2class
    # returns early).
    assert mapping == {ER: "a", "deviceclass.resource.kubernetes.io/a": "a"}
    dra = DraState()
    dra.upsert_class(device_class("gpu", ER))
    assert dra.device_class_for(ER) == "gpu"
    dra.delete_class("gpu")
    assert dra.device_class_for(ER) is None


def _mappings(p: Pod, needed: dict[str, int], classes: dict[str, str]) -> list[tuple[str, ...]]:
    _, found = requests_and_mappings(p, needed, classes)
    return sorted((m.request_name, m.container_name, m.resource_name) for m in found)


def test_mappings_two_init_containers_share_the_biggest_request() -> None:
    # "three containers (two are init container), two requests"
    p = pod(
        [c("con0", {ER: "1"})],
        [c("init-con0", {ER + "init": "1"}), c("init-con1", {ER + "init": "2"})],
    )
    classes = {ER: "class", ER + "init": "classInit"}
    requests, _ = requests_and_mappings(p, {ER: 1, ER + "init": 2}, classes)
    assert [(r.name, r.exactly.count if r.exactly else 0) for r in requests] == [
        ("container-1-request-0", 2),
        ("container-2-request-0", 1),
    ]
    assert _mappings(p, {ER: 1, ER + "init": 2}, classes) == [
        ("container-1-request-0", "init-con0", ER + "init"),
        ("container-1-request-0", "init-con1", ER + "init"),
        ("container-2-request-0", "con0", ER),
    ]


def test_mappings_init_container_reuses_a_later_sidecar() -> None:
    # "four containers (two are init container, one sidecar), three requests"
    p = pod(
        [c("con0", {ER: "1"})],
        [
            c("init-con0", {ER + "init": "1"}),
            c("sidecar-con1", {ER + "init": "1"}, sidecar=True),
            c("init-con2", {ER + "init": "2"}),
        ],
    )
    classes = {ER: "class", ER + "init": "classInit"}
    assert _mappings(p, {ER: 1, ER + "init": 2}, classes) == [
        ("container-1-request-0", "init-con0", ER + "init"),
        ("container-1-request-0", "sidecar-con1", ER + "init"),
        ("container-2-request-0", "init-con2", ER + "init"),
        ("container-3-request-0", "con0", ER),
    ]


class FakeAllocator:
    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []

    def allocate(self, node: Any, deadline: float | None = None) -> list[AllocationResult]:
        return [AllocationResult() for _ in self.claims]


def setup(*nodes: Any) -> tuple[DynamicResources, Any, InMemoryCluster, InMemoryClaimWriter]:
    dra = DraState()
    dra.upsert_class(device_class("gpu", ER))
    writer = InMemoryClaimWriter(dra, now=lambda: "2025-01-01T00:00:00Z")
    dra.writer = writer
    table = make_table(nodes or [make_node("n1"), make_node("plugin", extra={ER: 4})])
    cluster = InMemoryCluster()
    handle = Handle(table, listers=Listers(dra=dra), cluster=cluster)
    handle.spawn = asyncio.run
    plugin = DynamicResources(None, handle, allocator_factory=lambda *a: FakeAllocator())  # type: ignore[arg-type]
    return plugin, table, cluster, writer


def test_filter_rejects_what_neither_plugin_nor_class_serves() -> None:
    plugin, table, _, _ = setup()
    p = PodInfo(pod([c("con0", {ER: "1", "example.com/other": "1"})]))
    state = CycleState()
    plugin.pre_filter(state, p, table)
    status = plugin.filter_node(state, p, NodeInfo(table, table.row_of("n1")))
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cannot fit resource",
    )


def test_pre_bind_creates_the_claim_and_writes_the_pod_status() -> None:
    plugin, table, cluster, _ = setup()
    p = PodInfo(pod([c("con0", {ER: "2"})]))
    cluster.pods[p.pod.key] = p.pod
    state = CycleState()
    plugin.pre_filter(state, p, table)
    # The node with a device plugin serving the resource needs no claim.
    assert plugin.filter_node(state, p, NodeInfo(table, table.row_of("plugin"))).is_success()
    assert plugin.filter_node(state, p, NodeInfo(table, table.row_of("n1"))).is_success()
    assert plugin.reserve(state, p, "n1").is_success()
    assert plugin.dra.in_flight
    status = asyncio.run(plugin.pre_bind(state, p, "n1"))
    assert status.is_success(), status.message()
    assert not plugin.dra.in_flight
    [claim] = plugin.dra.claims.values()
    assert claim.metadata.name.startswith("p-extended-resources-")
    assert claim.status.allocation is not None
    [request] = claim.spec.devices.requests
    assert request.exactly is not None and request.exactly.count == 2
    written = cluster.pods[p.pod.key].status.extended_resource_claim_status
    assert written is not None and written.resource_claim_name == claim.metadata.name
    assert [(m.container_name, m.request_name) for m in written.request_mappings] == [
        ("con0", "container-0-request-0")
    ]
    # A failed binding afterwards: Unreserve deletes the claim it created.
    plugin.unreserve(state, p, "n1")
    assert not plugin.dra.claims


def test_post_filter_deletes_a_claim_left_by_an_earlier_cycle() -> None:
    plugin, table, _, _ = setup()
    p = PodInfo(pod([c("con0", {ER: "1"})]))
    state = CycleState()
    plugin.pre_filter(state, p, table)
    plugin.filter_node(state, p, NodeInfo(table, table.row_of("n1")))
    plugin.reserve(state, p, "n1")
    asyncio.run(plugin.pre_bind(state, p, "n1"))  # no cluster pod: status write fails
    assert len(plugin.dra.claims) == 1  # created before the failure; Unreserve not run
    state = CycleState()
    plugin.pre_filter(state, p, table)
    status = plugin.filter_node(state, p, NodeInfo(table, table.row_of("n1")))
    assert status.message() == "cannot schedule extended resource claim"
    _, status = plugin.post_filter(state, p, Diagnosis.empty())
    assert (status.code, status.message()) == (
        Code.UNSCHEDULABLE,
        "deletion of ResourceClaim completed",
    )
    assert not plugin.dra.claims


def _messages(verdicts: Any) -> list[str]:
    count = len(verdicts.codes)
    return [", ".join(r for r, mask in verdicts.reasons if mask[i]) for i in range(count)]


def test_fit_leaves_dra_backed_resources_to_dra() -> None:
    dra = DraState()
    dra.upsert_class(device_class("gpu", ER))
    nodes = [make_node("none"), make_node("zero", extra={ER: 0}), make_node("two", extra={ER: 2})]
    table = make_table(nodes)
    fit = NodeResourcesFit(None, Handle(table, listers=Listers(dra=dra)))
    p = PodInfo(pod([c("con0", {ER: "3"})]))
    state = CycleState()
    fit.pre_filter(state, p, table)
    verdicts = fit.filter(
        state, p, table, np.array([table.row_of(n) for n in ("none", "zero", "two")], dtype=np.intp)
    )
    # Only the node whose device plugin advertises some is checked (and too few).
    assert _messages(verdicts) == ["", "", f"Insufficient {ER}"]
    plain = NodeResourcesFit(None, Handle(table))
    plain.pre_filter(state, p, table)
    verdicts = plain.filter(
        state, p, table, np.array([table.row_of(n) for n in ("none", "zero", "two")], dtype=np.intp)
    )
    assert _messages(verdicts) == [f"Insufficient {ER}"] * 3
    assert fit.is_schedulable_after_device_class_event(p, None, device_class("x", ER))
    assert not fit.is_schedulable_after_device_class_event(
        p, device_class("x", ER), device_class("x", ER)
    )


def test_pre_filter_skips_a_pod_without_claims_only_while_no_class_backs_its_resources() -> None:
    """PreFilter's quick way out (no claim, no DeviceClass at all) leaves the empty
    state PostFilter reads; once a class exists the same pod gets its special claim."""
    plugin, table, _, _ = setup()
    p = PodInfo(pod([c("con0", {ER: "1"})]))
    plugin.dra.classes.clear()
    state = CycleState()
    _, status = plugin.pre_filter(state, p, table)
    assert status.code == Code.SKIP
    assert read_state(state).claims.empty()
    plugin.dra.upsert_class(device_class("gpu", ER))
    state = CycleState()
    _, status = plugin.pre_filter(state, p, table)
    assert status.code == Code.SUCCESS
    assert not read_state(state).claims.empty()
    assert read_state(state).extended_requests == {ER: 1}
