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
from kubesched.framework.nodeinfo import NodeInfo
from kubesched.framework.state.node_table import BoolArray, IntArray, NodeTable, Rows
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
    """Base of every plugin. `args` are the plugin's pluginConfig args (a mapping),
    `handle` what the framework lends it (see Handle).

    Example:
        ```python
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Status
        class MaxPods(NodeFilterPlugin):
            name = "MaxPods"
            def __init__(self, args=None, handle=None):
                super().__init__(args, handle)
                self.limit = int(self.args.get("limit", 10))  # read once, when built
            def filter_node(self, state, pod, node):
                if node.pod_count >= self.limit:
                    return Status.unschedulable(f"node(s) run {self.limit} pods already")
                return Status.success()
        ```
    """

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

    Example:
        ```python
        from kubesched.framework.interfaces import FilterPlugin, NodeVerdicts
        class BigNodes(FilterPlugin):
            name = "BigNodes"
            def filter(self, state, pod, nodes, rows):
                cpu = nodes.allocatable[rows, nodes.resource_index["cpu"]]  # millicores
                memory = nodes.allocatable[rows, nodes.resource_index["memory"]]
                return NodeVerdicts.failing(len(rows), [("node(s) have < 8 CPUs", cpu < 8000),
                                                        ("node(s) have < 32Gi", memory < 2**35)])
        ```
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
    """Nodes a PreFilter plugin already knows are the only candidates (None: all).

    Example:
        ```python
        from kubesched.framework.interfaces import PreFilterPlugin, PreFilterResult
        from kubesched.framework.status import Status
        class Pinned(PreFilterPlugin):
            name = "Pinned"
            def pre_filter(self, state, pod, nodes):
                node = pod.pod.metadata.labels.get("example.com/node")
                if node is None:
                    return None, Status.skip()  # every node; Filter skips this plugin
                return PreFilterResult({node}), Status.success()
        ```
    """

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
    """`nominated_node_name`: the node a PostFilter plugin nominates the pod to ("":
    clear its nomination). `message` is upstream's; kubesched shows the Status's.

    Example:
        ```python
        from kubesched.framework.interfaces import PostFilterPlugin, PostFilterResult
        from kubesched.framework.status import Status
        class Overflow(PostFilterPlugin):
            name = "Overflow"
            def post_filter(self, state, pod, diagnosis):
                # The autoscaler grows the overflow pool for pods nominated there.
                return PostFilterResult(nominated_node_name="overflow"), Status.success()
        ```
    """

    nominated_node_name: str = ""
    message: str = ""


# --- queueing ------------------------------------------------------------------------


class QueueingHint:
    """A hint's answer: QUEUE (the event may help the pod: retry it) or SKIP (it cannot).

    Example:
        ```python
        from kubesched.framework.interfaces import QueueingHint
        def node_ready(pod, old_node, new_node):
            ready = new_node.metadata.labels.get("example.com/ready") == "true"
            return QueueingHint.QUEUE if ready else QueueingHint.SKIP
        ```
    """

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
    """An event a plugin registers (EnqueueExtensions.events_to_register), with the hint
    telling, for a pod it rejected and one such event, whether to retry the pod.

    Example:
        ```python
        from kubesched.framework.interfaces import ClusterEventWithHint, QueueingHint
        from kubesched.framework.types import ActionType, ClusterEvent, Resource
        def gpu_came(pod, old_node, new_node):
            gpu = "nvidia.com/gpu" in new_node.status.allocatable
            return QueueingHint.QUEUE if gpu else QueueingHint.SKIP

        NEW_GPU = ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD), gpu_came)
        ```
    """

    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always worth a retry
    # With a hint only: the pods it can say Queue for (see HintIndex).
    index: HintIndex | None = None


