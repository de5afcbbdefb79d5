"""ImageLocality against image_locality.go (v1.36).

score = 100 * (clamp(sum) - 23MiB) / (1000MiB * containers - 23MiB), where sum adds,
for each container and init container whose image the node holds,
int64(size * (nodes holding it / all nodes)).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo
from kubesched.plugins.imagelocality import ImageLocality
from kubesched.plugins.imagelocality.plugin import (
    MAX_CONTAINER_THRESHOLD,
    MIN_THRESHOLD,
    calculate_priority,
    scaled_image_score,
)
from kubesched.testing import make_node, make_pod, make_table

MB = 1024 * 1024


def pod_with_images(images: Sequence[str], init_images: Sequence[str] = ()) -> Pod:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(images)],
        "initContainers": [{"name": f"i{i}", "image": im} for i, im in enumerate(init_images)],
    }
    return make_pod("p", spec=spec)


def scores(table: NodeTable, pod: Pod, *names: str) -> list[int]:
    rows = np.array([table.row_of(n) for n in names], dtype=np.intp)
    out = ImageLocality().score(CycleState(), PodInfo(pod), table, rows)
    return [int(s) for s in out]


def cluster() -> NodeTable:
    # 4 nodes. registry.io/app:v1 (800MiB) on n1 and n2; registry.io/sidecar:latest
    # (500MiB) on n1 only; n3 reports the bare name "registry.io/sidecar", which the
    # scheduler does not match against the pod's normalized "registry.io/sidecar:latest".
    nodes: list[Node] = [
        make_node(
            "n1",
            images=[(["registry.io/app:v1"], 800 * MB), (["registry.io/sidecar:latest"], 500 * MB)],
        ),
        make_node("n2", images=[(["registry.io/app:v1"], 800 * MB)]),
        make_node("n3", images=[(["registry.io/sidecar"], 500 * MB)]),
        make_node("n4"),
    ]
    return make_table(nodes)


def test_images_on_some_nodes() -> None:
    pod = pod_with_images(["registry.io/app:v1"], init_images=["registry.io/sidecar"])
    # 2 containers: range [23MiB, 2000MiB].
    # app:v1 on 2 of 4 nodes: 800MiB * 0.5 = 400MiB; sidecar:latest on 1 of 4: 125MiB.
    # n1: 525MiB -> 100 * (525 - 23) / (2000 - 23) = 50200 / 1977 = 25
    # n2: 400MiB -> 100 * 377 / 1977 = 19
    # n3: bare name does not match -> 0 -> clamped to 23MiB -> 0; n4: 0
    assert scores(cluster(), pod, "n1", "n2", "n3", "n4") == [25, 19, 0, 0]


def test_repeated_images_count_per_container() -> None:
    pod = pod_with_images(["registry.io/app:v1", "registry.io/app:v1"])
    # n1: 400MiB twice = 800MiB -> 100 * (800 - 23) / 1977 = 77700 / 1977 = 39
    assert scores(cluster(), pod, "n1", "n4") == [39, 0]


def test_big_image_everywhere_clamps_to_max() -> None:
    nodes = [make_node(n, images=[(["big:1"], 1200 * MB)]) for n in ("a", "b")]
    # 1200MiB * 2/2 = 1200MiB > 1000MiB * 1 container -> 100
    assert scores(make_table(nodes), pod_with_images(["big:1"]), "a", "b") == [100, 100]


def test_small_image_scores_zero() -> None:
    nodes = [make_node("a", images=[(["tiny:1"], 20 * MB)])]
    # 20MiB < 23MiB -> clamped -> 0
    assert scores(make_table(nodes), pod_with_images(["tiny:1"]), "a") == [0]


def test_untagged_pod_image_means_latest() -> None:
    nodes = [
        make_node("a", images=[(["nginx:latest", "docker.io/library/nginx:latest"], 600 * MB)]),
        make_node("b"),
    ]
    # nginx -> nginx:latest on 1 of 2 nodes: 300MiB -> 100 * (300 - 23) / 977 = 27700 / 977 = 28
    assert scores(make_table(nodes), pod_with_images(["nginx"]), "a", "b") == [28, 0]


def test_scaled_score_and_priority_arithmetic() -> None:
    # int64(float64(40MiB) * (1.0 / 3.0)) = int(13981013.33) = 13981013
    assert scaled_image_score(40 * MB, 1, 3) == 13981013
    sums = np.array([0, MIN_THRESHOLD, 500 * MB, 3000 * MB], dtype=np.int64)
    # 1 container: 500MiB -> 100 * 477 / 977 = 48; 3000MiB clamps to 1000MiB -> 100
    assert calculate_priority(sums, 1).tolist() == [0, 0, 48, 100]
    assert MAX_CONTAINER_THRESHOLD == 1000 * MB


def test_pod_without_containers_scores_zero() -> None:
    nodes = [make_node("a", images=[(["x:1"], 900 * MB)])]
    pod = make_pod("p", spec={"containers": []})
    assert scores(make_table(nodes), pod, "a") == [0]


def test_bare_node_names_follow_node_updates() -> None:
    table = make_table([make_node("a", images=[(["busybox"], 600 * MB)]), make_node("b")])
    plugin = ImageLocality()
    pod = pod_with_images(["busybox"])

    def run() -> list[int]:
        rows = np.array([table.row_of(n) for n in ("a", "b") if n in table], dtype=np.intp)
        return [int(s) for s in plugin.score(CycleState(), PodInfo(pod), table, rows)]

    # "a" lists only the bare name: no match for busybox:latest.
    assert run() == [0, 0]
    # Now it reports the tag too: 600MiB on 1 of 2 nodes = 300MiB -> 27700 / 977 = 28
    table.upsert_node(make_node("a", images=[(["busybox", "busybox:latest"], 600 * MB)]))
    assert run() == [28, 0]
    # Back to the bare name only, and "b" gains the tagged image: only "b" holds it.
    table.upsert_node(make_node("a", images=[(["busybox"], 600 * MB)]))
    table.upsert_node(make_node("b", images=[(["busybox:latest"], 600 * MB)]))
    assert run() == [0, 28]
    # Without "b", nobody holds it.
    table.remove_node("b")
    assert run() == [0]
