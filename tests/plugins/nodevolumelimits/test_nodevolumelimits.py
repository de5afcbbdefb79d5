"""NodeVolumeLimits: CSINode allocatable counts against the unique volumes on a node."""

from __future__ import annotations

import msgspec

from kubesched.api.objects import CSINode, Pod, VolumeAttachment
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.plugins.nodevolumelimits import NodeVolumeLimits
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

DRIVER = "csi.example.com"
EXCEEDED = (Code.UNSCHEDULABLE, ["node(s) exceed max volume count"])
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])


def pod(name: str, *claims: str, node: str = "") -> Pod:
    return make_pod(name, node_name=node, spec={"volumes": [claim_volume(c) for c in claims]})


def setup(
    *running: Pod, csi_nodes: tuple[CSINode, ...] | None = None
) -> tuple[NodeVolumeLimits, NodeTable]:
    nodes = make_table([make_node("n1"), make_node("n2"), make_node("n3")], running)
    handle = Handle(nodes)
    storage = handle.storage
    # v1..v4: bound CSI volumes; "lazy": provisioned by the class, not bound yet.
    for i in range(1, 5):
        storage.upsert_pv(make_pv(f"pv{i}", phase="Bound", csi=(DRIVER, f"handle-{i}")))
        storage.upsert_pvc(make_pvc(f"v{i}", volume_name=f"pv{i}", bound=True))
    storage.upsert_storage_class(make_storage_class("sc", provisioner=DRIVER))
    storage.upsert_pvc(make_pvc("lazy", storage_class="sc"))
    storage.upsert_pvc(make_pvc("lazy2", storage_class="sc"))
    for csi_node in (
        csi_nodes
        if csi_nodes is not None
        else (
            make_csi_node("n1", {DRIVER: 2}),
            make_csi_node("n2", {DRIVER: 3, "other.driver": 1}),
            # n3: no CSINode, no limit
        )
    ):
        storage.upsert_csi_node(csi_node)
    return NodeVolumeLimits(None, handle), nodes


def run(plugin: NodeVolumeLimits, nodes: NodeTable, p: Pod) -> dict[str, tuple[int, list[str]]]:
    state = CycleState()
    info = PodInfo(p)
    _, status = plugin.pre_filter(state, info, nodes)
    assert status.code == Code.SUCCESS, status
    rows = nodes.order()
    verdicts = plugin.filter(state, info, nodes, rows)
    return {
        nodes.names[row]: (int(verdicts.codes[i]), [r for r, m in verdicts.reasons if m[i]])
        for i, row in enumerate(rows)
    }


def test_pods_without_claims_skip() -> None:
    plugin, nodes = setup()
    _, status = plugin.pre_filter(CycleState(), PodInfo(make_pod("p")), nodes)
    assert status.code == Code.SKIP


def test_limit_counts_unique_volumes() -> None:
    # n1 (limit 2) has v1 and v2; n2 (limit 3) has v1 twice (one volume) and v2.
    plugin, nodes = setup(
        pod("a", "v1", "v2", node="n1"),
        pod("b", "v1", node="n2"),
        pod("c", "v1", "v2", node="n2"),
    )
    assert run(plugin, nodes, pod("p", "v3")) == {"n1": EXCEEDED, "n2": PASS, "n3": PASS}
    # A volume the node already has does not count again.
    assert run(plugin, nodes, pod("p", "v2")) == {"n1": PASS, "n2": PASS, "n3": PASS}
    # n2: 2 attached + 2 new > 3.
    assert run(plugin, nodes, pod("p", "v3", "v4")) == {"n1": EXCEEDED, "n2": EXCEEDED, "n3": PASS}


def test_unbound_claims_count_under_the_provisioner() -> None:
    plugin, nodes = setup(pod("a", "v1", "lazy", node="n1"))
    # n1: v1 and the pending "lazy" volume make 2; "lazy2" would be a third.
    assert run(plugin, nodes, pod("p", "lazy2")) == {"n1": EXCEEDED, "n2": PASS, "n3": PASS}
    # The same unbound claim is one volume.
    assert run(plugin, nodes, pod("p", "lazy")) == {"n1": PASS, "n2": PASS, "n3": PASS}


def test_migrated_in_tree_provisioner_counts_under_its_csi_driver() -> None:
    plugin, nodes = setup(
        csi_nodes=(make_csi_node("n1", {"ebs.csi.aws.com": 0}), make_csi_node("n2", {DRIVER: 0}))
    )
    plugin.handle.storage.upsert_storage_class(
        make_storage_class("gp2", provisioner="kubernetes.io/aws-ebs")
    )
    plugin.handle.storage.upsert_pvc(make_pvc("ebs", storage_class="gp2"))
    assert run(plugin, nodes, pod("p", "ebs")) == {"n1": EXCEEDED, "n2": PASS, "n3": PASS}


def test_volume_attachments_count() -> None:
    plugin, nodes = setup()
    for name, pv in (("va-1", "pv1"), ("va-2", "pv2")):
        plugin.handle.storage.upsert_volume_attachment(
            msgspec.convert(
                {
                    "metadata": {"name": name},
                    "spec": {
                        "attacher": DRIVER,
                        "nodeName": "n1",
                        "source": {"persistentVolumeName": pv},
                    },
                },
                VolumeAttachment,
            )
        )
    assert run(plugin, nodes, pod("p", "v3")) == {"n1": EXCEEDED, "n2": PASS, "n3": PASS}
    # As upstream, a new volume already attached (but used by no pod) still counts as new.
    assert run(plugin, nodes, pod("p", "v1")) == {"n1": EXCEEDED, "n2": PASS, "n3": PASS}


def test_missing_claim() -> None:
    plugin, nodes = setup()
    assert run(plugin, nodes, pod("p", "nope")) == {
        name: (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ['looking up PVC default/nope: persistentvolumeclaim "nope" not found'],
        )
        for name in ("n1", "n2", "n3")
    }


def test_hints() -> None:
    plugin, _ = setup()
    p = PodInfo(pod("p", "v1"))
    before = make_csi_node("n1", {DRIVER: 2})
    assert plugin.is_schedulable_after_csi_node_updated(p, before, make_csi_node("n1", {DRIVER: 3}))
    assert not plugin.is_schedulable_after_csi_node_updated(
        p, before, make_csi_node("n1", {DRIVER: 2})
    )
    assert plugin.is_schedulable_after_pvc_added(p, None, make_pvc("v1"))
    assert not plugin.is_schedulable_after_pvc_added(p, None, make_pvc("v2"))
    assert plugin.is_schedulable_after_pod_deleted(p, pod("gone", "v2", node="n1"), None)
    assert not plugin.is_schedulable_after_pod_deleted(p, pod("gone", "v2"), None)
    assert not plugin.is_schedulable_after_pod_deleted(p, make_pod("gone", node_name="n1"), None)