class EnqueueExtensions:
    """Plugins that reject pods say which cluster events could change their mind: a
    pod they rejected is retried after one of those (or after a long wait).

    Example:
        ```python
        from kubesched.framework.interfaces import ClusterEventWithHint, EnqueueExtensions
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Status
        from kubesched.framework.types import ActionType, ClusterEvent, Resource
        class Ready(NodeFilterPlugin, EnqueueExtensions):
            name = "Ready"
            def filter_node(self, state, pod, node):
                ready = node.labels.get("example.com/ready") == "true"
                return Status.success() if ready else Status.unschedulable("node(s) not ready")
            def events_to_register(self):
                action = ActionType.ADD | ActionType.UPDATE_NODE_LABEL
                return [ClusterEventWithHint(ClusterEvent(Resource.NODE, action))]
        ```
    """

    def events_to_register(self) -> list[ClusterEventWithHint]:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    """Orders the active queue: `less(a, b)` is whether `a` goes first (one per profile).

    Example:
        ```python
        from kubesched.framework.interfaces import QueueSortPlugin
        class UrgentFirst(QueueSortPlugin):
            name = "UrgentFirst"
            def less(self, a, b):
                def key(info):
                    urgent = info.pod.metadata.labels.get("example.com/urgent") == "true"
                    return (not urgent, info.timestamp, info.seq)  # then first come
                return key(a) < key(b)
        ```
    """

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError

    def sort_rank(self) -> Callable[[QueuedPodInfo], Any] | None:
        """A function whose values order pods as `less` does (rank(a) < rank(b)
        exactly when less(a, b)), reading only what a pod's push into activeQ
        fixes: the queue's heap then compares ranks instead of calling `less`
        ~20 times a pop. None (the default) when the plugin has none."""
        return None


class PreEnqueuePlugin(Plugin):
    """Whether a pod may enter the active queue; a pod held waits, never attempted.

    Example:
        ```python
        from kubesched.framework.interfaces import PreEnqueuePlugin
        from kubesched.framework.status import Status
        class Approval(PreEnqueuePlugin):
            name = "Approval"
            def pre_enqueue(self, pod):
                if pod.pod.metadata.labels.get("example.com/approved") == "true":
                    return Status.success()
                return Status.unresolvable("waiting for approval")
        ```
    """

    def pre_enqueue(self, pod: PodInfo) -> Status:
        raise NotImplementedError


# --- scheduling cycle ------------------------------------------------------------------


class PreFilterPlugin(Plugin):
    """Once per attempt before Filter: what Filter will need, the nodes, or a rejection.

    Example:
        ```python
        from kubesched.framework.interfaces import PreFilterPlugin
        from kubesched.framework.status import Status
        class TeamQuota(PreFilterPlugin):
            name = "TeamQuota"
            def pre_filter(self, state, pod, nodes):
                team = pod.pod.metadata.labels.get("example.com/team")
                running = [p for row in nodes.order() for p in nodes.pods_on(row)
                           if team and p.pod.metadata.labels.get("example.com/team") == team]
                if len(running) >= int(self.args.get("limit", 2)):
                    return None, Status.unresolvable(f"team {team} is at its quota")
                return None, Status.success()
        ```
    """

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        raise NotImplementedError


