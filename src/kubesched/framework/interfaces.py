"""The extension points: one base class each, as in kube-scheduler's framework package.

A plugin is a class with a unique `name` that subclasses the base class of
every extension point it implements. Filter and Score work on all candidate
nodes at once (columnar); `NodeFilterPlugin` and `NodeScorePlugin` offer the
simpler one-node-at-a-time form for plugins where speed matters less.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.node_table import BoolArray, IntArray, NodeTable, Rows
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ClusterEvent, PodInfo, QueuedPodInfo

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class ArgsDecoder(Protocol):
    """A plugin's args decoder: (its pluginConfig args in API spelling, their field
    path, as in "profiles[0].pluginConfig[2].args") -> its typed args, defaulted and
    valid. It raises kubesched.plugins.helpers.args.ArgsError (a ValueError whose
    `errors` are the field errors, each naming its field under the path) for args
    kube-scheduler would refuse. Typed loosely (the framework does not import the
    plugins' helpers); a Protocol rather than a Callable, which mypy would take for a
    method once it is a class attribute."""

    def __call__(self, args: Mapping[str, Any], path: str, /) -> object: ...


class Plugin:
    """Base of every plugin. `args` are the plugin's pluginConfig args (a mapping)."""

    name: ClassVar[str] = ""
    # Set by a built-in plugin with args (a staticmethod): the config file's
    # pluginConfig args of the plugin are decoded with it when the file is read, and
    # the plugin is built with what it returns (its __init__ takes both those typed
    # args and a mapping, and gives this class the mapping: see raw_args).
    args_decoder: ClassVar[ArgsDecoder | None] = None

    def __init__(self, args: object = None, handle: Handle | None = None):
        # `args` is `object` because the framework builds a plugin with what its
        # profile holds: typed args for a plugin with an args_decoder, which that
        # plugin's own __init__ turns into the mapping before calling this one.
        if args is not None and not isinstance(args, Mapping):
            raise TypeError(
                f"plugin {self.name}: args must be a mapping, got {type(args).__name__}"
            )
        self.args: Mapping[str, Any] = args or {}
        self._handle = handle

    @property
    def handle(self) -> Handle:
        if self._handle is None:
            raise RuntimeError(f"plugin {self.name} was built without a framework handle")
        return self._handle


# --- verdicts of Filter over many nodes ----------------------------------------------


@dataclass(slots=True)
class NodeVerdicts:
    """A Filter plugin's answer for each of the rows it was given.

    `codes[i]` is the Code for rows[i] (SUCCESS where the node fits);
    `reasons` pairs each reason text with a mask (aligned to rows) of the nodes
    it applies to. A node may carry several reasons (say, Insufficient cpu and
    Insufficient memory), and each counts in the FailedScheduling message.
    """

    codes: npt.NDArray[np.int8]
    reasons: list[tuple[str, BoolArray]] = field(default_factory=list)

    @classmethod
    def passing(cls, count: int) -> NodeVerdicts:
        return cls(np.zeros(count, dtype=np.int8))

    @classmethod
    def failing(
        cls, count: int, reasons: Sequence[tuple[str, BoolArray]], code: Code = Code.UNSCHEDULABLE
    ) -> NodeVerdicts:
        """Nodes named by any reason's mask fail with `code`; the others pass."""
        codes = np.zeros(count, dtype=np.int8)
        kept = []
        for reason, mask in reasons:
            if mask.any():
                codes[mask] = code
                kept.append((reason, mask))
        return cls(codes, kept)

    def add(self, reason: str, mask: BoolArray, code: Code = Code.UNSCHEDULABLE) -> None:
        """Fail the masked nodes with `code` (the stronger code wins) and `reason`."""
        if mask.any():
            np.maximum(self.codes, np.where(mask, np.int8(code), np.int8(0)), out=self.codes)
            self.reasons.append((reason, mask))

    def passed(self) -> BoolArray:
        passed: BoolArray = self.codes == Code.SUCCESS
        return passed


@dataclass(slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin already knows are the only candidates (None: all)."""

    node_names: set[str] | None = None
    # The plugins that narrowed the set, named when the other nodes are reported.
    plugins: list[str] = field(default_factory=list)

    def merge(self, other: PreFilterResult | None, plugin: str) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names), [*self.plugins, plugin])
        return PreFilterResult(self.node_names & other.node_names, [*self.plugins, plugin])


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""
    message: str = ""


# --- queueing ------------------------------------------------------------------------


class QueueingHint:
    QUEUE = True
    SKIP = False


QueueingHintFn = Callable[[PodInfo, object, object], bool]


@dataclass(frozen=True, slots=True, eq=False)
class HintIndex:
    """Which pods a hint can say Queue for, told without asking each pod: kubesched's
    own (upstream's queue asks every pod in the unschedulable pool, fast enough in
    Go). `pod_keys(pod)` gives the keys the pod is filed under; `event_keys(old, new)`
    the keys of the pods the event can concern, or None for any pod. The promise:
    for a pod none of whose keys is among the event's, the hint says Skip. The queue
    then asks only the pods filed under the event's keys (a claim's events concern
    the pods that use it, not the thousands waiting for theirs)."""

    pod_keys: Callable[[PodInfo], Iterable[str]]
    event_keys: Callable[[object, object], Iterable[str] | None]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always worth a retry
    # With a hint only: the pods it can say Queue for (see HintIndex).
    index: HintIndex | None = None


class EnqueueExtensions:
    """Plugins that reject pods say which cluster events could change their mind."""

    def events_to_register(self) -> list[ClusterEventWithHint]:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError

    def sort_rank(self) -> Callable[[QueuedPodInfo], Any] | None:
        """A function whose values order pods as `less` does (rank(a) < rank(b)
        exactly when less(a, b)), reading only what a pod's push into activeQ
        fixes: the queue's heap then compares ranks instead of calling `less`
        ~20 times a pop. None (the default) when the plugin has none."""
        return None


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status:
        raise NotImplementedError


# --- scheduling cycle ------------------------------------------------------------------


class PreFilterPlugin(Plugin):
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        raise NotImplementedError


class PreFilterExtensions:
    """For PreFilter plugins that keep per-cycle state about the pods on nodes.

    Preemption and nominated pods ask "what if this pod were added to / removed
    from that node?": the framework changes the node table, and these methods
    bring the plugin's CycleState in line (upstream PreFilterExtensions)."""

    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, nodes: NodeTable, row: int
    ) -> Status:
        return self.update_with_pod(state, pod, to_add, nodes, row, 1)

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, nodes: NodeTable, row: int
    ) -> Status:
        return self.update_with_pod(state, pod, to_remove, nodes, row, -1)

    def update_with_pod(
        self,
        state: CycleState,
        pod: PodInfo,
        updated: PodInfo,
        nodes: NodeTable,
        row: int,
        delta: int,
    ) -> Status:
        """Both directions at once (delta +1 adds, -1 removes), for plugins whose
        state update is symmetric; or override add_pod and remove_pod instead."""
        raise NotImplementedError


