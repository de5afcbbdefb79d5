"""A cluster, node pools and a SPEC written as files, for the sweep's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

POOLS = {
    "apiVersion": "kubesched.io/v1alpha1",
    "kind": "NodePools",
    "pools": [
        {
            "name": "small",
            "price": 1.0,
            "max": 8,
            "node": {"status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}},
        },
        {
            "name": "big",
            "price": 3.0,
            "max": 4,
            "node": {"status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}},
        },
    ],
}


def node(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]
        },
    }


def write_sweep(
    folder: Path,
    spec: dict[str, Any],
    *,
    nodes: int = 2,
    pods: int = 12,
    pod_cpu: str = "1",
) -> Path:
    """NODES nodes of 4 cpu and PODS pending pods of POD_CPU in cluster.yaml, the two
    pools in pools.yaml, and SPEC (its cluster and nodePools filled in) in sweep.yaml."""
    docs = [node(f"node-{i}", "4") for i in range(nodes)]
    docs += [pod(f"p-{i:03d}", pod_cpu) for i in range(pods)]
    (folder / "cluster.yaml").write_text(yaml.safe_dump_all(docs))
    (folder / "pools.yaml").write_text(yaml.safe_dump(POOLS))
    document = {
        "apiVersion": "kubesched.io/v1alpha1",
        "kind": "Sweep",
        "cluster": ["cluster.yaml"],
        "nodePools": "pools.yaml",
        **spec,
    }
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(document))
    return path
