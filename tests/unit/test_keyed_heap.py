"""KeyedHeap against a sorted list: any mix of pushes (new or replacing), deletes and
pops leaves the heap popping in `less` order, with every key findable."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.queue.heap import KeyedHeap

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
