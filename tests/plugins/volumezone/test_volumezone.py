"""VolumeZone: PV zone/region labels against node labels."""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import PersistentVolume, PersistentVolumeClaim, StorageClass
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.volumezone import VolumeZone
from kubesched.testing import (
    claim_volume,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    make_table,
)

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
CONFLICT = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) had no available volume zone"])
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])

LABELS: dict[str, dict[str, str]] = {
    "a1": {ZONE: "a", REGION: "r1"},
    "b1": {ZONE: "b", REGION: "r1"},
    "c2": {ZONE: "c", REGION: "r2"},
    "beta-a": {BETA_ZONE: "a"},
    "plain": {"kubernetes.io/hostname": "plain"},  # no topology label at all
}


def setup(
    *objects: PersistentVolume | PersistentVolumeClaim | StorageClass,
) -> tuple[VolumeZone, NodeTable]:
    nodes = make_table(make_node(name, labels=labels) for name, labels in LABELS.items())
    handle = Handle(nodes)
    for obj in objects:
        if isinstance(obj, PersistentVolume):
            handle.storage.upsert_pv(obj)
        elif isinstance(obj, PersistentVolumeClaim):
            handle.storage.upsert_pvc(obj)
        else:
            handle.storage.upsert_storage_class(obj)
    return VolumeZone(None, handle), nodes


def pod(*claims: str) -> PodInfo:
    return PodInfo(make_pod("p", spec={"volumes": [claim_volume(c) for c in claims]}))


def bound(pv_name: str, claim: str, labels: dict[str, str]) -> tuple[Any, Any]:
    return (
        make_pv(pv_name, labels=labels, phase="Bound"),
        make_pvc(claim, volume_name=pv_name, bound=True),
    )


def run(plugin: VolumeZone, nodes: NodeTable, p: PodInfo) -> dict[str, tuple[int, list[str]]]:
    state = CycleState()
    _, status = plugin.pre_filter(state, p, nodes)
    assert status.code == Code.SUCCESS, status
    rows = nodes.order()
    verdicts = plugin.filter(state, p, nodes, rows)
    return {
        nodes.names[row]: (int(verdicts.codes[i]), [r for r, m in verdicts.reasons if m[i]])
        for i, row in enumerate(rows)
    }


def pre_filter(plugin: VolumeZone, nodes: NodeTable, p: PodInfo) -> Status:
    return plugin.pre_filter(CycleState(), p, nodes)[1]


def test_pods_without_zoned_volumes_skip() -> None:
    plugin, nodes = setup(*bound("pv", "data", {"other": "x"}))
    assert pre_filter(plugin, nodes, PodInfo(make_pod("p"))).code == Code.SKIP
    assert pre_filter(plugin, nodes, pod("data")).code == Code.SKIP


def test_zone_label_must_match() -> None:
    plugin, nodes = setup(*bound("pv", "data", {ZONE: "a"}))
    assert run(plugin, nodes, pod("data")) == {
        "a1": PASS,
        "b1": CONFLICT,
        "c2": CONFLICT,
        "beta-a": CONFLICT,  # only the beta key there: a GA key on the PV is not translated
        "plain": PASS,  # no topology label: a single-zone cluster
    }


def test_multi_zone_values_and_regions() -> None:
    plugin, nodes = setup(*bound("pv", "data", {ZONE: "a__b", REGION: "r1"}))
    assert run(plugin, nodes, pod("data")) == {
        "a1": PASS,
        "b1": PASS,
        "c2": CONFLICT,
        "beta-a": CONFLICT,  # has a topology label but not the GA zone nor region
        "plain": PASS,
    }


def test_beta_label_on_the_pv_matches_the_ga_label_on_the_node() -> None:
    plugin, nodes = setup(*bound("pv", "data", {BETA_ZONE: "a"}))
    assert run(plugin, nodes, pod("data")) == {
        "a1": PASS,
        "b1": CONFLICT,
        "c2": CONFLICT,
        "beta-a": PASS,
        "plain": PASS,
    }


def test_bad_zone_value_is_ignored() -> None:
    plugin, nodes = setup(*bound("pv", "data", {ZONE: "a__"}))
    assert pre_filter(plugin, nodes, pod("data")).code == Code.SKIP


def test_every_claim_counts() -> None:
    pv1, c1 = bound("pv1", "one", {ZONE: "a__b"})
    pv2, c2 = bound("pv2", "two", {ZONE: "b"})
    plugin, nodes = setup(pv1, c1, pv2, c2)
    result = run(plugin, nodes, pod("one", "two"))
    assert [n for n, v in result.items() if v == PASS] == ["b1", "plain"]


def test_unbound_claims() -> None:
    wffc = make_storage_class("local", mode="WaitForFirstConsumer")
    immediate = make_storage_class("fast", mode="Immediate")
    no_mode = make_storage_class("odd", mode=None)
    plugin, nodes = setup(
        wffc,
        immediate,
        no_mode,
        make_pvc("later", storage_class="local"),
        make_pvc("now", storage_class="fast"),
        make_pvc("classless"),
        make_pvc("unknown", storage_class="nope"),
        make_pvc("odd", storage_class="odd"),
        make_pvc("dangling", volume_name="gone", bound=True),
    )
    assert pre_filter(plugin, nodes, pod("later")).code == Code.SKIP
    cases = {
        "now": "PersistentVolume had no name",
        "classless": "PersistentVolumeClaim had no pv name and storageClass name",
        "unknown": 'storageclass.storage.k8s.io "nope" not found',
        "odd": 'VolumeBindingMode not set for StorageClass "odd"',
        "dangling": 'persistentvolume "gone" not found',
        "missing": 'persistentvolumeclaim "missing" not found',
    }
    for claim, message in cases.items():
        status = pre_filter(plugin, nodes, pod(claim))
        assert (status.code, status.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [message])


def test_hints() -> None:
    plugin, _ = setup()
    p = pod("data")
    assert plugin.is_schedulable_after_pvc_change(p, None, make_pvc("data"))
    assert not plugin.is_schedulable_after_pvc_change(p, None, make_pvc("other"))
    assert not plugin.is_schedulable_after_pvc_change(p, None, make_pvc("data", namespace="x"))
    wffc = make_storage_class("local", mode="WaitForFirstConsumer")
    assert plugin.is_schedulable_after_storage_class_added(p, None, wffc)
    assert not plugin.is_schedulable_after_storage_class_added(
        p, None, make_storage_class("fast", mode="Immediate")
    )
    old = make_pv("pv", labels={ZONE: "a"})
    assert plugin.is_schedulable_after_pv_change(p, None, old)
    assert not plugin.is_schedulable_after_pv_change(p, old, make_pv("pv", labels={ZONE: "a"}))
    assert plugin.is_schedulable_after_pv_change(p, old, make_pv("pv", labels={ZONE: "b"}))
