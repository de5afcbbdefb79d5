"""Coscheduling: scheduler-plugins' semantics, and no partial reservations."""

from __future__ import annotations

import asyncio

import pytest

from kubesched.config.plugin_args import plugin_args_errors
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.plugins.coscheduling import Coscheduling
from kubesched.plugins.coscheduling.args import ArgsError, coscheduling_args
from kubesched.testing import make_node, make_pod
from tests.plugins.coscheduling.gang_helpers import GPU, Env, gang_pods, group, run


def test_args_defaults_are_scheduler_plugins_v1_defaults() -> None:
    args = coscheduling_args(None)
    assert (args.permit_waiting_time_seconds, args.pod_group_backoff_seconds) == (60, 0)
    assert args.pod_group_reject_percentage == 10


def test_args_are_validated_with_upstream_texts_under_the_entry_path() -> None:
    errors = plugin_args_errors(
        "Coscheduling",
        {"permitWaitingTimeSeconds": -1, "podGroupRejectPercentage": 101},
        "profiles[0].pluginConfig[0].args",
    )
    assert errors == [
        "profiles[0].pluginConfig[0].args.permitWaitingTimeSeconds: Invalid value: -1: "
        "must be greater than 0",
        "profiles[0].pluginConfig[0].args.podGroupRejectPercentage: Invalid value: 101: "
        "must be between 0 and 100",
    ]
    with pytest.raises(ArgsError, match="podGroupBackoffSeconds"):
        coscheduling_args({"podGroupBackoffSeconds": -5})


def test_args_refuse_unknown_fields() -> None:
    with pytest.raises(ArgsError, match="permitWaitingTime"):
        coscheduling_args({"permitWaitingTime": 5})


# --- QueueSort ----------------------------------------------------------------------


def test_less_keeps_a_group_together_behind_its_first_pod() -> None:
    plugin = Coscheduling()
    a0, a1 = (
        QueuedPodInfo(PodInfo(p), ts) for p, ts in zip(gang_pods("a", 2), (1.0, 5.0), strict=True)
    )
    single = QueuedPodInfo(PodInfo(make_pod("single", cpu="1")), 3.0)
    # a-1 came in after the single pod, but its group came in (with a-0) before it.
    assert plugin.less(a0, single)
    assert plugin.less(a1, single)
    assert plugin.less(a0, a1) and not plugin.less(a1, a0)  # then by pod key


def test_less_puts_priority_first() -> None:
    plugin = Coscheduling()
    low = QueuedPodInfo(PodInfo(gang_pods("a", 1, priority=1)[0]), 1.0)
    high = QueuedPodInfo(PodInfo(make_pod("high", priority=5)), 9.0)
    assert plugin.less(high, low)


# --- scheduling -----------------------------------------------------------------------


def test_a_group_of_eight_is_bound_whole() -> None:
    env = Env(2, [group("train", 8)], gang_pods("train", 8))
    run(env)
    assert len(env.bound("train")) == 8
    status = env.listers.pod_groups.get("default/train")
    assert status is not None and status.status.phase == "Scheduling"


def test_a_group_of_eight_where_seven_fit_reserves_nothing() -> None:
    env = Env(0, [group("train", 8)], gang_pods("train", 8))
    env.cluster.add_node(make_node("gpu-0", cpu="32", extra={GPU: 4}))
    env.cluster.add_node(make_node("gpu-1", cpu="32", extra={GPU: 3}))
    run(env)
    assert env.bound("train") == []
    assert env.reserved() == 0
    assert len(env.sched.waiting_pods) == 0
    outcome = env.sched.last_failures["default/train-0"][1]
    assert "podGroup default/train cannot be placed whole: only 7 of the 8" in outcome


def test_too_few_pods_for_min_member_is_refused_with_upstream_text() -> None:
    env = Env(2, [group("train", 4)], gang_pods("train", 3))
    run(env)
    assert env.bound("train") == []
    assert env.sched.last_failures["default/train-0"][1].startswith(
        "0/2 nodes are available: pre-filter pod train-0 cannot find enough sibling pods, "
        "current pods number: 3, minMember of group: 4."
    )


