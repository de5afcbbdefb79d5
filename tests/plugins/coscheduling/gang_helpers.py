"""What the Coscheduling tests share: GPU nodes, gangs of pods, their PodGroups, and a
Scheduler over an in-memory cluster with scheduler-plugins' documented configuration."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kubesched.api.objects import Node, ObjectMeta, Pod
from kubesched.api.pod_groups import POD_GROUP_LABEL, PodGroup, PodGroupSpec
from kubesched.framework.clock import SimClock
from kubesched.framework.handle import Listers
from kubesched.framework.profile import DEFAULT_MULTI_POINT, PluginRef, PluginSet, ProfileConfig
from kubesched.scheduler import Scheduler
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod

GPU = "nvidia.com/gpu"


def group(name: str, min_member: int, timeout: int | None = None, **spec: object) -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodGroupSpec(min_member=min_member, schedule_timeout_seconds=timeout, **spec),  # type: ignore[arg-type]
    )


def gang_pods(name: str, count: int, gpus: int = 1, priority: int | None = None) -> list[Pod]:
    return [
        make_pod(
            f"{name}-{i}",
            cpu="1",
            requests={GPU: gpus},
            labels={POD_GROUP_LABEL: name},
            priority=priority,
        )
        for i in range(count)
    ]


def gpu_nodes(count: int, gpus: int = 4) -> dict[str, Node]:
    return {f"gpu-{i}": make_node(f"gpu-{i}", cpu="32", extra={GPU: gpus}) for i in range(count)}


def coscheduling_profile(args: dict[str, object] | None = None) -> ProfileConfig:
    """scheduler-plugins' documented configuration: Coscheduling everywhere, the only
    queue sort."""
    return ProfileConfig(
        plugins={
            "multiPoint": PluginSet([*DEFAULT_MULTI_POINT, PluginRef("Coscheduling")]),
            "queueSort": PluginSet([PluginRef("Coscheduling")], [PluginRef("*")]),
        },
        plugin_config={"Coscheduling": args or {"permitWaitingTimeSeconds": 10}},
    )


class Env:
    def __init__(
        self, nodes: int, groups: Sequence[PodGroup], pods: Sequence[Pod], gpus: int = 4
    ) -> None:
        self.clock = SimClock()
        self.cluster = InMemoryCluster(nodes=gpu_nodes(nodes, gpus))
        for pod in pods:
            self.cluster.pods[pod.key] = pod
        self.listers = Listers()
        for g in groups:
            self.listers.pod_groups.upsert_group(g)
        self.sched = Scheduler(
            [coscheduling_profile()], self.cluster, clock=self.clock, seed=1, listers=self.listers
        )
        self.cluster.watch(self.sched)

    def bound(self, prefix: str) -> list[str]:
        return sorted(k for k, p in self.cluster.pods.items() if p.spec.node_name and prefix in k)

    def reserved(self) -> int:
        """GPUs requested on the scheduler's node table (bound, assumed or waiting)."""
        table = self.sched.table
        column = table.resource_index[GPU]
        return int(table.requested[: len(table), column].sum())


def run(env: Env) -> None:
    asyncio.run(run_until_quiet(env.sched, env.clock))
