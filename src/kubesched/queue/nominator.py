"""The nominator: which pending pods are nominated to which nodes (upstream's nominator).

Preemption nominates the preemptor to the node it made room on. Until the pod
is bound, lower-or-equal priority pods must not take that room: the framework
runs their filters as if the nominated pods were on the node. The scheduler
keeps it in step with the pods: failures nominate (or clear), updates carry the
nomination over, binding (assume) and deletion end it. Pods are known by key
("namespace/name"), as in the scheduling queue.
"""

from __future__ import annotations

from collections.abc import Collection, KeysView

from kubesched.api.objects import Pod

_KEPT_CHANGES = 4096


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, list[str]] = {}
        self._node_of: dict[str, str] = {}
        # The nodes whose nominated pods changed, in order (`touch`), so that readers
        # can keep what they built and redo only those nodes; the first ones are
        # dropped as it grows, and `changed_since` a version before them says None.
        self._changes: list[str] = []
        self._changes_start = 0

    @property
    def version(self) -> int:
        """How many changes there have been."""
        return self._changes_start + len(self._changes)

    def touch(self, node: str) -> None:
        """Count a change to the pods nominated to NODE (or to how they read)."""
        changes = self._changes
        changes.append(node)
        if len(changes) > _KEPT_CHANGES:
            half = len(changes) // 2
            del changes[:half]
            self._changes_start += half

    def changed_since(self, version: int) -> set[str] | None:
        """The nodes touched since VERSION; None when that is further back than kept."""
        if version < self._changes_start:
            return None
        return set(self._changes[version - self._changes_start :])

    def add(self, pod: Pod, nominated: str | None) -> None:
        """addNominatedPod: `nominated` None keeps the pod's own nominatedNodeName
        (ModeNoop), a string overrides it ("" clears the nomination)."""
        key = pod.key
        self.delete(key)
        node = pod.status.nominated_node_name if nominated is None else nominated
        if not node:
            return
        self._node_of[key] = node
        self.touch(node)
        keys = self._by_node.setdefault(node, [])
        if key not in keys:
            keys.append(key)

    def update(self, old: Pod, new: Pod) -> None:
        """UpdateNominatedPod: an update that neither sets nor clears the field keeps
        the nomination the scheduler made (its status write may still be on its way)."""
        nominated = None
        if not old.status.nominated_node_name and not new.status.nominated_node_name:
            nominated = self._node_of.get(old.key)
        self.delete(old.key)
        self.add(new, nominated)

    def delete(self, key: str) -> None:
        node = self._node_of.pop(key, None)
        if node is None:
            return
        self.touch(node)
        keys = self._by_node[node]
        keys.remove(key)
        if not keys:
            del self._by_node[node]

    def node_of(self, key: str) -> str | None:
        return self._node_of.get(key)

    def nodes(self) -> Collection[str]:
        return self._by_node.keys()

    def pods(self) -> KeysView[str]:
        """The keys of the nominated pods."""
        return self._node_of.keys()

    def pods_for_node(self, node: str) -> list[str]:
        return list(self._by_node.get(node, ()))

    def __len__(self) -> int:
        return len(self._node_of)
