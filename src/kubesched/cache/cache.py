"""The scheduler's cache: the node table plus which pods are assumed and not yet bound.

A pod is assumed on its node as soon as the scheduling cycle picks it, so the
next cycle already counts its requests; binding confirms it, a failed binding
forgets it. Assigned pods seen from the cluster are added here too.
"""

from __future__ import annotations

import logging

from kubesched.api.objects import Node, same_pod
from kubesched.framework.state.node_table import NodeTable, UnrepresentableNode
from kubesched.framework.state.podgroup_states import PodGroupStates
from kubesched.framework.types import PodInfo

log = logging.getLogger("kubesched.cache")


class Cache:
    def __init__(self, table: NodeTable | None = None) -> None:
        self.table = table or NodeTable()
        self.assumed: dict[str, str] = {}  # pod key -> node name, until bound
        self.placed: dict[str, tuple[PodInfo, str]] = {}  # every pod counted on a node
        # Pods that name a node the cache has not seen yet; counted when it arrives.
        self._orphans: dict[str, dict[str, PodInfo]] = {}
        # The pod groups' runtime state (GenericWorkload); kept by the event
        # handlers for pods seen, and by assume/forget here.
        self.pod_group_states = PodGroupStates()

    # --- nodes -----------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        try:
            row = self.table.upsert_node(node)
        except UnrepresentableNode as exc:
            # Refused whole, never half-written: the node is kept out of the table
            # (as a node not seen yet), so no pod goes there; its pods wait as
            # orphans until a representable version of it comes.
            log.error("%s", exc)
            self.remove_node(node.metadata.name)
            return
        for pod in self._orphans.pop(node.metadata.name, {}).values():
            self.table.add_pod(pod, row)

    update_node = add_node

    def remove_node(self, name: str) -> None:
        # Pods stay in `placed`: if the node comes back they are counted again.
        pods = self.table.remove_node(name)
        if pods:
            self._orphans[name] = {p.key: p for p in pods}

    # --- pods ------------------------------------------------------------------

    def _place(self, pod: PodInfo, node_name: str) -> None:
        found = self.placed.get(pod.key)
        if found is not None and found[1] == node_name:
            row = self.table.row_of(node_name)
            if row is not None and self.table.replace_pod(pod, row):
                del self.placed[pod.key]  # last, as _unplace then placing would leave it
                self.placed[pod.key] = (pod, node_name)
                return
        self._unplace(pod.key)
        self.placed[pod.key] = (pod, node_name)
        row = self.table.row_of(node_name)
        if row is None:
            self._orphans.setdefault(node_name, {})[pod.key] = pod
        else:
            self.table.add_pod(pod, row)

    def _unplace(self, key: str) -> PodInfo | None:
        found = self.placed.pop(key, None)
        if found is None:
            return None
        pod, node_name = found
        row = self.table.row_of(node_name)
        if row is None:
            orphans = self._orphans.get(node_name)
            if orphans is not None:
                orphans.pop(key, None)
                if not orphans:  # a node gone with its last pod: nothing to keep
                    del self._orphans[node_name]
        else:
            self.table.remove_pod(pod, row)
        return pod

    def assume_pod(self, pod: PodInfo, node_name: str) -> None:
        self._place(pod, node_name)
        self.assumed[pod.key] = node_name
        self.pod_group_states.assume_pod(pod.pod)

    def forget_pod(self, pod: PodInfo) -> None:
        """ForgetPod: drop the pod's assumption, if the pod assumed under its key is
        this very pod (not a pod created again under its name meanwhile; upstream's
        cache keys pods by UID)."""
        key = pod.key
        found = self.placed.get(key)
        if found is not None and not same_pod(found[0].pod, pod.pod):
            return
        if self.assumed.pop(key, None) is not None:
            self._unplace(key)
            self.pod_group_states.forget_pod(pod.pod)

    def finish_binding(self, key: str) -> None:
        self.assumed.pop(key, None)

    def add_pod(self, pod: PodInfo) -> None:
        """An assigned pod seen in the cluster (it may confirm an assumed one)."""
        self.assumed.pop(pod.key, None)
        self._place(pod, pod.node_name)

    update_pod = add_pod

    def remove_pod(self, key: str) -> None:
        self.assumed.pop(key, None)
        self._unplace(key)

    def is_assumed(self, key: str) -> bool:
        return key in self.assumed

    def pod_info(self, key: str) -> PodInfo | None:
        """The PodInfo the cache counts for the pod (assumed or bound), if any."""
        found = self.placed.get(key)
        return None if found is None else found[0]

    def node_of(self, key: str) -> str | None:
        found = self.placed.get(key)
        return None if found is None else found[1]
