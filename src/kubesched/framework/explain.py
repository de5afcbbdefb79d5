"""Explanations: why a scheduling attempt put a pod where it did, or nowhere.

Two halves. `CycleCapture` is what one attempt keeps while it runs, when asked to
(CycleState.explain is set): the arrays the framework computes anyway and throws
away (every score plugin's raw and normalized scores, the weighted totals, the
feasible rows, the diagnosis). Nothing is kept, copied or checked per node when
no capture is asked for: the runtime reads one attribute per Score pass.

The rest are typed records (msgspec Structs) of a finished explanation, with node
names instead of rows, grouped so that 5,000 nodes that share a verdict read as
one line: what `kubesched explain` prints (text, JSON, YAML), what `kubesched run
--explain` serves, and what an HTML report can render without re-deriving anything.
Upstream has no such record: kube-scheduler logs each plugin's score per node at
-v=10 (prioritizeNodes in schedule_one.go) and folds the filter verdicts into the
FailedScheduling line (FitError.Error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import msgspec

from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows

if TYPE_CHECKING:
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.types import PodInfo


@dataclass(slots=True)
class ScoreCapture:
    """One score plugin over the feasible rows (RunScorePlugins and NormalizeScore)."""

    plugin: str
    weight: int
    raw: IntArray  # Score's answer, before NormalizeScore
    normalized: IntArray  # after NormalizeScore (the raw scores for plugins without one)


@dataclass(slots=True)
class CycleCapture:
    """What one scheduling attempt computed, kept for its explanation."""

    num_all_nodes: int = 0
    evaluated: int = 0
    pre_filter_message: str = ""
    nominated_node: str = ""  # the node tried first (evaluateNominatedNode)
    nominated_fits: bool = False
    diagnosis: Diagnosis | None = None
    candidates: Rows | None = None  # the nodes the filter pass ran over
    feasible: Rows | None = None  # the feasible rows that were scored, in order
    scores: list[ScoreCapture] = field(default_factory=list)
    score_skipped: list[str] = field(default_factory=list)  # PreScore said Skip
    totals: IntArray | None = None
    chosen_row: int | None = None
    tied_rows: list[int] = field(default_factory=list)
    # Every other filter's verdict on the rejected nodes: plugin -> (reason, rows).
    other_rejections: dict[str, list[tuple[str, Rows]]] = field(default_factory=dict)
    post_filter_message: str = ""
    post_filter_nominated: str | None = None
    # The attempt's record once its node was chosen: the binding cycle marks it failed
    # if a Permit wait, PreBind or Bind fails (observers hold this very object).
    explanation: Explanation | None = None


# --- the finished explanation -------------------------------------------------------


class _Record(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class NodeAmount(_Record):
    """One node's side of a Shortfall: its allocatable (InsufficientResource's
    Capacity), what the pods on it already request (Used), and what is free (below
    0 when the node is overcommitted)."""

    node: str
    allocatable: int
    used: int
    free: int


class Shortfall(_Record):
    """A resource the pod asks for more of than some nodes have free, with the numbers
    NodeResourcesFit's Filter compared (fitsRequest's InsufficientResource: Reason,
    Requested, Used, Capacity), in the scheduler's units: milli-CPU, bytes, counts."""

    resource: str
    reason: str  # "Insufficient cpu", "Too many pods"
    requested: int  # the pod's request
    nodes: list[NodeAmount]


@runtime_checkable
class ReportsShortfalls(Protocol):
    """A Filter plugin that can say, for an explanation, how much its rejected nodes
    lack (NodeResourcesFit)."""

    name: str

    def shortfalls(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows
    ) -> list[Shortfall]: ...


class RejectedNodes(_Record):
    """Nodes that share one filter verdict: the first plugin that rejected them
    (findNodesThatPassFilters stops at it), its code and reasons, what the other
    filters would have said of the same nodes, and for each "Insufficient X" of
    theirs the pod's request against what each node has free."""

    nodes: list[str]
    plugin: str
    code: str
    reasons: list[str]
    also_rejected_by: dict[str, list[str]] = {}
    insufficient: list[Shortfall] = []


class PluginScore(_Record):
    """One score plugin on a node: raw (Score), normalized (NormalizeScore), and
    weighted (normalized × the profile's weight), as RunScorePlugins computes them."""

    plugin: str
    raw: int
    normalized: int
    weight: int
    weighted: int


class ScoredNodes(_Record):
    """Feasible nodes with the same scores from every plugin, hence the same total."""

    nodes: list[str]
    total: int
    scores: list[PluginScore] = []


class TieBreak(_Record):
    """selectHost: the nodes with the best total, and how one was picked."""

    nodes: list[str]
    chosen: str
    how: str


class PostFilterOutcome(_Record):
    """What PostFilter (DefaultPreemption) made of a pod that fit nowhere."""

    message: str
    nominated_node: str = ""
    victims: list[str] = []


class ProfilePlugins(_Record):
    """The profile that ran and its plugins, per extension point (score with weights)."""

    profile: str
    filter: list[str]
    score: dict[str, int]
    post_filter: list[str] = []


class Explanation(_Record):
    """One scheduling attempt of one pod, at the moment it ran."""

    pod: str
    attempt: int
    plugins: ProfilePlugins
    num_nodes: int
    evaluated: int
    feasible: int
    result: str  # Scheduled | Unschedulable | SchedulerError | the failing point
    node: str = ""  # the chosen node (it may still fail Reserve / Permit / bind)
    message: str = ""  # the FailedScheduling text, for attempts that failed
    pre_filter: str = ""
    nominated_node: str = ""
    nominated_fits: bool = False
    rejected: list[RejectedNodes] = []
    not_evaluated: int = 0  # nodes past the numFeasibleNodesToFind cut
    not_evaluated_reason: str = ""
    scored: list[ScoredNodes] = []
    score_skipped: list[str] = []
    tie: TieBreak | None = None
    post_filter: PostFilterOutcome | None = None
