"""NodeResourcesFit: does the pod fit in what the node has left, and how full will it be.

Filter (fitsRequest upstream), for each candidate node:
- "Too many pods" when the node already runs as many pods as it allows;
- a pod that requests nothing (no cpu, memory, ephemeral-storage or scalar
  resource) fits otherwise;
- "Insufficient <resource>" for each resource the pod asks for more of than is
  left (allocatable - requested; a resource the node lacks has 0 allocatable):
  cpu, memory, ephemeral-storage, then the scalar resources. Extended
  resources named in ignoredResources, or whose domain is in
  ignoredResourceGroups, are not checked.
The code is Unschedulable, or UnschedulableAndUnresolvable when the pod asks
for more of some resource than the node's whole allocatable (preemption
cannot help then). "Too many pods" alone is never unresolvable.

Score: the configured strategy (LeastAllocated, MostAllocated or
RequestedToCapacityRatio) over the configured resources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.api.requests import Amounts, amounts, pod_requests
from kubesched.api.resource import DeviceClass
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.explain import NodeAmount, Shortfall
from kubesched.framework.interfaces import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.framework.signature import RESOURCES_SIGNER, SignFragment, SignPlugin, not_signable
from kubesched.framework.state.dra import DEVICE_CLASS_PREFIX
from kubesched.framework.state.node_table import PODS, BoolArray, IntArray, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.args import raw_args
from kubesched.plugins.helpers.hints import as_node, as_pod, same_pod
from kubesched.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    node_resources_fit_args,
)
from kubesched.plugins.noderesources.resource_allocation import (
    CPU_AND_MEMORY,
    NodeAmounts,
    ShapePoint,
    least_allocated,
    least_allocated_cpu_memory,
    most_allocated,
    node_amounts,
    pod_request_list,
    requested_to_capacity_ratio,
)
from kubesched.plugins.noderesources.resources import (
    is_extended_resource_name,
    is_scalar_resource_name,
)

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

_BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage")


# --- the pod's request -----------------------------------------------------------------


def fit_request(
    requests: Mapping[str, int],
    ignored_resources: frozenset[str] = frozenset(),
    ignored_resource_groups: frozenset[str] = frozenset(),
) -> tuple[tuple[str, int], ...]:
    """The (resource, amount) pairs Filter checks, in its order: cpu, memory,
    ephemeral-storage (when positive), then scalar resources (when non-zero,
    by name) that are not ignored. Other resource names are not looked at."""
    out = [(name, requests[name]) for name in _BASE_RESOURCES if requests.get(name, 0) > 0]
    for name in sorted(requests):
        amount = requests[name]
        if amount == 0 or name in _BASE_RESOURCES or not is_scalar_resource_name(name):
            continue
        if is_extended_resource_name(name) and (
            name in ignored_resources
            or (ignored_resource_groups and name.split("/")[0] in ignored_resource_groups)
        ):
            continue
        out.append((name, amount))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    request: tuple[tuple[str, int], ...]
    # Per column of the node table, what a node must have free for the pod (1 pod,
    # the requests Filter checks, and the int64 minimum elsewhere); None when some
    # requested resource has no column yet.
    need: IntArray | None = None
    # Requested resources a DeviceClass backs (DRAExtendedResource): a node without
    # any of them allocatable leaves them to DynamicResources.
    dra_backed: frozenset[str] = frozenset()


_NO_NEED = int(np.iinfo(np.int64).min)


def _need(nodes: NodeTable, request: tuple[tuple[str, int], ...]) -> IntArray | None:
    # Filled as a list, then one array: item by item into an array costs more
    # than the array's whole use in Filter.
    need = [_NO_NEED] * len(nodes.resources)
    need[PODS] = 1
    for name, amount in request:
        col = nodes.resource_index.get(name)
        if col is None:
            return None
        need[col] = amount
    return np.array(need, dtype=np.int64)


def sign_requests(handle: Handle | None, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
    """Fit's and BalancedAllocation's SignPod: the pod's requests (with overhead),
    or not signable when a DeviceClass backs a resource it asks for
    (shouldDelegateResourceToDRA with no node: DRAExtendedResource, on in v1.36.3)."""
    if handle is not None and handle.dra.classes:
        dra = handle.dra
        for name, amount in pod.requests.items():
            if amount and dra.device_class_for(name) is not None:
                return not_signable(
                    "signature disabled when dra extended resources are used in the cluster"
                )
    return [(RESOURCES_SIGNER, pod.requests)], Status.success()


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Shortage:
    """One check of fitsRequest over the candidate rows: the resource, the pod's
    request, each node's allocatable and used amounts, which nodes fall short, and
    which would fall short even empty (preemption cannot help those)."""

    resource: str
    reason: str
    requested: int
    allocatable: IntArray
    used: IntArray
    short: BoolArray
    over_total: BoolArray


def _shortages(pre: _PreFilterState, nodes: NodeTable, rows: Rows) -> Iterator[_Shortage]:
    """fitsRequest's checks in its order: the pod count ("Too many pods", never
    unresolvable), then each requested resource ("Insufficient NAME"). Filter
    turns them into verdicts, an explanation into Shortfalls."""
    count = len(rows)
    pods_allocatable = nodes.allocatable[rows, PODS]
    pods_used = nodes.requested[rows, PODS]
    never: BoolArray = np.zeros(count, dtype=np.bool_)
    too_many = pods_used + 1 > pods_allocatable
    yield _Shortage("pods", "Too many pods", 1, pods_allocatable, pods_used, too_many, never)
    for name, amount in pre.request:
        col = nodes.resource_index.get(name)
        if col is None:
            if name in pre.dra_backed:
                # shouldDelegateResourceToDRA: no node advertises it, DynamicResources
                # allocates devices for it instead.
                continue
            # No node has any: everything falls short, and for good.
            none = np.zeros(count, dtype=np.int64)
            short: BoolArray = np.full(count, amount > 0, dtype=np.bool_)
            yield _Shortage(name, f"Insufficient {name}", amount, none, none, short, short)
            continue
        allocatable = nodes.allocatable[rows, col]
        used = nodes.requested[rows, col]
        short = amount > allocatable - used
        over_total: BoolArray = short & (amount > allocatable)
        if name in pre.dra_backed:
            # shouldDelegateResourceToDRA: where no device plugin advertises the
            # resource, DynamicResources allocates devices for it instead.
            short = short & (allocatable > 0)
            over_total = over_total & short
        yield _Shortage(name, f"Insufficient {name}", amount, allocatable, used, short, over_total)


# --- the plugin ------------------------------------------------------------------------


class NodeResourcesFit(
    SignPlugin, PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions
):
    name = NAME
    args_decoder = staticmethod(node_resources_fit_args)

    def __init__(
        self,
        args: Mapping[str, Any] | NodeResourcesFitArgs | None = None,
        handle: Handle | None = None,
    ) -> None:
        super().__init__(raw_args(args), handle)
        self.fit_args = node_resources_fit_args(args)
        self.strategy = self.fit_args.scoring_strategy
        self.resources = self.strategy.resources
        self.ignored_resources = frozenset(self.fit_args.ignored_resources)
        self.ignored_resource_groups = frozenset(self.fit_args.ignored_resource_groups)
        # The shape's scores run 0..10, the scheduler's 0..100
        # (buildRequestedToCapacityRatioScorerFunction).
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        ratio = self.strategy.requested_to_capacity_ratio
        self.shape = tuple(
            ShapePoint(p.utilization, p.score * scale) for p in (ratio.shape if ratio else ())
        )
        # LeastAllocated over cpu and memory (the default) has a shortcut.
        self._cpu_memory_weights: tuple[int, int] | None = None
        if self.strategy.type == LEAST_ALLOCATED and (
            tuple(spec.name for spec in self.resources) == CPU_AND_MEMORY
        ):
            self._cpu_memory_weights = (self.resources[0].weight, self.resources[1].weight)

    # --- PreFilter / Filter ------------------------------------------------------------

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's requests; not signable when a DeviceClass backs one
        of them (DRAExtendedResource)."""
        return sign_requests(self._handle, pod)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        request = fit_request(
            pod.requests,
            self.ignored_resources,
            self.ignored_resource_groups,
        )
        backed = self._dra_backed(request)
        state.write(
            PRE_FILTER_STATE_KEY, _PreFilterState(request, _need(nodes, request), dra_backed=backed)
        )
        return None, Status.success()

    def _dra_backed(self, request: Iterable[tuple[str, int]]) -> frozenset[str]:
        """The resources shouldDelegateResourceToDRA may hand over: those with a
        device class behind them (DeviceClassResolver.GetDeviceClass)."""
        handle = self._handle
        if handle is None or not handle.dra.classes:
            return frozenset()
        dra = handle.dra
        return frozenset(name for name, _ in request if dra.device_class_for(name) is not None)

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the node's allocatable and the amounts its pods request.
        return FilterScope.AMOUNTS

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        pre = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(pre, _PreFilterState):
            raise RuntimeError(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        count = len(rows)
        need = pre.need
        # One look at what every node has free: usually they all fit.
        if (
            need is not None
            and len(need) == nodes.free.shape[1]
            and not np.count_nonzero(nodes.free.take(rows, axis=0) < need)
        ):
            return NodeVerdicts.passing(count)
        verdicts = NodeVerdicts.passing(count)
        unresolvable = np.zeros(count, dtype=np.bool_)
        for shortage in _shortages(pre, nodes, rows):
            verdicts.add(shortage.reason, shortage.short)
            unresolvable |= shortage.over_total
        if unresolvable.any():
            verdicts.codes[unresolvable] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        return verdicts

    def shortfalls(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> list[Shortfall]:
        """For an explanation: what the rejected ROWS lack, with the numbers Filter
        compared (fitsRequest's InsufficientResource list)."""
        pre = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(pre, _PreFilterState):
            return []
        names = nodes.names
        found: list[Shortfall] = []
        for shortage in _shortages(pre, nodes, rows):
            short = shortage.short
            if not short.any():
                continue
            amounts = zip(
                rows[short].tolist(),
                shortage.allocatable[short].tolist(),
                shortage.used[short].tolist(),
                strict=True,
            )
            found.append(
                Shortfall(
                    resource=shortage.resource,
                    reason=shortage.reason,
                    requested=shortage.requested,
                    nodes=[
                        NodeAmount(node=names[row], allocatable=a, used=u, free=a - u)
                        for row, a, u in amounts
                    ],
                )
            )
        return found

    # --- PreScore / Score --------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        requests = pod_request_list(pod, self.resources, use_requested=False)
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(tuple(requests)))
        return Status.success()

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        pre = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(pre, _PreScoreState):
            requests: Sequence[int] = pre.pod_requests
        else:
            requests = pod_request_list(pod, self.resources, use_requested=False)
        if self._cpu_memory_weights is not None:
            fast = least_allocated_cpu_memory(
                state, nodes, rows, self._cpu_memory_weights, requests
            )
            if fast is not None:
                return fast
        found = node_amounts(nodes, rows, self.resources, requests, use_requested=False)
        return self.score_amounts(found)

    def score_amounts(self, found: NodeAmounts) -> IntArray:
        if self.strategy.type == MOST_ALLOCATED:
            return most_allocated(found, self.resources)
        if self.strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            return requested_to_capacity_ratio(found, self.resources, self.shape)
        return least_allocated(found, self.resources)

    # --- queueing ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # InPlacePodVerticalScaling and SchedulerQueueingHints are GA: a pod that
        # shrinks may free room, and node taint/label updates need no retry.
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                self.is_schedulable_after_node_change,
            ),
            # DRAExtendedResource: a class that now backs a requested resource.
            ClusterEventWithHint(
                ClusterEvent(Resource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE),
                self.is_schedulable_after_device_class_event,
            ),
        ]

    def _resolver(self) -> Callable[[str], str | None] | None:
        handle = self._handle
        return None if handle is None else handle.dra.device_class_for

    def is_schedulable_after_device_class_event(
        self, pod: PodInfo, old: object, new: object
    ) -> bool:
        """isSchedulableAfterDeviceClassEvent: the class's extendedResourceName
        changed (or it was added) to one the pod requests, or an added class's
        implicit name is requested."""
        if not isinstance(new, DeviceClass):
            return True
        explicit = new.spec.extended_resource_name
        if isinstance(old, DeviceClass):
            if (old.spec.extended_resource_name or "") == (explicit or ""):
                return False
        elif DEVICE_CLASS_PREFIX + new.metadata.name in pod.requests:
            return True
        return bool(explicit) and explicit in pod.requests

    def is_schedulable_after_pod_event(self, pod: PodInfo, old: object, new: object) -> bool:
        original, modified = as_pod(old), as_pod(new)
        if modified is None:
            if original is None:
                return True
            # Only a pod that held (or was about to hold) room frees any.
            return bool(original.spec.node_name or original.status.nominated_node_name)
        if original is None:
            return True
        return _scaled_down_for(pod, original, modified)

    def is_schedulable_after_node_change(self, pod: PodInfo, old: object, new: object) -> bool:
        original, modified = as_node(old), as_node(new)
        resolve = self._resolver()
        if modified is None or not fits_empty_node(pod, modified, resolve):
            return False
        if original is None:
            return True
        return requested_resources_increased(pod, original, modified, resolve)


