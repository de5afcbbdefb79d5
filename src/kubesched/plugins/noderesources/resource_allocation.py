"""What the resource scoring strategies share (resource_allocation.go and friends upstream).

Every strategy looks at a list of resources with weights. For each candidate
node and resource it needs three amounts: the node's allocatable, what is
already allocated on it, and that plus the incoming pod's request. They are
built here as (resource x node) int64 matrices, so a strategy scores every
node with a few numpy expressions.

Integer arithmetic follows Go: int64 values, division truncating toward zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api.requests import non_zero_requests
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import MAX_NODE_SCORE
from kubesched.framework.state.node_table import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    IntArray,
    NodeTable,
    Rows,
)
from kubesched.framework.types import PodInfo
from kubesched.plugins.noderesources.args import MAX_UTILIZATION, ResourceSpec
from kubesched.plugins.noderesources.resources import is_scalar_resource_name

FloatArray = npt.NDArray[np.float64]


# --- int64 helpers -----------------------------------------------------------------------


def go_div(a: IntArray, b: IntArray | int) -> IntArray:
    """Go's integer division: the quotient truncated toward zero."""
    q: IntArray = np.floor_divide(a, b)
    fix = (a - q * b != 0) & ((a < 0) ^ (np.asarray(b) < 0))
    out: IntArray = q + fix
    return out


def go_round(x: FloatArray) -> IntArray:
    """int64(math.Round(x)): halves away from zero."""
    magnitude = np.abs(x)
    whole = np.floor(magnitude)
    rounded = whole + ((magnitude - whole) >= 0.5)
    out: IntArray = (np.sign(x) * rounded).astype(np.int64)
    return out


# --- amounts -----------------------------------------------------------------------------


def pod_request_list(
    pod: PodInfo, resources: Sequence[ResourceSpec], use_requested: bool
) -> list[int]:
    """The pod's request for each resource. Without `use_requested`, cpu and memory
    count containers that state none as 100m / 200Mi (the non-zero requests)."""
    out = []
    non_zero = (pod.non_zero_cpu, pod.non_zero_memory)
    if not use_requested and pod.pod.spec.resources is not None:
        # Fit's scorer ignores pod-level resources for the incoming pod (upstream
        # builds it without the PodLevelResources gate), unlike the node's totals.
        non_zero = non_zero_requests(pod.pod, pod_level=False)
    for spec in resources:
        if not use_requested and spec.name == "cpu":
            out.append(non_zero[0])
        elif not use_requested and spec.name == "memory":
            out.append(non_zero[1])
        else:
            out.append(pod.requests.get(spec.name, 0))
    return out


@dataclass(slots=True)
class NodeAmounts:
    """(resource x node) matrices; a resource a node has none of is all zero there."""

    requested: IntArray  # allocated + the pod's request
    allocated: IntArray
    allocatable: IntArray


def node_amounts(
    table: NodeTable,
    rows: Rows,
    resources: Sequence[ResourceSpec],
    pod_requests: Sequence[int],
    use_requested: bool,
) -> NodeAmounts:
    """Allocatable, allocated and requested (with the pod) per resource and node.

    cpu and memory use the nodes' non-zero requested amounts unless
    `use_requested`; ephemeral-storage and scalar resources always use the plain
    requested amounts. A scalar resource the pod does not request is left out, as
    is any resource the scheduler does not track (neither base nor scalar) and,
    node by node, any resource with zero allocatable.
    """
    shape = (len(resources), len(rows))
    requested = np.zeros(shape, dtype=np.int64)
    allocated = np.zeros(shape, dtype=np.int64)
    allocatable = np.zeros(shape, dtype=np.int64)
    for i, spec in enumerate(resources):
        name, pod_request = spec.name, pod_requests[i]
        scalar = is_scalar_resource_name(name)
        if pod_request == 0 and scalar:
            continue
        if name == "cpu":
            alloc = table.allocatable[rows, CPU]
            used = (
                table.requested[rows, CPU] if use_requested else table.non_zero_requested[rows, 0]
            )
        elif name == "memory":
            alloc = table.allocatable[rows, MEMORY]
            used = (
                table.requested[rows, MEMORY]
                if use_requested
                else table.non_zero_requested[rows, 1]
            )
        elif name == "ephemeral-storage":
            alloc = table.allocatable[rows, EPHEMERAL_STORAGE]
            used = table.requested[rows, EPHEMERAL_STORAGE]
        elif scalar and name in table.resource_index:
            col = table.resource_index[name]
            alloc = table.allocatable[rows, col]
            used = table.requested[rows, col]
        else:
            continue
        has = alloc != 0
        allocatable[i] = alloc
        allocated[i] = np.where(has, used, 0)
        requested[i] = np.where(has, used + pod_request, 0)
    return NodeAmounts(requested, allocated, allocatable)


