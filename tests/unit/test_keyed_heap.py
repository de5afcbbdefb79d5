"""KeyedHeap against a sorted list: any mix of pushes (new or replacing), deletes and
pops leaves the heap popping in `less` order, with every key findable."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.plugins.prioritysort import PrioritySort
from kubesched.queue.heap import KeyedHeap
from kubesched.testing import make_pod

# (op, key, priority): op 0 push, 1 delete, 2 pop
ops = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 15), st.integers(0, 5)), max_size=120)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_heap_pops_in_order_and_finds_every_key(steps: list[tuple[int, int, int]]) -> None:
    # items (priority, key): higher priority first, then the smaller key (a total order)
    def less(a: tuple[int, str], b: tuple[int, str]) -> bool:
        return (-a[0], a[1]) < (-b[0], b[1])

    heap: KeyedHeap[tuple[int, str]] = KeyedHeap(lambda item: item[1], less)
    want: dict[str, tuple[int, str]] = {}
    for op, k, priority in steps:
        key = f"k{k:02d}"
        if op == 0:
            heap.push((priority, key))
            want[key] = (priority, key)
        elif op == 1:
            assert heap.delete(key) == want.pop(key, None)
        elif want:
            first = min(want.values(), key=lambda item: (-item[0], item[1]))
            assert heap.pop() == first
            del want[first[1]]
        assert len(heap) == len(want)
        for key, item in want.items():
            assert key in heap and heap.get(key) == item
        if want:
            assert heap.peek() == min(want.values(), key=lambda item: (-item[0], item[1]))
    drained = [heap.pop() for _ in range(len(heap))]
    assert drained == sorted(want.values(), key=lambda item: (-item[0], item[1]))


@settings(max_examples=300, deadline=None)
@given(ops)
def test_a_heap_with_ranks_pops_exactly_as_one_with_less_also_among_ties(
    steps: list[tuple[int, int, int]],
) -> None:
    """A rank whose `<` is `less` gives the same pops, in the same order, also for
    items `less` ties (here: equal priorities), since the sifts make the same
    comparisons with the same answers."""

    def less(a: tuple[int, str], b: tuple[int, str]) -> bool:
        return a[0] > b[0]

    def rank(item: tuple[int, str]) -> int:
        return -item[0]

    by_less: KeyedHeap[tuple[int, str]] = KeyedHeap(lambda item: item[1], less)
    by_rank: KeyedHeap[tuple[int, str]] = KeyedHeap(lambda item: item[1], less, rank)
    for op, k, priority in steps:
        key = f"k{k:02d}"
        if op == 0:
            by_less.push((priority, key))
            by_rank.push((priority, key))
        elif op == 1:
            assert by_less.delete(key) == by_rank.delete(key)
        elif len(by_less):
            assert by_less.pop() == by_rank.pop()
        assert list(by_less) == list(by_rank)
    assert [by_less.pop() for _ in range(len(by_less))] == [
        by_rank.pop() for _ in range(len(by_rank))
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-3, 3)),
            st.sampled_from([0.0, 0.5, 1.0, 2.25]),
            st.integers(0, 3),
        ),
        min_size=2,
        max_size=2,
    )
)
def test_priority_sort_rank_orders_as_its_less(pair: list[tuple[int | None, float, int]]) -> None:
    sort = PrioritySort()
    rank = sort.sort_rank()
    a, b = (
        QueuedPodInfo(PodInfo(make_pod(f"p{i}", priority=priority)), timestamp, seq=seq)
        for i, (priority, timestamp, seq) in enumerate(pair)
    )
    assert (rank(a) < rank(b)) == sort.less(a, b)
    assert (rank(b) < rank(a)) == sort.less(b, a)
