"""NodeInfo: one node seen through the columnar table, for per-node plugins."""

from __future__ import annotations

from kubesched.api.objects import Node
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo


class NodeInfo:
    """A light view of one row: the Node, its pods, and its amounts by resource name
    (cpu in millicores, memory and storage in bytes, others as counted).

    Example:
        ```python
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Status

        class KeepHeadroom(NodeFilterPlugin):
            # Leave a node at least one CPU free after the pod.
            name = "KeepHeadroom"

            def filter_node(self, state, pod, node):
                if node.free("cpu") - pod.requests.get("cpu", 0) < 1000:
                    return Status.unschedulable("node(s) would have under 1 CPU free")
                return Status.success()
        ```
    """

    __slots__ = ("row", "table")

    def __init__(self, table: NodeTable, row: int) -> None:
        self.table = table
        self.row = row

    @property
    def node(self) -> Node:
        return self.table.node(self.row)

    @property
    def name(self) -> str:
        return self.table.names[self.row]

    @property
    def labels(self) -> dict[str, str]:
        return self.node.metadata.labels

    @property
    def pods(self) -> list[PodInfo]:
        """The pods on the node (bound or assumed), as a list: `len(info.pods)` works,
        as NodeInfo.Pods does upstream. A new list on each read."""
        return list(self.table.pods_on(self.row))

    @property
    def pod_count(self) -> int:
        """len(pods), without building the list."""
        return int(self.table.requested[self.row, self.table.resource_index["pods"]])

    def allocatable(self, resource: str) -> int:
        col = self.table.resource_index.get(resource)
        return 0 if col is None else int(self.table.allocatable[self.row, col])

    def requested(self, resource: str) -> int:
        col = self.table.resource_index.get(resource)
        return 0 if col is None else int(self.table.requested[self.row, col])

    def free(self, resource: str) -> int:
        return self.allocatable(resource) - self.requested(resource)