class PreFilterExtensions:
    """For PreFilter plugins that keep per-cycle state about the pods on nodes.

    Preemption and nominated pods ask "what if this pod were added to / removed
    from that node?": the framework changes the node table, and these methods
    bring the plugin's CycleState in line (upstream PreFilterExtensions).

    Example:
        ```python
        import numpy as np
        from kubesched.framework.interfaces import FilterPlugin, NodeVerdicts
        from kubesched.framework.interfaces import PreFilterExtensions, PreFilterPlugin
        from kubesched.framework.status import Status
        def same_app(a, b):
            return a.pod.metadata.labels.get("app") == b.pod.metadata.labels.get("app")

        class OnePerNode(PreFilterPlugin, PreFilterExtensions, FilterPlugin):
            name = "OnePerNode"  # one pod of an app per node
            def pre_filter(self, state, pod, nodes):
                count = {row: sum(same_app(pod, p) for p in nodes.pods_on(row))
                         for row in nodes.order()}
                state.write(self.name, count)
                return None, Status.success()
            def update_with_pod(self, state, pod, updated, nodes, row, delta):
                if same_app(pod, updated):  # a new dict: what-if runs share the old one
                    count = state.read(self.name, dict)
                    state.write(self.name, {**count, row: count[row] + delta})
                return Status.success()
            def filter(self, state, pod, nodes, rows):
                taken = np.array([state.read(self.name, dict)[row] > 0 for row in rows], bool)
                return NodeVerdicts.failing(len(rows), [("node(s) run this app", taken)])
        ```
    """

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

    Example:
        ```python
        from kubesched.framework.interfaces import FilterScope, NodeFilterPlugin
        from kubesched.framework.status import Status
        class NoSpot(NodeFilterPlugin):
            name = "NoSpot"
            def filter_scope(self, pod):
                return FilterScope.NODE  # reads the node's labels, not its pods
            def filter_node(self, state, pod, node):
                spot = node.labels.get("example.com/capacity") == "spot"
                return Status.unschedulable("node(s) are spot") if spot else Status.success()
        ```
    """

    NODE = 1  # the Node object only (name, labels, taints, allocatable), not its pods
    AMOUNTS = 2  # also the amounts its pods request (NodeTable.requested)
    ROW = 3  # also anything else of the node's own row (its pods, ports, volumes)
    CLUSTER = 4  # other nodes too: what a filter that says nothing is taken to read


class FilterPlugin(Plugin):
    """Which candidate nodes can run the pod, all at once: `rows` index the NodeTable.

    Example:
        ```python
        import numpy as np
        from kubesched.framework.interfaces import FilterPlugin, NodeVerdicts
        class SamePool(FilterPlugin):
            name = "SamePool"
            def filter(self, state, pod, nodes, rows):
                want = pod.pod.metadata.labels.get("example.com/pool")
                pools = [nodes.label_value(row, "example.com/pool") for row in rows]
                other = np.array([want is not None and pool != want for pool in pools], bool)
                return NodeVerdicts.failing(len(rows), [("node(s) in another pool", other)])
        ```
    """

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        raise NotImplementedError

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        """What this filter's verdict reads for `pod` (see FilterScope). A subclass
        that overrides `filter` or `filter_node` must declare it again, or it is taken
        as CLUSTER (`declared_filter_scope`)."""
        return FilterScope.CLUSTER


class NodeFilterPlugin(FilterPlugin):
    """Filter one node at a time: implement `filter_node`, which sees a NodeInfo.

    Example:
        ```python
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Status
        class NoMaintenance(NodeFilterPlugin):
            name = "NoMaintenance"
            def filter_node(self, state, pod, node):
                if node.labels.get("example.com/maintenance") == "true":
                    return Status.unresolvable("node(s) are in maintenance")
                return Status.success()
        ```
    """

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
    """Runs when no node fits (DefaultPreemption is one): make room, or say why not.

    Example:
        ```python
        from kubesched.framework.interfaces import PostFilterPlugin
        from kubesched.framework.status import Status
        class Hint(PostFilterPlugin):
            name = "Hint"
            def post_filter(self, state, pod, diagnosis):
                return None, Status.unschedulable("ask #platform for a bigger node pool")
        ```
    """

    @property
    def framework(self) -> FrameworkRunner | None:
        """The framework of the profile this instance runs in (its handle's)."""
        return None if self._handle is None else self._handle.framework

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Any
    ) -> tuple[PostFilterResult | None, Status]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    """Once per attempt before Score, on the feasible nodes: what Score will need.

    Example:
        ```python
        from kubesched.framework.interfaces import NodeScorePlugin, PreScorePlugin
        from kubesched.framework.status import Status
        class Headroom(PreScorePlugin, NodeScorePlugin):
            name = "Headroom"
            def pre_score(self, state, pod, nodes, rows):  # the most free CPU of the feasible
                state.write(self.name, int(nodes.free[rows, nodes.resource_index["cpu"]].max()))
                return Status.success()
            def score_node(self, state, pod, node):
                return node.free("cpu") * 100 // max(1, state.read(self.name, int))
        ```
    """

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        raise NotImplementedError


