"""Which cluster events a node update amounts to (nodeSchedulingPropertiesChange upstream)."""

from __future__ import annotations

from kubesched.api.objects import Node
from kubesched.framework.types import ActionType, ClusterEvent, Resource


def _event(action: ActionType, label: str) -> ClusterEvent:
    return ClusterEvent(Resource.NODE, action, label)


def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
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
    return events
