"""NodeResourcesFit and NodeResourcesBalancedAllocation: the helpers the tests of this
package share (a NodeTable with extended-resource columns, Filter and Score run over
named nodes, a RequestedToCapacityRatio Fit) and the resource-name classes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import NodeVerdicts
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.types import PodInfo
from kubesched.plugins.noderesources import NodeResourcesFit
from kubesched.plugins.noderesources.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
)
from kubesched.testing import make_pod


def rows_of(table: NodeTable, *names: str) -> np.ndarray[Any, np.dtype[np.intp]]:
    return np.array([table.row_of(n) for n in names], dtype=np.intp)


def run_filter(
    plugin: NodeResourcesFit, pod: Pod, table: NodeTable, *names: str
) -> tuple[NodeVerdicts, dict[str, tuple[int, list[str]]]]:
    """Filter the named nodes; per node: (code, reasons in order)."""
    state = CycleState()
    info = PodInfo(pod)
    result, status = plugin.pre_filter(state, info, table)
    assert result is None and status.is_success()
    verdicts = plugin.filter(state, info, table, rows_of(table, *names))
    per_node = {
        name: (int(verdicts.codes[i]), [r for r, mask in verdicts.reasons if mask[i]])
        for i, name in enumerate(names)
    }
    return verdicts, per_node


def run_score(plugin: Any, pod: Pod, table: NodeTable, *names: str) -> list[int]:
    state = CycleState()
    info = PodInfo(pod)
    rows = rows_of(table, *names)
    status = plugin.pre_score(state, info, table, rows)
    assert status.is_success()
    return [int(s) for s in plugin.score(state, info, table, rows)]


def placed(name: str, node: str, **kwargs: Any) -> Pod:
    return make_pod(name, node_name=node, **kwargs)


def make_table(nodes: list[Node], pods: list[Pod] | tuple[Pod, ...] = ()) -> NodeTable:
    """testing.make_table, with the extended-resource columns made up front:
    NodeTable cannot yet take a resource it has not seen while writing a row
    (it indexes the array that resource_column() is about to replace)."""
    table = NodeTable()
    for node in nodes:
        for name in node.status.allocatable:
            table.resource_column(name)
    for pod in pods:
        for name in PodInfo(pod).requests:
            table.resource_column(name)
    for node in nodes:
        table.upsert_node(node)
    for pod in pods:
        row = table.row_of(pod.spec.node_name)
        if row is not None:
            table.add_pod(PodInfo(pod), row)
    return table


def rtcr(
    shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None
) -> NodeResourcesFit:
    strategy: dict[str, Any] = {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": u, "score": s} for u, s in shape]},
    }
    if resources is not None:
        strategy["resources"] = resources
    return NodeResourcesFit({"scoringStrategy": strategy})


# --- resource names --------------------------------------------------------------------


def test_resource_name_classes() -> None:
    assert is_extended_resource_name("nvidia.com/gpu")
    assert is_extended_resource_name("example.com/foo")
    assert not is_extended_resource_name("cpu")
    assert not is_extended_resource_name("kubernetes.io/something")
    assert not is_extended_resource_name("hugepages-2Mi")
    assert not is_extended_resource_name("requests.example.com/foo")
    assert not is_extended_resource_name("Bad_Domain/x")
    assert is_scalar_resource_name("hugepages-2Mi")
    assert is_scalar_resource_name("attachable-volumes-aws-ebs")
    assert is_scalar_resource_name("kubernetes.io/something")
    assert is_scalar_resource_name("nvidia.com/gpu")
    assert not is_scalar_resource_name("pods")
    assert not is_scalar_resource_name("foo")
