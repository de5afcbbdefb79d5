"""Opportunistic batching (KEP-5598): reuse of the previous cycle's ranking.

As framework/runtime/batch.go in v1.36.3 (OpportunisticBatch). After a full
scheduling pass, the feasible nodes other than the chosen one are kept in
ranking order with the pod's signature. The next pod gets the head of that
list as a hint when all of these hold (batchStateCompatible):

- it is the very next scheduling cycle (a pod of another profile, a skipped
  pod or a failed attempt in between ends the batch: "pod_skipped");
- its signature equals the stored one ("pod_incompatible" otherwise);
- the list is at most maxBatchAge (500 ms) old on the scheduler's clock
  ("expired");
- the node the previous pod went to still exists ("node_missing") and no
  longer fits this pod ("node_not_full" otherwise): with one pod per node,
  the next best node is then the next one in the list. If the pod could still
  go there, how that node ranks now is unknown, so the list is dropped.

The scheduler filters the hinted node alone; if it fits, the pod goes there
with no scoring at all and the list stays (its head is gone). If not, a full
pass runs and its ranking replaces the list. Nothing else invalidates the list:
as upstream, a change to a node further down the list shows only when that
node's turn comes (it is filtered again then) and maxBatchAge bounds how stale
its rank can be.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter

import numpy as np

from kubesched.framework.clock import Clock
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.metrics_recorder import MetricsRecorder, records
from kubesched.framework.signature import PodSignature, PodSigner
from kubesched.framework.state.node_table import IntArray, NodeTable, Rows
from kubesched.framework.types import PodInfo, QueuedPodInfo

log = logging.getLogger("kubesched.batch")

# batch.go: maxBatchAge.
MAX_BATCH_AGE = 0.5

# metrics.go: the result label of batch_attempts_total.
HINT_USED = "hint_used"
HINT_NOT_USED = "hint_not_used"
NO_HINT = "no_hint"
# metrics.go: the reason label of batch_cache_flushed_total.
FLUSH_POD_FAILED = "pod_failed"
FLUSH_POD_SKIPPED = "pod_skipped"
FLUSH_NODE_MISSING = "node_missing"
FLUSH_NODE_NOT_FULL = "node_not_full"
FLUSH_EMPTY_LIST = "empty_list"
FLUSH_EXPIRED = "expired"
FLUSH_POD_INCOMPATIBLE = "pod_incompatible"
FLUSH_POD_NOT_BATCHABLE = "pod_not_batchable"


class SortedNodes:
    """The feasible nodes of a pass, best first, the chosen one taken out
    (sortedNodeScores upstream, a heap of NodePluginScores ordered by total
    score, then by a random number per node). The names are taken when the
    list is made (a row may hold another node later), and only for a pod with
    a signature (no other list is ever read); the order is worked out on the
    first pop only."""

    __slots__ = ("_names", "_order", "_rng", "_totals")

    def __init__(self, names: list[str] | None, totals: IntArray, rng: np.random.Generator) -> None:
        self._names = names
        self._totals = totals
        self._rng = rng
        self._order: list[str] | None = None

    def __len__(self) -> int:
        return len(self._totals) if self._order is None else len(self._order)

    def pop(self) -> str:
        """The best node left (ties broken at random), removed from the list."""
        if self._order is None:
            names = self._names
            if names is None:
                raise RuntimeError("the nodes of an unsigned pod's pass were not kept")
            tie_break = self._rng.random(len(names))
            ranked = np.lexsort((tie_break, -self._totals.astype(np.int64)))
            # Worst first, so that pop() from the end yields the best.
            self._order = [names[i] for i in ranked[::-1].tolist()]
        return self._order.pop()


@dataclass(slots=True)
class _BatchState:
    signature: PodSignature
    sorted_nodes: SortedNodes
    created: float


@dataclass(slots=True)
class _LastCycle:
    cycle: int = -1
    chosen_node: str = ""
    succeeded: bool = False


# What the batch needs of the framework: whether the filters reject the pod on
# one node (RunFilterPlugins(...).IsRejected()); an error is not a rejection.
RejectedOn = Callable[[CycleState, PodInfo, int], bool]


class OpportunisticBatch:
    """One profile's batch state (OpportunisticBatch in batch.go)."""

    def __init__(
        self,
        profile: str,
        table: NodeTable,
        clock: Clock,
        metrics: MetricsRecorder,
        signer: PodSigner,
        rng: np.random.Generator,
    ) -> None:
        self.profile = profile
        self.table = table
        self.clock = clock
        self.metrics = metrics
        self.signer = signer
        self.rng = rng  # the scheduler's: a ranking's ties are broken from it
        self.recording = records(metrics)
        self.state: _BatchState | None = None
        self.last_cycle = _LastCycle()
        # The pods placed on a hint (batchedPods upstream, for tests).
        self.batched_pods = 0

    def sign(self, qpi: QueuedPodInfo) -> PodSignature | None:
        """The pod's signature: worked out once per version of the pod, as upstream's
        queue signs a pod when it comes in or is updated (signPod), and kept on the
        queued pod. The Sign extension point is timed as SignPod times it, also for
        a profile that signs nothing, always with "Success" (its deferred function
        reads a status never set)."""
        pod = qpi.pod_info
        if qpi.signed is pod:
            return qpi.signature
        if not self.recording:
            signature = self.signer.sign(pod)
        else:
            started = perf_counter()
            signature = self.signer.sign(pod)
            seconds = perf_counter() - started
            self.metrics.observe_extension_point("Sign", "Success", self.profile, seconds)
        qpi.signature, qpi.signed = signature, pod
        return signature

    def get_node_hint(
        self,
        pod: PodInfo,
        signature: PodSignature | None,
        state: CycleState,
        cycle: int,
        rejected_on: RejectedOn,
    ) -> str:
        """The hint for this pod, or "" (GetNodeHint)."""
        started = perf_counter()
        hint = ""
        if self._compatible(pod, signature, state, cycle, rejected_on):
            assert self.state is not None
            hint = self.state.sorted_nodes.pop()
            log.debug("pod %s: node hint %s (cycle %d)", pod.key, hint, cycle)
        elif self.recording:
            self.metrics.observe_batch_attempt(self.profile, NO_HINT)
        if self.recording:
            hinted = "hint" if hint else "no_hint"
            self.metrics.observe_node_hint(hinted, self.profile, perf_counter() - started)
        return hint

    def store_pass(
        self,
        signature: PodSignature | None,
        hinted_node: str,
        feasible: Rows,
        totals: IntArray | None,
        chosen: int,
        cycle: int,
    ) -> None:
        """StoreScheduleResults for a pass that chose `feasible[chosen]`, with the
        others ranked by their `totals` (None: the pass found one node, so no
        scores and no list). Only a pod with a signature has its list's names kept;
        for another one only how many nodes are left counts (the flush's reason),
        so nothing is copied."""
        names = self.table.names
        ranking: SortedNodes | None = None
        if totals is not None:
            if signature is None:
                ranking = SortedNodes(None, totals[1:], self.rng)
            else:
                others = np.delete(feasible, chosen)
                kept = [names[r] for r in others.tolist()]
                ranking = SortedNodes(kept, np.delete(totals, chosen), self.rng)
        chosen_node = names[int(feasible[chosen])]
        self.store_schedule_results(signature, hinted_node, chosen_node, ranking, cycle)

    def store_schedule_results(
        self,
        signature: PodSignature | None,
        hinted_node: str,
        chosen_node: str,
        other_nodes: SortedNodes | None,
        cycle: int,
    ) -> None:
        """Keep a pass's ranking for the next pod (StoreScheduleResults)."""
        started = perf_counter()
        self.last_cycle = _LastCycle(cycle, chosen_node, True)
        if hinted_node and hinted_node == chosen_node:
            # The hint was used: the list stays as it is, one node shorter.
            self.batched_pods += 1
            if self.recording:
                self.metrics.observe_batch_attempt(self.profile, HINT_USED)
                self.metrics.observe_store_results(self.profile, perf_counter() - started)
            return
        if hinted_node and self.recording:
            self.metrics.observe_batch_attempt(self.profile, HINT_NOT_USED)
        if signature is not None and other_nodes is not None and len(other_nodes):
            self.state = _BatchState(signature, other_nodes, self.clock.now())
        else:
            empty = other_nodes is None or not len(other_nodes)
            self._flush(FLUSH_EMPTY_LIST if empty else FLUSH_POD_NOT_BATCHABLE)
        if self.recording:
            self.metrics.observe_store_results(self.profile, perf_counter() - started)

    def _flush(self, reason: str) -> None:
        """logUnusableState: the state is dropped, the reason counted."""
        self.state = None
        if self.recording:
            self.metrics.inc_batch_flush(self.profile, reason)

    def _compatible(
        self,
        pod: PodInfo,
        signature: PodSignature | None,
        state: CycleState,
        cycle: int,
        rejected_on: RejectedOn,
    ) -> bool:
        """batchStateCompatible: whether the stored list may hint this pod. Each
        failed check drops the list, as upstream does."""
        batch = self.state
        if batch is None or not len(batch.sorted_nodes):
            return False
        if cycle != self.last_cycle.cycle + 1:
            self._flush(FLUSH_POD_SKIPPED)
            return False
        if not self.last_cycle.succeeded:
            self._flush(FLUSH_POD_FAILED)
            return False
        if signature is None or signature != batch.signature:
            self._flush(FLUSH_POD_INCOMPATIBLE)
            return False
        if self.clock.now() > batch.created + MAX_BATCH_AGE:
            self._flush(FLUSH_EXPIRED)
            return False
        row = self.table.row_of(self.last_cycle.chosen_node)
        if row is None:
            self._flush(FLUSH_NODE_MISSING)
            return False
        if not rejected_on(state, pod, row):
            self._flush(FLUSH_NODE_NOT_FULL)
            return False
        return True
