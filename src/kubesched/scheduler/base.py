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
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kubesched.cache.cache import Cache
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock
from kubesched.framework.extender import Extender
from kubesched.framework.features import FeatureGates
from kubesched.framework.handle import Handle, Listers
from kubesched.framework.node_table import NodeTable
from kubesched.framework.runtime import Framework
from kubesched.framework.status import Code, Status
from kubesched.framework.waiting import WaitingPods
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.listeners import SchedulingListeners

if TYPE_CHECKING:
    from kubesched.scheduler.batch_window import BatchWindow


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
    # Metrics, per-pod outcomes and explanations, each optional (listeners.py).
    listeners: SchedulingListeners
    gates: FeatureGates  # the feature gates (framework/features.py)
    opportunistic_batching: bool  # the OpportunisticBatching gate
    batch: BatchWindow | None  # `run --batch-window`; None: kube-scheduler's behaviour
    # The configuration's HTTP extenders, ignorable ones last (sched.Extenders).
    extenders: Sequence[Extender]
    # This cycle's feasible nodes are new NodeInfos from an extender's Nodes answer.
    extender_new_nodes: bool

    # --- metrics -------------------------------------------------------------------

    def _observe(self, result: str, fw: Framework, started: float) -> None:
        self.listeners.attempt(result, fw.profile_name, started)

    def _observe_algorithm(self, started: float) -> None:
        self.listeners.algorithm(started)

    def _observe_failure(self, fw: Framework, status: Status, started: float) -> None:
        self._observe("error" if status.code == Code.ERROR else "unschedulable", fw, started)
