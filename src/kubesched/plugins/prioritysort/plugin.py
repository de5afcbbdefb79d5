"""PrioritySort: the default QueueSort plugin (pkg/scheduler/framework/plugins/queuesort)."""

from __future__ import annotations

from collections.abc import Callable

from kubesched.framework.interfaces import QueueSortPlugin
from kubesched.framework.types import QueuedPodInfo


class PrioritySort(QueueSortPlugin):
    """Higher spec.priority first (nil counts as 0), then the earlier activeQ timestamp.

    Upstream stops there; pods equal on both are ordered by `seq` (enqueue
    order) here so that the order is total and runs are reproducible.
    """

    name = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1, p2 = a.pod_info.priority, b.pod_info.priority
        if p1 != p2:
            return p1 > p2
        if a.timestamp != b.timestamp:
            return a.timestamp < b.timestamp
        return a.seq < b.seq

    def sort_rank(self) -> Callable[[QueuedPodInfo], tuple[int, float, int]]:
        return _rank


def _rank(qpi: QueuedPodInfo) -> tuple[int, float, int]:
    """`less` as a tuple: higher priority, earlier timestamp, lower seq first."""
    return (-qpi.pod_info.priority, qpi.timestamp, qpi.seq)
