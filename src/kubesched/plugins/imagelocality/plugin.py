"""ImageLocality: favour nodes that already hold the pod's container images.

For every container and init container (each counted, repeats included) whose
image the node has, the node earns the image's size scaled by the share of
nodes that have it (so an image everywhere weighs its full size, a rare one
little). The sum is clamped to [23 MiB, 1000 MiB x containers] and mapped
linearly onto 0..100.

A pod's image name without a tag means ":latest"; the names nodes report are
compared as they are.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.cache.node_table import IntArray, NodeTable, Rows, normalized_image_name
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import MAX_NODE_SCORE, ScorePlugin
from kubesched.framework.types import PodInfo

if TYPE_CHECKING:
    from kubesched.api.objects import Node
    from kubesched.framework.handle import Handle

NAME = "ImageLocality"

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

_LATEST = ":latest"


def scaled_image_score(size: int, num_nodes: int, total_num_nodes: int) -> int:
    """int64(float64(size) * (float64(numNodes) / float64(totalNumNodes)))."""
    return int(float(size) * (float(num_nodes) / float(total_num_nodes)))


def calculate_priority(sum_scores: IntArray, num_containers: int) -> IntArray:
    """Clamp the summed image scores and scale them onto 0..MAX_NODE_SCORE
    (`num_containers` must be at least 1)."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(
        sum_scores < MIN_THRESHOLD,
        MIN_THRESHOLD,
        np.where(sum_scores > max_threshold, max_threshold, sum_scores),
    )
    # With at least one container the range is positive and the numerator is not
    # negative, so floor division is Go's truncating division here.
    scaled: IntArray = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
    return scaled


class _BareNames:
    """Which nodes list an image only under its bare name (no tag).

    The table files "nginx" and "nginx:latest" alike under "nginx:latest", but
    the scheduler compares node image names as reported, so a node that lists
    only "nginx" does not hold "nginx:latest". This index remembers those nodes
    by the name the table uses. It is brought up to date when the table has
    changed, redoing only the rows whose Node object was replaced.
    """

    __slots__ = ("_generation", "_nodes", "_rows_by_name", "_table")

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._generation = -1
        self._nodes: list[Node | None] = []
        self._rows_by_name: dict[str, set[int]] = {}

    def rows_for(self, nodes: NodeTable, name: str) -> set[int]:
        self._refresh(nodes)
        return self._rows_by_name.get(name, set())

    def _refresh(self, nodes: NodeTable) -> None:
        if nodes is not self._table:
            self._table, self._nodes, self._rows_by_name = nodes, [], {}
        elif nodes.generation == self._generation:
            return
        current = [node_row.node if node_row is not None else None for node_row in nodes.rows]
        previous = self._nodes
        if len(current) == len(previous) and all(map(operator.is_, current, previous)):
            self._generation = nodes.generation  # only pods changed
            return
        for row, node in enumerate(current):
            old = previous[row] if row < len(previous) else None
            if old is node:
                continue
            if old is not None:
                for name in _bare_only(old):
                    self._rows_by_name[name].discard(row)
            if node is not None:
                for name in _bare_only(node):
                    self._rows_by_name.setdefault(name, set()).add(row)
        self._nodes = current
        self._generation = nodes.generation


def _bare_only(node: Node) -> set[str]:
    """The ":latest" names a node holds only under the bare name."""
    reported = {name for image in node.status.images for name in image.names}
    return {
        name + _LATEST
        for name in reported
        if normalized_image_name(name) != name and name + _LATEST not in reported
    }


def image_holders(
    nodes: NodeTable, name: str, bare: _BareNames | None = None
) -> tuple[dict[int, int], int]:
    """The rows that hold image `name` (already normalized), and its size: the
    one the scheduler's image cache keeps, that of the first node with it."""
    holders = nodes.images.get(name)
    if not holders:
        return {}, 0
    if name.endswith(_LATEST):
        excluded = (bare or _BareNames()).rows_for(nodes, name)
        if excluded:
            holders = {row: size for row, size in holders.items() if row not in excluded}
    return holders, next(iter(holders.values()), 0)


class ImageLocality(ScorePlugin):
    name = NAME

    def __init__(self, args: Mapping[str, Any] | None = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._bare_names = _BareNames()

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        spec = pod.pod.spec
        containers = [*spec.init_containers, *spec.containers]
        if not containers:
            return np.zeros(len(rows), dtype=np.int64)
        total_num_nodes = len(nodes)
        sums = np.zeros(len(rows), dtype=np.int64)
        # Each distinct image's per-node contribution, added once per container using it.
        gains: dict[str, IntArray | None] = {}
        for container in containers:
            name = normalized_image_name(container.image)
            if name not in gains:
                holders, size = image_holders(nodes, name, self._bare_names)
                if holders:
                    held = np.fromiter(holders, dtype=np.intp, count=len(holders))
                    score = scaled_image_score(size, len(holders), total_num_nodes)
                    gains[name] = np.where(np.isin(rows, held), score, 0).astype(np.int64)
                else:
                    gains[name] = None
            gain = gains[name]
            if gain is not None:
                sums += gain
        return calculate_priority(sums, len(containers))
