"""Gangs in `simulate` and `explain`: each scheduler-plugins PodGroup of the input, and
whether it was placed (minMember of its pods bound), is waiting (too few pods, or some
still gated), or is impossible on this cluster, with the reason its pods were given."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kubesched.api.pod_groups import pod_group_key
from kubesched.framework.features import FeatureGates
from kubesched.simulation.simulator import SimulationResult

PLACED = "placed"
WAITING = "waiting"
IMPOSSIBLE = "impossible"


@dataclass(frozen=True, slots=True)
class GangOutcome:
    key: str
    min_member: int
    pods: int  # the pods carrying the group's label
    scheduled: int  # of them, bound to a node
    state: str  # PLACED, WAITING or IMPOSSIBLE
    reason: str  # why not placed ("" when placed)
    phase: str  # status.phase, as the PodGroup controller left it
    nodes: dict[str, str]  # pod key -> node, for the bound pods

    def as_dict(self) -> dict[str, object]:
        return {
            "minMember": self.min_member,
            "pods": self.pods,
            "scheduled": self.scheduled,
            "state": self.state,
            "reason": self.reason,
            "phase": self.phase,
            "nodes": self.nodes,
        }


def gang_outcomes(result: SimulationResult) -> dict[str, GangOutcome]:
    members: dict[str, list[str]] = {}
    for key, pod in result.pods.items():
        group_key = pod_group_key(pod)
        if group_key:
            members.setdefault(group_key, []).append(key)
    outcomes: dict[str, GangOutcome] = {}
    for key, group in sorted(result.pod_groups.items()):
        pods = members.get(key, [])
        nodes = {p: n for p in pods if (n := result.placements.get(p))}
        minimum = group.spec.min_member
        gated = [p for p in pods if result.pods[p].spec.scheduling_gates]
        if len(nodes) >= minimum and (pods or minimum == 0):
            state, reason = PLACED, ""
        elif len(pods) < minimum:
            state = WAITING
            reason = f"{len(pods)} of its minMember {minimum} pods exist"
        elif gated and len(pods) - len(gated) < minimum:
            state, reason = WAITING, f"{len(gated)} of its pods are gated"
        else:
            state = IMPOSSIBLE
            reasons = Counter(result.reasons[p] for p in pods if p in result.reasons)
            reasons.update(
                f"not attempted: {gate.plugin}: {gate.message}"
                for p in pods
                if (gate := result.not_attempted.get(p)) is not None
            )
            reason = reasons.most_common(1)[0][0] if reasons else "not scheduled"
        outcomes[key] = GangOutcome(
            key, minimum, len(pods), len(nodes), state, reason, group.status.phase, nodes
        )
    return outcomes


def gangs_scheduled(result: SimulationResult) -> bool:
    """Whether PodGroups were read and a profile ran Coscheduling to place them whole:
    only then do the reports show gangs (else their pods went one by one)."""
    return bool(result.pod_groups) and any("Coscheduling" in p.post_filter for p in result.profiles)


def gang_note(result: SimulationResult) -> str | None:
    """A note when PodGroups were read but no profile runs Coscheduling: their pods
    were scheduled one by one, as kube-scheduler's default profile would."""
    if not result.pod_groups or gangs_scheduled(result):
        return None
    return (
        f"{len(result.pod_groups)} PodGroups read, but no profile enables Coscheduling: "
        "their pods were scheduled one by one (see --config)"
    )


def gang_of(result: SimulationResult, pod_key: str) -> GangOutcome | None:
    """The outcome of the PodGroup the pod belongs to (None: no group, or not read)."""
    pod = result.pods.get(pod_key)
    group = pod_group_key(pod) if pod is not None else ""
    if not group or group not in result.pod_groups:
        return None
    return gang_outcomes(result).get(group)


def gang_line(gang: GangOutcome) -> str:
    """One line on a gang's placement: where its pods went, or why it is not placed."""
    head = (
        f"Gang {gang.key}: {gang.state}, {gang.scheduled} of {gang.pods} pods scheduled "
        f"(minMember {gang.min_member}, phase {gang.phase or '-'})"
    )
    if gang.state != PLACED:
        return f"{head}: {gang.reason}"
    per_node = Counter(gang.nodes.values())
    return f"{head} on " + ", ".join(f"{node} ×{n}" for node, n in sorted(per_node.items()))


def workload_gang_note(groups: int, gates: FeatureGates) -> str | None:
    """A note when the Workload API's PodGroups were read with GenericWorkload off:
    kube-scheduler then ignores them (and the API server drops a pod's
    schedulingGroup), so their pods were scheduled one by one."""
    if not groups or gates.generic_workload:
        return None
    return (
        f"{groups} PodGroups (scheduling.k8s.io/v1alpha2) read, but the GenericWorkload "
        "gate is off: their pods were scheduled one by one "
        "(--feature-gates GenericWorkload=true,GangScheduling=true)"
    )
