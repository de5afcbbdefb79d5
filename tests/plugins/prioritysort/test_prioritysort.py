"""PrioritySort: priority, then timestamp, then enqueue order."""

from __future__ import annotations

import functools

from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.testing import make_pod


def queued(name: str, priority: int | None, timestamp: float, seq: int = 0) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(make_pod(name, priority=priority)), timestamp, seq=seq)


def order(pods: list[QueuedPodInfo]) -> list[str]:
    sort = PrioritySort()

    def compare(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
        return -1 if sort.less(a, b) else 1 if sort.less(b, a) else 0

    return [p.pod.metadata.name for p in sorted(pods, key=functools.cmp_to_key(compare))]


def test_name() -> None:
    assert PrioritySort.name == "PrioritySort"


def test_higher_priority_first_whatever_the_timestamp() -> None:
    sort = PrioritySort()
    high, low = queued("high", 100, 50.0), queued("low", 10, 1.0)
    assert sort.less(high, low)
    assert not sort.less(low, high)


def test_missing_priority_counts_as_zero() -> None:
    sort = PrioritySort()
    unset, negative, zero = queued("unset", None, 2.0), queued("neg", -1, 1.0), queued("z", 0, 1.0)
    assert sort.less(unset, negative)
    assert sort.less(zero, unset)  # equal priority: the earlier timestamp wins
    assert not sort.less(unset, zero)


def test_equal_priority_earlier_timestamp_first() -> None:
    sort = PrioritySort()
    early, late = queued("early", 5, 1.0, seq=9), queued("late", 5, 2.0, seq=1)
    assert sort.less(early, late)
    assert not sort.less(late, early)


def test_seq_breaks_full_ties() -> None:
    sort = PrioritySort()
    first, second = queued("first", 5, 1.0, seq=1), queued("second", 5, 1.0, seq=2)
    assert sort.less(first, second)
    assert not sort.less(second, first)
    assert not sort.less(first, first)


def test_total_order() -> None:
    pods = [
        queued("a", 0, 3.0, 0),
        queued("b", 10, 5.0, 1),
        queued("c", None, 1.0, 2),
        queued("d", 10, 4.0, 3),
        queued("e", 0, 1.0, 4),
        queued("f", -5, 0.0, 5),
    ]
    assert order(pods) == ["d", "b", "c", "e", "a", "f"]
