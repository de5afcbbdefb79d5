"""Which pods block a node's removal: cluster-autoscaler's drain rules.

cluster-autoscaler decides what a node's drain does with each pod with its
drainability rules (simulator/drainability/rules, rules.Default), the first
rule with an outcome deciding, in this order:

1. mirror: a static pod goes with its node (SkipDrain).
2. daemonset: a DaemonSet pod goes with its node (DrainOk, not rescheduled).
3. safetoevict: `cluster-autoscaler.kubernetes.io/safe-to-evict: "true"` lets the
   pod move whatever the blocking rules below say (DrainOk).
4. terminal: a pod that has run to completion needs no place (SkipDrain).
5. replicated: a pod with no controller blocks (NotReplicated).
6. system: a kube-system pod no PodDisruptionBudget covers blocks
   (UnmovableKubeSystemPod, --skip-nodes-with-system-pods's default).
7. notsafetoevict: `safe-to-evict: "false"` blocks (NotSafeToEvictAnnotation).
8. localstorage: a hostPath or a disk-backed emptyDir volume blocks, unless
   `safe-to-evict-local-volumes` names it (LocalStorageRequested,
   --skip-nodes-with-local-storage's default).
9. pdb: a pod whose budget allows no more disruptions blocks (NotEnoughPdb).

Not followed: longterminating (a pod deleted long ago is skipped; there is no
clock here) and replicacount (--min-replica-count, 0 by default, always passes).

The budget check is stricter than the pdb rule in two ways, both what the
eviction API would enforce on the real drain: it spends the budgets pod by pod,
over the node's pods and over every node removed before it (the rule reads each
pod against the budgets as earlier removals left them, and cluster-autoscaler
only flags a node whose pods together overdraw a budget as risky,
RemainingPdbTracker.CanRemovePods); and it applies to safe-to-evict pods too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kubesched.api.disruption import selector_matches
from kubesched.api.objects import Node, Pod, PodDisruptionBudget

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
DAEMONSET_POD = "cluster-autoscaler.kubernetes.io/daemonset-pod"
MIRROR = "kubernetes.io/config.mirror"
KUBE_SYSTEM = "kube-system"

# cluster-autoscaler's BlockingPodReason names (utils/drain), as its status shows them.
NOT_REPLICATED = "NotReplicated"
UNMOVABLE_KUBE_SYSTEM_POD = "UnmovableKubeSystemPod"
NOT_SAFE_TO_EVICT = "NotSafeToEvictAnnotation"
LOCAL_STORAGE = "LocalStorageRequested"
NOT_ENOUGH_PDB = "NotEnoughPdb"


@dataclass(frozen=True, slots=True)
class BlockingPod:
    """drain.BlockingPod: the pod, the rule's reason, and the rule's error text."""

    pod: str  # namespace/name
    reason: str
    message: str


@dataclass(slots=True)
class Drain:
    """What a node's drain does with its pods (GetPodsToMove)."""

    movable: list[Pod] = field(default_factory=list)  # to place elsewhere
    leaving: list[Pod] = field(default_factory=list)  # DaemonSet and mirror pods: go with it
    done: list[Pod] = field(default_factory=list)  # terminal pods: need no place
    blocking: BlockingPod | None = None


def is_mirror_pod(pod: Pod) -> bool:
    """pod_util.IsMirrorPod: a static pod's API copy, made by the kubelet."""
    return MIRROR in pod.metadata.annotations


def is_daemonset_pod(pod: Pod) -> bool:
    """pod_util.IsDaemonSetPod: controlled by a DaemonSet, or annotated as one."""
    for ref in pod.metadata.owner_references:
        if ref.controller and ref.kind == "DaemonSet":
            return True
    return pod.metadata.annotations.get(DAEMONSET_POD) == "true"


def has_controller(pod: Pod) -> bool:
    """drain.ControllerRef is not nil (metav1.GetControllerOf): any kind will do,
    with --skip-nodes-with-custom-controller-pods' default."""
    return any(ref.controller for ref in pod.metadata.owner_references)


def is_terminal(pod: Pod) -> bool:
    """drain.IsPodTerminal: the pod will never run again."""
    phase, policy = pod.status.phase, pod.spec.restart_policy
    if policy == "Never" and phase in ("Succeeded", "Failed"):
        return True
    if policy == "OnFailure" and phase == "Succeeded":
        return True
    return phase == "Failed"