class FilterScope(enum.IntEnum):
    """What a filter's verdict on a node reads, besides the pod, its CycleState and the
    cluster objects that a what-if change to nodes leaves alone (PVs, classes).

    Each filter declares it (`FilterPlugin.filter_scope`), so that the framework and
    DefaultPreemption know when what-if changes to many nodes at once can be filtered
    in one run and still give each node the verdict it would get alone. kube-scheduler
    has no such notion: it filters node by node. Wider scopes include the narrower.
    """

    NODE = 1  # the Node object only (name, labels, taints, allocatable), not its pods
    AMOUNTS = 2  # also the amounts its pods request (NodeTable.requested)
    ROW = 3  # also anything else of the node's own row (its pods, ports, volumes)
    CLUSTER = 4  # other nodes too: what a filter that says nothing is taken to read


class FilterPlugin(Plugin):
    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        raise NotImplementedError

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        """What this filter's verdict reads for `pod` (see FilterScope). A subclass
        that overrides `filter` or `filter_node` must declare it again, or it is taken
        as CLUSTER (`declared_filter_scope`)."""
        return FilterScope.CLUSTER


class NodeFilterPlugin(FilterPlugin):
    """Filter one node at a time: implement `filter_node`."""

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        raise NotImplementedError

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        statuses = (self.filter_node(state, pod, NodeInfo(nodes, row)) for row in rows.tolist())
        return verdicts_per_node(self.name, statuses, len(rows))


