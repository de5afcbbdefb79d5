"""DefaultPreemption's Executor (pkg/scheduler/framework/preemption/executor.go
v1.36.3): evicts the chosen candidate's victims, asynchronously
(SchedulerAsyncPreemption, on by default), and knows which preemptors still wait
for theirs.

prepareCandidateAsync observes the victims, clears the nominations of lower
priority pods on the node, and deletes the victims in a task after the scheduling
cycle (Handle.spawn): a victim waiting at Permit is only rejected there, any other
gets the DisruptionTarget condition and is deleted, with a Preempted event either
way (PreemptPod). IsPodRunningPreemption is what the plugin's PreEnqueue asks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kubesched.framework.handle import Handle
from kubesched.framework.types import PodInfo
from kubesched.plugins.defaultpreemption.candidates import PREEMPTION_BY_SCHEDULER, Candidate

log = logging.getLogger("kubesched.preemption")


class Executor:
    """preemption.Executor: the API side of preemption, for the plugin PLUGIN_NAME
    over HANDLE (None: built without one, as a plugin may be)."""

    def __init__(self, plugin_name: str, handle: Handle | None) -> None:
        self.plugin_name = plugin_name
        self._handle = handle
        # Preemptors whose victims are being evicted (Executor.preempting upstream),
        # each with the last victim it deletes: (node, victim key).
        self._last_victim: dict[str, tuple[str, str]] = {}

    @property
    def handle(self) -> Handle:
        if self._handle is None:
            raise RuntimeError(f"plugin {self.plugin_name} was built without a framework handle")
        return self._handle

    def is_pod_running_preemption(self, preemptor: str) -> bool:
        """IsPodRunningPreemption: while the last victim is being deleted, the
        preemption counts as done once the scheduler no longer sees that victim (or
        sees it terminating), even if the deletion call has not returned yet."""
        last = self._last_victim.get(preemptor)
        if last is None:
            return False
        node, victim = last
        table = self.handle.nodes
        row = table.row_of(node)
        if row is None:
            return False
        for info in table.pods_on(row):
            if info.key == victim:
                return info.pod.metadata.deletion_timestamp is None
        return False

    def prepare_candidate_async(self, candidate: Candidate, preemptor: PodInfo) -> None:
        """prepareCandidateAsync: evict the victims (those not already being deleted)
        in a task, after this scheduling cycle."""
        victims = [v for v in candidate.victims if v.pod.metadata.deletion_timestamp is None]
        if not victims:
            return
        # Executor.prepareCandidateAsync observes PreemptionVictims (all of the
        # candidate's victims) once some are to be deleted.
        self.handle.metrics.observe_preemption_victims(len(candidate.victims))
        # Upstream registers the last victim once the others are deleted; known from
        # the start, the check is the same while they are (the last one is still
        # there) and right when another preemptor already deleted it.
        self._last_victim[preemptor.key] = (candidate.name, victims[-1].key)
        self.handle.spawn(self._preempt(candidate.name, victims, preemptor))

    async def _preempt(self, node: str, victims: Sequence[PodInfo], preemptor: PodInfo) -> None:
        handle = self.handle
        try:
            # Lower priority pods nominated to the node may no longer fit there.
            lower = [
                p
                for p in handle.nominated.nominated_pods_for_node(node)
                if p.priority < preemptor.priority
            ]
            if lower:
                handle.clear_nominated_node(lower)
            for victim in victims:
                await self.preempt_pod(node, preemptor, victim)
        except Exception:
            log.exception("preemption for pod %s on node %s failed", preemptor.key, node)
            self._last_victim.pop(preemptor.key, None)
            # Do not leave the preemptor waiting for deletions that will not come
            # (prepareCandidateAsync Activates it), but let it retry after its
            # backoff, not at once: the API that refused is likely to refuse again.
            handle.retry_after_error([preemptor.key])
            return
        self._last_victim.pop(preemptor.key, None)

    async def preempt_pod(self, node: str, preemptor: PodInfo, victim: PodInfo) -> None:
        """Executor.PreemptPod: a victim waiting at Permit is just told so; any other
        gets DisruptionTarget=True and is deleted. Either way a Preempted event."""
        handle = self.handle
        cluster = handle.cluster
        if cluster is None:
            raise RuntimeError("no cluster to delete preemption victims from")
        message = f"Preempted by pod {preemptor.pod.metadata.uid} on node {node}"
        waiting = handle.waiting_pods.get(victim.key) if handle.waiting_pods else None
        if waiting is not None and waiting.preempt(self.plugin_name, "preempted"):
            message += " (in kube-scheduler memory)."
        else:
            found = await cluster.set_disruption_target(
                victim.pod,
                PREEMPTION_BY_SCHEDULER,
                f"{preemptor.pod.spec.scheduler_name}: "
                "preempting to accommodate a higher priority pod",
            )
            if not found:
                log.info("Victim Pod is already deleted: victim=%s node=%s", victim.key, node)
                return
            await cluster.delete_pod(victim.pod, "Preempted")
            log.info(
                "Preemptor Pod preempted victim Pod: preemptor=%s victim=%s node=%s",
                preemptor.key,
                victim.key,
                node,
            )
        cluster.record_event(victim.pod, "Normal", "Preempted", message)
