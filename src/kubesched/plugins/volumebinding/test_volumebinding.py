"""VolumeBinding: PreFilter, Filter (bound, static and dynamic binding), Reserve, PreBind, hints."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import numpy as np
import pytest

from kubesched.api.objects import (
    CSIDriver,
    CSIStorageCapacity,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kubesched.api.volumes import storage_request
from kubesched.cluster.volume_writer import InMemoryVolumeWriter
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.storage import StorageState
from kubesched.framework.types import PodInfo
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.plugins.volumebinding import plugin as vb
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


# --- Filter: bound claims ----------------------------------------------------------------


def test_bound_claim_follows_pv_node_affinity() -> None:
    plugin, nodes, _ = setup(
        make_pv("pv1", hostname="n2", phase="Bound", claim=("default", "data")),
        make_pvc("data", volume_name="pv1", bound=True),
    )
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([NODE_CONFLICT]),
        "n2": PASS,
        "n3": fails([NODE_CONFLICT]),
    }


def test_pv_affinity_ignores_match_fields() -> None:
    # CheckNodeAffinity builds a node with labels only: metadata.name is never compared.
    pv = make_pv(
        "pv1",
        phase="Bound",
        spec={
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        }
                    ]
                }
            }
        },
    )
    plugin, nodes, _ = setup(pv, make_pvc("data", volume_name="pv1", bound=True))
    assert run(plugin, nodes, pod("data")) == {"n1": PASS, "n2": PASS, "n3": PASS}


def test_bound_claim_whose_pv_is_gone() -> None:
    plugin, nodes, _ = setup(
        make_pvc("data", volume_name="gone", bound=True),
        make_pv("pv2", hostname="n1", phase="Bound"),
        make_pvc("more", volume_name="pv2", bound=True),
    )
    # The first claim's PV is missing: the check stops there (pv2's affinity not checked).
    assert run(plugin, nodes, pod("data", "more")) == {
        "n1": fails([PV_NOT_EXIST]),
        "n2": fails([PV_NOT_EXIST]),
        "n3": fails([PV_NOT_EXIST]),
    }
    # In the other order pv2's affinity fails n2 and n3 first.
    assert run(plugin, nodes, pod("more", "data")) == {
        "n1": fails([PV_NOT_EXIST]),
        "n2": fails([NODE_CONFLICT]),
        "n3": fails([NODE_CONFLICT]),
    }


# --- Filter: static binding (WaitForFirstConsumer) ---------------------------------------


def test_finds_a_local_pv_per_node() -> None:
    plugin, nodes, _ = setup(
        WFFC,
        make_pv("pv-n1", storage="10Gi", storage_class="local", hostname="n1"),
        make_pv("pv-n2", storage="4Gi", storage_class="local", hostname="n2"),
        make_pvc("data", storage="5Gi", storage_class="local"),
    )
    # n2's PV is too small, n3 has none; no provisioner to fall back on.
    assert run(plugin, nodes, pod("data")) == {
        "n1": PASS,
        "n2": fails([BIND_CONFLICT]),
        "n3": fails([BIND_CONFLICT]),
    }


@pytest.mark.parametrize(
    "pv",
    [
        make_pv("pv", storage_class="local", access_modes=["ReadOnlyMany"]),
        make_pv("pv", storage_class="other"),
        make_pv("pv", storage_class="local", phase="Released"),
        make_pv("pv", storage_class="local", claim=("default", "someone-else")),
        make_pv("pv", storage_class="local", spec={"volumeMode": "Block"}),
        make_pv("pv", storage_class="local", spec={"volumeAttributesClassName": "gold"}),
        make_pv("pv", storage_class="local", labels={"tier": "cold"}),
    ],
    ids=["access-mode", "class", "phase", "claimed", "mode", "vac", "selector"],
)
def test_volumes_that_cannot_serve_the_claim(pv: PersistentVolume) -> None:
    claim = make_pvc(
        "data", storage_class="local", spec={"selector": {"matchLabels": {"tier": "hot"}}}
    )
    if pv.metadata.labels.get("tier") != "cold":
        claim.spec.selector = None
    plugin, nodes, _ = setup(WFFC, pv, claim)
    assert run(plugin, nodes, pod("data")) == {n: fails([BIND_CONFLICT]) for n in ZONES}


def test_smallest_fitting_pv_is_chosen_and_assumed() -> None:
    plugin, nodes, storage = setup(
        WFFC,
        make_pv("big", storage="20Gi", storage_class="local", hostname="n1"),
        make_pv("small", storage="6Gi", storage_class="local", hostname="n1"),
        make_pv("tiny", storage="1Gi", storage_class="local", hostname="n1"),
        make_pvc("data", storage="5Gi", storage_class="local"),
    )
    state = CycleState()
    p = pod("data")
    assert run(plugin, nodes, p, state)["n1"] == PASS
    assert plugin.reserve(state, p, "n1").is_success()
    assumed = storage.assumed_pv("small")
    assert assumed is not None and assumed.spec.claim_ref is not None
    assert (assumed.spec.claim_ref.name, assumed.spec.claim_ref.uid) == ("data", "uid-default-data")
    assert assumed.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    # The next pod's claim no longer sees "small" as free (its claimRef names "data").
    storage.upsert_pvc(make_pvc("more", storage="5Gi", storage_class="local"))
    other = PodInfo(make_pod("q", spec={"volumes": [claim_volume("more")]}))
    state2 = CycleState()
    assert run(plugin, nodes, other, state2)["n1"] == PASS
    assert plugin.reserve(state2, other, "n1").is_success()
    chosen = storage.assumed_pv("big")
    assert chosen is not None and chosen.spec.claim_ref is not None
    assert chosen.spec.claim_ref.name == "more"
    # Unreserve gives "small" back.
    plugin.unreserve(state, p, "n1")
    small = storage.assumed_pv("small")
    assert small is not None and small.spec.claim_ref is None


def test_a_pv_is_not_chosen_twice_for_one_pod() -> None:
    plugin, nodes, _ = setup(
        WFFC,
        make_pv("pv-a", storage_class="local", hostname="n1"),
        make_pv("pv-b", storage_class="local", hostname="n1"),
        make_pv("pv-c", storage_class="local", hostname="n2"),
        make_pvc("one", storage_class="local"),
        make_pvc("two", storage_class="local"),
    )
    assert run(plugin, nodes, pod("one", "two")) == {
        "n1": PASS,
        "n2": fails([BIND_CONFLICT]),  # one PV there for two claims
        "n3": fails([BIND_CONFLICT]),
    }


def test_a_pv_pre_bound_to_the_claim_wins() -> None:
    plugin, nodes, storage = setup(
        WFFC,
        make_pv("smaller", storage="5Gi", storage_class="local"),
        make_pv(
            "mine", storage="50Gi", storage_class="local", hostname="n3", claim=("default", "data")
        ),
        make_pvc("data", storage="5Gi", storage_class="local"),
    )
    state = CycleState()
    p = pod("data")
    # Where the pre-bound PV does not fit, no other PV is considered.
    assert run(plugin, nodes, p, state) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": fails([BIND_CONFLICT]),
        "n3": PASS,
    }
    assert plugin.reserve(state, p, "n3").is_success()
    mine = storage.assumed_pv("mine")
    assert mine is not None and mine.spec.claim_ref is not None
    assert mine.spec.claim_ref.uid == "uid-default-data"


# --- Filter: dynamic provisioning ----------------------------------------------------------


def test_provisioning_within_allowed_topologies() -> None:
    zonal = make_storage_class("zonal", allowed_zones=["b"])
    plugin, nodes, _ = setup(zonal, make_pvc("data", storage_class="zonal"))
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": PASS,
        "n3": PASS,
    }


def test_selected_node_pins_the_claim() -> None:
    zonal = make_storage_class("zonal")
    claim = make_pvc(
        "data",
        storage_class="zonal",
        annotations={"volume.kubernetes.io/selected-node": "n3"},
    )
    plugin, nodes, _ = setup(zonal, claim)
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": fails([BIND_CONFLICT]),
        "n3": PASS,
    }


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


def test_storage_capacity_tracking() -> None:
    driver = msgspec.convert(
        {"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}, CSIDriver
    )
    zonal = make_storage_class("zonal")
    objects = (
        zonal,
        driver,
        capacity("cap-a", "a", "100Gi", max_size="8Gi"),  # maximumVolumeSize wins
        capacity("cap-b", "b", "20Gi"),
        make_pvc("data", storage="10Gi", storage_class="zonal"),
    )
    plugin, nodes, _ = setup(*objects)
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([NOT_ENOUGH_SPACE]),
        "n2": PASS,
        "n3": PASS,
    }
    # Without storageCapacity on the driver nothing is checked.
    driver.spec.storage_capacity = False
    plugin, nodes, _ = setup(*objects)
    assert run(plugin, nodes, pod("data")) == {"n1": PASS, "n2": PASS, "n3": PASS}


def test_static_and_provisioned_claims_together() -> None:
    zonal = make_storage_class("zonal", allowed_zones=["b"])
    plugin, nodes, _ = setup(
        WFFC,
        zonal,
        make_pv("pv-n1", storage_class="local", hostname="n1"),
        make_pv("pv-n2", storage_class="local", hostname="n2"),
        make_pvc("local-data", storage_class="local"),
        make_pvc("zonal-data", storage_class="zonal"),
    )
    assert run(plugin, nodes, pod("local-data", "zonal-data")) == {
        "n1": fails([BIND_CONFLICT]),  # zone a: cannot provision
        "n2": PASS,
        "n3": fails([BIND_CONFLICT]),  # no local PV
    }


def test_bound_and_unbound_reasons_together() -> None:
    plugin, nodes, _ = setup(
        WFFC,
        make_pv("bound", hostname="n1", phase="Bound"),
        make_pvc("old", volume_name="bound", bound=True),
        make_pv("pv-n2", storage_class="local", hostname="n2"),
        make_pvc("new", storage_class="local"),
    )
    assert run(plugin, nodes, pod("old", "new")) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": fails([NODE_CONFLICT]),
        "n3": fails([NODE_CONFLICT, BIND_CONFLICT]),
    }


# --- Reserve and PreBind -------------------------------------------------------------------


def test_pre_bind_binds_static_volumes_in_memory() -> None:
    plugin, nodes, storage = setup(
        WFFC,
        make_pv("pv-n1", storage_class="local", hostname="n1"),
        make_pvc("data", storage_class="local"),
    )
    events: list[str] = []
    storage.subscribe(lambda event, old, new: events.append(event.label))
    state = CycleState()
    p = pod("data")
    run(plugin, nodes, p, state)
    nodes.add_pod(p, nodes.index["n1"])  # assumed by the scheduler
    assert plugin.reserve(state, p, "n1").is_success()
    assert asyncio.run(plugin.pre_bind(state, p, "n1")).is_success()
    pv, claim = storage.pvs["pv-n1"], storage.pvcs["default/data"]
    assert pv.spec.claim_ref is not None and pv.spec.claim_ref.name == "data"
    assert pv.status.phase == "Bound"
    assert claim.spec.volume_name == "pv-n1"
    assert claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert not storage.assumed_pvs
    assert events == [
        "PersistentVolumeUpdate",
        "PersistentVolumeUpdate",
        "PersistentVolumeClaimUpdate",
    ]
    # Now bound: the next pod using the claim goes where the PV is.
    assert run(plugin, nodes, pod("data")) == {
        "n1": PASS,
        "n2": fails([NODE_CONFLICT]),
        "n3": fails([NODE_CONFLICT]),
    }


def test_pre_bind_provisions_in_memory_with_the_drivers_topology() -> None:
    zonal = make_storage_class("zonal", provisioner="csi.example.com")
    plugin, nodes, storage = setup(
        zonal,
        make_csi_node("n2", {"csi.example.com": None}, ["topology.kubernetes.io/zone"]),
        make_pvc("data", storage="3Gi", storage_class="zonal"),
    )
    state = CycleState()
    p = pod("data")
    run(plugin, nodes, p, state)
    nodes.add_pod(p, nodes.index["n2"])  # assumed by the scheduler
    assert plugin.reserve(state, p, "n2").is_success()
    assumed = storage.assumed_pvc("default/data")
    assert assumed is not None
    assert assumed.metadata.annotations["volume.kubernetes.io/selected-node"] == "n2"
    assert asyncio.run(plugin.pre_bind(state, p, "n2")).is_success()
    claim = storage.pvcs["default/data"]
    pv = storage.pvs[claim.spec.volume_name]
    assert pv.metadata.name == "pvc-uid-default-data"
    assert pv.spec.capacity == {"storage": "3Gi"}
    assert pv.spec.csi is not None and pv.spec.csi.driver == "csi.example.com"
    # The PV lives in zone b: another pod using the claim may go to n2 or n3.
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([NODE_CONFLICT]),
        "n2": PASS,
        "n3": PASS,
    }


def test_all_bound_pods_skip_pre_bind() -> None:
    plugin, nodes, storage = setup(
        make_pv("pv1", phase="Bound"), make_pvc("data", volume_name="pv1", bound=True)
    )
    state = CycleState()
    p = pod("data")
    run(plugin, nodes, p, state)
    assert plugin.reserve(state, p, "n1").is_success()
    assert asyncio.run(plugin.pre_bind(state, p, "n1")).is_success()
    assert storage.pvs["pv1"].metadata.resource_version == "1"  # nothing written


class FakeWriter:
    """The API server and the PV controller: writes land, then the binding completes."""

    settles_on_write = False  # as the API server's: PreBind polls

    def __init__(self, storage: StorageState, complete: bool = True) -> None:
        self.storage = storage
        self.complete = complete
        self.written: list[str] = []

    async def bind_volume(self, volume: PersistentVolume) -> PersistentVolume:
        self.written.append(f"pv/{volume.metadata.name}")
        written = self.storage.write_pv(volume)
        if self.complete:
            ref = volume.spec.claim_ref
            assert ref is not None
            claim = self.storage.pvcs[f"{ref.namespace}/{ref.name}"]
            claim.metadata.annotations["pv.kubernetes.io/bind-completed"] = "yes"
            claim.spec.volume_name = volume.metadata.name
            self.storage.write_pvc(claim)
        return written

    async def select_node(
        self, claim: PersistentVolumeClaim, node_name: str
    ) -> PersistentVolumeClaim:
        self.written.append(f"pvc/{claim.key}={node_name}")
        return self.storage.write_pvc(claim)


def test_pre_bind_writes_through_the_api_and_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vb, "POLL_INTERVAL_SECONDS", 0.0)
    plugin, nodes, storage = setup(
        WFFC,
        make_pv("pv-n1", storage_class="local", hostname="n1"),
        make_pvc("data", storage_class="local"),
    )
    writer = FakeWriter(storage)
    storage.writer = writer
    state = CycleState()
    p = pod("data")
    run(plugin, nodes, p, state)
    nodes.add_pod(p, nodes.index["n1"])  # assumed by the scheduler
    assert plugin.reserve(state, p, "n1").is_success()
    assert asyncio.run(plugin.pre_bind(state, p, "n1")).is_success()
    assert writer.written == ["pv/pv-n1"]
    # A pod deleted while PreBind waits (the cache let go of it) fails the binding.
    nodes.remove_pod(p, nodes.index["n1"])
    bindings = plugin._pod_volumes_for(state.get(vb.STATE_KEY), "n1")
    assert bindings is not None
    with pytest.raises(vb.VolumeBindingError, match='pod does not exist any more: pods "p"'):
        plugin._check_bindings("n1", bindings.static_bindings, [], p.pod)


def test_pre_bind_gives_up_after_the_bind_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vb, "POLL_INTERVAL_SECONDS", 0.0)
    zonal = make_storage_class("zonal")
    nodes = table()
    handle = Handle(nodes)
    storage = handle.storage
    storage.upsert_storage_class(zonal)
    storage.upsert_pvc(make_pvc("data", storage_class="zonal"))
    storage.writer = FakeWriter(storage, complete=False)
    plugin = VolumeBinding({"bindTimeoutSeconds": 0}, handle)
    state = CycleState()
    p = pod("data")
    run(plugin, nodes, p, state)
    nodes.add_pod(p, nodes.index["n2"])
    assert plugin.reserve(state, p, "n2").is_success()
    status = asyncio.run(plugin.pre_bind(state, p, "n2"))
    assert status.code == Code.ERROR
    assert status.message() == "binding volumes: context deadline exceeded"
    # The provisioner gave up (selected-node removed): provisioning failed.
    claim = storage.pvcs["default/data"]
    claim.metadata.annotations = {"other": "x"}
    with pytest.raises(vb.VolumeBindingError, match='provisioning failed for PVC "data"'):
        plugin._check_bindings("n2", [], [claim])


class SettledFakeWriter(FakeWriter):
    """A writer whose controllers are done when it returns (as the in-memory cluster's)."""

    settles_on_write = True


def test_a_settled_writer_is_checked_once_without_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Were PreBind to poll, it would sleep an hour before its first check.
    monkeypatch.setattr(vb, "POLL_INTERVAL_SECONDS", 3600.0)
    zonal = make_storage_class("zonal")
    plugin, nodes, storage = setup(zonal, make_pvc("data", storage_class="zonal"))
    # The writes land but nobody provisions: the binding can never complete.
    writer = SettledFakeWriter(storage, complete=False)
    storage.writer = writer
    state = CycleState()
    p = pod("data")
    run(plugin, nodes, p, state)
    nodes.add_pod(p, nodes.index["n2"])
    assert plugin.reserve(state, p, "n2").is_success()

    async def pre_bind() -> Any:
        return await asyncio.wait_for(plugin.pre_bind(state, p, "n2"), timeout=10)

    status = asyncio.run(pre_bind())
    assert writer.written == ["pvc/default/data=n2"]
    # What upstream's poll ends with after bindTimeout, at once.
    assert status.code == Code.ERROR
    assert status.message() == "binding volumes: context deadline exceeded"


def test_pre_bind_needs_a_volume_writer() -> None:
    plugin, nodes, storage = setup(
        WFFC,
        make_pv("pv-n1", storage_class="local", hostname="n1"),
        make_pvc("data", storage_class="local"),
    )
    storage.writer = None
    state = CycleState()
    p = pod("data")
    run(plugin, nodes, p, state)
    assert plugin.reserve(state, p, "n1").is_success()
    status = asyncio.run(plugin.pre_bind(state, p, "n1"))
    assert status.code == Code.ERROR
    assert status.message() == "no volume writer to bind the pod's volumes through"
    assert storage.pvs["pv-n1"].spec.claim_ref is None  # nothing written


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


# --- the column-wise search against upstream's node-by-node loop ---------------------------


def _reference_find(
    claim: PersistentVolumeClaim,
    volumes: list[PersistentVolume],
    labels: dict[str, str],
    excluded: set[str],
) -> PersistentVolume | None:
    """volume.FindMatchingVolume for one node, line by line."""
    from kubesched.api.volumes import (
        access_modes_match,
        claim_class,
        is_volume_bound_to_claim,
        storage_request,
        volume_capacity,
        volume_class,
        volume_mode_mismatch,
    )
    from kubesched.plugins.helpers.volumes import pv_matches_labels

    requested = storage_request(claim)
    smallest = None
    for volume in volumes:
        if volume.metadata.name in excluded:
            continue
        if volume.spec.claim_ref is not None and not is_volume_bound_to_claim(volume, claim):
            continue
        if volume_capacity(volume) < requested or volume_mode_mismatch(claim, volume):
            continue
        fits = pv_matches_labels(volume, labels)
        if is_volume_bound_to_claim(volume, claim):
            return volume if fits else None
        if volume.status.phase != "Available" or volume_class(volume) != claim_class(claim):
            continue
        if not fits or not access_modes_match(claim, volume):
            continue
        if smallest is None or volume_capacity(smallest) > volume_capacity(volume):
            smallest = volume
    return smallest


def _random_pv(rng: Any, i: int) -> PersistentVolume:
    kind = rng.choice(["host", "zone", "none", "two-terms", "bad", "fields"])
    spec: dict[str, Any] = {}
    expr = {"key": "kubernetes.io/hostname", "operator": "In", "values": [rng.choice(list(ZONES))]}
    zone_expr = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}
    terms: list[dict[str, Any]] | None = {
        "host": [{"matchExpressions": [expr]}],
        "zone": [{"matchExpressions": [zone_expr]}],
        "none": None,
        "two-terms": [{"matchExpressions": [expr]}, {"matchExpressions": [zone_expr]}],
        "bad": [{"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["x"]}]}],
        "fields": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]}],
    }[kind]
    if terms is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    claim = ("default", f"c{rng.randrange(3)}") if rng.random() < 0.15 else None
    return make_pv(
        f"pv{i}",
        storage=f"{rng.choice([1, 5, 5, 10, 20])}Gi",
        storage_class="local",
        claim=claim,
        phase=rng.choice(["Available"] * 5 + ["Bound"]),
        access_modes=rng.choice([["ReadWriteOnce"], ["ReadWriteOnce", "ReadOnlyMany"]]),
        spec=spec,
    )


