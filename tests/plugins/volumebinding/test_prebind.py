"""VolumeBinding's Reserve and PreBind: binding and provisioning through the in-memory
cluster's volume writer, through an API-server-like writer that PreBind polls (and
its bind timeout), a writer that settles at once, and no writer at all.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubesched.api.objects import PersistentVolume, PersistentVolumeClaim
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.state.storage import StorageState
from kubesched.framework.status import Code
from kubesched.plugins.volumebinding import VolumeBinding
from kubesched.plugins.volumebinding import plugin as vb
from kubesched.testing import make_csi_node, make_pv, make_pvc, make_storage_class
from tests.plugins.volumebinding.test_volumebinding import (
    NODE_CONFLICT,
    PASS,
    WFFC,
    fails,
    pod,
    run,
    setup,
    table,
)

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
