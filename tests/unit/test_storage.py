"""Storage: StorageState (assume cache, events), the node table's claim index, the
manifests' storage objects and controllers, and volume scheduling end to end."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from kubesched.api.volumes import (
    bind_volume_to_claim,
    find_matching_volume_any_node,
    zones_of,
)
from kubesched.cluster.manifests import ClusterState, load_paths, pending_pods, running_pods
from kubesched.framework.profile import PluginRef, ProfileConfig
from kubesched.framework.state.storage import StorageState
from kubesched.framework.types import PodInfo
from kubesched.plugins.volumebinding import plugin as volumebinding_plugin
from kubesched.simulation.simulator import simulate
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

# --- StorageState --------------------------------------------------------------------------


def test_assumed_pv_hides_the_stored_one_until_a_newer_version() -> None:
    state = StorageState()
    events: list[str] = []
    state.subscribe(lambda event, old, new: events.append(event.label))
    pv = make_pv("pv1", storage_class="local")
    state.upsert_pv(pv)
    claim = make_pvc("data", storage_class="local")
    state.upsert_pvc(claim)
    bound, dirty = bind_volume_to_claim(pv, claim)
    assert dirty
    assert state.assume_pv(bound) is None
    assert state.assumed_pv("pv1") is bound
    assert state.pvs_of_class("local") == [bound]
    assert state.pv("pv1") is pv  # the lister's view
    # The informer brings a newer version: the assumption expires.
    state.write_pv(pv)
    assert state.assumed_pv("pv1") is state.pv("pv1")
    assert not state.assumed_pvs
    # Assuming an outdated version fails.
    assert state.assume_pv(bound) == '"pv1" is out of sync (stored: 2, assume: 1)'
    assert events == ["PersistentVolumeAdd", "PersistentVolumeClaimAdd", "PersistentVolumeUpdate"]


def test_restore_drops_only_the_same_version() -> None:
    state = StorageState()
    claim = make_pvc("data")
    state.upsert_pvc(claim)
    assert state.assume_pvc(claim) is None
    state.restore_pvc(make_pvc("data", namespace="other"))
    assert "default/data" in state.assumed_pvcs
    state.restore_pvc(claim)
    assert not state.assumed_pvcs


def test_pv_class_index_follows_updates() -> None:
    state = StorageState()
    state.upsert_pv(make_pv("pv1", storage_class="a"))
    state.upsert_pv(make_pv("pv1", storage_class="b"))
    assert state.pvs_of_class("a") == []
    assert [p.metadata.name for p in state.pvs_of_class("b")] == ["pv1"]
    state.delete_pv("pv1")
    assert state.pvs_of_class("b") == []


def test_helpers() -> None:
    assert zones_of("a__b") == {"a", "b"}
    assert zones_of(" a ") == {"a"}
    assert zones_of("a__") is None
    claim = make_pvc("data", storage="5Gi", storage_class="c")
    pvs = [
        make_pv("big", storage="10Gi", storage_class="c"),
        make_pv("small", storage="6Gi", storage_class="c"),
        make_pv("tiny", storage="1Gi", storage_class="c"),
    ]
    found = find_matching_volume_any_node(claim, pvs, set())
    assert found is not None and found.metadata.name == "small"
    found = find_matching_volume_any_node(claim, pvs, {"small"})
    assert found is not None and found.metadata.name == "big"


# --- the node table's claim index ----------------------------------------------------------


def test_node_table_counts_claims_and_volume_pods() -> None:
    a = make_pod("a", node_name="n1", spec={"volumes": [claim_volume("data")]})
    b = make_pod("b", node_name="n1", spec={"volumes": [claim_volume("data")]})
    c = make_pod("c", node_name="n2", spec={"volumes": [{"name": "x", "emptyDir": {}}]})
    table = make_table([make_node("n1"), make_node("n2")], [a, b, c])
    row1, row2 = table.row_of("n1"), table.row_of("n2")
    assert row1 is not None and row2 is not None
    assert table.pvc_refs == {"default/data": {row1: 2}}
    assert set(table.rows[row1].volume_pods) == {"default/a", "default/b"}  # type: ignore[union-attr]
    assert not table.rows[row2].volume_pods  # type: ignore[union-attr]
    saved = table.save_row(row1)
    table.remove_pod(PodInfo(a), row1)
    table.remove_pod(PodInfo(b), row1)
    assert table.pvc_refs == {}
    table.add_pod(PodInfo(make_pod("d", spec={"volumes": [claim_volume("other")]})), row1)
    table.restore_row(saved)
    assert table.pvc_refs == {"default/data": {row1: 2}}
    assert set(table.rows[row1].volume_pods) == {"default/a", "default/b"}  # type: ignore[union-attr]


# --- manifests -----------------------------------------------------------------------------

NODES = """
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: 110}}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {kubernetes.io/hostname: n2, topology.kubernetes.io/zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: 110}}
---
apiVersion: v1
kind: Node
metadata: {name: n3, labels: {kubernetes.io/hostname: n3, topology.kubernetes.io/zone: b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: 110}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: csi.example.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [b]}]
"""


def local_pv(name: str, node: str, size: str = "10Gi") -> str:
    return f"""
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {name}}}
spec:
  capacity: {{storage: {size}}}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{{key: kubernetes.io/hostname, operator: In, values: [{node}]}}]
