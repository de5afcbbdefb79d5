"""A pod or node deleted and created again under the same name while the watch was
down comes back in a relist as an "update" with another UID: the scheduler must
take it as the old object's delete and the new one's add (upstream's cache and
queue key objects by UID)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.framework.clock import SimClock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.profile import PluginRef, PluginSet, ProfileConfig
from kubesched.framework.status import Status
from kubesched.kube.client import ListMeta, ObjectList
from kubesched.kube.informer import Handlers, Informer
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod


class _ListOnly:
    """A client whose list answers with the objects it is given (in JSON)."""

    accept = "application/json"

    def __init__(self) -> None:
        self.objects: list[object] = []
        self.version = 0

    async def list(self, path: str, params: Mapping[str, str] | None = None) -> ObjectList:
        self.version += 1
        items = [msgspec.Raw(msgspec.json.encode(o)) for o in self.objects]
        return ObjectList(ListMeta(resource_version=str(self.version)), items)


def _scheduler(cluster: InMemoryCluster, clock: SimClock) -> Scheduler:
    refs = [PluginRef(n) for n in ("PrioritySort", "DefaultBinder", "NodeResourcesFit")]
    profile = ProfileConfig("default-scheduler", {"multiPoint": PluginSet(refs)})
    return Scheduler([profile], cluster, clock=clock, seed=1)


def _with(obj: Pod, *, uid: str, rv: str) -> Pod:
    meta = msgspec.structs.replace(obj.metadata, uid=uid, resource_version=rv)
    return msgspec.structs.replace(obj, metadata=meta)


def _node_with(obj: Node, *, uid: str, rv: str) -> Node:
    meta = msgspec.structs.replace(obj.metadata, uid=uid, resource_version=rv)
    return msgspec.structs.replace(obj, metadata=meta)


def _requested_cpu(sched: Scheduler, node: str) -> int:
    row = sched.table.row_of(node)
    assert row is not None
    return int(sched.table.requested[row, sched.table.resource_index["cpu"]])


def _setup() -> tuple[Scheduler, InMemoryCluster, SimClock, _ListOnly, Informer[Pod]]:
    clock = SimClock()
    cluster = InMemoryCluster(nodes={"n": _node_with(make_node("n", cpu="2"), uid="n-1", rv="1")})
    sched = _scheduler(cluster, clock)
    cluster.watch(sched)
    client = _ListOnly()
    informer: Informer[Pod] = Informer(
        client,  # type: ignore[arg-type]
        "/api/v1/pods",
        Pod,
        Handlers(sched.on_pod_add, sched.on_pod_update, sched.on_pod_delete),
    )
    return sched, cluster, clock, client, informer


def test_a_pod_recreated_under_its_name_at_relist_frees_the_old_pods_cpu() -> None:
    async def scenario() -> tuple[int, int, str]:
        sched, cluster, clock, client, informer = _setup()
        old = _with(make_pod("p", cpu="1500m", node_name="n"), uid="uid-old", rv="10")
        client.objects = [old]
        await informer._relist()
        before = _requested_cpu(sched, "n")
        # Deleted and created again (pending, same name) while the watch was down.
        new = _with(make_pod("p", cpu="1500m"), uid="uid-new", rv="20")
        cluster.pods[new.key] = new  # the in-memory cluster binds what it knows
        client.objects = [new]
        await informer._relist()
        after = _requested_cpu(sched, "n")
        await run_until_quiet(sched, clock)
        return before, after, cluster.pods[new.key].spec.node_name

    before, after, bound_to = asyncio.run(scenario())
    assert before == 1500
    assert after == 0
    assert bound_to == "n"


def test_an_assigned_pod_replaced_by_another_assigned_pod_counts_once() -> None:
    async def scenario() -> int:
        sched, cluster, _clock, client, informer = _setup()
        client.objects = [_with(make_pod("p", cpu="1", node_name="n"), uid="a", rv="10")]
        await informer._relist()
        cluster.add_node(_node_with(make_node("m", cpu="2"), uid="node-m", rv="2"))
        client.objects = [_with(make_pod("p", cpu="500m", node_name="m"), uid="b", rv="20")]
        await informer._relist()
        return _requested_cpu(sched, "n") * 10_000 + _requested_cpu(sched, "m")

    assert asyncio.run(scenario()) == 0 * 10_000 + 500


def test_a_pod_gone_at_relist_is_deleted() -> None:
    async def scenario() -> int:
        sched, _cluster, _clock, client, informer = _setup()
        client.objects = [_with(make_pod("p", cpu="1", node_name="n"), uid="a", rv="10")]
        await informer._relist()
        client.objects = []
        await informer._relist()
        return _requested_cpu(sched, "n")

    assert asyncio.run(scenario()) == 0


def test_a_node_recreated_under_its_name_is_a_delete_and_an_add() -> None:
    sched = _scheduler(InMemoryCluster(), SimClock())
    first = _node_with(make_node("n", cpu="2", labels={"old": "yes"}), uid="n-1", rv="1")
    sched.on_node_add(first)
    deleted: list[str] = []
    original = sched.events.on_node_delete

    def spy(node: Node) -> None:
        deleted.append(node.metadata.uid)
        original(node)

    sched.events.on_node_delete = spy  # type: ignore[method-assign]
    second = _node_with(make_node("n", cpu="4"), uid="n-2", rv="5")
    sched.on_node_update(first, second)
    row = sched.table.row_of("n")
    assert deleted == ["n-1"]
    assert row is not None
    assert int(sched.table.allocatable[row, sched.table.resource_index["cpu"]]) == 4000


def test_a_late_binding_failure_of_the_old_pod_leaves_the_new_pod_of_its_name() -> None:
    async def scenario() -> tuple[bool, int]:
        sched, _cluster, _clock, _client, _informer = _setup()
        fw = sched.frameworks["default-scheduler"]
        old = _with(make_pod("p", cpu="1"), uid="old", rv="1")
        new = _with(make_pod("p", cpu="2"), uid="new", rv="2")
        sched.on_pod_add(old)
        qpi = sched.queue.pop_nowait()
        assert qpi is not None
        sched.cache.assume_pod(qpi.pod_info, "n")  # the old pod in its binding cycle
        sched.on_pod_update(old, new)  # deleted and created again meanwhile
        again = sched.queue.pop_nowait()
        assert again is not None and again.pod.metadata.uid == "new"
        sched.cache.assume_pod(again.pod_info, "n")  # the new one scheduled already
        # The old pod's binding fails late: only its own assumption may go.
        sched.handle_binding_cycle_error(fw, CycleState(), qpi, "n", Status.as_error("gone"))
        row = sched.table.row_of("n")
        assert row is not None
        cpu = int(sched.table.requested[row, sched.table.resource_index["cpu"]])
        return sched.cache.is_assumed("default/p"), cpu

    assumed, cpu = asyncio.run(scenario())
    assert assumed
    assert cpu == 2000
