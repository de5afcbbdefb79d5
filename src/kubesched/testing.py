"""Builders for tests and examples: nodes, pods and tables in a line each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.cache.node_table import NodeTable
from kubesched.framework.types import PodInfo


def make_node(
    name: str,
    *,
    cpu: str | int = "4",
    memory: str = "16Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str | int] | None = None,
    images: Iterable[tuple[list[str], int]] = (),
) -> Node:
    allocatable: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": pods}
    allocatable.update(extra or {})
    return msgspec.convert(
        {
            "metadata": {"name": name, "labels": dict(labels or {})},
            "spec": {"unschedulable": unschedulable, "taints": [dict(t) for t in taints]},
            "status": {
                "allocatable": allocatable,
                "capacity": allocatable,
                "images": [{"names": n, "sizeBytes": s} for n, s in images],
            },
        },
        Node,
    )


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    requests: Mapping[str, str | int] | None = None,
    spec: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    node_name: str = "",
    priority: int | None = None,
    image: str = "",
) -> Pod:
    """A one-container pod; `spec` entries (in API spelling) override the defaults."""
    reqs: dict[str, Any] = dict(requests or {})
    if cpu is not None:
        reqs["cpu"] = cpu
    if memory is not None:
        reqs["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": image, "resources": {"requests": reqs}}
    full_spec: dict[str, Any] = {"containers": [container]}
    if node_name:
        full_spec["nodeName"] = node_name
    if priority is not None:
        full_spec["priority"] = priority
    full_spec.update(spec or {})
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
            "spec": full_spec,
        },
        Pod,
    )


def make_table(nodes: Iterable[Node], pods: Iterable[Pod] = ()) -> NodeTable:
    """A table holding `nodes`, with each pod that names a node placed on it."""
    table = NodeTable()
    for node in nodes:
        table.upsert_node(node)
    for pod in pods:
        row = table.row_of(pod.spec.node_name)
        if row is not None:
            table.add_pod(PodInfo(pod), row)
    return table
