"""A keyed binary heap: push, pop, update and delete by key in O(log n)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Items ordered by `less`, each findable by a string key."""

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        self._pos: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._pos

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items))

    def get(self, key: str) -> T | None:
        i = self._pos.get(key)
        return None if i is None else self._items[i]

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def push(self, item: T) -> None:
        """Add an item, or replace the one with the same key."""
        key = self._key(item)
        i = self._pos.get(key)
        if i is not None:
            self._items[i] = item
            self._fix(i)
            return
        self._items.append(item)
        self._pos[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    def pop(self) -> T:
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        i = self._pos.get(key)
        return None if i is None else self._remove_at(i)

    def _remove_at(self, i: int) -> T:
        items = self._items
        item = items[i]
        last = items.pop()
        del self._pos[self._key(item)]
        if i < len(items):
            items[i] = last
            self._pos[self._key(last)] = i
            self._fix(i)
        return item

    def _fix(self, i: int) -> None:
        if not self._up(i):
            self._down(i)

    # Both sifts move a hole rather than swapping at each level (as heapq does): each
    # item moved is written and re-indexed once. With a total order (PrioritySort's,
    # the backoff's) the pops come out as with any other sift; items a custom
    # QueueSort ties come out in some order, as from upstream's heap.

    def _up(self, i: int) -> bool:
        items, pos, less, key = self._items, self._pos, self._less, self._key
        item = items[i]
        start = i
        while i > 0:
            parent = (i - 1) >> 1
            above = items[parent]
            if not less(item, above):
                break
            items[i] = above
            pos[key(above)] = i
            i = parent
        if i == start:
            return False
        items[i] = item
        pos[key(item)] = i
        return True

    def _down(self, i: int) -> None:
        items, pos, less, key = self._items, self._pos, self._less, self._key
        n = len(items)
        item = items[i]
        start = i
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            right = child + 1
            if right < n and less(items[right], items[child]):
                child = right
            below = items[child]
            if not less(below, item):
                break
            items[i] = below
            pos[key(below)] = i
            i = child
        if i != start:
            items[i] = item
            pos[key(item)] = i