def _scaled_down_for(target: PodInfo, original: Pod, modified: Pod) -> bool:
    """The pod itself shrank, or a placed pod gave back some of what the target needs."""
    if same_pod(modified, target.pod):
        return True
    if not modified.spec.node_name:
        return False
    before, after = pod_requests(original), pod_requests(modified)
    for name, amount in target.requests.items():
        if amount == 0:
            continue
        if (name in _BASE_RESOURCES or is_scalar_resource_name(name)) and before.get(
            name, 0
        ) > after.get(name, 0):
            return True
    return False


def _node_allocatable(node: Node) -> Amounts:
    # The apiserver defaults status.allocatable to status.capacity.
    return amounts(node.status.allocatable or node.status.capacity)


def _delegated(
    name: str, allocatable: Amounts, resolve: Callable[[str], str | None] | None
) -> bool:
    """shouldDelegateResourceToDRA: the node has none allocatable, a class backs it."""
    return resolve is not None and allocatable.get(name, 0) <= 0 and resolve(name) is not None


def fits_empty_node(
    pod: PodInfo, node: Node, resolve: Callable[[str], str | None] | None = None
) -> bool:
    """isFit upstream: would the pod fit on this node with nothing on it? No
    resources are ignored here, but those DRA would serve on it are skipped."""
    allocatable = _node_allocatable(node)
    if allocatable.get("pods", 0) < 1:
        return False
    return all(
        amount <= allocatable.get(name, 0) or _delegated(name, allocatable, resolve)
        for name, amount in fit_request(pod.requests)
    )


def requested_resources_increased(
    pod: PodInfo,
    original: Node,
    modified: Node,
    resolve: Callable[[str], str | None] | None = None,
) -> bool:
    """The node now allows more pods, or more of a resource the pod requests, or DRA
    would serve a requested resource on it (haveAnyRequestedResourcesIncreased)."""
    before, after = _node_allocatable(original), _node_allocatable(modified)
    if after.get("pods", 0) > before.get("pods", 0):
        return True
    return any(
        after.get(name, 0) > before.get(name, 0) or _delegated(name, after, resolve)
        for name, _ in fit_request(pod.requests)
    )
