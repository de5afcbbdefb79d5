"""Objects and a runner for DynamicResources cases modelled on upstream's TestPlugin
(pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go of
v1.36.3), on the real structured allocator and the in-memory API server side of the
claims (InMemoryClaimWriter). The names (worker, some-driver, my-pod, my-resource,
req-1, instance-1) follow upstream's so that a case can be set beside its namesake;
the code is our own.

`run_cycle` walks the extension points as upstream's harness does: PreEnqueue,
PreFilter, Filter on every node (an Error stops), Score and NormalizeScore when more
than one node passes, Reserve on the best node, then PreBind, or PostFilter when no
node passes. Writes the plugin spawns (PostFilter's deallocation, Unreserve's patch)
are run at once so that the stored claims can be checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceSlice
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.state.dra import DraState
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.dynamicresources import DynamicResources
from kubesched.simulation.claim_writer import InMemoryClaimWriter
from kubesched.testing import make_node, make_pod, make_table

NODE, NODE_2, NODE_3 = "worker", "worker-2", "worker-3"
DRIVER = "some-driver"
POD_NAME, POD_UID = "my-pod", "1234"
RESOURCE, RESOURCE_2 = "my-resource", "my-resource-2"
CLAIM = f"{POD_NAME}-{RESOURCE}"
CLAIM_2 = f"{POD_NAME}-{RESOURCE_2}"
CLASS = "my-resource-class"
NS = "default"
# A device attribute only the other nodes' devices have.
ATTR = "healthy"
BROKEN_SELECTOR = f'device.attributes["{DRIVER}"].{ATTR}'

Json = dict[str, Any]


# --- objects -----------------------------------------------------------------------------


def node(name: str = NODE) -> Node:
    return make_node(name, labels={"kubernetes.io/hostname": name})


def device(name: str, **extra: Any) -> Json:
    return {"name": name, **extra}


def resource_slice(
    node_name: str = NODE, *devices: str | Json, driver: str = DRIVER, **spec: Any
) -> ResourceSlice:
    """st.MakeResourceSlice(node, driver): named "<node>-<driver>", pool "<node>"."""
    devs = [d if isinstance(d, dict) else device(d) for d in devices or ("instance-1",)]
    body = {
        "metadata": {"name": f"{node_name}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": devs,
            **spec,
        },
    }
    return msgspec.convert(body, ResourceSlice)


def device_class(name: str = CLASS, *selectors: str) -> DeviceClass:
    body = {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": s}} for s in selectors]},
    }
    return msgspec.convert(body, DeviceClass)


def exactly(name: str = "req-1", class_name: str = CLASS, **extra: Any) -> Json:
    return {"name": name, "exactly": {"deviceClassName": class_name, **extra}}


def first_available(name: str, *subs: tuple[str, int] | Json) -> Json:
    """A prioritized list; a (name, count) pair is a subrequest of CLASS."""
    items = [
        s if isinstance(s, dict) else {"name": s[0], "deviceClassName": CLASS, "count": s[1]}
        for s in subs
    ]
    return {"name": name, "firstAvailable": items}


def owner(pod_name: str = POD_NAME, uid: str = POD_UID) -> Json:
    return {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": uid, "controller": True}


def claim(
    name: str = CLAIM,
    *requests: Json,
    owned: bool = True,
    allocation: Json | None = None,
    reserved_for: Sequence[Json] = (),
    finalizers: Sequence[str] = (),
    devices: Sequence[Json] = (),
    **meta: Any,
) -> ResourceClaim:
    """st.MakeResourceClaim().Request(class): one request req-1 unless given; `owned`
    adds the pod as controller (the claim came from its template)."""
    metadata: Json = {"name": name, "namespace": NS, "uid": f"uid-{name}", **meta}
    if owned:
        metadata["ownerReferences"] = [owner()]
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    status: Json = {}
    if allocation is not None:
        status["allocation"] = allocation
    if reserved_for:
        status["reservedFor"] = list(reserved_for)
    if devices:
        status["devices"] = list(devices)
    body = {
        "metadata": metadata,
        "spec": {"devices": {"requests": list(requests or (exactly(),))}},
        "status": status,
    }
    return msgspec.convert(body, ResourceClaim)


def on_node(name: str = NODE) -> Json:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        ]
    }


def allocation(*results: Json, node_name: str | None = NODE, timestamp: str | None = None) -> Json:
    """allocationResult upstream: instance-1 of the node's pool for req-1."""
    body: Json = {
        "devices": {"results": list(results or (result(),))},
    }
    if node_name is not None:
        body["nodeSelector"] = on_node(node_name)
    if timestamp is not None:
        body["allocationTimestamp"] = timestamp
    return body


