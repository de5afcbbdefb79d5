"""What the Scheduler's methods share, wherever they are defined.

Upstream's Scheduler is one struct (scheduler.go) whose methods live in several
files (eventhandlers.go, schedule_one.go). Here each such file is a mixin class
over SchedulerBase: EventHandlers (eventhandlers.py), SchedulingCycle
(schedule_one.py) and BindingCycle (binding_cycle.py). SchedulerBase declares
the fields they use, which Scheduler.__init__ (scheduler.py) sets, and the
metrics helpers they all call. The extension points time themselves
(framework/runtime.py), as upstream's frameworkImpl does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kubesched.cache.cache import Cache
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock
from kubesched.framework.explain import Explanation
from kubesched.framework.extender import Extender
from kubesched.framework.features import FeatureGates
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.metrics_recorder import MetricsRecorder
from kubesched.framework.node_table import NodeTable
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.waiting import WaitingPods
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue

if TYPE_CHECKING:
    from kubesched.scheduler.batch_window import BatchWindow


class Observer(MetricsRecorder, Protocol):
    """What the scheduler reports to metrics (kubesched.metrics.SchedulerMetrics):
    what its own loop observes, and, through the Handle it builds, what the
    framework and the plugins do (MetricsRecorder)."""

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None: ...
    def observe_algorithm(self, seconds: float) -> None: ...
    def should_sample_plugins(self) -> bool:
        """Whether this cycle's plugin durations are observed (ScheduleOne's
        `rand.Intn(100) < pluginMetricsSamplePercent`)."""
        ...

    def observe_pod_scheduled(self, attempts: int, seconds_since_first_attempt: float) -> None: ...


class OutcomeObserver(Protocol):
    """Told what becomes of each pod, for a per-pod report (the simulator's
    OutcomeRecorder). The scheduler keeps no such record itself: in `kubesched run`
    nothing per pod may outlive the pod."""

    def pod_pending(self, key: str) -> None: ...
    def pod_attempted(self, key: str, attempts: int) -> None: ...
    def pod_scheduled(self, key: str, node: str) -> None: ...
    def pod_failed(
        self, key: str, reason: str, message: str, diagnosis: Diagnosis | None
    ) -> None: ...


class ExplainObserver(Protocol):
    """Asks for explanations of some pods' attempts and is handed each one when the
    attempt's scheduling cycle ends (`kubesched explain`, `run --explain`). The
    scheduler asks `wants` once per attempt; with no ExplainObserver it asks nothing
    and captures nothing."""

    def wants(self, key: str) -> bool: ...
    def explained(self, explanation: Explanation) -> None: ...


class SchedulerBase:
    """The Scheduler's fields (the Scheduler struct in scheduler.go), as its
    methods in every module see them; Scheduler.__init__ sets them all."""

    clock: Clock
    cluster: ClusterClient
    cache: Cache
    table: NodeTable  # the cache's node table
    waiting_pods: WaitingPods
    handle: Handle
    listers: Listers
    frameworks: dict[str, Framework]  # by scheduler name, one per profile
    queue: SchedulingQueue
    rng: np.random.Generator
    nominator: Nominator
    percentage_of_nodes_to_score: int
    next_start_node_index: int
    _feasible_share: float
    binding_tasks: set[asyncio.Task[None]]  # binding cycles and preemption's API calls
    last_failures: dict[str, tuple[str, str]]
    observer: Observer | None
    outcome_observer: OutcomeObserver | None
    explain_observer: ExplainObserver | None
    gates: FeatureGates  # the feature gates (framework/features.py)
    opportunistic_batching: bool  # the OpportunisticBatching gate
    batch: BatchWindow | None  # `run --batch-window`; None: kube-scheduler's behaviour
    # The configuration's HTTP extenders, ignorable ones last (sched.Extenders).
    extenders: Sequence[Extender]
    # This cycle's feasible nodes are new NodeInfos from an extender's Nodes answer.
    extender_new_nodes: bool

    # --- metrics -------------------------------------------------------------------

    def _observe(self, result: str, fw: Framework, started: float) -> None:
        if self.observer is not None:
            self.observer.observe_attempt(result, fw.profile_name, time.perf_counter() - started)

    def _observe_algorithm(self, started: float) -> None:
        # schedulingAlgorithm's deferred SchedulingAlgorithmLatency: from the cycle's
        # start through Filter and Score or, for a pod that fits nowhere, PostFilter.
        if self.observer is not None:
            self.observer.observe_algorithm(time.perf_counter() - started)

    def _observe_failure(self, fw: Framework, status: Status, started: float) -> None:
        self._observe("error" if status.code == Code.ERROR else "unschedulable", fw, started)
