"""The pods nominated to nodes, as a pod's filters must count them (addGENominatedPods
upstream, for RunFilterPluginsWithNominatedPods and for preemption's dry run).

Upstream asks the nominator node by node; in Python, with a thousand preemptors
waiting for their victims to go (PreemptionBasic), building "row -> nominated pods
of this priority or more" and their amounts over again was a fifth of the in-process
run, several times per cycle. A source of nominations that counts its changes
(`NominatedPods.version`) and can say which nodes they touched (`changed_since`)
gets them kept per table and priority, and only the nodes touched are read again;
each pod then only takes itself out and keeps the rows it asks about. The order of
the rows may then differ from the nodes' order: no caller depends on it (the
filters' verdicts are sorted by row afterwards).
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.types import PodInfo


class NominatedPods(Protocol):
    """The pods nominated to nodes by preemption (upstream PodNominator)."""

    def nominated_nodes(self) -> Collection[str]:
        """Names of the nodes some pod is nominated to."""
        ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def version(self) -> int | None:
        """A count that grows whenever `nominated_pods_for_node` may answer
        differently for some node; None: not known, ask every node every time."""
        ...

    def changed_since(self, version: int) -> Collection[str] | None:
        """The nodes whose answers may have changed since VERSION; None: too long
        ago to say."""
        ...


class NoNominations:
    def nominated_nodes(self) -> Collection[str]:
        return ()

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []

    def version(self) -> int | None:
        return 0

    def changed_since(self, version: int) -> Collection[str] | None:
        return ()


class _AtPriority:
    """Every nominated pod of some priority or more, by row, kept in step with the
    nominations node by node."""

    def __init__(self, priority: int, nodes: NodeTable) -> None:
        self.priority = priority
        self.by_row: dict[int, list[PodInfo]] = {}
        self.row_of_pod: dict[str, int] = {}
        # Per row: what its pods add to `requested` (NodeTable.added_amounts), and the
        # rows where amounts alone cannot say it (those give None).
        self.amounts = np.zeros((nodes.capacity, nodes.requested.shape[1]), dtype=np.int64)
        self.inexpressible: set[int] = set()
        self._rows: Rows | None = None

    def rows(self) -> Rows:
        if self._rows is None:
            self._rows = np.fromiter(self.by_row, dtype=np.intp, count=len(self.by_row))
        return self._rows

    def redo(self, nominated: NominatedPods, nodes: NodeTable, names: Collection[str]) -> None:
        """Read the pods nominated to NAMES again."""
        by_row, row_of_pod, priority = self.by_row, self.row_of_pod, self.priority
        read: dict[int, list[PodInfo]] = {}
        for name in names:
            row = nodes.row_of(name)
            if row is None:
                continue  # a node the table does not have: no row to count it on
            for gone in by_row.pop(row, ()):
                if row_of_pod.get(gone.key) == row:
                    del row_of_pod[gone.key]
            self.amounts[row] = 0
            self.inexpressible.discard(row)
            self._rows = None
            pods = [p for p in nominated.nominated_pods_for_node(name) if p.priority >= priority]
            if pods:
                by_row[row] = read[row] = pods
                for p in pods:
                    row_of_pod[p.key] = row
        if not read:
            return
        added = nodes.added_amounts(read)  # all at once, and row by row if one cannot
        if added is not None:
            self.amounts[list(read)] = added
            return
        for row, pods in read.items():
            one = nodes.added_amounts({row: pods})
            if one is None:
                self.inexpressible.add(row)
            else:
                self.amounts[row] = one[0]


@dataclass
class _Memo:
    nominated: NominatedPods
    version: int
    row_generation: int
    width: int
    by_priority: dict[int, _AtPriority] = field(default_factory=dict)


# Per table, the nominations as last read; a version change redoes the nodes changed
# since (all of them for another source, another set of nodes or another width).
# Weak, so that a table's memo goes with it.
_memos: weakref.WeakKeyDictionary[NodeTable, _Memo] = weakref.WeakKeyDictionary()
# Priorities kept at once: a cluster has a few priority classes; past this, start over.
_KEPT_PRIORITIES = 8


class NominatedRows(Mapping[int, list[PodInfo]]):
    """Row -> the pods nominated to it that a pod's filters must count: those of the
    pod's priority or higher, the pod itself aside."""

    def __init__(
        self,
        by_row: dict[int, list[PodInfo]],
        whole: _AtPriority | None = None,
        own: tuple[int, PodInfo] | None = None,
    ) -> None:
        self._by_row = by_row
        # What this was cut from, and the pod taken out of its row there.
        self._whole = whole
        self._own = own

    def __getitem__(self, row: int) -> list[PodInfo]:
        return self._by_row[row]

    def __iter__(self) -> Iterator[int]:
        return iter(self._by_row)

    def __len__(self) -> int:
        return len(self._by_row)

    def rows(self) -> Rows:
        return np.fromiter(self._by_row, dtype=np.intp, count=len(self._by_row))

    def amounts(self, nodes: NodeTable, rows: Rows | None = None) -> IntArray | None:
        """One line per row of ROWS (default: all of these, in order), each a row of
        these: what adding its nominated pods would add to the row's `requested`
        (NodeTable.added_amounts); None when amounts alone cannot say it."""
        if rows is None:
            rows = self.rows()
        whole = self._whole
        if whole is None:
            return nodes.added_amounts({row: self._by_row[row] for row in rows.tolist()})
        if whole.inexpressible and not whole.inexpressible.isdisjoint(rows.tolist()):
            return None
        delta = whole.amounts[rows]
        if self._own is not None:
            own_row, own_pod = self._own
            vector = nodes.amounts_of(own_pod)
            if vector is None:
                return None
            delta[rows == own_row] -= np.asarray(vector, dtype=np.int64)
        return delta


