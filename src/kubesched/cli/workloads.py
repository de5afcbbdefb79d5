"""Placements by workload: the pods of one Deployment, ReplicaSet, StatefulSet, Job or
DaemonSet (or a bare pod) read as one line, with the nodes and zones they went to.
What the text report and the HTML report both show; computed once, here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.api.objects import Node, Pod
from kubesched.framework.state.node_table import ZONE_LABELS
from kubesched.simulation.simulator import SimulationResult

# Kinds whose pods are listed under their owner; a pod owned by anything else (or by
# nothing) is its own line, as kubectl lists it.
_WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "Job", "DaemonSet"})
NO_ZONE = "(no zone)"


@dataclass(frozen=True, slots=True, order=True)
class WorkloadRef:
    namespace: str
    kind: str  # Deployment | ReplicaSet | StatefulSet | Job | DaemonSet | Pod
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(slots=True)
class WorkloadPlacement:
    """One workload's pods: those the simulation placed (new), those it could not,
    and those that already ran before it started; the nodes and zones they are on."""

    workload: WorkloadRef
    placed: int = 0
    pending: int = 0
    running: int = 0
    nodes: Counter[str] = field(default_factory=Counter)  # new pods per node
    zones: Counter[str] = field(default_factory=Counter)  # new pods per zone
    pending_pods: list[str] = field(default_factory=list)


def workload_of(pod: Pod) -> WorkloadRef:
    """The workload a pod belongs to: its controller's kind and name. A ReplicaSet
    that a Deployment made (`<deployment>-<pod-template-hash>`, the hash also on the
    pod's label) is reported as the Deployment, as `kubectl get deploy` would."""
    meta = pod.metadata
    for ref in meta.owner_references:
        if not ref.controller or ref.kind not in _WORKLOAD_KINDS:
            continue
        template_hash = meta.labels.get("pod-template-hash", "")
        if ref.kind == "ReplicaSet" and template_hash and ref.name.endswith(f"-{template_hash}"):
            return WorkloadRef(meta.namespace, "Deployment", ref.name[: -len(template_hash) - 1])
        return WorkloadRef(meta.namespace, ref.kind, ref.name)
    return WorkloadRef(meta.namespace, "Pod", meta.name)


def node_zones(nodes: Iterable[Node]) -> dict[str, str]:
    """Each node's zone (topology.kubernetes.io/zone, or the beta label), NO_ZONE
    where it has none."""
    zones: dict[str, str] = {}
    for node in nodes:
        labels = node.metadata.labels
        zone = next((labels[label] for label in ZONE_LABELS if labels.get(label)), NO_ZONE)
        zones[node.metadata.name] = zone
    return zones


def explained_pods_of(pods: Iterable[Pod], limit: int) -> list[str]:
    """The pods the HTML report explains: the first and the last pending pod of each
    workload (in scheduling order; replicas mostly share their story, and the last
    is the likeliest not to fit), the largest workloads first, at most `limit`."""
    first: dict[WorkloadRef, str] = {}
    last: dict[WorkloadRef, str] = {}
    sizes: Counter[WorkloadRef] = Counter()
    for pod in pods:
        ref = workload_of(pod)
        first.setdefault(ref, pod.key)
        last[ref] = pod.key
        sizes[ref] += 1
    keys: list[str] = []
    for ref, _ in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        keys.extend(dict.fromkeys((first[ref], last[ref])))
    return keys[:limit]


def placements_by_workload(
    result: SimulationResult, running: Collection[str], zones: Mapping[str, str]
) -> list[WorkloadPlacement]:
    """Every workload of the result's pods, the one with the most pods first.
    `running` are the keys of the pods that were on a node before the simulation."""
    found: dict[WorkloadRef, WorkloadPlacement] = {}

    def entry(pod: Pod) -> WorkloadPlacement:
        ref = workload_of(pod)
        placement = found.get(ref)
        if placement is None:
            placement = found[ref] = WorkloadPlacement(ref)
        return placement

    for key, node in result.placements.items():
        pod = result.pods[key]
        placement = entry(pod)
        if key in running:
            placement.running += 1
            continue
        if node is None:
            placement.pending += 1
            placement.pending_pods.append(key)
        else:
            placement.placed += 1
            placement.nodes[node] += 1
            placement.zones[zones.get(node, NO_ZONE)] += 1
    return sorted(
        found.values(),
        key=lambda p: (-(p.placed + p.pending + p.running), p.workload),
    )


def new_and_running(result: SimulationResult, running: Collection[str]) -> tuple[int, int, int]:
    """(new pods placed, new pods left pending, pods that already ran)."""
    placed = pending = already = 0
    for key, node in result.placements.items():
        if key in running:
            already += 1
        elif node is None:
            pending += 1
        else:
            placed += 1
    return placed, pending, already


def reason_groups(reasons: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """The pending pods grouped by their FailedScheduling text, largest group first,
    each with the first pod's text. A text that names its own pod (a gang member's,
    "pod ml/w-3 ...") is grouped with its siblings': the pod's key and name count
    as one placeholder."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for key, reason in reasons.items():
        name = key.rpartition("/")[2]
        shape = reason.replace(key, "\0").replace(name, "\0") if name else reason
        groups.setdefault(shape, (reason, []))[1].append(key)
    return sorted(groups.values(), key=lambda group: (-len(group[1]), group[0]))