def result(
    device_name: str = "instance-1", request: str = "req-1", pool: str = NODE, **extra: Any
) -> Json:
    return {"driver": DRIVER, "pool": pool, "device": device_name, "request": request, **extra}


def consumer(pod_name: str = POD_NAME, uid: str = POD_UID) -> Json:
    return {"resource": "pods", "name": pod_name, "uid": uid}


def pod(
    *claims: Json, name: str = POD_NAME, uid: str = POD_UID, statuses: Sequence[Json] = ()
) -> Pod:
    spec = {"resourceClaims": list(claims)}
    made = make_pod(name, spec=spec)
    made = msgspec.structs.replace(made, metadata=msgspec.structs.replace(made.metadata, uid=uid))
    if statuses:
        status = msgspec.convert({"resourceClaimStatuses": list(statuses)}, type(made.status))
        made = msgspec.structs.replace(made, status=status)
    return made


def by_name(resource: str = RESOURCE, claim_name: str = CLAIM) -> Json:
    return {"name": resource, "resourceClaimName": claim_name}


def by_template(resource: str = RESOURCE, template: str = CLAIM) -> Json:
    return {"name": resource, "resourceClaimTemplateName": template}


def pod_with_claim_name() -> Pod:
    return pod(by_name())


def pod_with_template_in_status() -> Pod:
    return pod(by_template(), statuses=[{"name": RESOURCE, "resourceClaimName": CLAIM}])


# --- running the plugin --------------------------------------------------------------------


def verdict(status: Status | None) -> tuple[str, str]:
    """(code, message): the code by its upstream name, "" for a success."""
    if status is None or status.is_success():
        return ("Success", "")
    names = {
        Code.ERROR: "Error",
        Code.UNSCHEDULABLE: "Unschedulable",
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
        Code.SKIP: "Skip",
        Code.WAIT: "Wait",
        Code.PENDING: "Pending",
    }
    return (names[status.code], status.message())


class Env:
    """One scheduling attempt's world: the DRA objects, the nodes, the plugin."""

    def __init__(
        self,
        *,
        claims: Iterable[ResourceClaim] = (),
        classes: Iterable[DeviceClass] = (),
        slices: Iterable[ResourceSlice] = (),
        nodes: Sequence[str] = (NODE,),
        in_flight: Iterable[ResourceClaim] = (),
        args: Mapping[str, Any] | None = None,
    ) -> None:
        self.dra = DraState()
        for device_class in classes:
            self.dra.upsert_class(device_class)
        for s in slices:
            self.dra.upsert_slice(s)
        for c in claims:
            # A stored object has a resourceVersion: stale writes conflict.
            if not c.metadata.resource_version:
                meta = msgspec.structs.replace(c.metadata, resource_version="1")
                c = msgspec.structs.replace(c, metadata=meta)
            self.dra.upsert_claim(c)
        for c in in_flight:
            self.dra.signal_claim_pending_allocation(c)
        self.writer = InMemoryClaimWriter(self.dra)
        self.dra.writer = self.writer
        self.nodes = list(nodes)
        self.table = make_table([node(n) for n in nodes])
        self.spawned: list[Coroutine[Any, Any, None]] = []
        self.handle = Handle(self.table, listers=Listers(dra=self.dra), spawn=self.spawned.append)
        self.plugin = DynamicResources(args, self.handle)
        self.state = CycleState()

    # One extension point each, on this attempt's CycleState.

    def pre_enqueue(self, p: Pod) -> Status:
        return self.plugin.pre_enqueue(PodInfo(p))

    def pre_filter(self, p: Pod) -> Status:
        _, status = self.plugin.pre_filter(self.state, PodInfo(p), self.table)
        return status

    def filter(self, p: Pod, node_name: str = NODE) -> Status:
        row = self.table.row_of(node_name)
        assert row is not None
        return self.plugin.filter_node(self.state, PodInfo(p), NodeInfo(self.table, row))

    def scores(self, p: Pod, node_names: Sequence[str]) -> tuple[list[int], list[int]]:
        """Score and NormalizeScore over `node_names`: (raw, normalized)."""
        rows = np.array([self.table.row_of(n) for n in node_names], dtype=np.int64)
        raw = self.plugin.score(self.state, PodInfo(p), self.table, rows)
        normalized = raw.copy()
        self.plugin.normalize_scores(self.state, PodInfo(p), normalized)
        return [int(s) for s in raw], [int(s) for s in normalized]

    def reserve(self, p: Pod, node_name: str = NODE) -> Status:
        return self.plugin.reserve(self.state, PodInfo(p), node_name)

    def unreserve(self, p: Pod, node_name: str = NODE) -> None:
        self.plugin.unreserve(self.state, PodInfo(p), node_name)
        self.run_spawned()

    def pre_bind(self, p: Pod, node_name: str = NODE) -> Status:
        return asyncio.run(self.plugin.pre_bind(self.state, PodInfo(p), node_name))

    def post_filter(self, p: Pod) -> Status:
        from kubesched.framework.fit_error import Diagnosis

        _, status = self.plugin.post_filter(self.state, PodInfo(p), Diagnosis.empty())
        self.run_spawned()
        return status

    def run_spawned(self) -> None:
        while self.spawned:
            asyncio.run(self.spawned.pop(0))

    # What the API server and the assume cache hold.

    def stored(self, name: str = CLAIM) -> ResourceClaim:
        return self.dra.claims[f"{NS}/{name}"]

    def change(self, name: str = CLAIM, **meta: Any) -> None:
        """Another client updates the claim's metadata (a new resourceVersion)."""
        stored = self.stored(name)
        self.writer.put(
            msgspec.structs.replace(
                stored, metadata=msgspec.structs.replace(stored.metadata, **meta)
            )
        )

    def change_status(self, name: str = CLAIM, **status: Any) -> None:
        stored = self.stored(name)
        self.writer.put_status(
            msgspec.structs.replace(stored, status=msgspec.structs.replace(stored.status, **status))
        )

    def in_flight(self) -> list[str]:
        return sorted(self.dra.in_flight)


