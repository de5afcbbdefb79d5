"""VolumeBinding: the set-up its tests share (a three-node table in two zones, storage
objects, the in-memory cluster's volume writer, Filter run over every node), and
PreFilter, the args, Score off and the queueing hints.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from kubesched.api.objects import (
    CSIDriver,
    CSIStorageCapacity,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.state.storage import StorageState
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.simulation.volume_writer import InMemoryVolumeWriter
from kubesched.testing import (
    claim_volume,
    make_csi_node,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    make_table,
)

NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])

ZONES = {"n1": "a", "n2": "b", "n3": "b"}


def table() -> NodeTable:
    return make_table(
        make_node(
            name,
            labels={"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        )
        for name, zone in ZONES.items()
    )


def setup(
    *objects: PersistentVolume | PersistentVolumeClaim | StorageClass | Any,
) -> tuple[VolumeBinding, NodeTable, StorageState]:
    nodes = table()
    handle = Handle(nodes)
    storage = handle.storage
    for obj in objects:
        if isinstance(obj, PersistentVolume):
            storage.upsert_pv(obj)
        elif isinstance(obj, PersistentVolumeClaim):
            storage.upsert_pvc(obj)
        elif isinstance(obj, StorageClass):
            storage.upsert_storage_class(obj)
        elif isinstance(obj, CSIDriver):
            storage.upsert_csi_driver(obj)
        elif isinstance(obj, CSIStorageCapacity):
            storage.upsert_capacity(obj)
        else:
            storage.upsert_csi_node(obj)
    # PreBind writes as in `simulate`: the in-memory cluster's writer, which plays the
    # PV controller and the provisioner too.
    storage.writer = InMemoryVolumeWriter(storage, {n: nodes.node(nodes.index[n]) for n in ZONES})
    return VolumeBinding(None, handle), nodes, storage


def pod(*claims: str, volumes: list[dict[str, Any]] | None = None) -> PodInfo:
    spec = {"volumes": [claim_volume(c) for c in claims] + (volumes or [])}
    return PodInfo(make_pod("p", spec=spec))


def run(
    plugin: VolumeBinding, nodes: NodeTable, p: PodInfo, state: CycleState | None = None
) -> dict[str, tuple[int, list[str]]]:
    state = state or CycleState()
    _, status = plugin.pre_filter(state, p, nodes)
    assert status.code == Code.SUCCESS, status
    rows = nodes.order()
    verdicts = plugin.filter(state, p, nodes, rows)
    return {
        nodes.names[row]: (int(verdicts.codes[i]), [r for r, m in verdicts.reasons if m[i]])
        for i, row in enumerate(rows)
    }


def fails(reasons: list[str]) -> tuple[int, list[str]]:
    return (UNRESOLVABLE, reasons)


WFFC = make_storage_class("local", provisioner="kubernetes.io/no-provisioner")


def capacity(name: str, zone: str, size: str, max_size: str | None = None) -> CSIStorageCapacity:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": "zonal",
        "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": zone}},
        "capacity": size,
    }
    if max_size is not None:
        raw["maximumVolumeSize"] = max_size
    return msgspec.convert(raw, CSIStorageCapacity)


# --- PreFilter ---------------------------------------------------------------------------


def test_pods_without_claims_are_skipped() -> None:
    plugin, nodes, _ = setup()
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(make_pod("p")), nodes)
    assert status.code == Code.SKIP
    empty_dir = pod(volumes=[{"name": "scratch", "emptyDir": {}}])
    _, status = plugin.pre_filter(state, empty_dir, nodes)
    assert status.code == Code.SKIP
    assert plugin.reserve(state, empty_dir, "n1").is_success()
    assert asyncio.run(plugin.pre_bind(state, empty_dir, "n1")).is_success()


def test_missing_claim() -> None:
    plugin, nodes, _ = setup()
    _, status = plugin.pre_filter(CycleState(), pod("data"), nodes)
    assert (status.code, status.reasons) == (
        UNRESOLVABLE,
        ['persistentvolumeclaim "data" not found'],
    )


def test_pre_bound_claim_counts_as_immediate() -> None:
    # volumeName set but the PV controller has not completed the binding.
    plugin, nodes, _ = setup(WFFC, make_pvc("data", storage_class="local", volume_name="pv1"))
    _, status = plugin.pre_filter(CycleState(), pod("data"), nodes)
    assert (status.code, status.reasons) == (
        UNRESOLVABLE,
        ["pod has unbound immediate PersistentVolumeClaims"],
    )


def test_claim_problems() -> None:
    lost = make_pvc("lost", volume_name="pv-x")
    lost.status.phase = "Lost"
    deleting = make_pvc("deleting", storage_class="local")
    deleting.metadata.deletion_timestamp = "2024-01-01T00:00:00Z"
    plugin, nodes, _ = setup(lost, deleting, WFFC)
    _, status = plugin.pre_filter(CycleState(), pod("lost"), nodes)
    assert status.reasons == [
        'persistentvolumeclaim "lost" bound to non-existent persistentvolume "pv-x"'
    ]
    _, status = plugin.pre_filter(CycleState(), pod("deleting"), nodes)
    assert status.reasons == ['persistentvolumeclaim "deleting" is being deleted']
    ephemeral = pod(volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])
    _, status = plugin.pre_filter(CycleState(), ephemeral, nodes)
    assert status.reasons == [
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"'
    ]


def test_ephemeral_claim_must_be_owned_by_the_pod() -> None:
    plugin, nodes, storage = setup(WFFC, make_pv("pv1", storage_class="local"))
    claim = make_pvc("p-scratch", storage_class="local")
    storage.upsert_pvc(claim)
    ephemeral = pod(volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])
    ephemeral.pod.metadata.uid = "pod-uid"
    _, status = plugin.pre_filter(CycleState(), ephemeral, nodes)
    assert status.code == UNRESOLVABLE
    assert status.reasons == [
        "PVC default/p-scratch was not created for pod default/p (pod is not owner)"
    ]
    owner = OwnerReference(kind="Pod", name="p", uid="pod-uid", controller=True)
    claim.metadata.owner_references = [owner]
    storage.upsert_pvc(claim)
    assert run(plugin, nodes, ephemeral) == {"n1": PASS, "n2": PASS, "n3": PASS}


def test_unbound_immediate_claims() -> None:
    immediate = make_storage_class("fast", mode="Immediate")
    plugin, nodes, _ = setup(immediate, make_pvc("data", storage_class="fast"))
    _, status = plugin.pre_filter(CycleState(), pod("data"), nodes)
    assert (status.code, status.reasons) == (
        UNRESOLVABLE,
        ["pod has unbound immediate PersistentVolumeClaims"],
    )
    # No class at all, or a class that does not exist: immediate too.
    plugin, nodes, _ = setup(make_pvc("data"), make_pvc("other", storage_class="nope"))
    for claim in ("data", "other"):
        _, status = plugin.pre_filter(CycleState(), pod(claim), nodes)
        assert status.reasons == ["pod has unbound immediate PersistentVolumeClaims"]


def test_storage_class_without_binding_mode_is_an_error() -> None:
    plugin, nodes, _ = setup(
        make_storage_class("odd", mode=None), make_pvc("d", storage_class="odd")
    )
    _, status = plugin.pre_filter(CycleState(), pod("d"), nodes)
    assert status.code == Code.ERROR
    assert status.message() == 'VolumeBindingMode not set for StorageClass "odd"'


# --- args and Score ----------------------------------------------------------------------


def test_args() -> None:
    assert VolumeBinding({"bindTimeoutSeconds": 30}).bind_timeout == 30.0
    with pytest.raises(ValueError, match="bindTimeoutSeconds"):
        VolumeBinding({"bindTimeoutSeconds": -1})
    with pytest.raises(ValueError, match="StorageCapacityScoring"):
        VolumeBinding({"shape": [{"utilization": 0, "score": 0}]})


def test_score_is_off() -> None:
    plugin, nodes, _ = setup()
    assert plugin.pre_score(CycleState(), pod(), nodes, nodes.order()).code == Code.SKIP


# --- queueing hints --------------------------------------------------------------------------


def test_hints() -> None:
    plugin, _, _ = setup()
    p = pod("data", volumes=[{"name": "eph", "ephemeral": {"volumeClaimTemplate": {}}}])
    assert plugin.is_schedulable_after_pvc_change(p, None, make_pvc("data"))
    assert plugin.is_schedulable_after_pvc_change(p, None, make_pvc("p-eph"))
    assert not plugin.is_schedulable_after_pvc_change(p, None, make_pvc("other"))
    assert not plugin.is_schedulable_after_pvc_change(p, None, make_pvc("data", namespace="x"))

    sc = make_storage_class("zonal")
    assert plugin.is_schedulable_after_storage_class_change(p, None, sc)
    assert not plugin.is_schedulable_after_storage_class_change(p, sc, sc)
    wider = make_storage_class("zonal", allowed_zones=["a"])
    assert plugin.is_schedulable_after_storage_class_change(p, sc, wider)

    small, big = capacity("c", "a", "5Gi"), capacity("c", "a", "10Gi")
    assert plugin.is_schedulable_after_capacity_change(p, None, small)
    assert plugin.is_schedulable_after_capacity_change(p, small, big)
    assert not plugin.is_schedulable_after_capacity_change(p, big, small)

    before = make_csi_node("n1", {"d": 1})
    after = make_csi_node("n1", {"d": 1})
    assert plugin.is_schedulable_after_csi_node_change(p, None, after)
    assert not plugin.is_schedulable_after_csi_node_change(p, before, after)
    after.metadata.annotations = {"storage.alpha.kubernetes.io/migrated-plugins": "x"}
    assert plugin.is_schedulable_after_csi_node_change(p, before, after)

    events = {(str(e.event.resource), int(e.event.action)) for e in plugin.events_to_register()}
    assert ("Node", 1 | 8) in events  # Add | UpdateNodeLabel, no UpdateNodeTaint
