"""Cluster events into the scheduler's cache and queue (eventhandlers.go upstream:
addAllEventHandlers and the handlers it installs).

The EventHandlers object holds them; the Scheduler hands them out as its on_*
methods, which the informers (kube/runner.py) or the in-memory cluster
(simulation/memory.py) call. Assigned pods and nodes go to the cache; pending pods
of our profiles go to the queue and the nominator; every change that may let a
rejected pod fit is handed to the queue as a cluster event.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kubesched.api.objects import Node, Pod
from kubesched.api.scheduling import PodGroup
from kubesched.cache.cache import Cache
from kubesched.framework.extender import EXTENDER_NAME, Extender
from kubesched.framework.features import FeatureGates
from kubesched.framework.handle import Listers
from kubesched.framework.types import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_NODE_ADD,
    ActionType,
    ClusterEvent,
    PodInfo,
    QueuedPodInfo,
    Resource,
)
from kubesched.framework.waiting import WaitingPods
from kubesched.queue.nominator import Nominator
from kubesched.queue.pod_events import pod_scheduling_properties_change
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.listeners import SchedulingListeners

# EventUnscheduledPodAdd, which the queue sees with GangScheduling on: a new pod
# may complete a gang whose other pods PreEnqueue holds back.
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(
    Resource.UNSCHEDULED_POD, ActionType.ADD, "UnscheduledPodAdd"
)
EVENT_WORKLOAD_POD_GROUP_ADD = ClusterEvent(
    Resource.WORKLOAD_POD_GROUP, ActionType.ADD, "PodGroupAdd"
)


class EventHandlers:
    """The Scheduler's event handlers (addAllEventHandlers and the handlers it
    installs, in eventhandlers.go): into CACHE, QUEUE and NOMINATOR, and the pod
    groups and Workload PodGroups of LISTERS (the Handle's); a pod's last failure
    (LAST_FAILURES) is forgotten once it is bound or gone. PROFILES: the scheduler
    names whose pods are ours (the frameworks by name)."""

    def __init__(
        self,
        *,
        profiles: Collection[str],
        cache: Cache,
        queue: SchedulingQueue,
        nominator: Nominator,
        listers: Listers,
        waiting_pods: WaitingPods,
        listeners: SchedulingListeners,
        last_failures: dict[str, tuple[str, str]],
        extenders: Sequence[Extender],
        gates: FeatureGates,
    ) -> None:
        self.profiles = profiles
        self.cache = cache
        self.queue = queue
        self.nominator = nominator
        self.listers = listers
        self.waiting_pods = waiting_pods
        self.listeners = listeners
        self.last_failures = last_failures
        self.extenders = extenders
        self.gang_scheduling = gates.gang_scheduling

    # --- which pods are ours -------------------------------------------------------

    def _rejected_by_extender(self, key: str) -> bool:
        """Whether the pending pod's last attempt failed with an extender among its
        rejectors (its unschedulable plugins hold "Extender")."""
        return bool(self.extenders) and _extender_rejected(self.queue.find(key))

    def responsible_for(self, pod: Pod) -> bool:
        """responsibleForPod in eventhandlers.go: one of our profiles schedules it."""
        return pod.spec.scheduler_name in self.profiles

    # --- cluster event handlers (what informers call) ------------------------------

    def on_node_add(self, node: Node) -> None:
        self.cache.add_node(node)
        self.queue.on_event(EVENT_NODE_ADD, None, node)

    def on_node_update(self, old: Node | None, new: Node) -> None:
        if old is not None and replaced(old.metadata.uid, new.metadata.uid):
            # Deleted and created again under the same name while the watch was
            # down: a relist shows it as an update. Upstream's cache keys objects
            # by UID, so the old one goes and the new one comes.
            self.on_node_delete(old)
            self.on_node_add(new)
            return
        self.cache.update_node(new)
        if old is None:
            self.queue.on_event(EVENT_NODE_ADD, None, new)
            return
        for event in node_update_events(old, new):
            self.queue.on_event(event, old, new)

    def on_node_delete(self, node: Node) -> None:
        self.cache.remove_node(node.metadata.name)
        self.queue.on_event(
            ClusterEvent(Resource.NODE, ActionType.DELETE, "NodeDelete"), node, None
        )

    def on_pod_add(self, pod: Pod) -> None:
        # Coscheduling's pod lister by group label (every pod, bound or not).
        self.listers.pod_groups.observe_pod(pod)
        if pod.spec.node_name:
            self.cache.pod_group_states.add_pod(pod)
            self.cache.add_pod(PodInfo(pod))
            self.queue.delete(pod.key)
            self.nominator.delete(pod.key)
            self.last_failures.pop(pod.key, None)
            self.queue.on_event(EVENT_ASSIGNED_POD_ADD, None, pod)
        elif self.responsible_for(pod) and pod.metadata.deletion_timestamp is None:
            info = PodInfo(pod)
            self.listeners.pod_pending(info.key)
            # addPodToSchedulingQueue: the group learns of its pod first, so that
            # PreEnqueue counts it.
            self.cache.pod_group_states.add_pod(pod)
            self.queue.add(info)
            if info.key in self.queue.active:  # not held back by PreEnqueue
                self.nominator.add(pod, None)
            if self.gang_scheduling:
                self.queue.on_event(EVENT_UNSCHEDULED_POD_ADD, None, pod)

    def on_pod_update(self, old: Pod | None, new: Pod) -> None:
        self.listers.pod_groups.update_pod(old, new)
        if old is not None and replaced(old.metadata.uid, new.metadata.uid):
            # Another pod of the same name (a relist after the watch missed the
            # delete and the create). Upstream's cache and queue key pods by UID
            # (GetPodKey, updatePod's removePod+addPod), so this is the old pod's
            # delete and the new one's add.
            self.on_pod_delete(old)
            self.on_pod_add(new)
            return
        key = f"{new.metadata.namespace}/{new.metadata.name}"
        self.cache.pod_group_states.update_pod(old, new)
        if new.spec.node_name:
            was_assigned = old is not None and bool(old.spec.node_name)
            if key in self.queue and not self.cache.is_assumed(key):
                self.queue.delete(key)
            self.nominator.delete(key)
            self.last_failures.pop(key, None)
            # Usually our own bind coming back: what the assumed pod worked out stays.
            self.cache.add_pod(PodInfo(new, like=self.cache.pod_info(key)))
            if not was_assigned:
                # A binding: upstream hands the bound pod to addAssignedPodToCache
                # as an add, so the hints see (nil, pod), not the unassigned copy.
                self.queue.on_event(EVENT_ASSIGNED_POD_ADD, None, new)
            else:
                assert old is not None
                for event in pod_scheduling_properties_change(new, old):
                    self.queue.on_event(event, old, new)
        elif self.responsible_for(new):
            if new.metadata.deletion_timestamp is not None:
                self.queue.delete(key)
                self.nominator.delete(key)
                return
            if key not in self.queue.in_flight:
                self.nominator.update(old or new, new)
            if (
                old is not None
                and not _scheduling_relevant_change(old, new)
                and not self._rejected_by_extender(key)
            ):
                # Our own status writes come back as updates: they change nothing
                # the scheduler decides on, so they must not trigger a retry. Except
                # for a pod an extender rejected nodes for: upstream's Update hands
                # every update to the hints, and "Extender" takes any event.
                self.queue.refresh(PodInfo(new))
            else:
                self.queue.update(PodInfo(new), old)
            if (
                old is not None
                and old.status.nominated_node_name
                and old.status.nominated_node_name != new.status.nominated_node_name
            ):
                # The pod no longer holds room on its old nominated node
                # (updatePodInSchedulingQueue).
                self._nominated_room_freed(old)

    def on_pod_delete(self, pod: Pod) -> None:
        self.listers.pod_groups.forget_pod(pod)
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        self.cache.pod_group_states.remove_pod(pod)
        self.queue.delete(key)
        self.nominator.delete(key)
        self.last_failures.pop(key, None)
        waiting = self.waiting_pods.get(key)
        if waiting is not None:
            waiting.reject("", "pod deleted while waiting at Permit")
        if self.cache.node_of(key) is not None:
            self.cache.remove_pod(key)
            self.queue.on_event(EVENT_ASSIGNED_POD_DELETE, pod, None)
        elif pod.status.nominated_node_name:
            self._nominated_room_freed(pod)

    # --- the Workload API's PodGroups (GenericWorkload) ------------------------------

    def on_workload_pod_group_add(self, pod_group: PodGroup) -> None:
        """A PodGroup seen: into the lister, and to the queue (GangScheduling's hint
        lets its pods in). PodGroups' specs are immutable: an update only refreshes
        the stored object (its status)."""
        known = pod_group.key in self.listers.workload_pod_groups.groups
        self.listers.workload_pod_groups.groups[pod_group.key] = pod_group
        if not known:
            self.queue.on_event(EVENT_WORKLOAD_POD_GROUP_ADD, None, pod_group)

    on_workload_pod_group_update = on_workload_pod_group_add

    def on_workload_pod_group_delete(self, pod_group: PodGroup) -> None:
        self.listers.workload_pod_groups.groups.pop(pod_group.key, None)

    def _nominated_room_freed(self, pod: Pod) -> None:
        """POD held room on its nominated node: lower or equal priority pods may fit
        there now."""
        priority = pod.spec.priority or 0
        self.queue.on_event(
            EVENT_ASSIGNED_POD_DELETE,
            pod,
            None,
            precheck=lambda other: (other.spec.priority or 0) <= priority,
        )


def replaced(old_uid: str, new_uid: str) -> bool:
    """Whether an update is really another object under the same name: both UIDs
    known and different."""
    return bool(old_uid) and bool(new_uid) and old_uid != new_uid


def _extender_rejected(qpi: QueuedPodInfo | None) -> bool:
    return qpi is not None and EXTENDER_NAME in qpi.unschedulable_plugins


def _scheduling_relevant_change(old: Pod, new: Pod) -> bool:
    """isPodUpdated upstream: anything but bookkeeping metadata and the status, except
    the status' claim names (the resourceclaim controller's write that lets a pod with
    a claim template past DynamicResources' PreEnqueue)."""
    return (
        old.spec != new.spec
        or old.metadata.labels != new.metadata.labels
        or old.metadata.annotations != new.metadata.annotations
        or old.metadata.owner_references != new.metadata.owner_references
        or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        or old.status.resource_claim_statuses != new.status.resource_claim_statuses
        or old.status.extended_resource_claim_status != new.status.extended_resource_claim_status
    )


def _event(action: ActionType, label: str) -> ClusterEvent:
    return ClusterEvent(Resource.NODE, action, label)


def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
    """Which cluster events a node update amounts to (nodeSchedulingPropertiesChange
    in eventhandlers.go)."""
    events = []
    if old.spec.unschedulable != new.spec.unschedulable:
        events.append(_event(ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"))
    if old.status.allocatable != new.status.allocatable:
        events.append(_event(ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"))
    if old.metadata.labels != new.metadata.labels:
        events.append(_event(ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"))
    if old.spec.taints != new.spec.taints:
        events.append(_event(ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"))
    if old.status.conditions != new.status.conditions:
        events.append(_event(ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"))
    if old.metadata.annotations != new.metadata.annotations:
        events.append(_event(ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange"))
    # extractNodeFeaturesChange (NodeDeclaredFeatures is on by default in 1.36); the
    # label is the one ClusterEvent.Label gives it upstream.
    if old.status.declared_features != new.status.declared_features:
        events.append(
            _event(ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeUpdateNodeDeclaredFeature")
        )
    return events