"""


def load(tmp_path: Path, text: str) -> ClusterState:
    path = tmp_path / "cluster.yaml"
    path.write_text(textwrap.dedent(text))
    return load_paths([path])


STATEFUL_SET = """
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: x}]
  volumeClaimTemplates:
  - metadata: {name: data, labels: {tier: db}}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: local
      resources: {requests: {storage: 5Gi}}
"""


def test_stateful_set_claims_are_created(tmp_path: Path) -> None:
    state = load(tmp_path, NODES + STATEFUL_SET)
    assert not state.problems
    claims = state.storage.pvcs
    assert sorted(claims) == ["default/data-db-0", "default/data-db-1", "default/data-db-2"]
    claim = claims["default/data-db-1"]
    assert claim.metadata.labels == {"tier": "db", "app": "db"}
    assert claim.spec.storage_class_name == "local"
    assert claim.spec.resources.requests == {"storage": "5Gi"}
    assert "3 PersistentVolumeClaims created from StatefulSet volumeClaimTemplates" in state.notes


def test_claims_in_the_input_are_kept(tmp_path: Path) -> None:
    claim = """
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-db-0}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"""
    state = load(tmp_path, NODES + STATEFUL_SET + claim)
    kept = state.storage.pvcs["default/data-db-0"]
    assert kept.spec.resources.requests == {"storage": "1Gi"}
    # DefaultStorageClass: an unbound claim without a class gets the default one.
    assert kept.spec.storage_class_name == "standard"


def test_storage_objects_are_validated(tmp_path: Path) -> None:
    bad = """
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: broken}
provisioner: x
volumeBindingMode: Sometimes
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: big}
spec:
  resources: {requests: {storage: lots}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: y
"""
    state = load(tmp_path, NODES + bad)
    problems = [(p.kind, p.name, p.field) for p in state.problems]
    assert problems == [
        ("StorageClass", "broken", "volumeBindingMode"),
        ("PersistentVolumeClaim", "default/big", "spec.resources.requests.storage"),
        ("StorageClass", "local", "metadata.name"),
    ]
    assert state.storage.storage_classes["standard"].volume_binding_mode == "WaitForFirstConsumer"


def test_immediate_claims_are_bound_by_the_pv_controller(tmp_path: Path) -> None:
    objects = """
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: csi.example.com
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-fast}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: fast
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: static}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: dynamic}
spec:
  storageClassName: fast
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: waits}
spec:
  storageClassName: local
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
"""
    state = load(tmp_path, NODES + objects)
    storage = state.storage
    assert storage.storage_classes["fast"].volume_binding_mode == "Immediate"
    static = storage.pvcs["default/static"]
    assert static.spec.volume_name == "pv-fast"
    assert static.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert storage.pvs["pv-fast"].status.phase == "Bound"
    dynamic = storage.pvcs["default/dynamic"]
    assert dynamic.spec.volume_name.startswith("pvc-")
    assert storage.pvs[dynamic.spec.volume_name].spec.capacity == {"storage": "5Gi"}
    assert not storage.pvcs["default/waits"].spec.volume_name
    assert any("1 bound to PersistentVolumes, 1 provisioned" in n for n in state.notes)


def test_ephemeral_volume_claims_are_created(tmp_path: Path) -> None:
    pod = """
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: x}]
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources: {requests: {storage: 1Gi}}
"""
    state = load(tmp_path, NODES + pod)
    claim = state.storage.pvcs["default/p-scratch"]
    (owner,) = claim.metadata.owner_references
    assert (owner.kind, owner.name, owner.uid, owner.controller) == (
        "Pod",
        "p",
        state.pods[0].metadata.uid,
        True,
    )
    assert claim.spec.storage_class_name == "standard"


# --- end to end ----------------------------------------------------------------------------


def volume_profile() -> ProfileConfig:
    profile = ProfileConfig.default()
    for name in ("VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits"):
        profile.plugins["multiPoint"].enabled.append(PluginRef(name))
    return profile


def test_stateful_set_on_local_volumes(tmp_path: Path) -> None:
    text = NODES + local_pv("pv-n1", "n1") + local_pv("pv-n2", "n2") + STATEFUL_SET
    state = load(tmp_path, text)
    pods = [*running_pods(state), *pending_pods(state)]
    result = simulate(state.nodes, pods, [volume_profile()], seed=1, storage=state.storage)
    placed = {k: v for k, v in result.placements.items()}
    # Two local PVs for three replicas: the PV decides the node; the third waits.
    assert sorted(n for n in placed.values() if n) == ["n1", "n2"]
    (waiting,) = [k for k, v in placed.items() if v is None]
    assert result.reasons[waiting] == (
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    # The input's storage is untouched; the simulation bound its own copy.
    assert all(not c.spec.volume_name for c in state.storage.pvcs.values())


def test_provisioning_follows_allowed_topologies(tmp_path: Path) -> None:
    web = """
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  replicas: 4
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: x}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""
    state = load(tmp_path, NODES + web)
    pods = [*running_pods(state), *pending_pods(state)]
    result = simulate(state.nodes, pods, [volume_profile()], seed=3, storage=state.storage)
    assert set(result.placements.values()) <= {"n2", "n3"}
    assert all(result.placements.values())


