"""A keyed binary heap: push, pop, update and delete by key in O(log n)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _ByLess(Generic[T]):
    """The rank of an item ordered by a `less` function: `<` calls it."""

    __slots__ = ("item", "less")

    def __init__(self, item: T, less: Callable[[T, T], bool]) -> None:
        self.item = item
        self.less = less

    def __lt__(self, other: _ByLess[T]) -> bool:
        return self.less(self.item, other.item)


class KeyedHeap(Generic[T]):
    """Items ordered by `less`, each findable by a string key.

    `rank`, if given, maps an item to a value whose `<` is `less` (rank(a) <
    rank(b) exactly when less(a, b)), worked out when the item is pushed: the
    sifts then compare ranks in C, not through a Python call per comparison
    (PrioritySort's (-priority, timestamp, seq)). Without it, each item's rank
    is a wrapper whose `<` calls `less`. An item's fields that its rank reads
    must not change while it is in the heap, except through push, which ranks
    it again (as a change to them without push would break the heap's order
    with `less` too)."""

    def __init__(
        self,
        key: Callable[[T], str],
        less: Callable[[T, T], bool],
        rank: Callable[[T], Any] | None = None,
    ) -> None:
        self._key = key
        self._rank: Callable[[T], Any] = rank or (lambda item: _ByLess(item, less))
        self._items: list[T] = []
        self._ranks: list[Any] = []  # _ranks[i] is _items[i]'s
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
            self._ranks[i] = self._rank(item)
            self._fix(i)
            return
        self._items.append(item)
        self._ranks.append(self._rank(item))
        self._pos[key] = len(self._items) - 1
        self._up(len(self._items) - 1)

    def pop(self) -> T:
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        i = self._pos.get(key)
        return None if i is None else self._remove_at(i)

    def _remove_at(self, i: int) -> T:
        items, ranks = self._items, self._ranks
        item = items[i]
        last = items.pop()
        last_rank = ranks.pop()
        del self._pos[self._key(item)]
        if i < len(items):
            items[i] = last
            ranks[i] = last_rank
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
        items, ranks, pos, key = self._items, self._ranks, self._pos, self._key
        item, rank = items[i], ranks[i]
        start = i
        while i > 0:
            parent = (i - 1) >> 1
            if not rank < ranks[parent]:
                break
            above = items[parent]
            items[i], ranks[i] = above, ranks[parent]
            pos[key(above)] = i
            i = parent
        if i == start:
            return False
        items[i], ranks[i] = item, rank
        pos[key(item)] = i
        return True

    def _down(self, i: int) -> None:
        items, ranks, pos, key = self._items, self._ranks, self._pos, self._key
        n = len(items)
        item, rank = items[i], ranks[i]
        start = i
        while True:
            child = 2 * i + 1
            if child >= n:
                break
            right = child + 1
            if right < n and ranks[right] < ranks[child]:
                child = right
            if not ranks[child] < rank:
                break
            below = items[child]
            items[i], ranks[i] = below, ranks[child]
            pos[key(below)] = i
            i = child
        if i != start:
            items[i], ranks[i] = item, rank
            pos[key(item)] = i