# A uniform score: (raw, normalized), the same for every node (ScorePlugin.uniform_score).
Uniform = tuple[int, int]


class ScorePlugin(Plugin):
    """Score every candidate node 0..100 (after NormalizeScore, if any), all at once.

    Example:
        ```python
        from kubesched.framework.interfaces import ScorePlugin
        class MostFreeCpu(ScorePlugin):
            name = "MostFreeCpu"
            def score(self, state, pod, nodes, rows):
                return nodes.free[rows, nodes.resource_index["cpu"]].copy()
            def normalize_scores(self, state, pod, scores):
                top = scores.max(initial=0)
                if top > 0:
                    scores[:] = scores * 100 // top  # the freest node gets 100
        ```
    """

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
    """Score one node at a time: implement `score_node`, which sees a NodeInfo.

    Example:
        ```python
        from kubesched.framework.interfaces import NodeScorePlugin
        class FewestPods(NodeScorePlugin):
            name = "FewestPods"
            def score_node(self, state, pod, node):
                return max(0, 100 - node.pod_count)
        ```
    """

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        raise NotImplementedError

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        return np.fromiter(
            (self.score_node(state, pod, NodeInfo(nodes, int(row))) for row in rows),
            dtype=np.int64,
            count=len(rows),
        )


class ReservePlugin(Plugin):
    """Keeps plugin state in step as a pod is assumed on a node; `unreserve` undoes it.

    Example:
        ```python
        from kubesched.framework.interfaces import ReservePlugin
        from kubesched.framework.status import Status
        class Ledger(ReservePlugin):
            name = "Ledger"
            placed = {}  # pod key -> node, while reserved or bound
            def reserve(self, state, pod, node_name):
                self.placed[pod.key] = node_name
                return Status.success()
            def unreserve(self, state, pod, node_name):
                self.placed.pop(pod.key, None)
        ```
    """

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """Allow (success), reject, or Wait with a timeout in seconds.

        Example:
            ```python
            from kubesched.framework.interfaces import PermitPlugin
            from kubesched.framework.status import Status
            class Freeze(PermitPlugin):
                name = "Freeze"
                def permit(self, state, pod, node_name):
                    if pod.pod.metadata.labels.get("example.com/frozen") == "true":
                        return Status.unschedulable("deployments are frozen"), 0.0
                    return Status.success(), 0.0
            ```
        """
        raise NotImplementedError


# --- binding cycle ---------------------------------------------------------------------


class PreBindPlugin(Plugin):
    """Prepares a node (a volume, a device) in the binding cycle, before the bind.

    Example:
        ```python
        from kubesched.framework.interfaces import PreBindPlugin
        from kubesched.framework.status import Status
        class Announce(PreBindPlugin):
            name = "Announce"
            async def pre_bind(self, state, pod, node_name):
                self.handle.cluster.record_event(pod.pod, "Normal", "Placing", f"to {node_name}")
                return Status.success()
        ```
    """

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        raise NotImplementedError


class BindPlugin(Plugin):
    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """Bind, or return Skip to let the next Bind plugin do it.

        Example:
            ```python
            from kubesched.framework.interfaces import BindPlugin
            from kubesched.framework.status import Status
            class GpuBinder(BindPlugin):
                name = "GpuBinder"
                async def bind(self, state, pod, node_name):
                    if "nvidia.com/gpu" not in pod.requests:
                        return Status.skip()  # DefaultBinder binds the others
                    await self.handle.cluster.bind(pod.pod, node_name)
                    return Status.success()
            ```
        """
        raise NotImplementedError


class PostBindPlugin(Plugin):
    """Told after the pod is bound, for bookkeeping; it cannot fail.

    Example:
        ```python
        from kubesched.framework.interfaces import PostBindPlugin
        class Placements(PostBindPlugin):
            name = "Placements"
            log = []  # (pod key, node) in the order they bound
            def post_bind(self, state, pod, node_name):
                self.log.append((pod.key, node_name))
        ```
    """

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