# --- strategies --------------------------------------------------------------------------


def _weights(resources: Sequence[ResourceSpec]) -> IntArray:
    return np.array([spec.weight for spec in resources], dtype=np.int64).reshape(-1, 1)


def _weighted_mean(scores: IntArray, counted: npt.NDArray[np.bool_], weights: IntArray) -> IntArray:
    """sum(score * weight) / sum(weight) over the counted entries; 0 when none count."""
    node_score = np.where(counted, scores * weights, 0).sum(axis=0)
    weight_sum = np.where(counted, weights, 0).sum(axis=0)
    return np.where(
        weight_sum == 0, 0, go_div(node_score, np.where(weight_sum == 0, 1, weight_sum))
    )


def least_allocated(amounts: NodeAmounts, resources: Sequence[ResourceSpec]) -> IntArray:
    """Per resource (capacity - requested) * 100 / capacity, 0 when over capacity."""
    alloc, req = amounts.allocatable, amounts.requested
    has = alloc != 0
    safe = np.where(has, alloc, 1)
    scores = np.where(req > alloc, 0, go_div((alloc - req) * MAX_NODE_SCORE, safe))
    return _weighted_mean(scores, has, _weights(resources))


def most_allocated(amounts: NodeAmounts, resources: Sequence[ResourceSpec]) -> IntArray:
    """Per resource requested * 100 / capacity, requested capped at capacity."""
    alloc = amounts.allocatable
    has = alloc != 0
    safe = np.where(has, alloc, 1)
    req = np.minimum(amounts.requested, alloc)
    scores = go_div(req * MAX_NODE_SCORE, safe)
    return _weighted_mean(scores, has, _weights(resources))


@dataclass(frozen=True, slots=True)
class ShapePoint:
    utilization: int
    score: int


def broken_linear(shape: Sequence[ShapePoint], p: IntArray) -> IntArray:
    """helper.BuildBrokenLinearFunction: the first score below the first point,
    the last score past the last one, straight lines (integer math) in between."""
    out = np.full(p.shape, shape[-1].score, dtype=np.int64)
    done = np.zeros(p.shape, dtype=np.bool_)
    for i, point in enumerate(shape):
        hit = ~done & (p <= point.utilization)
        if i == 0:
            value: IntArray | int = point.score
        else:
            prev = shape[i - 1]
            value = prev.score + go_div(
                (point.score - prev.score) * (p - prev.utilization),
                point.utilization - prev.utilization,
            )
        out = np.where(hit, value, out)
        done |= hit
    return out


