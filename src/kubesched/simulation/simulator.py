"""The simulator: the real scheduler, driven over an in-memory cluster on simulated time.

It answers "where would these pods go, and why not?" with exactly the code that
schedules a real cluster; only the source of truth and the clock differ.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec

from kubesched.api.objects import LabelSelector, Namespace, Node, Pod, PodDisruptionBudget
from kubesched.api.pod_groups import PodGroup
from kubesched.api.resource import ResourceClaim
from kubesched.api.scheduling import PodGroup as WorkloadPodGroup
from kubesched.api.workloads import DaemonSet
from kubesched.cluster.manifests import ClusterState
from kubesched.framework.clock import SimClock
from kubesched.framework.explain import Explanation, ProfilePlugins
from kubesched.framework.extender import ExtenderConfig
from kubesched.framework.features import DEFAULT_GATES, FeatureGates
from kubesched.framework.fit_error import Diagnosis
from kubesched.framework.handle import Listers
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.registry import Registry
from kubesched.framework.state.dra import DraState
from kubesched.framework.state.podgroup_states import WorkloadPodGroupLister
from kubesched.framework.state.storage import StorageState
from kubesched.scheduler import Scheduler
from kubesched.scheduler.explain import profile_plugins
from kubesched.scheduler.extender import build_extenders
from kubesched.scheduler.scheduler import freeze_after_sync
from kubesched.simulation.claim_controller import ResourceClaimController
from kubesched.simulation.claim_writer import InMemoryClaimWriter
from kubesched.simulation.memory import InMemoryCluster, RecordedEvent
from kubesched.simulation.volume_writer import InMemoryVolumeWriter
from kubesched.simulation.workload_pod_group_writer import InMemoryPodGroupConditionWriter

# Simulated runs yield to binding tasks this often, as a real scheduler would
# between cycles, so that bind events reach the queue in a realistic order.
_YIELD_EVERY = 32

Progress = Callable[[int, int], None]  # (pods settled, pods pending at start)


@dataclass(slots=True)
class Outcome:
    """The latest word on a pod, for reports and tests."""

    key: str
    node: str | None = None
    reason: str = ""  # Scheduled | Unschedulable | SchedulerError | Pending
    message: str = ""
    attempts: int = 0
    diagnosis: Diagnosis | None = None


class OutcomeRecorder:
    """The scheduler's OutcomeObserver for `simulate`: the latest word on every pod
    it was told of. Only a simulation, which ends, keeps one; `kubesched run` passes
    none, so that nothing per pod outlives the pod there."""

    def __init__(self) -> None:
        self.outcomes: dict[str, Outcome] = {}

    def _outcome(self, key: str) -> Outcome:
        outcome = self.outcomes.get(key)
        if outcome is None:
            outcome = self.outcomes[key] = Outcome(key)
        return outcome

    def pod_pending(self, key: str) -> None:
        # A pod seen again (an update, a requeue) keeps what it had.
        self.outcomes.setdefault(key, Outcome(key, reason="Pending"))

    def pod_attempted(self, key: str, attempts: int) -> None:
        self._outcome(key).attempts = attempts

    def pod_scheduled(self, key: str, node: str) -> None:
        outcome = self._outcome(key)
        outcome.node, outcome.reason, outcome.message, outcome.diagnosis = (
            node,
            "Scheduled",
            "",
            None,
        )

    def pod_failed(self, key: str, reason: str, message: str, diagnosis: Diagnosis | None) -> None:
        outcome = self._outcome(key)
        outcome.node, outcome.reason, outcome.message = None, reason, message
        outcome.diagnosis = diagnosis

    @property
    def attempts(self) -> int:
        """Attempts over all pods (each pod's count is its latest attempt's number)."""
        return sum(o.attempts for o in self.outcomes.values())


class ExplainRecorder:
    """The ExplainObserver of `kubesched explain`: every attempt of the pods asked
    about, in order, explained as the attempt saw the cluster."""

    def __init__(self, keys: Collection[str]) -> None:
        self.keys = frozenset(keys)
        self.explanations: dict[str, list[Explanation]] = {}

    def wants(self, key: str) -> bool:
        return key in self.keys

    def explained(self, explanation: Explanation) -> None:
        self.explanations.setdefault(explanation.pod, []).append(explanation)


@dataclass(slots=True)
class NodeUsage:
    name: str
    requested: dict[str, int]
    allocatable: dict[str, int]
    pods: int


@dataclass(frozen=True, slots=True)
class Gate:
    """Why a pod was never attempted: the PreEnqueue plugin that holds it back
    (scheduling gates, a missing ResourceClaim, a gang below its minCount)."""

    plugin: str
    message: str


@dataclass
class SimulationResult:
    placements: dict[str, str | None]
    # The last FailedScheduling text of each pod attempted and not placed (the
    # PodScheduled condition's message). Pods never attempted have none, as in a
    # cluster: kube-scheduler writes no event and no condition for them.
    reasons: dict[str, str]
    outcomes: dict[str, Outcome]
    nodes: list[NodeUsage]
    attempts: int
    wall_seconds: float
    simulated_seconds: float
    unhandled: dict[str, str] = field(default_factory=dict)  # pods of other schedulers
    evicted: list[str] = field(default_factory=list)  # preemption victims, deleted
    events: list[RecordedEvent] = field(default_factory=list)  # Scheduled, Preempted, ...
    # The pods as they end (status writes included), by key.
    pods: dict[str, Pod] = field(default_factory=dict)
    # The ResourceClaims as the simulation left them (allocated, reserved, released),
    # by namespace/name; empty without DRA objects.
    claims: dict[str, ResourceClaim] = field(default_factory=dict)
    # The profiles that ran, with their plugins (by schedulerName).
    profiles: list[ProfilePlugins] = field(default_factory=list)
    # Every attempt of the pods asked to be explained, by pod key.
    explanations: dict[str, list[Explanation]] = field(default_factory=dict)
    # scheduler-plugins' PodGroups as the simulation left them (status written), by key.
    pod_groups: dict[str, PodGroup] = field(default_factory=dict)
    # The Workload API's PodGroups as the simulation left them (PodGroupScheduled
    # conditions), by key.
    workload_pod_groups: dict[str, WorkloadPodGroup] = field(default_factory=dict)
    # The pods held at PreEnqueue that were never attempted, by key.
    not_attempted: dict[str, Gate] = field(default_factory=dict)

    @property
    def scheduled(self) -> int:
        return sum(1 for n in self.placements.values() if n is not None)


def simulate(
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    profiles: Sequence[ProfileConfig],
    *,
    seed: int | None = None,
    percentage_of_nodes_to_score: int = 0,
    progress: Progress | None = None,
    pdbs: Sequence[PodDisruptionBudget] = (),
    storage: StorageState | None = None,
    namespaces: Mapping[str, Namespace] | None = None,
    registry: Registry | None = None,
    dra: DraState | None = None,
    explain: Collection[str] = (),
    pod_groups: Sequence[PodGroup] = (),
    workload_pod_groups: Mapping[str, WorkloadPodGroup] | None = None,
    gates: FeatureGates = DEFAULT_GATES,
    workload_selectors: Mapping[tuple[str, str, str], LabelSelector] | None = None,
    extenders: Sequence[ExtenderConfig] = (),
) -> SimulationResult:
    """Schedule `pods` (in queue order; those with spec.nodeName already run) on `nodes`.
    `pdbs` (with their status) are what preemption respects where it can; `dra` holds
    the DRA objects (the pods' claims made from their templates already); every
    attempt of the pods in `explain` (keys) is explained in the result."""
    world = World(
        nodes,
        pods,
        profiles,
        pdbs,
        storage,
        namespaces,
        registry,
        dra,
        pod_groups,
        workload_pod_groups,
        gates,
        workload_selectors,
        extenders,
    )
    return simulate_world(
        world,
        seed=seed,
        percentage_of_nodes_to_score=percentage_of_nodes_to_score,
        progress=progress,
        explain=explain,
    )


def simulate_world(
    world: World,
    *,
    seed: int | None = None,
    percentage_of_nodes_to_score: int = 0,
    progress: Progress | None = None,
    explain: Collection[str] = (),
) -> SimulationResult:
    """simulate() on a World (the commands build theirs from the manifests, world_of)."""
    return asyncio.run(
        simulate_in_loop(world, seed, percentage_of_nodes_to_score, progress, explain)
    )


@dataclass(slots=True)
class World:
    """What a simulation starts from."""

    nodes: Sequence[Node]
    pods: Sequence[Pod]
    profiles: Sequence[ProfileConfig]
    pdbs: Sequence[PodDisruptionBudget] = ()
    storage: StorageState | None = None
    namespaces: Mapping[str, Namespace] | None = None
    registry: Registry | None = None
    dra: DraState | None = None
    # scheduler-plugins' PodGroups (Coscheduling); copied, their status is written.
    pod_groups: Sequence[PodGroup] = ()
    # The Workload API's PodGroups (GenericWorkload), by key; copied, their
    # PodGroupScheduled condition is written.
    workload_pod_groups: Mapping[str, WorkloadPodGroup] | None = None
    gates: FeatureGates = DEFAULT_GATES  # --feature-gates
    # The selectors of the Services, ReplicationControllers, ReplicaSets and
    # StatefulSets, by (namespace, kind, name), for PodTopologySpread's default
    # constraints; None: not known (the pods' labels stand in for their controllers').
    workload_selectors: Mapping[tuple[str, str, str], LabelSelector] | None = None
    # The configuration's HTTP extenders, called as `run` calls them; their bind
    # verb is not (a simulation binds in memory and writes nothing to a cluster).
    extenders: Sequence[ExtenderConfig] = ()
    # The DaemonSets, whose pods `plan` puts on the nodes it adds (those of the
    # nodes here are among `pods` already).
    daemon_sets: Sequence[DaemonSet] = ()

    @classmethod
    def of_state(
        cls,
        state: ClusterState,
        profiles: Sequence[ProfileConfig],
        *,
        registry: Registry | None = None,
        gates: FeatureGates = DEFAULT_GATES,
        extenders: Sequence[ExtenderConfig] = (),
        nodes: Sequence[Node] | None = None,
        pods: Sequence[Pod] | None = None,
    ) -> World:
        """The manifests' objects under a scheduler configuration; `nodes` and `pods`
        replace the manifests' where given (capacity leaves excluded nodes out,
        simulate puts running pods first, a sweep adds nodes and scales pods)."""
        return cls(
            state.nodes if nodes is None else nodes,
            state.pods if pods is None else pods,
            profiles,
            state.pdbs,
            state.storage,
            state.namespaces,
            registry,
            state.dra,
            state.pod_groups,
            state.workload_pod_groups,
            gates,
            state.workload_selectors,
            extenders,
            state.daemon_sets,
        )


@dataclass(slots=True)
class Session:
    """A simulated cluster with its scheduler, ready to be driven."""

    world: World
    clock: SimClock
    cluster: InMemoryCluster
    listers: Listers
    scheduler: Scheduler
    recorder: OutcomeRecorder
    explainer: ExplainRecorder


async def simulate_in_loop(
    world: World,
    seed: int | None,
    percentage: int,
    progress: Progress | None = None,
    explain: Collection[str] = (),
) -> SimulationResult:
    """simulate_world() inside a running event loop (plan's several simulations)."""
    session = start_session(world, seed, percentage, explain)
    scheduler = session.scheduler
    freeze_after_sync(len(world.nodes) + len(world.pods))
    started = time.perf_counter()
    total = len(scheduler.queue.active) + len(scheduler.queue.unschedulable)
    try:
        await run_until_quiet(scheduler, session.clock, progress, total)
    finally:
        close_extenders(scheduler)
    return session_result(session, time.perf_counter() - started)


def close_extenders(scheduler: Scheduler) -> None:
    """Close the HTTP connections of the session's extenders."""
    for extender in scheduler.extenders:
        extender.close()


def start_session(
    world: World, seed: int | None, percentage: int, explain: Collection[str] = ()
) -> Session:
    """The in-memory cluster of `world`, watched by a Scheduler (inside a running
    event loop: binding cycles are tasks)."""
    nodes, pods, profiles = world.nodes, world.pods, world.profiles
    pdbs, storage, namespaces, dra = world.pdbs, world.storage, world.namespaces, world.dra
    clock = SimClock()
    cluster = InMemoryCluster()
    for node in nodes:
        cluster.nodes[node.metadata.name] = node
    for pod in pods:
        cluster.pods[pod.key] = pod
    # The volume plugins' objects, a copy that PreBind binds claims in. Its writer
    # lands PreBind's writes there and completes them as the PV controller and
    # provisioner would (as the runner's KubeVolumeWriter writes to the API server);
    # the nodes are the provisioner's topology source.
    listers = Listers(
        storage=StorageState() if storage is None else storage.copy(),
        pdbs=list(pdbs),
        namespaces=dict(namespaces or {}),
        # The DRA objects, a copy that PreBind allocates and reserves claims in through
        # its writer, as the runner's KubeClaimWriter does on the API server.
        dra=DraState() if dra is None else dra.copy(),
        workload_pod_groups=WorkloadPodGroupLister(dict(world.workload_pod_groups or {})),
        workload_selectors=(
            None if world.workload_selectors is None else dict(world.workload_selectors)
        ),
    )
    listers.workload_pod_groups.writer = InMemoryPodGroupConditionWriter(
        listers.workload_pod_groups
    )
    listers.storage.writer = InMemoryVolumeWriter(listers.storage, cluster.nodes)
    claim_writer = InMemoryClaimWriter(listers.dra, now=lambda: _timestamp(clock))
    listers.dra.writer = claim_writer
    # The PodGroups, copies whose status the in-memory PodGroup controller writes.
    for group in world.pod_groups:
        listers.pod_groups.upsert_group(msgspec.structs.replace(group))
    recorder = OutcomeRecorder()
    explainer = ExplainRecorder(explain)
    scheduler = Scheduler(
        profiles,
        cluster,
        clock=clock,
        seed=seed,
        percentage_of_nodes_to_score=percentage,
        outcome_observer=recorder,
        listers=listers,
        registry=world.registry,
        explain_observer=explainer if explain else None,
        gates=world.gates,
        extenders=build_extenders([dataclasses.replace(e, bind_verb="") for e in world.extenders]),
    )
    if storage is not None:
        # Every change to the volume objects reaches the queue as the informers' would.
        listers.storage.subscribe(scheduler.queue.on_event)
    # Claims, slices and classes reach the queue too, for DynamicResources' hints.
    if dra is not None:
        listers.dra.subscribe(scheduler.queue.on_event)
    cluster.watch(scheduler)
    if dra is not None:
        # Deleted pods (preemption's victims) release their claims, after the scheduler
        # saw them go, as the resourceclaim controller and the garbage collector would.
        cluster.watchers.append(
            ResourceClaimController(claim_writer, cluster.pods, lambda: _timestamp(clock))
        )
    return Session(world, clock, cluster, listers, scheduler, recorder, explainer)


def session_result(session: Session, wall: float) -> SimulationResult:
    """Where the session's pods are, and why the others are not."""
    cluster, scheduler, recorder = session.cluster, session.scheduler, session.recorder
    placements: dict[str, str | None] = {}
    reasons: dict[str, str] = {}
    unhandled: dict[str, str] = {}
    not_attempted: dict[str, Gate] = {}
    for key, pod in cluster.pods.items():
        placements[key] = pod.spec.node_name or None
        if pod.spec.node_name:
            continue
        if not scheduler.responsible_for(pod):
            unhandled[key] = f'no profile for schedulerName "{pod.spec.scheduler_name}"'
            reasons[key] = unhandled[key]
            continue
        outcome = recorder.outcomes.get(key)
        qpi = scheduler.queue.unschedulable.get(key)
        if qpi is not None and qpi.gated and (outcome is None or not outcome.message):
            # The PreEnqueue verdict that holds it back (scheduling gates, a gang).
            fw = scheduler.frameworks[pod.spec.scheduler_name]
            status = fw.run_pre_enqueue(qpi.pod_info)
            not_attempted[key] = Gate(status.plugin, status.message())
        elif outcome is not None and outcome.message:
            reasons[key] = outcome.message
        else:
            reasons[key] = "not scheduled"
    table = scheduler.table
    usage = []
    for name, row in table.index.items():
        usage.append(
            NodeUsage(
                name,
                {r: int(table.requested[row, c]) for r, c in table.resource_index.items()},
                {r: int(table.allocatable[row, c]) for r, c in table.resource_index.items()},
                int(table.requested[row, 3]),
            )
        )
    return SimulationResult(
        placements,
        reasons,
        recorder.outcomes,
        usage,
        recorder.attempts,
        wall,
        session.clock.now(),
        unhandled,
        list(cluster.evicted),
        list(cluster.events),
        dict(cluster.pods),
        {claim.key: claim for claim in session.listers.dra.list_claims()},
        [profile_plugins(fw) for fw in scheduler.frameworks.values()],
        session.explainer.explanations,
        {group.key: group for group in session.listers.pod_groups},
        dict(session.listers.workload_pod_groups.groups),
        not_attempted,
    )


def _timestamp(clock: SimClock) -> str:
    """The simulated time as an RFC 3339 timestamp (from the epoch)."""
    return datetime.fromtimestamp(clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def run_until_quiet(
    scheduler: Scheduler, clock: SimClock, progress: Progress | None = None, total: int = 0
) -> None:
    """Schedule until no pod is ready and nothing is due: backoffs and Permit
    timeouts are jumped over in simulated time. Pods left in the unschedulable
    pool, or backing off after an attempt on the very cluster that is still
    there, stay where they are: they would fail the same way again."""
    queue = scheduler.queue
    queue.is_stale = lambda q: q.tried_at_generation == scheduler.table.generation
    cycles = 0
    while True:
        qpi = queue.pop_nowait()
        if qpi is not None:
            scheduler.schedule_one(qpi)
            cycles += 1
            if cycles % _YIELD_EVERY == 0:
                await asyncio.sleep(0)
                if progress is not None:
                    progress(total - len(queue.active) - len(queue.backoff), total)
            continue
        # Let binding cycles run to completion, unless they wait at Permit.
        for _ in range(4):
            await asyncio.sleep(0)
        busy = [t for t in scheduler.binding_tasks if not t.done()]
        if len(busy) > len(scheduler.waiting_pods):
            await asyncio.sleep(0)
            continue
        if queue.active:
            continue
        generation = scheduler.table.generation
        stale = all(q.tried_at_generation == generation for q in queue.backoff)
        backoff = None if stale else queue.next_backoff_expiry()
        due = [t for t in (backoff, clock.next_timer()) if t is not None]
        if not due:
            break
        clock.advance_to(min(due))
        queue.flush_backoff_completed()
    if progress is not None:
        progress(total, total)