@pytest.mark.timeout(120)
def test_simulate_binds_volumes_without_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In `run` PreBind polls for the PV controller (a second before its first check);
    # in `simulate` the in-memory writer's controllers are done when it returns. Were
    # PreBind to poll here, each pod with volumes would sleep for an hour.
    monkeypatch.setattr(volumebinding_plugin, "POLL_INTERVAL_SECONDS", 3600.0)
    scratch = """
---
apiVersion: v1
kind: Pod
metadata: {name: scratch}
spec:
  containers: [{name: c, image: x}]
  volumes:
  - name: tmp
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources: {requests: {storage: 1Gi}}
"""
    text = NODES + local_pv("pv-n1", "n1") + local_pv("pv-n2", "n2") + STATEFUL_SET + scratch
    state = load(tmp_path, text)
    pods = [*running_pods(state), *pending_pods(state)]
    result = simulate(state.nodes, pods, [volume_profile()], seed=1, storage=state.storage)
    placed = result.placements
    assert sorted(placed[f"default/db-{i}"] or "-" for i in range(3)) == ["-", "n1", "n2"]
    assert placed["default/scratch"] in {"n2", "n3"}  # provisioned in zone b


def test_in_memory_volume_writer_plays_the_pv_controller_and_the_provisioner() -> None:
    storage = StorageState()
    storage.upsert_storage_class(make_storage_class("zonal", provisioner="csi.example.com"))
    storage.upsert_csi_node(
        make_csi_node("n1", {"csi.example.com": None}, ["topology.kubernetes.io/zone"])
    )
    claim = make_pvc("data", storage_class="local")
    storage.upsert_pvc(claim)
    pv = make_pv("pv1", storage_class="local")
    storage.upsert_pv(pv)
    node = make_node("n1", labels={"topology.kubernetes.io/zone": "a"})
    writer = InMemoryVolumeWriter(storage, {"n1": node})
    assert writer.settles_on_write

    # bind_volume: the PV as written is returned; the PV controller then binds both sides.
    with_ref, _ = bind_volume_to_claim(pv, claim)
    written = asyncio.run(writer.bind_volume(with_ref))
    assert written.spec.claim_ref == with_ref.spec.claim_ref
    stored_pv, stored_claim = storage.pvs["pv1"], storage.pvcs["default/data"]
    assert int(stored_pv.metadata.resource_version) > int(written.metadata.resource_version)
    assert stored_pv.status.phase == "Bound"
    assert stored_claim.spec.volume_name == "pv1"
    assert stored_claim.status.phase == "Bound"
    assert stored_claim.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"

    # A claim that is gone: only the PV is written (PreBind's check reports the claim).
    orphan, _ = bind_volume_to_claim(make_pv("pv2"), make_pvc("gone"))
    storage.upsert_pv(make_pv("pv2"))
    asyncio.run(writer.bind_volume(orphan))
    assert storage.pvs["pv2"].status.phase == "Available"
    assert "default/gone" not in storage.pvcs

    # select_node: the annotation, then a PV provisioned with the node's topology.
    dynamic = make_pvc("dyn", storage="2Gi", storage_class="zonal")
    storage.upsert_pvc(dynamic)
    selected = asyncio.run(writer.select_node(dynamic, "n1"))
    assert selected.metadata.annotations["volume.kubernetes.io/selected-node"] == "n1"
    provisioned = storage.pvcs["default/dyn"]
    assert provisioned.metadata.annotations["volume.kubernetes.io/selected-node"] == "n1"
    new_pv = storage.pvs[provisioned.spec.volume_name]
    assert new_pv.spec.capacity == {"storage": "2Gi"}
    assert new_pv.spec.node_affinity is not None
    (term,) = new_pv.spec.node_affinity.required.node_selector_terms  # type: ignore[union-attr]
    assert [(e.key, e.values) for e in term.match_expressions] == [
        ("topology.kubernetes.io/zone", ["a"])
    ]


