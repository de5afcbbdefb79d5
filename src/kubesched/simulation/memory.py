"""An in-memory cluster: the source of truth for `simulate` and for unit tests.

It behaves like the API server as far as the scheduler can tell: binding sets
spec.nodeName (and fails if the pod is gone or already bound), and every
change is delivered to subscribers the way watch events are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from kubesched.api.objects import (
    Node,
    Pod,
    PodCondition,
    PodExtendedResourceClaimStatus,
    PriorityClass,
)
from kubesched.framework.client import BindConflict


class Watcher(Protocol):
    def on_node_add(self, node: Node) -> None: ...
    def on_node_update(self, old: Node | None, new: Node) -> None: ...
    def on_node_delete(self, node: Node) -> None: ...
    def on_pod_add(self, pod: Pod) -> None: ...
    def on_pod_update(self, old: Pod | None, new: Pod) -> None: ...
    def on_pod_delete(self, pod: Pod) -> None: ...


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    pod: str
    type: str
    reason: str
    message: str


@dataclass
class InMemoryCluster:
    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    events: list[RecordedEvent] = field(default_factory=list)
    watchers: list[Watcher] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)

    def watch(self, watcher: Watcher) -> None:
        """Subscribe, first replaying the current state as adds (nodes first, as a
        scheduler's informers would have synced them)."""
        self.watchers.append(watcher)
        for node in self.nodes.values():
            watcher.on_node_add(node)
        for pod in self.pods.values():
            if pod.spec.node_name:
                watcher.on_pod_add(pod)
        for pod in self.pods.values():
            if not pod.spec.node_name:
                watcher.on_pod_add(pod)

    # --- writes, as through the API --------------------------------------------

    def add_node(self, node: Node) -> None:
        old = self.nodes.get(node.metadata.name)
        self.nodes[node.metadata.name] = node
        for w in self.watchers:
            if old is None:
                w.on_node_add(node)
            else:
                w.on_node_update(old, node)

    def delete_node(self, name: str) -> None:
        node = self.nodes.pop(name, None)
        if node is not None:
            for w in self.watchers:
                w.on_node_delete(node)

    def add_pod(self, pod: Pod) -> None:
        key = pod.key
        old = self.pods.get(key)
        self.pods[key] = pod
        for w in self.watchers:
            if old is None:
                w.on_pod_add(pod)
            else:
                w.on_pod_update(old, pod)

    def remove_pod(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            for w in self.watchers:
                w.on_pod_delete(pod)

    # --- ClusterClient ---------------------------------------------------------

    async def bind(self, pod: Pod, node_name: str) -> None:
        key = pod.key
        current = self.pods.get(key)
        if current is None:
            raise BindConflict(f'pods "{pod.metadata.name}" not found')
        if current.spec.node_name:
            raise BindConflict(
                f'Operation cannot be fulfilled on pods/binding "{pod.metadata.name}": '
                f"pod {pod.metadata.name} is already assigned to node "
                f'"{current.spec.node_name}"'
            )
        if node_name not in self.nodes:
            raise RuntimeError(f'nodes "{node_name}" not found')
        conditions = [c for c in current.status.conditions if c.type != "PodScheduled"]
        conditions.append(PodCondition(type="PodScheduled", status="True"))
        bound = msgspec.structs.replace(
            current,
            spec=msgspec.structs.replace(current.spec, node_name=node_name),
            status=msgspec.structs.replace(current.status, conditions=conditions),
        )
        self.pods[key] = bound
        for w in self.watchers:
            w.on_pod_update(current, bound)

    async def set_disruption_target(self, pod: Pod, reason: str, message: str) -> bool:
        key = pod.key
        current = self.pods.get(key)
        if current is None:
            return False
        conditions = [c for c in current.status.conditions if c.type != "DisruptionTarget"]
        conditions.append(
            PodCondition(type="DisruptionTarget", status="True", reason=reason, message=message)
        )
        # A status write, not delivered to watchers (as set_unschedulable).
        self.pods[key] = msgspec.structs.replace(
            current, status=msgspec.structs.replace(current.status, conditions=conditions)
        )
        return True

    async def set_extended_resource_claim_status(
        self, pod: Pod, status: PodExtendedResourceClaimStatus
    ) -> None:
        key = pod.key
        current = self.pods.get(key)
        if current is None or current.metadata.uid != pod.metadata.uid:
            raise RuntimeError(f'pods "{pod.metadata.name}" not found')
        # A status write, not delivered to watchers (as set_disruption_target).
        self.pods[key] = msgspec.structs.replace(
            current,
            status=msgspec.structs.replace(current.status, extended_resource_claim_status=status),
        )

    async def delete_pod(self, pod: Pod, reason: str) -> None:
        key = pod.key
        if key in self.pods:  # deleting a pod that is gone is a 404, ignored
            self.evicted.append(key)
            self.remove_pod(key)

    def record_event(self, pod: Pod, event_type: str, reason: str, message: str) -> None:
        self.events.append(RecordedEvent(pod.key, event_type, reason, message))

    def set_unschedulable(self, pod: Pod, reason: str, message: str, nominated_node: str) -> None:
        key = pod.key
        current = self.pods.get(key)
        if current is None:
            return
        conditions = [c for c in current.status.conditions if c.type != "PodScheduled"]
        conditions.append(
            PodCondition(type="PodScheduled", status="False", reason=reason, message=message)
        )
        # Status writes do not change what the scheduler schedules on; like the
        # real API they would come back as a pod update, which the queue ignores.
        self.pods[key] = msgspec.structs.replace(
            current,
            status=msgspec.structs.replace(
                current.status, conditions=conditions, nominated_node_name=nominated_node
            ),
        )
