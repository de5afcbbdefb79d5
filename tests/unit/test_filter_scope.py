"""Filters declare what their verdict reads (FilterScope); the framework and
DefaultPreemption batch what-if runs only on what the filters declare."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    FilterPlugin,
    FilterScope,
    NodeFilterPlugin,
    NodeVerdicts,
    declared_filter_scope,
)
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.registry import register
from kubesched.framework.status import Status
from kubesched.framework.types import PodInfo
from kubesched.plugins.noderesources import NodeResourcesFit
from kubesched.plugins.nodevolumelimits import NodeVolumeLimits
from kubesched.testing import make_node, make_pod
from tests.plugins.defaultpreemption.test_defaultpreemption import pod, setup


class _Passes(FilterPlugin):
    def filter(self, state: CycleState, pod: PodInfo, nodes: Any, rows: Any) -> NodeVerdicts:
        return NodeVerdicts.passing(len(rows))


@register
class LabelOnly(_Passes):
    """A user filter that reads the Node object only, and says so."""

    name = "test-LabelOnly"

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        return FilterScope.NODE


@register
class Silent(_Passes):
    """A user filter that declares nothing."""

    name = "test-Silent"


class FitLookingElsewhere(NodeResourcesFit):
    """Overrides Fit's filter and does not declare what the new code reads."""

    def filter(self, state: CycleState, pod: PodInfo, nodes: Any, rows: Any) -> NodeVerdicts:
        return super().filter(state, pod, nodes, rows)


class FitDeclaredAgain(FitLookingElsewhere):
    def filter_scope(self, pod: PodInfo) -> FilterScope:
        return FilterScope.AMOUNTS


class OneNode(NodeFilterPlugin):
    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status()


def test_builtin_and_user_declarations() -> None:
    incoming = PodInfo(make_pod("p", cpu="1"))
    assert declared_filter_scope(NodeResourcesFit(), incoming) is FilterScope.AMOUNTS
    assert declared_filter_scope(LabelOnly(), incoming) is FilterScope.NODE
    assert declared_filter_scope(Silent(), incoming) is FilterScope.CLUSTER
    assert declared_filter_scope(OneNode(), incoming) is FilterScope.CLUSTER
    # An inherited declaration says nothing about an overriding filter.
    assert declared_filter_scope(FitLookingElsewhere(), incoming) is FilterScope.CLUSTER
    assert declared_filter_scope(FitDeclaredAgain(), incoming) is FilterScope.AMOUNTS


def test_node_volume_limits_reads_the_row_only_for_pods_with_volumes() -> None:
    plain = PodInfo(make_pod("p", cpu="1"))
    with_volume = PodInfo(
        pod(
            "v",
            spec={
                "containers": [{"name": "c"}],
                "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}],
            },
        )
    )
    limits = NodeVolumeLimits()
    assert declared_filter_scope(limits, plain) is FilterScope.NODE
    assert declared_filter_scope(limits, with_volume) is FilterScope.ROW


@pytest.mark.parametrize(
    ("extra", "batched"),
    [
        ([], True),
        (["test-LabelOnly"], True),
        (["test-Silent"], False),
    ],
)
def test_preemption_batches_only_over_declared_scopes(extra: list[str], batched: bool) -> None:
    env = setup([make_node(f"n{i}", cpu="2") for i in range(3)], extra_plugins=extra)
    incoming = PodInfo(pod("incoming", priority=3, cpu="2"))
    state = CycleState()
    _, status = env.fw.run_pre_filter(state, incoming, env.table)
    assert status.is_success()
    scopes = env.fw.filter_scopes(state, incoming)
    assert scopes is not None
    assert {plugin.name: scope for plugin, scope in scopes}["NodeResourcesFit"] == (
        FilterScope.AMOUNTS
    )
    assert env.plugin.dry_run.amounts_only(state, incoming) is batched
