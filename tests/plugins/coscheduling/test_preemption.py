"""Gang-aware preemption: a gang preempts only if it then fits whole, and the pods of a
gang are victims whole or not at all."""

from __future__ import annotations

from kubesched.api.objects import Pod
from kubesched.testing import make_pod
from tests.plugins.coscheduling.gang_helpers import (
    GPU,
    Env,
    gang_pods,
    group,
    run,
)


def placed(pods: list[Pod], node: str, priority: int = 0) -> list[Pod]:
    for pod in pods:
        pod.spec.node_name = node
        pod.spec.priority = priority
        pod.metadata.uid = f"uid-{pod.metadata.name}"
    return pods


def singles(count: int, node: str, priority: int = 0) -> list[Pod]:
    return placed(
        [make_pod(f"single-{node}-{i}", cpu="1", requests={GPU: 1}) for i in range(count)],
        node,
        priority,
    )


def high_gang(size: int) -> list[Pod]:
    pods = gang_pods("high", size, priority=100)
    for pod in pods:
        pod.metadata.uid = f"uid-{pod.metadata.name}"
    return pods


def test_a_gang_preempts_the_single_pods_in_its_way_and_is_bound_whole() -> None:
    env = Env(2, [group("high", 8)], singles(3, "gpu-0") + singles(3, "gpu-1") + high_gang(8))
    run(env)
    assert len(env.bound("high")) == 8
    assert sorted(env.cluster.evicted) == sorted(
        [f"default/single-gpu-{n}-{i}" for n in (0, 1) for i in range(3)]
    )
    preempted = [e for e in env.cluster.events if e.reason == "Preempted"]
    assert preempted and all("for its PodGroup default/high" in e.message for e in preempted)


def test_a_gang_victim_is_taken_whole_even_when_part_would_do() -> None:
    # gpu-0 runs a low gang of 4; gpu-1 is free. The high gang of 6 needs 2 more GPUs:
    # the low gang goes whole, not 2 of its pods.
    low = placed(gang_pods("low", 4), "gpu-0")
    env = Env(2, [group("low", 4), group("high", 6)], low + high_gang(6))
    run(env)
    assert sorted(env.cluster.evicted) == [f"default/low-{i}" for i in range(4)]
    assert len(env.bound("high")) == 6
    assert env.bound("default/low-") == []


def test_fewest_victims_more_important_units_are_reprieved() -> None:
    # Two free GPUs on gpu-1; the gang of 4 needs 2 more: of gpu-1's two single pods
    # (priority 1 and 5) and gpu-0's four (priority 50), the two on gpu-1 go.
    pods = singles(4, "gpu-0", priority=50) + singles(1, "gpu-1", 1)
    pods += placed([make_pod("mid", cpu="1", requests={GPU: 1})], "gpu-1", 5)
    env = Env(2, [group("high", 4)], pods + high_gang(4))
    run(env)
    assert sorted(env.cluster.evicted) == ["default/mid", "default/single-gpu-1-0"]
    assert len(env.bound("high")) == 4


def test_no_preemption_when_even_evicting_everything_the_gang_does_not_fit() -> None:
    env = Env(2, [group("high", 9)], singles(4, "gpu-0") + singles(4, "gpu-1") + high_gang(9))
    run(env)
    assert env.cluster.evicted == []
    assert env.bound("high") == []
    assert env.reserved() == 8  # the single pods, untouched


def test_a_single_pod_never_preempts_part_of_a_gang() -> None:
    low = placed(gang_pods("low", 4), "gpu-0") + placed(gang_pods("low2", 4), "gpu-1")
    urgent = make_pod("urgent", cpu="1", requests={GPU: 1}, priority=1000)
    env = Env(2, [group("low", 4), group("low2", 4)], [*low, urgent])
    run(env)
    assert env.cluster.evicted == []
    assert env.bound("urgent") == []
