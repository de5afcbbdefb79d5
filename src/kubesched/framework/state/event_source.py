"""EventSource: the listers' way of announcing changes to the queue as informer
events would (ResourceEventHandler upstream). StorageState and DraState both
announce their objects' adds, updates and deletes through it."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.framework.types import ActionType, ClusterEvent, Resource

Listener = Callable[[ClusterEvent, object, object], object]

_WORDS = {ActionType.ADD: "Add", ActionType.UPDATE: "Update", ActionType.DELETE: "Delete"}


class EventSource:
    """Subscribers and the ClusterEvent ("<Resource><Add|Update|Delete>") each change
    is announced as."""

    def __init__(self) -> None:
        self.listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> None:
        self.listeners.append(listener)

    def _emit(self, resource: Resource, action: ActionType, old: object, new: object) -> None:
        if self.listeners:
            event = ClusterEvent(resource, action, f"{resource}{_WORDS[action]}")
            for listener in self.listeners:
                listener(event, old, new)
