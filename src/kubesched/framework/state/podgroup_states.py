"""The Workload API's pod groups (scheduling.k8s.io/v1alpha2, GenericWorkload) as the
scheduler holds them; not Coscheduling's scheduler-plugins PodGroups, which
framework/pod_groups.py holds.

The runtime state of each pod group (backend/cache/podgroupstate.go upstream):
which of a group's pods are unscheduled, assumed, or assigned. The cache keeps it
current (AddPodGroupMember, AssumePod, ForgetPod, ...) and plugins read it through
the Handle (fwk.PodGroupManager.PodGroupStates).

kubesched has no snapshot of this state: its scheduling cycle runs between events,
and the pod group cycle assumes its pods in the cache itself and forgets them
again (see scheduler/podgroup_cycle.py), so the cache's state is what upstream's
snapshot holds during that cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from kubesched.api.objects import Pod
from kubesched.api.scheduling import Condition, PodGroup, pod_group_key


@dataclass(slots=True)
class PodGroupStateData:
    """podGroupStateData: the group's pods by pod key."""

    all_pods: dict[str, Pod] = field(default_factory=dict)
    unscheduled: set[str] = field(default_factory=set)
    assumed: dict[str, Pod] = field(default_factory=dict)
    assigned: set[str] = field(default_factory=set)

    def all_pods_count(self) -> int:
        return len(self.all_pods)

    def scheduled_pods_count(self) -> int:
        return len(self.assumed) + len(self.assigned)

    def unscheduled_pods(self) -> dict[str, Pod]:
        """UnscheduledPods: by pod key (upstream keys them by name within the group's
        namespace, which is the same thing)."""
        return {key: self.all_pods[key] for key in self.unscheduled}

    def assumed_pods(self) -> set[str]:
        return set(self.assumed)


class PodGroupStates:
    """The cache's podGroupStates map, keyed by "namespace/podGroupName"."""

    def __init__(self, enabled: bool = False) -> None:
        # isPodGroupMember: only with the GenericWorkload gate on.
        self.enabled = enabled
        self._states: dict[str, PodGroupStateData] = {}

    def _group(self, pod: Pod) -> str | None:
        return pod_group_key(pod) if self.enabled else None

    def get(self, group_key: str) -> PodGroupStateData | None:
        return self._states.get(group_key)

    def get_or_empty(self, group_key: str) -> PodGroupStateData:
        """Get upstream returns an error for an unknown group; an empty state says the
        same here (no pod counts), and no caller needs the difference."""
        return self._states.get(group_key) or PodGroupStateData()

    def __contains__(self, group_key: str) -> bool:
        return group_key in self._states

    def add_pod(self, pod: Pod) -> None:
        """addPodGroupMember: an unscheduled pod (from the queue's add) or an assigned
        one (the cache's AddPod)."""
        group = self._group(pod)
        if group is None:
            return
        state = self._states.setdefault(group, PodGroupStateData())
        key = pod.key
        state.all_pods[key] = pod
        if pod.spec.node_name:
            state.assigned.add(key)
            state.unscheduled.discard(key)
            state.assumed.pop(key, None)
        elif key not in state.assumed:
            state.unscheduled.add(key)

    def update_pod(self, old: Pod | None, new: Pod) -> None:
        group = self._group(new)
        if group is None:
            return
        state = self._states.get(group)
        if state is None or new.key not in state.all_pods:
            self.add_pod(new)
            return
        key = new.key
        state.all_pods[key] = new
        if new.spec.node_name and (old is None or not old.spec.node_name):
            state.assigned.add(key)
            state.unscheduled.discard(key)
            state.assumed.pop(key, None)

    def remove_pod(self, pod: Pod) -> None:
        group = self._group(pod)
        if group is None:
            return
        state = self._states.get(group)
        if state is None:
            return
        key = pod.key
        state.all_pods.pop(key, None)
        state.unscheduled.discard(key)
        state.assumed.pop(key, None)
        state.assigned.discard(key)
        if not state.all_pods:
            del self._states[group]

    def _member(self, pod: Pod) -> tuple[PodGroupStateData, str, Pod] | None:
        """The pod's group state, key and stored copy, if its group tracks it."""
        group = self._group(pod)
        state = None if group is None else self._states.get(group)
        stored = None if state is None else state.all_pods.get(pod.key)
        if state is None or stored is None:
            return None
        return state, pod.key, stored

    def assume_pod(self, pod: Pod) -> None:
        member = self._member(pod)
        if member is None:
            return
        state, key, stored = member
        if stored.spec.node_name:
            state.assigned.add(key)
        else:
            state.assumed[key] = pod
        state.unscheduled.discard(key)

    def forget_pod(self, pod: Pod) -> None:
        member = self._member(pod)
        if member is None:
            return
        state, key, stored = member
        state.assumed.pop(key, None)
        if stored.spec.node_name:
            state.assigned.add(key)
        else:
            state.unscheduled.add(key)


class PodGroupConditionWriter(Protocol):
    def set_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        """Set the condition in the PodGroup's status (util.PatchPodGroupStatus
        upstream); must not block, and nothing to do if it is set already."""
        ...


@dataclass
class WorkloadPodGroupLister:
    """The v1alpha2 PodGroup informer's store, by "namespace/name", and where status writes go
    (the in-memory API server in `simulate`, the API server in `run`)."""

    groups: dict[str, PodGroup] = field(default_factory=dict)
    writer: PodGroupConditionWriter | None = None

    def get(self, namespace: str, name: str) -> PodGroup | None:
        return self.groups.get(f"{namespace}/{name}")
