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

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import MAX_NODE_SCORE, ScorePlugin, Uniform
from kubesched.framework.signature import IMAGE_NAMES_SIGNER, SignFragment, SignPlugin
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows, normalized_image_name
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo

if TYPE_CHECKING:
    pass

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


def image_holders(nodes: NodeTable, name: str) -> tuple[dict[int, int], int]:
    """The rows that hold image `name` (already normalized), and its size: the
    one the scheduler's image cache keeps, that of the first node with it."""
    holders = nodes.images.get(name)
    if not holders:
        return {}, 0
    return holders, next(iter(holders.values()), 0)


class ImageLocality(SignPlugin, ScorePlugin):
    name = NAME

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the normalized image names of all containers, init ones too."""
        spec = pod.pod.spec
        containers = (*spec.containers, *spec.init_containers)
        names = sorted({normalized_image_name(c.image) for c in containers})
        return [(IMAGE_NAMES_SIGNER, names)], Status.success()

    def uniform_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> Uniform | None:
        """No node reports any image (or the pod has no container): 0 everywhere."""
        spec = pod.pod.spec
        if not nodes.images or not (spec.containers or spec.init_containers):
            return (0, 0)
        return None

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        spec = pod.pod.spec
        containers = [*spec.init_containers, *spec.containers]
        if not containers or not nodes.images:
            # No node reports any image: every sum is 0, which scores 0.
            return np.zeros(len(rows), dtype=np.int64)
        total_num_nodes = len(nodes)
        sums = np.zeros(len(rows), dtype=np.int64)
        held_any = False
        # Each distinct image's per-node contribution, added once per container using it.
        gains: dict[str, IntArray | None] = {}
        for container in containers:
            name = normalized_image_name(container.image)
            if name not in gains:
                holders, size = image_holders(nodes, name)
                if holders:
                    held = np.fromiter(holders, dtype=np.intp, count=len(holders))
                    score = scaled_image_score(size, len(holders), total_num_nodes)
                    gains[name] = np.where(np.isin(rows, held), score, 0).astype(np.int64)
                else:
                    gains[name] = None
            gain = gains[name]
            if gain is not None:
                sums += gain
                held_any = True
        if not held_any:
            return sums  # all 0, which scores 0
        return calculate_priority(sums, len(containers))