def test_without_volume_plugins_claims_are_ignored(tmp_path: Path) -> None:
    state = load(tmp_path, NODES + STATEFUL_SET)
    pods = [*running_pods(state), *pending_pods(state)]
    volume_plugins = ("VolumeBinding", "VolumeZone", "VolumeRestrictions", "NodeVolumeLimits")
    profile = ProfileConfig.default()
    profile.plugins["multiPoint"].disabled = [PluginRef(n) for n in volume_plugins]
    result = simulate(state.nodes, pods, [profile], seed=1, storage=state.storage)
    assert all(result.placements.values())


def test_read_write_once_pod_claim_is_used_once(tmp_path: Path) -> None:
    objects = """
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOncePod]
  storageClassName: local
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: solo}
spec:
  storageClassName: local
  accessModes: [ReadWriteOncePod]
  resources: {requests: {storage: 1Gi}}
"""
    pods = "".join(
        f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}}}
spec:
  containers: [{{name: c, image: x}}]
  volumes: [{{name: v, persistentVolumeClaim: {{claimName: solo}}}}]
"""
        for i in range(2)
    )
    state = load(tmp_path, NODES + objects + pods)
    result = simulate(
        state.nodes, pending_pods(state), [volume_profile()], seed=1, storage=state.storage
    )
    assert result.placements["default/p0"] is not None
    assert result.placements["default/p1"] is None
    assert result.reasons["default/p1"] == (
        "0/3 nodes are available: 3 node(s) unavailable due to PersistentVolumeClaim with "
        "ReadWriteOncePod access mode already in-use by another pod. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


# --- kubesched run: PreBind's API writes ---------------------------------------------------


class _StubClient:
    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.calls: list[tuple[str, object, str]] = []

    async def patch(self, path: str, body: object, patch_type: str = "") -> bytes:
        self.calls.append((path, body, patch_type))
        return self.reply


def test_kube_volume_writer_patches_with_the_resource_version() -> None:
    import asyncio

    import msgspec

    from kubesched.kube.storage import KubeVolumeWriter

    claim = make_pvc("data", storage_class="local")
    pv, _ = bind_volume_to_claim(make_pv("pv1", storage_class="local"), claim)
    client = _StubClient(msgspec.json.encode(pv))
    writer = KubeVolumeWriter(client)  # type: ignore[arg-type]
    written = asyncio.run(writer.bind_volume(pv))
    assert written.spec.claim_ref == pv.spec.claim_ref
    path, body, patch_type = client.calls[0]
    assert (path, patch_type) == ("/api/v1/persistentvolumes/pv1", "merge-patch")
    assert body == {
        "metadata": {
            "resourceVersion": "1",
            "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"},
        },
        "spec": {
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": "default",
                "name": "data",
                "uid": "uid-default-data",
                "apiVersion": "v1",
                "resourceVersion": "1",
            }
        },
    }
    client = _StubClient(msgspec.json.encode(claim))
    asyncio.run(KubeVolumeWriter(client).select_node(claim, "n1"))  # type: ignore[arg-type]
    path, body, _ = client.calls[0]
    assert path == "/api/v1/namespaces/default/persistentvolumeclaims/data"
    assert body == {
        "metadata": {
            "resourceVersion": "1",
            "annotations": {"volume.kubernetes.io/selected-node": "n1"},
        }
    }


def test_a_pv_pre_bound_to_a_waiting_claim_is_bound_at_once(tmp_path: Path) -> None:
    objects = (
        local_pv("pv-n2", "n2")
        + """
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: reserved}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  claimRef: {namespace: default, name: mine}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: mine}
spec:
  storageClassName: local
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: other}
spec:
  storageClassName: local
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
"""
    )
    state = load(tmp_path, NODES + objects)
    storage = state.storage
    assert storage.pvcs["default/mine"].spec.volume_name == "reserved"
    assert not storage.pvcs["default/other"].spec.volume_name  # waits for the scheduler
    assert storage.pvs["pv-n2"].status.phase == "Available"