def has_blocking_local_storage(pod: Pod) -> bool:
    """drain.HasBlockingLocalStorage: a hostPath, or an emptyDir not backed by memory,
    that the safe-to-evict-local-volumes annotation does not name."""
    named = pod.metadata.annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES, "")
    safe = set(named.split(",")) if named else set()
    for volume in pod.spec.volumes:
        local = volume.host_path is not None or (
            volume.empty_dir is not None and volume.empty_dir.medium != "Memory"
        )
        if local and volume.name not in safe:
            return True
    return False


def scale_down_disabled(node: Node) -> bool:
    """The node annotation that keeps cluster-autoscaler from removing a node
    (eligibility.go, ScaleDownDisabledAnnotation)."""
    return node.metadata.annotations.get(SCALE_DOWN_DISABLED) == "true"


class PdbTracker:
    """What the budgets still allow as evictions accumulate (RemainingPdbTracker):
    each budget's status.disruptionsAllowed, less the pods it covers that the
    removals so far evict."""

    def __init__(self, pdbs: Sequence[PodDisruptionBudget]) -> None:
        self.pdbs = list(pdbs)
        self.remaining = [p.status.disruptions_allowed if p.status is not None else 0 for p in pdbs]

    def matching(self, pod: Pod) -> list[int]:
        """The budgets that cover the pod (MatchingPdbs): same namespace, and the
        selector selects its labels (nil and empty selectors select nothing, as
        the scheduler and the eviction API read them)."""
        return [
            i
            for i, pdb in enumerate(self.pdbs)
            if pdb.metadata.namespace == pod.metadata.namespace
            and selector_matches(pdb.spec.selector, pod.metadata.labels)
        ]

    def budget(self) -> list[int]:
        """A copy of what is left, to spend a node's pods from (`take`)."""
        return list(self.remaining)

    def take(self, pod: Pod, left: list[int]) -> BlockingPod | None:
        """Spend the pod's eviction from `left` (CanRemovePods, pod by pod); the
        blocking pod if a budget it falls under is overdrawn by it."""
        for i in self.matching(pod):
            if pod.metadata.name in _disrupted(self.pdbs[i]):
                continue  # its eviction is counted already (disruptedPods)
            left[i] -= 1
            if left[i] < 0:
                return BlockingPod(
                    pod.key,
                    NOT_ENOUGH_PDB,
                    f"not enough pod disruption budget to move {pod.key} "
                    f"(PodDisruptionBudget {self.pdbs[i].metadata.name} allows "
                    f"{max(self.remaining[i], 0)} more disruption(s))",
                )
        return None

    def spend(self, pods: Sequence[Pod]) -> None:
        """RemovePods: the pods are evicted."""
        for pod in pods:
            for i in self.matching(pod):
                if pod.metadata.name not in _disrupted(self.pdbs[i]):
                    self.remaining[i] -= 1


def _disrupted(pdb: PodDisruptionBudget) -> dict[str, str]:
    return pdb.status.disrupted_pods if pdb.status is not None else {}


def pods_to_move(pods: Sequence[Pod], tracker: PdbTracker) -> Drain:
    """GetPodsToMove with rules.Default: the pods a drain of the node moves, those
    that go with it, or the first pod that blocks it (its reason and message, as
    cluster-autoscaler's rules word them). The budgets are spent from a copy:
    `PdbTracker.spend` once the node is removed."""
    out = Drain()
    left = tracker.budget()
    for pod in pods:
        name = pod.metadata.name
        if is_mirror_pod(pod) or is_daemonset_pod(pod):
            out.leaving.append(pod)
            continue
        annotation = pod.metadata.annotations.get(SAFE_TO_EVICT)
        if annotation == "true":
            out.movable.append(pod)
            out.blocking = tracker.take(pod, left)
            if out.blocking is not None:
                return out
            continue
        if is_terminal(pod):
            out.done.append(pod)
            continue
        blocking: BlockingPod | None = None
        if not has_controller(pod):
            blocking = BlockingPod(pod.key, NOT_REPLICATED, f"{pod.key} is not replicated")
        elif pod.metadata.namespace == KUBE_SYSTEM and not tracker.matching(pod):
            blocking = BlockingPod(
                pod.key,
                UNMOVABLE_KUBE_SYSTEM_POD,
                f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {name}",
            )
        elif annotation == "false":
            blocking = BlockingPod(
                pod.key, NOT_SAFE_TO_EVICT, f"pod annotated as not safe to evict present: {name}"
            )
        elif has_blocking_local_storage(pod):
            blocking = BlockingPod(
                pod.key, LOCAL_STORAGE, f"pod with local storage present: {name}"
            )
        else:
            blocking = tracker.take(pod, left)  # the pdb rule, last
        if blocking is not None:
            out.blocking = blocking
            return out
        out.movable.append(pod)
    return out
