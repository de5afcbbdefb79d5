"""`run --batch-window`: the batch placement engine as a fallback of the
scheduling cycle (issue 17; the PostFilter fallback of arXiv 2511.08373).

Off (the default), none of this exists and the scheduler is kube-scheduler.
On, a window opens with the first pod the cycle places or leaves unschedulable,
and for `window` seconds:

- every pod the cycle places (it passed Filter, Reserve and Permit) is held at
  Permit, under the wait `BatchPlacement`, still assumed on its node;
- every pod the cycle leaves unschedulable that preemption did not nominate
  (PostFilter found nothing) is gathered.

When the window closes, with no pod gathered the held ones are let go at once:
the cost is the wait. Otherwise the engine (kubesched.batch.place_batch) places
the held and gathered pods of each profile jointly on the cache's node table
without them, under the time limit, with the cycle's placement as greedy's. A
pod left unschedulable on its own cannot fit once more pods are placed, so the
held pods are what the engine may rearrange; pods already bound stay where they
are (moving running pods is out of scope).

The answer goes back through the normal cycles, never around them: a held pod
the engine keeps where it is goes on to PreBind and Bind; one it puts elsewhere
is rejected at Permit (Unreserve runs) and nominated to its new node; gathered
pods it places are nominated to theirs. The nominated ones are then activated,
once the moved ones have given their room back, and each tries its nominated
node first (evaluateNominatedNode, as after preemption), through Filter,
Reserve, Permit, PreBind and Bind. The nominations keep the room from
lower-or-equal priority pods meanwhile, as preemption's do.

In `run` (`off_loop`), the solver runs in a thread of its own: CP-SAT releases
the GIL, so the cycles, the informers and the lease go on meanwhile. The model is
built and the answer replayed through the filters on the scheduling thread, each
between two cycles, with the held pods taken off their rows and put back. The
replay reads the table as it is by then, so room the cycles took during the
solve is not given twice; pods bound, deleted or placed meanwhile drop out.

When the engine keeps greedy's placement, fails or runs out of time, every held
pod is let go and the gathered ones stay as the normal cycle left them. A pod
the engine nominated that fails again is not gathered on that failure, so an
answer that the cluster has overtaken is not tried again before a cluster event
wakes the pod: no loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kubesched.batch import BatchPlacement, load_solvers, place_batch
from kubesched.batch.engine import PreparedBatch, finish_batch, prepare_batch
from kubesched.batch.solver import Solution
from kubesched.cache.cache import Cache
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock
from kubesched.framework.handle import Listers
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.state.node_table import SavedRow
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.framework.waiting import WaitingPods
from kubesched.logs import kv
from kubesched.queue.nominator import Nominator
from kubesched.queue.scheduling_queue import SchedulingQueue
from kubesched.scheduler.failure import set_nominated_node_name

log = logging.getLogger("kubesched.batch")

# The name of the batch's wait at Permit, and of the rejection of a pod it moves.
BATCH_PLUGIN = "BatchPlacement"
# A held pod is let go by the window's close; this much past the window and the
# engine's time is the safety net of its Permit wait (rejected: retried as usual).
HOLD_GRACE_SECONDS = 30.0

# Told of each batch the engine ran on: its result ("engine", "greedy", "error")
# and how many more pods it placed than greedy.
BatchObserver = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class BatchOptions:
    window: float  # seconds the window stays open
    timeout: float = 1.0  # the engine's time limit per profile
    workers: int = 1  # CP-SAT's workers: the scheduler shares its machine
    # Solve in a thread while the event loop goes on (`run`); off, the solve runs
    # where the window closes (the simulator's clock does not move meanwhile).
    off_loop: bool = False


@dataclass(slots=True)
class BatchOutcome:
    """What one closed window did (the log line and the tests read it)."""

    profile: str
    pods: int  # held + gathered
    held: int
    gathered: int
    result: str  # engine | greedy | error
    beyond_greedy: int = 0  # pods placed beyond greedy's placement
    moved: dict[str, str] = field(default_factory=dict)  # held pod -> its new node
    nominated: dict[str, str] = field(default_factory=dict)  # gathered pod -> node
    note: str = ""
    seconds: float = 0.0


@dataclass(slots=True)
class _Held:
    pod: PodInfo
    node: str
    profile: str


class BatchWindow:
    """The scheduler's batch mode: holds, gathers, and closes windows (see the
    module's docstring). The scheduling cycle calls `hold` after Permit, the
    FailureHandler `moved_to` and `failed`; the window closes on CLOCK. The engine
    places pods with FRAMEWORKS (by profile) on CACHE's node table; its answer goes
    to the pods waiting at Permit (WAITING_PODS), to NOMINATOR and the pods'
    status (CLUSTER, with each pod's LAST_FAILURES condition), and to QUEUE."""

    def __init__(
        self,
        options: BatchOptions,
        observe: BatchObserver | None = None,
        *,
        clock: Clock,
        queue: SchedulingQueue,
        cache: Cache,
        waiting_pods: WaitingPods,
        listers: Listers,
        frameworks: dict[str, Framework],
        nominator: Nominator,
        cluster: ClusterClient,
        last_failures: dict[str, tuple[str, str]],
    ) -> None:
        self.clock = clock
        self.queue = queue
        self.cache = cache
        self.table = cache.table
        self.waiting_pods = waiting_pods
        self.listers = listers
        self.frameworks = frameworks
        self.nominator = nominator
        self.cluster = cluster
        self.last_failures = last_failures
        self.options = options
        self.observe = observe
        self.held: dict[str, _Held] = {}
        self.gathered: dict[str, str] = {}  # pod key -> profile
        self.outcomes: list[BatchOutcome] = []  # the last windows' (a few kept)
        self.windows_closed = 0
        self._close_timer: Callable[[], None] | None = None
        # Held pods rejected at Permit to move: key -> new node, until their
        # failure is handled; then the pods to activate are.
        self._moves: dict[str, str] = {}
        self._to_activate: list[str] = []
        # Pods the engine nominated: their next failure is not gathered.
        self._spent: set[str] = set()
        # `off_loop`: the window being solved (a later close waits for it).
        self._solving: asyncio.Task[None] | None = None
        # The solvers' import (seconds), now rather than in the first window's time.
        load_solvers()

    # --- the scheduler's hooks ---------------------------------------------------

    def hold(self, pod: PodInfo, node: str, profile: str) -> dict[str, float]:
        """The Permit wait of a pod the cycle placed: held until the window closes;
        none for a pod the engine just placed (its attempt is the batch's answer)."""
        if pod.key in self._spent:
            self._spent.discard(pod.key)
            return {}
        self._open()
        self.held[pod.key] = _Held(pod, node, profile)
        opts = self.options
        return {BATCH_PLUGIN: opts.window + 2 * opts.timeout + HOLD_GRACE_SECONDS}

    def moved_to(self, key: str, nominated: str | None) -> str | None:
        """The nomination a failed attempt leaves: the engine's node for a held pod
        it rejected at Permit to move, else `nominated` unchanged."""
        return self._moves.get(key, nominated)

    def failed(self, qpi: QueuedPodInfo, nominated: str, unschedulable: bool) -> None:
        """An attempt failed and was handled. Gathered: a pod no node fits
        (`unschedulable`: the filters' verdict) that is not nominated (preemption
        did not help), unless the engine's last nomination of it just failed."""
        key = qpi.pod_info.key
        if key in self._moves:
            del self._moves[key]
            self._to_activate.append(key)
            if not self._moves:
                self._activate()
            return
        if not unschedulable or nominated:
            return
        if key in self._spent:
            self._spent.discard(key)  # the normal behaviour from now on
            return
        self._open()
        self.gathered[key] = qpi.pod_info.pod.spec.scheduler_name

    # --- the window --------------------------------------------------------------

    def _open(self) -> None:
        if self._close_timer is None:
            clock = self.clock
            self._close_timer = clock.call_at(clock.now() + self.options.window, self.close)

    def close(self) -> None:
        """Close the window: let the held pods go, or run the engine per profile
        on what the window holds and hand its answer to the normal cycles."""
        self._close_timer = None
        self.windows_closed += 1
        held, self.held = self.held, {}
        gathered, self.gathered = self.gathered, {}
        if not self.options.off_loop:
            self._finish_window(self._solve_here(*self._still_waiting(held, gathered)))
            return
        previous = self._solving
        self._solving = asyncio.get_running_loop().create_task(
            self._close_off_loop(previous, held, gathered)
        )

    async def _close_off_loop(
        self,
        previous: asyncio.Task[None] | None,
        held: dict[str, _Held],
        gathered: dict[str, str],
    ) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        outcomes: list[BatchOutcome] = []
        live, pending = self._still_waiting(held, gathered)
        if pending:
            for profile in self._profiles(live, pending):
                own, waiting_pods = self._of_profile(profile, live, pending)
                prepared = self._prepare(profile, own, waiting_pods)
                if prepared is None:
                    continue
                try:
                    solution, rounds = await asyncio.to_thread(prepared.solve)
                except Exception as exc:  # the engine must never stop the scheduler
                    log.exception("Batch placement failed; the pods keep the normal behaviour")
                    outcome = BatchOutcome(profile, len(prepared.pods), len(own), 0, "error")
                    outcome.note = str(exc)
                    outcomes.append(self._report(outcome))
                    continue
                # The cycles went on meanwhile: what is still held and pending now.
                live, pending = self._still_waiting(live, {k: profile for k in pending})
                own, waiting_pods = self._of_profile(profile, live, pending)
                finished = self._finish(profile, own, waiting_pods, prepared, solution, rounds)
                if finished is not None:
                    outcomes.append(finished)
        self._finish_window((live, outcomes))

    def _still_waiting(
        self, held: dict[str, _Held], gathered: dict[str, str]
    ) -> tuple[dict[str, _Held], dict[str, QueuedPodInfo]]:
        """The held pods still waiting at Permit on their node, and the gathered
        pods still unschedulable and not nominated."""
        # Pods deleted since the engine placed them are forgotten.
        self._spent = {k for k in self._spent if self.queue.find(k) is not None}
        live: dict[str, _Held] = {}
        for key, h in held.items():
            waiting = self.waiting_pods.get(key)
            if waiting is not None and self.cache.assumed.get(key) == h.node:
                live[key] = h
        pending: dict[str, QueuedPodInfo] = {}
        for key in gathered:
            qpi = self.queue.unschedulable.get(key) or self.queue.backoff.get(key)
            if qpi is not None and not qpi.pod.status.nominated_node_name:
                pending[key] = qpi
        return live, pending

    @staticmethod
    def _profiles(live: dict[str, _Held], pending: dict[str, QueuedPodInfo]) -> list[str]:
        profiles = {h.profile for h in live.values()}
        profiles |= {q.pod.spec.scheduler_name for q in pending.values()}
        return sorted(profiles)

    @staticmethod
    def _of_profile(
        profile: str, live: dict[str, _Held], pending: dict[str, QueuedPodInfo]
    ) -> tuple[dict[str, _Held], dict[str, QueuedPodInfo]]:
        own = {k: h for k, h in live.items() if h.profile == profile}
        waiting_pods = {k: q for k, q in pending.items() if q.pod.spec.scheduler_name == profile}
        return own, waiting_pods

    def _solve_here(
        self, live: dict[str, _Held], pending: dict[str, QueuedPodInfo]
    ) -> tuple[dict[str, _Held], list[BatchOutcome]]:
        outcomes: list[BatchOutcome] = []
        if pending:
            for profile in self._profiles(live, pending):
                outcome = self._place(profile, *self._of_profile(profile, live, pending))
                if outcome is not None:
                    outcomes.append(outcome)
        return live, outcomes

    def _finish_window(self, done: tuple[dict[str, _Held], list[BatchOutcome]]) -> None:
        live, outcomes = done
        for key in live:
            if key not in self._moves:
                self._allow(key)
        if self._to_activate and not self._moves:
            self._activate()
        elif self._moves:
            # The moved pods' failures end the moves; should one never come (the
            # pod deleted or made again meanwhile), the rest are woken anyway.
            clock = self.clock
            clock.call_at(clock.now() + self.options.window, self._give_up_moves)
        self.outcomes = [*self.outcomes, *outcomes][-16:]

    @contextlib.contextmanager
    def _engine(self, held: dict[str, _Held], outcome: BatchOutcome) -> Iterator[None]:
        """Around the engine's reads of the node table: the held pods are taken off
        their rows (the engine places pods on a table holding none of them) and put
        back after; an error of the engine ends in `outcome`, logged, for the
        engine must never stop the scheduler."""
        table = self.table
        saved: dict[int, SavedRow] = {}
        for h in held.values():
            row = table.row_of(h.node)
            if row is None:
                continue
            if row not in saved:
                saved[row] = table.save_row(row)
            table.remove_pod(h.pod, row)
        try:
            yield
        except Exception as exc:
            log.exception("Batch placement failed; the pods keep the normal behaviour")
            outcome.result = "error"
            outcome.note = str(exc)
        finally:
            for kept in saved.values():
                table.restore_row(kept)

    def _namespace_labels(self) -> dict[str, dict[str, str]]:
        namespaces = self.listers.namespaces
        return {name: ns.metadata.labels for name, ns in namespaces.items()}

    def _prepare(
        self, profile: str, held: dict[str, _Held], pending: dict[str, QueuedPodInfo]
    ) -> PreparedBatch | None:
        """The model, built between two cycles (`off_loop`); None, logged, if the
        profile is gone or building it failed."""
        fw = self.frameworks.get(profile)
        if fw is None or not pending:
            return None
        pods = [h.pod for h in held.values()] + [q.pod_info for q in pending.values()]
        outcome = BatchOutcome(profile, len(pods), len(held), len(pending), "greedy")
        prepared = None
        with self._engine(held, outcome):
            prepared = prepare_batch(
                fw,
                self.table,
                pods,
                {key: h.node for key, h in held.items()},
                timeout=self.options.timeout,
                workers=self.options.workers,
                namespace_labels=self._namespace_labels(),
            )
        if prepared is None:
            self._report(outcome)
        return prepared

    def _finish(
        self,
        profile: str,
        held: dict[str, _Held],
        pending: dict[str, QueuedPodInfo],
        prepared: PreparedBatch,
        solution: Solution | None,
        rounds: int,
    ) -> BatchOutcome | None:
        """The solver's answer replayed on the table as it is now, for the pods
        still held and pending (`off_loop`)."""
        fw = self.frameworks.get(profile)
        if fw is None:
            return None
        keys = held.keys() | pending.keys()
        # Pods gone from the window since the model was built drop out of it.
        prepared.pods = [p for p in prepared.pods if p.key in keys]
        prepared.greedy = {key: h.node for key, h in held.items()}
        outcome = BatchOutcome(profile, len(keys), len(held), len(pending), "greedy")
        result: BatchPlacement | None = None
        with self._engine(held, outcome):
            if pending:
                result = finish_batch(prepared, fw, self.table, solution, rounds)
        return self._take(result, held, pending, outcome)

    def _place(
        self, profile: str, held: dict[str, _Held], pending: dict[str, QueuedPodInfo]
    ) -> BatchOutcome | None:
        fw = self.frameworks.get(profile)
        if fw is None or not pending:
            return None
        pods = [h.pod for h in held.values()] + [q.pod_info for q in pending.values()]
        outcome = BatchOutcome(profile, len(pods), len(held), len(pending), "greedy")
        result: BatchPlacement | None = None
        with self._engine(held, outcome):
            result = place_batch(
                fw,
                self.table,
                pods,
                {key: h.node for key, h in held.items()},
                timeout=self.options.timeout,
                workers=self.options.workers,
                namespace_labels=self._namespace_labels(),
            )
        return self._take(result, held, pending, outcome)

    def _take(
        self,
        result: BatchPlacement | None,
        held: dict[str, _Held],
        pending: dict[str, QueuedPodInfo],
        outcome: BatchOutcome,
    ) -> BatchOutcome:
        """Hand an engine's answer to the cycles, and log and count the window."""
        if result is not None:
            outcome.seconds = result.solve_seconds
            outcome.note = result.note
            if result.source == "engine":
                outcome.result = "engine"
                outcome.beyond_greedy = result.total - len(held)
                self._hand_off(result, held, pending, outcome)
        return self._report(outcome)

    def _report(self, outcome: BatchOutcome) -> BatchOutcome:
        log.info(
            "Batch placement",
            extra=kv(
                profile=outcome.profile,
                pods=outcome.pods,
                held=outcome.held,
                gathered=outcome.gathered,
                result=outcome.result,
                placedBeyondGreedy=outcome.beyond_greedy,
                moved=len(outcome.moved),
                seconds=round(outcome.seconds, 3),
                note=outcome.note,
            ),
        )
        if self.observe is not None:
            self.observe(outcome.result, outcome.beyond_greedy)
        return outcome

    def _hand_off(
        self,
        result: BatchPlacement,
        held: dict[str, _Held],
        pending: dict[str, QueuedPodInfo],
        outcome: BatchOutcome,
    ) -> None:
        """The engine's answer to the cycles: held pods it keeps go on, the ones it
        moves (or leaves out) are rejected at Permit, the gathered ones it places
        are nominated."""
        for key, h in held.items():
            node = result.placements.get(key)
            if node == h.node:
                continue
            waiting = self.waiting_pods.get(key)
            if waiting is None:
                continue
            if node is None:
                message = "the batch placement places other pods of this priority instead"
            else:
                message = f"the batch placement moves the pod to node {node}"
                self._moves[key] = node
                outcome.moved[key] = node
                self._spent.add(key)
            waiting.reject(BATCH_PLUGIN, message)
        for key, qpi in pending.items():
            node = result.placements.get(key)
            if node is None:
                continue
            pod = qpi.pod
            self.nominator.add(pod, node)
            reason, message = self.last_failures.get(key, ("Unschedulable", ""))
            self.cluster.set_unschedulable(pod, reason, message, node)
            set_nominated_node_name(qpi, node)
            outcome.nominated[key] = node
            self._spent.add(key)
            self._to_activate.append(key)

    def _allow(self, key: str) -> None:
        waiting = self.waiting_pods.get(key)
        if waiting is not None:
            waiting.allow(BATCH_PLUGIN)

    def _give_up_moves(self) -> None:
        if self._moves:
            self._moves.clear()
            self._activate()

    def _activate(self) -> None:
        keys, self._to_activate = self._to_activate, []
        self.queue.activate(keys)