def test_min_resources_gap_is_refused() -> None:
    env = Env(2, [group("train", 2, min_resources={GPU: "9"})], gang_pods("train", 2))
    run(env)
    assert env.bound("train") == []
    assert "resource gap: map[nvidia.com/gpu:1]" in env.sched.last_failures["default/train-0"][1]


def test_competing_gangs_the_one_that_fits_completes_the_other_holds_nothing() -> None:
    # 18 GPUs; two gangs of 10 (1 GPU each) whose pods come in interleaved by priority.
    # Without the trial placement both reserve 9, and each one's 10th pod, one short
    # (within podGroupRejectPercentage's 10%), leaves its group waiting: both wait
    # until they time out, and again after. With it, the group that stops fitting
    # is refused and released, and the other completes.
    a = gang_pods("a", 10)
    b = gang_pods("b", 10)
    for i, pod in enumerate(a):
        pod.spec.priority = 100 - 2 * i
    for i, pod in enumerate(b):
        pod.spec.priority = 99 - 2 * i
    env = Env(2, [group("a", 10), group("b", 10)], a + b, gpus=9)
    run(env)
    bound_a, bound_b = env.bound("default/a-"), env.bound("default/b-")
    assert sorted([len(bound_a), len(bound_b)]) == [0, 10]
    assert env.reserved() == 10
    assert len(env.sched.waiting_pods) == 0
    loser = "b" if bound_a else "a"
    assert "cannot be placed whole" in env.sched.last_failures[f"default/{loser}-0"][1]


def test_a_timeout_releases_every_reservation_of_the_group() -> None:
    async def scenario() -> Env:
        env = Env(2, [group("train", 3, timeout=5)], gang_pods("train", 3))
        for _ in range(2):  # two of the three reserved, waiting at Permit
            qpi = env.sched.queue.pop_nowait()
            assert qpi is not None
            env.sched.schedule_one(qpi)
        await asyncio.sleep(0)
        assert len(env.sched.waiting_pods) == 2 and env.reserved() == 2
        # The third goes away (its Job was scaled down): the two wait in vain.
        third = next(k for k in env.cluster.pods if env.sched.waiting_pods.get(k) is None)
        env.cluster.remove_pod(third)
        env.clock.advance_to(env.clock.now() + 5)
        for _ in range(10):
            await asyncio.sleep(0)
        return env

    env = asyncio.run(scenario())
    assert env.bound("train") == []
    assert env.reserved() == 0
    assert len(env.sched.waiting_pods) == 0
    reasons = {env.sched.last_failures[k][1] for k in env.cluster.pods}
    assert reasons <= {
        "rejected due to timeout after waiting 5s at plugin Coscheduling",
        "rejection in Unreserve",
    }, reasons


def test_pods_without_a_group_are_left_alone() -> None:
    env = Env(1, [], [make_pod("solo", cpu="1")])
    run(env)
    assert env.bound("solo") == ["default/solo"]


def test_a_labelled_pod_whose_group_is_missing_is_refused_at_permit() -> None:
    env = Env(1, [], gang_pods("ghost", 1))
    run(env)
    assert env.bound("ghost") == []
    assert env.sched.last_failures["default/ghost-0"][1] == "PodGroup not found"


def test_nothing_is_kept_about_a_group_once_it_and_its_pods_are_gone() -> None:
    env = Env(0, [group("train", 8)], gang_pods("train", 8))
    env.cluster.add_node(make_node("gpu-0", cpu="32", extra={GPU: 4}))
    run(env)  # refused: only 4 GPUs
    plugin = env.sched.frameworks["default-scheduler"].instances["Coscheduling"]
    assert isinstance(plugin, Coscheduling)
    assert "default/train" in plugin._failed_at
    for key in list(env.cluster.pods):
        env.cluster.remove_pod(key)
    env.listers.pod_groups.delete_group("default/train")
    kept = (plugin._permitted, plugin._plans, plugin._group_time, plugin._failed_at)
    assert all("default/train" not in k for k in kept)
