"""DefaultPreemption's candidates and victims: which pods matter more, which evictions
a PodDisruptionBudget forbids, and which candidate node wins (preemption.Evaluator's
helpers and pickOneNodeForPreemption upstream)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from kubesched.api.disruption import selector_matches
from kubesched.api.objects import Pod, PodDisruptionBudget
from kubesched.framework.types import PodInfo

NO_VICTIMS = "No preemption victims found for incoming pod"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

_MAX_INT32 = 2**31 - 1
# GetPodStartTime gives pods that have not started "now": later than any start.
_NOW = 2**63 - 1


def is_lower_priority(victim: PodInfo, preemptor: PodInfo) -> bool:
    """isPreemptionAllowed: only lower priority pods (IsEligiblePod allows all)."""
    return victim.priority < preemptor.priority


@dataclass(slots=True)
class Candidate:
    """A node where evicting `victims` (most important first) makes the pod fit."""

    name: str
    row: int
    victims: list[PodInfo]
    num_pdb_violations: int


# --- pods: importance, start times, PDBs, termination ----------------------------------


def start_time(pod: Pod) -> int:
    """util.GetPodStartTime in nanoseconds; pods not started yet count as started now."""
    text = pod.status.start_time
    if not text:
        return _NOW
    return _parse_start_time(text)


@lru_cache(maxsize=4096)
def _parse_start_time(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return _NOW
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def importance(pod: PodInfo) -> tuple[int, int]:
    """Sort key for util.MoreImportantPod: higher priority first, then the older pod."""
    return (-pod.priority, start_time(pod.pod))


def terminating_by_preemption(pod: Pod) -> bool:
    """podTerminatingByPreemption: being deleted, with DisruptionTarget=True set by a
    scheduler's preemption (the first DisruptionTarget condition decides)."""
    if pod.metadata.deletion_timestamp is None:
        return False
    for condition in pod.status.conditions:
        if condition.type == DISRUPTION_TARGET:
            return condition.status == "True" and condition.reason == PREEMPTION_BY_SCHEDULER
    return False


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """filterPodsWithPDBViolation: (violating, non-violating), each in input order. Each
    matching budget's allowance is spent pod by pod; a pod the budget already counts as
    disrupted spends nothing."""
    allowed = [pdb.status.disruptions_allowed if pdb.status is not None else 0 for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for info in pods:
        pod = info.pod
        violated = False
        if pod.metadata.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.metadata.namespace != pod.metadata.namespace:
                    continue
                if not selector_matches(pdb.spec.selector, pod.metadata.labels):
                    continue
                if pdb.status is not None and pod.metadata.name in pdb.status.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(info)
    return violating, non_violating


def earliest_start_of_highest_priority(victims: Sequence[PodInfo]) -> int:
    """util.GetEarliestPodStartTime: among the victims of the highest priority."""
    earliest = start_time(victims[0].pod)
    highest = victims[0].priority
    for victim in victims:
        if victim.priority == highest:
            earliest = min(earliest, start_time(victim.pod))
        elif victim.priority > highest:
            highest = victim.priority
            earliest = start_time(victim.pod)
    return earliest


def pick_one_node_for_preemption(candidates: Sequence[Candidate]) -> Candidate:
    """pickOneNodeForPreemption with the default score functions, in their order; ties
    left after the last one go to the first candidate."""
    # Each candidate's victim priorities, looked up once.
    priorities = {id(c): [v.priority for v in c.victims] for c in candidates}
    scores: list[Callable[[Candidate], int]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -priorities[id(c)][0],
        lambda c: -sum(priorities[id(c)]) - len(c.victims) * (_MAX_INT32 + 1),
        lambda c: -len(c.victims),
        lambda c: earliest_start_of_highest_priority(c.victims),
    ]
    remaining = list(candidates)
    for score in scores:
        values = [score(c) for c in remaining]
        best = max(values)
        remaining = [c for c, v in zip(remaining, values, strict=True) if v == best]
        if len(remaining) == 1:
            break
    return remaining[0]