def requested_to_capacity_ratio(
    amounts: NodeAmounts, resources: Sequence[ResourceSpec], shape: Sequence[ShapePoint]
) -> IntArray:
    """The shape applied to each resource's utilization (percent, 100 when over
    capacity); resources scoring 0 drop out; the weighted mean is rounded."""
    alloc, req = amounts.allocatable, amounts.requested
    has = alloc != 0
    safe = np.where(has, alloc, 1)
    utilization = np.where(req > alloc, MAX_UTILIZATION, go_div(req * MAX_UTILIZATION, safe))
    scores = broken_linear(shape, utilization)
    counted = has & (scores > 0)
    weights = _weights(resources)
    node_score = np.where(counted, scores * weights, 0).sum(axis=0)
    weight_sum = np.where(counted, weights, 0).sum(axis=0)
    mean = node_score / np.where(weight_sum == 0, 1, weight_sum)
    return np.where(weight_sum == 0, 0, go_round(mean))


def balanced_resource_score(requested: IntArray, allocatable: IntArray) -> IntArray:
    """int64((1 - std) * 100) over the fractions requested/allocatable (capped at 1)
    of the resources a node has: |f1 - f2| / 2 for two, the population standard
    deviation for more, 0 for fewer. Floats are summed in resource order."""
    has = allocatable != 0
    fractions = requested / np.where(has, allocatable, 1)
    fractions = np.where(fractions > 1, 1.0, fractions)
    count = has.sum(axis=0)
    nodes = requested.shape[1]
    total = np.zeros(nodes, dtype=np.float64)
    first = np.zeros(nodes, dtype=np.float64)
    second = np.zeros(nodes, dtype=np.float64)
    seen = np.zeros(nodes, dtype=np.int64)
    for i in range(requested.shape[0]):
        valid = has[i]
        total = np.where(valid, total + fractions[i], total)
        first = np.where(valid & (seen == 0), fractions[i], first)
        second = np.where(valid & (seen == 1), fractions[i], second)
        seen += valid
    std_two = np.abs((first - second) / 2)
    safe_count = np.where(count == 0, 1, count).astype(np.float64)
    mean = total / safe_count
    squares = np.zeros(nodes, dtype=np.float64)
    for i in range(requested.shape[0]):
        deviation = fractions[i] - mean
        squares = np.where(has[i], squares + deviation * deviation, squares)
    std_many = np.sqrt(squares / safe_count)
    std = np.where(count == 2, std_two, np.where(count > 2, std_many, 0.0))
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def balanced_allocation(amounts: NodeAmounts) -> IntArray:
    """How much placing the pod improves the node's balance: the scores with and
    without the pod, their difference mapped back into [50, 100]."""
    with_pod = balanced_resource_score(amounts.requested, amounts.allocatable)
    without_pod = balanced_resource_score(amounts.allocated, amounts.allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


# --- shortcuts for cpu and memory ----------------------------------------------------------
#
# The default profile scores cpu and memory only (NodeResourcesFit's LeastAllocated
# and NodeResourcesBalancedAllocation). When every candidate node has both and no
# amount anywhere is negative, the general code above reduces to a few whole-array
# expressions: Go's truncating division is floor division on amounts that are not
# negative, every resource counts, and the fractions lie in [0, 1]. The results
# are the same integers; anything else takes the general path.

CPU_AND_MEMORY = ("cpu", "memory")
assert (CPU, MEMORY) == (0, 1)
_GATHERED_KEY = "noderesources/gathered"


@dataclass(slots=True)
class Gathered:
    """The candidate rows' amounts, gathered once per cycle for both scorers (kept
    in the CycleState, for these very rows of this very table). Columns are read
    as views: cpu is [:, CPU], memory [:, MEMORY]."""

    rows: Rows
    generation: int
    allocatable: IntArray  # (rows, resources)
    usable: bool  # every row has cpu and memory, and no amount in the table is negative
    _requested: IntArray | None = None
    _non_zero: IntArray | None = None

    def requested(self, table: NodeTable) -> IntArray:
        if self._requested is None:
            self._requested = table.requested.take(self.rows, axis=0)
        return self._requested

    def non_zero(self, table: NodeTable) -> IntArray:
        if self._non_zero is None:
            self._non_zero = table.non_zero_requested.take(self.rows, axis=0)
        return self._non_zero


def gathered(state: CycleState, table: NodeTable, rows: Rows) -> Gathered:
    found = state.get(_GATHERED_KEY)
    if isinstance(found, Gathered) and found.rows is rows and found.generation == table.generation:
        return found
    # take() rather than fancy indexing: the same rows, several times faster.
    allocatable = table.allocatable.take(rows, axis=0)
    usable = not table.has_negative and (
        table.num_without_cpu_or_memory == 0
        or (bool(allocatable[:, CPU].all()) and bool(allocatable[:, MEMORY].all()))
    )
    found = Gathered(rows, table.generation, allocatable, usable)
    state.write(_GATHERED_KEY, found)
    return found


def _least(alloc: IntArray, used: IntArray, request: int) -> IntArray:
    """leastRequestedScore of one resource on nodes with alloc > 0: (alloc -
    requested) * 100 / alloc, 0 when over capacity. With alloc > 0 the floored
    quotient is negative exactly when requested > alloc, and otherwise Go's."""
    free = alloc - used
    free -= request
    free *= MAX_NODE_SCORE
    free //= alloc
    np.maximum(free, 0, out=free)
    return free


def least_allocated_cpu_memory(
    state: CycleState,
    table: NodeTable,
    rows: Rows,
    weights: tuple[int, int],
    pod_requests: Sequence[int],
) -> IntArray | None:
    """least_allocated over cpu and memory (non-zero requests), or None when the
    shortcut does not apply."""
    g = gathered(state, table, rows)
    cpu, memory = pod_requests[0], pod_requests[1]
    if not g.usable or cpu < 0 or memory < 0:
        return None
    alloc, non_zero = g.allocatable, g.non_zero(table)
    cpu_score = _least(alloc[:, CPU], non_zero[:, 0], cpu)
    memory_score = _least(alloc[:, MEMORY], non_zero[:, 1], memory)
    if weights == (1, 1):
        cpu_score += memory_score
        cpu_score //= 2
        return cpu_score
    cpu_score *= weights[0]
    memory_score *= weights[1]
    cpu_score += memory_score
    cpu_score //= weights[0] + weights[1]
    return cpu_score


def balanced_allocation_cpu_memory(
    state: CycleState, table: NodeTable, rows: Rows, pod_requests: Sequence[int]
) -> IntArray | None:
    """balanced_allocation over cpu and memory (plain requests), or None when the
    shortcut does not apply."""
    g = gathered(state, table, rows)
    cpu, memory = pod_requests[0], pod_requests[1]
    if not g.usable or cpu < 0 or memory < 0:
        return None
    alloc, requested = g.allocatable, g.requested(table)
    used_cpu, used_memory = requested[:, CPU], requested[:, MEMORY]
    # float64(requested) / float64(allocatable), with and without the pod, all at
    # once: resource (cpu, memory) x (without, with) x row. The sums are int64
    # (the add runs on the integers, then the result is converted).
    fractions = np.empty((2, 2, len(rows)))
    fractions[0, 0] = used_cpu
    np.add(used_cpu, cpu, out=fractions[0, 1])
    fractions[1, 0] = used_memory
    np.add(used_memory, memory, out=fractions[1, 1])
    fractions /= alloc[:, CPU : MEMORY + 1].T[:, None, :]  # a view: cpu, memory are 0, 1
    np.minimum(fractions, 1.0, out=fractions)
    # Two resources: std = |f_cpu - f_memory| / 2, score int64((1 - std) * 100).
    std = fractions[0] - fractions[1]
    std /= 2
    np.abs(std, out=std)
    np.subtract(1, std, out=std)
    std *= float(MAX_NODE_SCORE)
    balance = std.astype(np.int64)  # truncates toward zero, as np.trunc before it
    half = MAX_NODE_SCORE // 2
    out: IntArray = balance[1]
    out += half
    out -= balance[0]
    out //= 2
    out += half
    return out