def verdicts_per_node(plugin: str, statuses: Iterable[Status | None], count: int) -> NodeVerdicts:
    """The NodeVerdicts of `count` rows from one Status per row, in row order (None
    or success: the node fits); an Error status is raised."""
    verdicts = NodeVerdicts.passing(count)
    by_reason: dict[tuple[str, int], BoolArray] = {}
    for i, status in enumerate(statuses):
        if status is None or status.code == Code.SUCCESS:
            continue
        if status.code == Code.ERROR:
            raise status.error or RuntimeError(status.message())
        for reason in status.reasons or [f"node(s) didn't satisfy plugin {plugin}"]:
            mask = by_reason.setdefault((reason, status.code), np.zeros(count, bool))
            mask[i] = True
        verdicts.codes[i] = max(int(verdicts.codes[i]), int(status.code))
    verdicts.reasons.extend((reason, mask) for (reason, _), mask in by_reason.items())
    return verdicts


def declared_filter_scope(plugin: FilterPlugin, pod: PodInfo) -> FilterScope:
    """The plugin's FilterScope for `pod`, trusted only when declared by the class that
    implements its filter or by a subclass of it: a declaration inherited past an
    overriding `filter` says nothing about the new code."""
    for klass in type(plugin).__mro__:
        attributes = vars(klass)
        if "filter_scope" in attributes:
            return plugin.filter_scope(pod)
        if "filter" in attributes or "filter_node" in attributes:
            return FilterScope.CLUSTER
    return FilterScope.CLUSTER


class FrameworkRunner(Protocol):
    """What a PostFilter plugin may run of its profile's framework (the framework
    handle upstream): Filter on one node, with nominated pods, and the
    PreFilterExtensions of a what-if change to that node."""

    def filter_status_with_nominated_pods(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, row: int
    ) -> Status: ...

    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult, Status]:
        """RunPreFilterPlugins: the nodes the PreFilter plugins narrowed to, and their
        verdict (a trial placement of a whole pod group runs it for each pod)."""
        ...

    def run_filters(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> tuple[Rows, Diagnosis]:
        """RunFilterPlugins over many nodes: the feasible rows, and why the others failed."""
        ...

    def run_filter_plugin(
        self,
        plugin: FilterPlugin,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        rows: Rows,
    ) -> NodeVerdicts:
        """One of the filters that filter_scopes names, over the rows: its verdicts,
        its evaluations counted and its time observed as run_filters does."""
        ...

    def filter_scopes(
        self, state: CycleState, pod: PodInfo
    ) -> list[tuple[FilterPlugin, FilterScope]] | None:
        """The filters that run for the pod, each with what it reads; None when a
        PreFilterExtensions runs for the pod, since its CycleState would not follow
        what-if changes to several nodes at once."""
        ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, nodes: NodeTable, row: int
    ) -> None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, nodes: NodeTable, row: int
    ) -> None: ...


class PostFilterPlugin(Plugin):
    @property
    def framework(self) -> FrameworkRunner | None:
        """The framework of the profile this instance runs in (its handle's)."""
        return None if self._handle is None else self._handle.framework

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Any
    ) -> tuple[PostFilterResult | None, Status]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        raise NotImplementedError


# A uniform score: (raw, normalized), the same for every node (ScorePlugin.uniform_score).
Uniform = tuple[int, int]


class ScorePlugin(Plugin):
    """Score every candidate node 0..100 (after NormalizeScore, if any)."""

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        raise NotImplementedError

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: IntArray) -> None:
        """ScoreExtensions.NormalizeScore: rewrite `scores` in place. Default: keep."""

    def uniform_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> Uniform | None:
        """When this cycle's Score would give every node the same score, known
        without looking at the nodes (no node has a taint, none reports an image,
        the pod has no claim): that score as (Score's answer, after
        NormalizeScore). The framework then calls neither score nor
        normalize_scores and adds one number. None (the default): call them."""
        return None


class NodeScorePlugin(ScorePlugin):
    """Score one node at a time: implement `score_node`."""

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        return np.fromiter(
            (self.score_node(state, pod, NodeInfo(nodes, int(row))) for row in rows),
            dtype=np.int64,
            count=len(rows),
        )


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """Allow (success), reject, or Wait with a timeout in seconds."""
        raise NotImplementedError


# --- binding cycle ---------------------------------------------------------------------


class PreBindPlugin(Plugin):
    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError


class BindPlugin(Plugin):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Bind, or return Skip to let the next Bind plugin do it."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "queueSort": QueueSortPlugin,
    "preEnqueue": PreEnqueuePlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}
