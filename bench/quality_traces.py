"""Packing traces for `make bench-quality`: clusters where greedy leaves pods pending.

No public cluster trace is installable from a package registry, so the traces
are generated, each from a seed. The shapes are ours, chosen to exercise what
the issue names: mixed cpu, memory and GPU shapes, priorities, anti-affinity and
spread; `mixed-large` draws request sizes from a heavy-tailed (log-normal)
distribution, the shape of the task-size distributions reported for Google's
Borg traces (many small tasks, a few large ones); its parameters are ours, not
fitted to a trace.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Node, Pod
from kubesched.testing import make_node, make_pod

GPU = "nvidia.com/gpu"


@dataclass(slots=True)
class Trace:
    name: str
    nodes: list[Node]
    pods: list[Pod]  # pending, in creation order
    fits: bool = False  # every pod fits: the engine then minimises nodes used


def _zone(i: int, zones: int = 3) -> dict[str, str]:
    return {"topology.kubernetes.io/zone": f"zone-{i % zones}", "kubernetes.io/hostname": ""}


def _nodes(count: int, prefix: str, **shape: Any) -> list[Node]:
    out = []
    for i in range(count):
        name = f"{prefix}-{i:03d}"
        labels = _zone(i)
        labels["kubernetes.io/hostname"] = name
        out.append(make_node(name, labels=labels, **shape))
    return out


def fragment_cpu(seed: int) -> Trace:
    """Small pods first spread over every node by LeastAllocated, then large ones
    that no node has room for any more."""
    nodes = _nodes(50, "n", cpu="8", memory="32Gi")
    pods = [make_pod(f"small-{i}", cpu="1", memory="2Gi") for i in range(200)]
    pods += [make_pod(f"big-{i}", cpu="6", memory="8Gi") for i in range(50)]
    return Trace("fragment-cpu", nodes, pods)


def mixed_gpu(seed: int) -> Trace:
    """CPU pods land on the roomy GPU nodes and leave the GPU pods no cpu there."""
    rng = random.Random(seed)
    nodes = _nodes(20, "gpu", cpu="32", memory="128Gi", extra={GPU: 4})
    nodes += _nodes(40, "cpu", cpu="16", memory="64Gi")
    pods = []
    for i in range(220):
        cpu, mem = rng.choice([(2, 4), (4, 8), (4, 16), (8, 16)])
        pods.append(make_pod(f"web-{i}", cpu=str(cpu), memory=f"{mem}Gi"))
    for i in range(40):
        gpus = rng.choice([1, 2, 2, 4])
        pods.append(
            make_pod(f"train-{i}", cpu=str(6 * gpus), memory=f"{16 * gpus}Gi", requests={GPU: gpus})
        )
    return Trace("mixed-gpu", nodes, pods)


def priorities(seed: int) -> Trace:
    """Three priorities, random shapes: greedy fills by priority, fragmenting."""
    rng = random.Random(seed)
    nodes = _nodes(40, "n", cpu="16", memory="64Gi")
    pods = []
    for i in range(300):
        priority = rng.choice([0, 0, 100, 1000])
        cpu = rng.choice([1, 2, 3, 5, 7, 10])
        pods.append(
            make_pod(f"p{priority}-{i}", cpu=str(cpu), memory=f"{cpu * 3}Gi", priority=priority)
        )
    return Trace("priorities", nodes, pods)


def _anti(app: str) -> dict[str, Any]:
    return {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": app}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    }


def anti_affinity(seed: int) -> Trace:
    """Replicas that must not share a node, beside batch pods that fill nodes."""
    rng = random.Random(seed)
    nodes = _nodes(30, "n", cpu="8", memory="32Gi")
    pods = []
    for i in range(90):
        cpu = rng.choice([1, 2, 3])
        pods.append(make_pod(f"batch-{i}", cpu=str(cpu), memory=f"{cpu * 2}Gi"))
    for app in ("db", "cache", "queue"):
        for i in range(25):
            pods.append(
                make_pod(f"{app}-{i}", cpu="3", memory="6Gi", labels={"app": app}, spec=_anti(app))
            )
    return Trace("anti-affinity", nodes, pods)


def spread(seed: int) -> Trace:
    """Zone-spread replicas (held at greedy's placement) among shapes that fragment."""
    nodes = _nodes(30, "n", cpu="8", memory="32Gi")
    pods = [make_pod(f"small-{i}", cpu="1", memory="2Gi") for i in range(120)]
    constraint = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "spread"}},
    }
    pods += [
        make_pod(
            f"spread-{i}",
            cpu="1",
            memory="1Gi",
            labels={"app": "spread"},
            spec={"topologySpreadConstraints": [constraint]},
        )
        for i in range(15)
    ]
    pods += [make_pod(f"big-{i}", cpu="6", memory="8Gi") for i in range(30)]
    return Trace("spread", nodes, pods)


def mixed_large(seed: int) -> Trace:
    """1,000 pods on 500 nodes of three sizes, log-normal request sizes."""
    rng = random.Random(seed)
    nodes = _nodes(200, "s", cpu="8", memory="32Gi")
    nodes += _nodes(200, "m", cpu="16", memory="64Gi")
    nodes += _nodes(100, "l", cpu="32", memory="128Gi", extra={GPU: 8})
    pods = []
    for i in range(1000):
        cpu = min(max(int(rng.lognormvariate(1.4, 0.8)), 1), 24)
        mem = min(max(int(cpu * rng.choice([1, 2, 4, 8])), 1), 100)
        extra = {GPU: rng.choice([1, 2, 4])} if rng.random() < 0.06 else None
        priority = 1000 if rng.random() < 0.2 else 0
        pods.append(
            make_pod(f"t-{i}", cpu=str(cpu), memory=f"{mem}Gi", requests=extra, priority=priority)
        )
    return Trace("mixed-large", nodes, pods)


def fits(seed: int) -> Trace:
    """Everything fits; greedy spreads, the engine packs (objective nodes)."""
    rng = random.Random(seed)
    nodes = _nodes(60, "n", cpu="16", memory="64Gi")
    pods = []
    for i in range(200):
        cpu = rng.choice([1, 2, 4])
        pods.append(make_pod(f"f-{i}", cpu=str(cpu), memory=f"{cpu * 4}Gi"))
    return Trace("fits-pack", nodes, pods, fits=True)


TRACES: dict[str, Callable[[int], Trace]] = {
    "fragment-cpu": fragment_cpu,
    "mixed-gpu": mixed_gpu,
    "priorities": priorities,
    "anti-affinity": anti_affinity,
    "spread": spread,
    "mixed-large": mixed_large,
    "fits-pack": fits,
}