@pytest.mark.parametrize("seed", range(60))
def test_column_wise_search_matches_the_node_loop(seed: int) -> None:
    import random

    rng = random.Random(seed)
    pvs = [_random_pv(rng, i) for i in range(rng.randrange(1, 12))]
    claims = [
        make_pvc(
            f"c{j}",
            storage=f"{rng.choice([1, 4, 5, 8])}Gi",
            storage_class="local",
            access_modes=rng.choice([["ReadWriteOnce"], ["ReadOnlyMany"]]),
        )
        for j in range(rng.randrange(1, 4))
    ]
    plugin, nodes, _ = setup(WFFC, *pvs, *claims)
    state = CycleState()
    p = pod(*(c.metadata.name for c in claims))
    verdicts = run(plugin, nodes, p, state)
    data = state.get(vb.STATE_KEY)
    ordered = sorted(claims, key=storage_request)
    for name in ZONES:
        labels = nodes.node(nodes.index[name]).metadata.labels
        taken: set[str] = set()
        expected: list[str | None] = []
        for claim in ordered:
            found = _reference_find(claim, pvs, labels, taken)
            expected.append(None if found is None else found.metadata.name)
            if found is not None:
                taken.add(found.metadata.name)
        fits = all(e is not None for e in expected)
        assert (verdicts[name] == PASS) == fits, (name, expected, verdicts[name])
        if fits:
            ((evaluation, _),) = data.evaluations
            position = int(np.flatnonzero(evaluation.rows == nodes.index[name])[0])
            got = [
                pvs_[int(chosen[position])].metadata.name
                for pvs_, chosen in zip(evaluation.candidates, evaluation.matched, strict=True)
            ]
            assert got == expected
