"""VolumeRestrictions: in-tree disk conflicts and ReadWriteOncePod claims."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.volumerestrictions import VolumeRestrictions
from kubesched.testing import claim_volume, make_node, make_pod, make_pvc, make_table

DISK = "node(s) had no available disk"
RWOP = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
    "already in-use by another pod"
)
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])


def pod(name: str, *volumes: dict[str, Any], node: str = "") -> Pod:
    return make_pod(name, node_name=node, spec={"volumes": list(volumes)})


def setup(*running: Pod) -> tuple[VolumeRestrictions, NodeTable]:
    nodes = make_table([make_node("n1"), make_node("n2")], running)
    handle = Handle(nodes)
    handle.storage.upsert_pvc(make_pvc("solo", access_modes=["ReadWriteOncePod"]))
    handle.storage.upsert_pvc(make_pvc("shared", access_modes=["ReadWriteOnce"]))
    return VolumeRestrictions(None, handle), nodes


def run(
    plugin: VolumeRestrictions, nodes: NodeTable, p: Pod, state: CycleState | None = None
) -> dict[str, tuple[int, list[str]]]:
    state = state or CycleState()
    info = PodInfo(p)
    _, status = plugin.pre_filter(state, info, nodes)
    if status.code == Code.SKIP:
        return {name: PASS for name in nodes.index}
    assert status.code == Code.SUCCESS, status
    rows = nodes.order()
    verdicts = plugin.filter(state, info, nodes, rows)
    return {
        nodes.names[row]: (int(verdicts.codes[i]), [r for r, m in verdicts.reasons if m[i]])
        for i, row in enumerate(rows)
    }


def gce(name: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "d", "gcePersistentDisk": {"pdName": name, "readOnly": read_only}}


def ebs(volume_id: str) -> dict[str, Any]:
    return {"name": "d", "awsElasticBlockStore": {"volumeID": volume_id}}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "d", "iscsi": {"iqn": iqn, "readOnly": read_only}}


def rbd(
    monitors: list[str], image: str, pool: str | None = None, ro: bool = False
) -> dict[str, Any]:
    source: dict[str, Any] = {"monitors": monitors, "image": image, "readOnly": ro}
    if pool is not None:
        source["pool"] = pool
    return {"name": "d", "rbd": source}


def test_pods_without_restricted_volumes_skip() -> None:
    plugin, nodes = setup()
    _, status = plugin.pre_filter(CycleState(), PodInfo(make_pod("p")), nodes)
    assert status.code == Code.SKIP
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod("p", claim_volume("shared"))), nodes)
    assert status.code == Code.SKIP
    # A ReadWriteOncePod claim nobody uses yet: nothing to check either.
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod("p", claim_volume("solo"))), nodes)
    assert status.code == Code.SKIP


def test_missing_claim() -> None:
    plugin, nodes = setup()
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod("p", claim_volume("nope"))), nodes)
    assert (status.code, status.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ['persistentvolumeclaim "nope" not found'],
    )


@pytest.mark.parametrize(
    ("existing", "new", "conflict"),
    [
        (gce("disk"), gce("disk"), True),
        (gce("disk", read_only=True), gce("disk", read_only=True), False),
        (gce("disk", read_only=True), gce("disk"), True),
        (gce("disk"), gce("other"), False),
        (ebs("vol-1"), ebs("vol-1"), True),
        (ebs("vol-1"), ebs("vol-2"), False),
        (iscsi("iqn.a"), iscsi("iqn.a", read_only=True), True),
        (iscsi("iqn.a", read_only=True), iscsi("iqn.a", read_only=True), False),
        (rbd(["m1", "m2"], "img"), rbd(["m2", "m3"], "img", pool="rbd"), True),
        (rbd(["m1"], "img"), rbd(["m2"], "img"), False),  # no monitor in common
        (rbd(["m1"], "img"), rbd(["m1"], "img", pool="other"), False),
        (rbd(["m1"], "img", ro=True), rbd(["m1"], "img", ro=True), False),
        (gce("disk"), ebs("disk"), False),
    ],
)
def test_disk_conflicts(existing: dict[str, Any], new: dict[str, Any], conflict: bool) -> None:
    plugin, nodes = setup(pod("old", existing, node="n1"))
    result = run(plugin, nodes, pod("p", new))
    assert result == {
        "n1": (Code.UNSCHEDULABLE, [DISK]) if conflict else PASS,
        "n2": PASS,
    }


def test_read_write_once_pod_claim_in_use_fails_every_node() -> None:
    plugin, nodes = setup(pod("owner", claim_volume("solo"), node="n1"))
    unschedulable = (Code.UNSCHEDULABLE, [RWOP])
    assert run(plugin, nodes, pod("p", claim_volume("solo"))) == {
        "n1": unschedulable,
        "n2": unschedulable,
    }
    # Another namespace's claim of that name is another claim.
    plugin.handle.storage.upsert_pvc(
        make_pvc("solo", namespace="other", access_modes=["ReadWriteOncePod"])
    )
    elsewhere = make_pod("p", namespace="other", spec={"volumes": [claim_volume("solo")]})
    assert run(plugin, nodes, elsewhere) == {"n1": PASS, "n2": PASS}


def test_preemption_removing_the_user_helps() -> None:
    owner = pod("owner", claim_volume("solo"), node="n1")
    plugin, nodes = setup(owner)
    state = CycleState()
    p = PodInfo(pod("p", claim_volume("solo")))
    plugin.pre_filter(state, p, nodes)
    trial = state.clone()
    assert plugin.remove_pod(trial, p, PodInfo(owner), nodes, 0).is_success()
    rows = nodes.order()
    assert plugin.filter(trial, p, nodes, rows).passed().all()
    assert not plugin.filter(state, p, nodes, rows).passed().any()  # the original is unchanged
    assert plugin.add_pod(trial, p, PodInfo(owner), nodes, 0).is_success()
    assert not plugin.filter(trial, p, nodes, rows).passed().any()


def test_disk_conflict_comes_first() -> None:
    plugin, nodes = setup(pod("owner", claim_volume("solo"), ebs("vol-1"), node="n1"))
    new = pod("p", claim_volume("solo"), ebs("vol-1"))
    assert run(plugin, nodes, new) == {
        "n1": (Code.UNSCHEDULABLE, [DISK]),
        "n2": (Code.UNSCHEDULABLE, [RWOP]),
    }


def test_hints() -> None:
    plugin, _ = setup()
    p = PodInfo(pod("p", claim_volume("solo"), ebs("vol-1")))
    assert plugin.is_schedulable_after_pvc_added(p, None, make_pvc("solo"))
    assert not plugin.is_schedulable_after_pvc_added(p, None, make_pvc("other"))
    assert not plugin.is_schedulable_after_pvc_added(p, None, make_pvc("solo", namespace="x"))
    assert plugin.is_schedulable_after_pod_deleted(p, pod("gone", ebs("vol-1"), node="n1"), None)
    assert plugin.is_schedulable_after_pod_deleted(p, pod("gone", claim_volume("solo")), None)
    assert not plugin.is_schedulable_after_pod_deleted(p, pod("gone", ebs("vol-2")), None)
    other_ns = make_pod("gone", namespace="x", spec={"volumes": [ebs("vol-1")]})
    assert not plugin.is_schedulable_after_pod_deleted(p, other_ns, None)