def nominated_by_row(
    nominated: NominatedPods, pod: PodInfo, nodes: NodeTable, rows: Rows | None = None
) -> NominatedRows:
    """The rows (of `rows`, or all) with pods nominated to them that the pod's filters
    must count, with those pods: the ones of the pod's priority or higher, the pod
    itself aside (addGENominatedPods)."""
    if rows is not None and not len(rows):
        return NominatedRows({})
    version = nominated.version()
    if version is None:
        return NominatedRows(_collect(nominated, pod.priority, nodes, rows, pod.key))
    whole = _at_priority(nominated, version, pod.priority, nodes)
    if not whole.by_row:
        return NominatedRows({})
    by_row = whole.by_row
    own = None
    own_row = whole.row_of_pod.get(pod.key)
    if own_row is not None:
        mine = by_row[own_row]
        own = (own_row, next(p for p in mine if p.key == pod.key))
        others = [p for p in mine if p.key != pod.key]
        by_row = dict(by_row)
        if others:
            by_row[own_row] = others
        else:
            del by_row[own_row]
    if rows is not None:
        wanted = np.zeros(nodes.capacity, dtype=np.bool_)
        wanted[rows] = True
        all_rows = whole.rows()
        kept = all_rows[wanted[all_rows]].tolist()
        if len(kept) < len(all_rows):
            by_row = {row: by_row[row] for row in kept if row in by_row}
    return NominatedRows(by_row, whole, own)


def _at_priority(
    nominated: NominatedPods, version: int, priority: int, nodes: NodeTable
) -> _AtPriority:
    width = nodes.requested.shape[1]
    memo = _memos.get(nodes)
    if (
        memo is None
        or memo.nominated is not nominated
        or memo.row_generation != nodes.row_generation
        or memo.width != width
        or len(memo.by_priority) >= _KEPT_PRIORITIES
    ):
        memo = _Memo(nominated, version, nodes.row_generation, width)
        _memos[nodes] = memo
    elif memo.version != version:
        changed = nominated.changed_since(memo.version)
        if changed is None:
            memo = _Memo(nominated, version, nodes.row_generation, width)
            _memos[nodes] = memo
        else:
            for kept in memo.by_priority.values():
                kept.redo(nominated, nodes, changed)
            memo.version = version
    found = memo.by_priority.get(priority)
    if found is None:
        found = _AtPriority(priority, nodes)
        found.redo(nominated, nodes, nominated.nominated_nodes())
        memo.by_priority[priority] = found
    return found


def _collect(
    nominated: NominatedPods,
    priority: int,
    nodes: NodeTable,
    rows: Rows | None,
    leave_out: str | None,
) -> dict[int, list[PodInfo]]:
    """Row -> the pods nominated there of PRIORITY or more (of ROWS, or all; the pod
    keyed LEAVE_OUT aside)."""
    wanted = None
    if rows is not None:
        wanted = np.zeros(nodes.capacity, dtype=np.bool_)
        wanted[rows] = True
    found: dict[int, list[PodInfo]] = {}
    for name in nominated.nominated_nodes():
        row = nodes.row_of(name)
        if row is None or (wanted is not None and not wanted[row]):
            continue
        pods = [
            p
            for p in nominated.nominated_pods_for_node(name)
            if p.priority >= priority and p.key != leave_out
        ]
        if pods:
            found[row] = pods
    return found
