"""EventsToRegister and the queueing hints (isSchedulableAfterClaimChange and
isSchedulableAfterPodChange upstream).

DeviceClass and ResourceSlice adds and updates always requeue (upstream gives them
no hint); a claim event requeues a pod when a claim it uses was created or its
status changed, or when any claim was deallocated (its devices are free again).
"""

from __future__ import annotations

from kubesched.api.objects import Pod, namespaced_name
from kubesched.api.resource import ClaimNameError, ResourceClaim, claim_name
from kubesched.framework.interfaces import ClusterEventWithHint, HintIndex, QueueingHint
from kubesched.framework.state.dra import DraState
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.dynamicresources.lookup import ClaimProblem, pod_claims


def events_to_register(dra: DraState) -> list[ClusterEventWithHint]:
    def after_claim_change(pod: PodInfo, old: object, new: object) -> bool:
        return schedulable_after_claim_change(dra, pod.pod, old, new)

    def after_pod_change(pod: PodInfo, old: object, new: object) -> bool:
        return schedulable_after_pod_change(dra, pod.pod, old, new)

    # With queueing hints on (GA), node taint updates are left out; allocatable
    # updates count because extended resources may move to a device plugin.
    node_actions = (
        ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    )
    add_or_update = ActionType.ADD | ActionType.UPDATE
    return [
        ClusterEventWithHint(ClusterEvent(Resource.NODE, node_actions)),
        ClusterEventWithHint(
            ClusterEvent(Resource.RESOURCE_CLAIM, add_or_update),
            after_claim_change,
            HintIndex(claim_keys, claim_event_keys),
        ),
        ClusterEventWithHint(
            ClusterEvent(Resource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
            after_pod_change,
            HintIndex(own_key, pod_event_keys),
        ),
        ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, add_or_update)),
        ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, add_or_update)),
    ]


# The HintIndexes: which pods each hint below can say Queue for.


def claim_keys(pod: PodInfo) -> list[str]:
    """The keys of the claims the pod names, in its spec or (generated from a
    template) its status; an entry that names none yet is left out: while it does,
    pod_claims fails and the claim hint says Skip for any claim."""
    keys = []
    for entry in pod.pod.spec.resource_claims:
        try:
            name, _ = claim_name(pod.pod, entry)
        except ClaimNameError:
            continue
        if name is not None:
            keys.append(namespaced_name(pod.namespace, name))
    return keys


def claim_event_keys(old: object, new: object) -> tuple[str, ...] | None:
    """A claim added or changed concerns only the pods that name it (uses_claim
    needs its key), unless it was deallocated (its devices are free for anyone);
    anything else may concern any pod."""
    if not isinstance(new, ResourceClaim) or not isinstance(old, ResourceClaim | None):
        return None
    if old is not None and old.status.allocation is not None and new.status.allocation is None:
        return None
    return (new.key,)


def own_key(pod: PodInfo) -> tuple[str]:
    return (pod.key,)


def pod_event_keys(old: object, new: object) -> tuple[str, ...] | None:
    """A pod's update concerns only that pod (same UID, so same key)."""
    return (new.key,) if isinstance(new, Pod) else None


def schedulable_after_claim_change(dra: DraState, pod: Pod, old: object, new: object) -> bool:
    # schedutil.As: an object of another type is an error, which means a retry; a
    # missing old object is an add.
    if not isinstance(new, ResourceClaim | None) or not isinstance(old, ResourceClaim | None):
        return QueueingHint.QUEUE
    original = old
    try:
        claims = pod_claims(dra, pod)
    except ClaimProblem:
        return QueueingHint.SKIP
    if new is None:
        return QueueingHint.QUEUE  # deletes are not registered; err on the side of a retry
    uses_claim = any(
        claim.metadata.uid == new.metadata.uid and claim.key == new.key for _, claim in claims
    )
    deallocated = original is not None and original.status.allocation is not None
    if deallocated and new.status.allocation is None:
        return QueueingHint.QUEUE  # its devices are free for anyone
    if not uses_claim:
        return QueueingHint.SKIP
    if original is None:
        return QueueingHint.QUEUE
    # Only the status matters: a changed finalizer or label does not.
    return QueueingHint.QUEUE if original.status != new.status else QueueingHint.SKIP


def schedulable_after_pod_change(dra: DraState, pod: Pod, old: object, new: object) -> bool:
    if not isinstance(new, Pod):
        return QueueingHint.QUEUE
    if new.metadata.uid != pod.metadata.uid:
        return QueueingHint.SKIP
    try:
        pod_claims(dra, new)
    except ClaimProblem:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE
