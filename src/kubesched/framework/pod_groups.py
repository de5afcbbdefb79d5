"""The PodGroups of scheduler-plugins (scheduling.x-k8s.io/v1alpha1) and their pods, as the
Coscheduling plugin reads them: the PodGroup lister and the pod lister by group label
(PodGroupManager's client and podLister upstream), kept current by the source of truth
(the in-memory cluster in `simulate`, an informer in `run`) and by the scheduler's pod
event handlers. It also plays scheduler-plugins' PodGroup controller: after each change
the group's status is recomputed (api.pod_groups.controller_status) and, when it
changed, written through `writer` (the status subresource in `run`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Protocol

from kubesched.api.objects import Pod
from kubesched.api.pod_groups import PodGroup, PodGroupStatus, controller_status, pod_group_key
from kubesched.framework.state.event_source import EventSource
from kubesched.framework.types import ActionType, Resource

log = logging.getLogger("kubesched.podgroups")


class PodGroupStatusWriter(Protocol):
    def write_status(self, group: PodGroup, status: PodGroupStatus) -> None:
        """Write the group's status (a status-subresource patch); must not block."""
        ...


class PodGroupState(EventSource):
    """PodGroups by "namespace/name", and every pod carrying a group label, by group."""

    def __init__(self) -> None:
        super().__init__()
        self.groups: dict[str, PodGroup] = {}
        self._members: dict[str, dict[str, Pod]] = {}
        self.writer: PodGroupStatusWriter | None = None
        # Told of every group whose pods or object changed (the plugin's cache).
        self.on_change: list[Callable[[str], None]] = []

    # --- the source of truth's side -------------------------------------------------

    def upsert_group(self, group: PodGroup) -> None:
        old = self.groups.get(group.key)
        self.groups[group.key] = group
        self._emit(
            Resource.POD_GROUP, ActionType.ADD if old is None else ActionType.UPDATE, old, group
        )
        self._changed(group.key)

    def delete_group(self, key: str) -> None:
        old = self.groups.pop(key, None)
        if old is not None:
            self._emit(Resource.POD_GROUP, ActionType.DELETE, old, None)
            self._changed(key)

    def observe_pod(self, pod: Pod) -> None:
        """A pod added or updated (bound, status changed): kept under its group."""
        key = pod_group_key(pod)
        if not key:
            return
        self._members.setdefault(key, {})[pod.key] = pod
        self._changed(key)

    def update_pod(self, old: Pod | None, new: Pod) -> None:
        """A pod updated: replaced in place, so that its group is never seen a member
        short in between (a status write per member update would flip the phase to
        Pending and back, and each PodGroup update requeues the whole group)."""
        if old is not None and (old.key != new.key or pod_group_key(old) != pod_group_key(new)):
            self.forget_pod(old)
        self.observe_pod(new)

    def forget_pod(self, pod: Pod) -> None:
        key = pod_group_key(pod)
        members = self._members.get(key)
        if members is None or members.pop(pod.key, None) is None:
            return
        if not members:
            del self._members[key]
        self._changed(key)

    # --- what the plugin reads ------------------------------------------------------

    def get(self, key: str) -> PodGroup | None:
        return self.groups.get(key)

    def members(self, key: str) -> list[Pod]:
        """The group's pods (pending and bound), in the order they were first seen."""
        return list(self._members.get(key, {}).values())

    def __iter__(self) -> Iterator[PodGroup]:
        return iter(list(self.groups.values()))

    # --- the controller -------------------------------------------------------------

    def _changed(self, key: str) -> None:
        for listener in self.on_change:
            listener(key)
        group = self.groups.get(key)
        if group is None:
            return
        status = controller_status(group, self.members(key))
        if status == group.status:
            return
        if self.writer is None:
            group.status = status
            return
        try:
            self.writer.write_status(group, status)
        except Exception:  # a write that fails is retried at the next change
            log.exception("podgroup %s: writing its status failed", key)
