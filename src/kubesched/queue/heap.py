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

    def _swap(self, i: int, j: int) -> None:
        items = self._items
        items[i], items[j] = items[j], items[i]
        self._pos[self._key(items[i])] = i
        self._pos[self._key(items[j])] = j

    def _up(self, i: int) -> bool:
        moved = False
        while i > 0:
            parent = (i - 1) // 2
            if not self._less(self._items[i], self._items[parent]):
                break
            self._swap(i, parent)
            i = parent
            moved = True
        return moved

    def _down(self, i: int) -> None:
        n = len(self._items)
        while True:
            smallest = i
            for child in (2 * i + 1, 2 * i + 2):
                if child < n and self._less(self._items[child], self._items[smallest]):
                    smallest = child
            if smallest == i:
                return
            self._swap(i, smallest)
            i = smallest
