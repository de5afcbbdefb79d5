"""cluster-autoscaler's drain rules (plan/drain.py), pod by pod."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.objects import Pod, PodDisruptionBudget
from kubesched.plan.drain import (
    LOCAL_STORAGE,
    NOT_ENOUGH_PDB,
    NOT_REPLICATED,
    NOT_SAFE_TO_EVICT,
    UNMOVABLE_KUBE_SYSTEM_POD,
    PdbTracker,
    pods_to_move,
)


def pod(
    name: str,
    *,
    namespace: str = "default",
    owner: str | None = "ReplicaSet",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    phase: str = "Running",
    restart_policy: str = "Always",
) -> Pod:
    owners = (
        []
        if owner is None
        else [{"apiVersion": "apps/v1", "kind": owner, "name": "x", "uid": "u", "controller": True}]
    )
    return msgspec.convert(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels or {},
                "annotations": annotations or {},
                "ownerReferences": owners,
            },
            "spec": {
                "nodeName": "n1",
                "restartPolicy": restart_policy,
                "containers": [{"name": "c", "image": "i"}],
                "volumes": volumes or [],
            },
            "status": {"phase": phase},
        },
        Pod,
    )


def pdb(name: str, allowed: int, namespace: str = "default", **labels: str) -> PodDisruptionBudget:
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": labels}, "minAvailable": 1},
            "status": {"disruptionsAllowed": allowed},
        },
        PodDisruptionBudget,
    )


NO_PDBS = PdbTracker([])


def test_replicated_pods_move() -> None:
    drain = pods_to_move([pod("a"), pod("b", owner="StatefulSet")], NO_PDBS)
    assert drain.blocking is None
    assert [p.metadata.name for p in drain.movable] == ["a", "b"]


def test_daemonset_and_mirror_pods_go_with_the_node() -> None:
    mirror = pod("static", owner=None, annotations={"kubernetes.io/config.mirror": "abc"})
    daemon = pod("ds", owner="DaemonSet")
    drain = pods_to_move([mirror, daemon, pod("web")], NO_PDBS)
    assert drain.blocking is None
    assert [p.metadata.name for p in drain.leaving] == ["static", "ds"]
    assert [p.metadata.name for p in drain.movable] == ["web"]


def test_terminal_pods_need_no_place() -> None:
    done = pod("job", owner=None, phase="Succeeded", restart_policy="Never")
    drain = pods_to_move([done], NO_PDBS)
    assert drain.blocking is None
    assert [p.metadata.name for p in drain.done] == ["job"]


def test_a_pod_without_controller_blocks() -> None:
    drain = pods_to_move([pod("web"), pod("lonely", owner=None)], NO_PDBS)
    assert drain.blocking is not None
    assert drain.blocking.pod == "default/lonely"
    assert drain.blocking.reason == NOT_REPLICATED
    assert drain.blocking.message == "default/lonely is not replicated"


def test_local_storage_blocks_unless_memory_backed_or_safe_to_evict() -> None:
    disk = [{"name": "cache", "emptyDir": {}}]
    drain = pods_to_move([pod("a", volumes=disk)], NO_PDBS)
    assert drain.blocking is not None
    assert drain.blocking.reason == LOCAL_STORAGE
    assert drain.blocking.message == "pod with local storage present: a"
    host = [{"name": "logs", "hostPath": {"path": "/var/log"}}]
    assert pods_to_move([pod("b", volumes=host)], NO_PDBS).blocking is not None
    memory = [{"name": "tmp", "emptyDir": {"medium": "Memory"}}]
    assert pods_to_move([pod("c", volumes=memory)], NO_PDBS).blocking is None
    named = {"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "cache"}
    assert pods_to_move([pod("d", volumes=disk, annotations=named)], NO_PDBS).blocking is None
    safe = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
    # safe-to-evict overrides the blocking rules (no controller, local storage).
    drain = pods_to_move([pod("e", owner=None, volumes=disk, annotations=safe)], NO_PDBS)
    assert drain.blocking is None
    assert [p.metadata.name for p in drain.movable] == ["e"]


def test_not_safe_to_evict_blocks() -> None:
    annotations = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    drain = pods_to_move([pod("a", annotations=annotations)], NO_PDBS)
    assert drain.blocking is not None
    assert drain.blocking.reason == NOT_SAFE_TO_EVICT


def test_kube_system_pods_need_a_pdb() -> None:
    dns = pod("coredns-1", namespace="kube-system", labels={"k8s-app": "kube-dns"})
    drain = pods_to_move([dns], NO_PDBS)
    assert drain.blocking is not None
    assert drain.blocking.reason == UNMOVABLE_KUBE_SYSTEM_POD
    assert drain.blocking.message == (
        "non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: coredns-1"
    )
    covered = PdbTracker([pdb("dns", 1, namespace="kube-system", **{"k8s-app": "kube-dns"})])
    assert pods_to_move([dns], covered).blocking is None


def test_budgets_are_spent_pod_by_pod_and_across_nodes() -> None:
    """A budget that allows 1: the first of two pods on the node may go, the
    second blocks; once a removal spent it, none may."""
    tracker = PdbTracker([pdb("web", 1, app="web")])
    a, b = pod("a", labels={"app": "web"}), pod("b", labels={"app": "web"})
    drain = pods_to_move([a, b], tracker)
    assert drain.blocking is not None
    assert drain.blocking.pod == "default/b"
    assert drain.blocking.reason == NOT_ENOUGH_PDB
    assert pods_to_move([a], tracker).blocking is None
    tracker.spend([a])
    assert tracker.remaining == [0]
    drain = pods_to_move([b], tracker)
    assert drain.blocking is not None
    assert drain.blocking.message == (
        "not enough pod disruption budget to move default/b "
        "(PodDisruptionBudget web allows 0 more disruption(s))"
    )
    # Other namespaces and labels are not covered.
    assert pods_to_move([pod("c", labels={"app": "db"})], tracker).blocking is None