@dataclass
class Trace:
    """What each extension point said in one run_cycle."""

    pre_enqueue: tuple[str, str] = ("Success", "")
    pre_filter: tuple[str, str] | None = None
    filter: dict[str, tuple[str, str]] = field(default_factory=dict)
    scores: tuple[list[int], list[int]] | None = None
    selected: str | None = None
    reserve: tuple[str, str] | None = None
    # The in-flight claims (namespace/name) right after Reserve.
    in_flight_after_reserve: list[str] = field(default_factory=list)
    pre_bind: tuple[str, str] | None = None
    post_filter: tuple[str, str] | None = None


def run_cycle(env: Env, p: Pod, *, prebind: bool = True) -> Trace:
    trace = Trace()
    trace.pre_enqueue = verdict(env.pre_enqueue(p))
    if trace.pre_enqueue[0] != "Success":
        return trace
    status = env.pre_filter(p)
    trace.pre_filter = verdict(status)
    passed: list[str] = []
    if not status.is_rejected() and not status.is_skip():
        for name in env.nodes:
            found = verdict(env.filter(p, name))
            trace.filter[name] = found
            if found[0] == "Success":
                passed.append(name)
            if found[0] == "Error":
                return trace  # an error aborts scheduling
    elif status.is_skip():
        passed = list(env.nodes)
    if not passed:
        trace.post_filter = verdict(env.post_filter(p))
        return trace
    trace.selected = passed[0]
    if len(passed) > 1:
        trace.scores = env.scores(p, passed)
        best = max(trace.scores[1])
        trace.selected = passed[trace.scores[1].index(best)]
    trace.reserve = verdict(env.reserve(p, trace.selected))
    trace.in_flight_after_reserve = env.in_flight()
    if trace.reserve[0] != "Success":
        env.unreserve(p, trace.selected)
        return trace
    if prebind:
        trace.pre_bind = verdict(env.pre_bind(p, trace.selected))
    return trace


def without_timestamp(c: ResourceClaim) -> ResourceClaim:
    """The claim with allocationTimestamp and resourceVersion cleared, for comparisons
    (upstream's addAllocationTimestamp: the value is not checked)."""
    meta = msgspec.structs.replace(c.metadata, resource_version="")
    alloc = c.status.allocation
    if alloc is not None:
        alloc = msgspec.structs.replace(alloc, allocation_timestamp=None)
    return msgspec.structs.replace(
        c, metadata=meta, status=msgspec.structs.replace(c.status, allocation=alloc)
    )
