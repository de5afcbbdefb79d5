"""A small cluster whose report is known by hand: 4 nodes in 2 zones (one with 2
example.com/gpu), 1 pod already running, a 3-replica Deployment, a pod asking
for one GPU, and a pod asking for more cpu than any node has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def _node(name: str, zone: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", **(extra or {})}},
    }


def _container(requests: dict[str, str]) -> list[dict[str, Any]]:
    return [{"name": "c", "image": "app:1", "resources": {"requests": requests}}]


def _pod(name: str, requests: dict[str, str], node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": _container(requests)}
    if requests.get("example.com/gpu"):
        spec["containers"][0]["resources"]["limits"] = {
            "example.com/gpu": requests["example.com/gpu"]
        }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def write_scenario(folder: Path) -> Path:
    documents = [
        _node("node-a1", "zone-a"),
        _node("node-a2", "zone-a"),
        _node("node-b1", "zone-b", {"example.com/gpu": "2"}),
        _node("node-b2", "zone-b"),
        _pod("base", {"cpu": "1"}, node="node-a1"),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": _container({"cpu": "1", "memory": "1Gi"})},
                },
            },
        },
        _pod("trainer", {"cpu": "1", "example.com/gpu": "1"}),
        _pod("huge", {"cpu": "100"}),
    ]
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    return path
