"""Handle: what the framework lends to plugins (framework.Handle upstream)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kubesched.api.objects import (
    LabelSelector,
    Namespace,
    PodDisruptionBudget,
)
from kubesched.framework.client import ClusterClient
from kubesched.framework.clock import Clock, SimClock
from kubesched.framework.extender import Extender
from kubesched.framework.metrics_recorder import NO_METRICS, MetricsRecorder
from kubesched.framework.pod_groups import PodGroupState
from kubesched.framework.state.dra import DraState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.state.nominated import NominatedPods, NoNominations
from kubesched.framework.state.podgroup_states import PodGroupStates, WorkloadPodGroupLister
from kubesched.framework.state.storage import StorageState
from kubesched.framework.types import PodInfo
from kubesched.framework.waiting import WaitingPods

if TYPE_CHECKING:
    # interfaces names Handle in its signatures: only the types meet here.
    from kubesched.framework.interfaces import FrameworkRunner


_background: set[asyncio.Task[None]] = set()


def run_in_background(coro: Coroutine[Any, Any, None]) -> None:
    """Start `coro` as a task (run it to the end at once when no loop is running)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    task = loop.create_task(coro)
    _background.add(task)
    task.add_done_callback(_background.discard)


@dataclass
class Listers:
    """The cluster objects plugins read besides nodes and pods (the informers' listers
    upstream), kept current in place by the source of truth: the in-memory cluster in
    `simulate`, watches in `run`. The scheduler builds its Handle once from them.

    Example:
        ```python
        from kubesched.framework.interfaces import PreFilterPlugin
        from kubesched.framework.status import Status

        class FrozenNamespaces(PreFilterPlugin):
            # No new pods in namespaces labelled example.com/frozen=true.
            name = "FrozenNamespaces"

            def pre_filter(self, state, pod, nodes):
                namespace = self.handle.listers.namespaces.get(pod.namespace)
                if namespace and namespace.metadata.labels.get("example.com/frozen") == "true":
                    return None, Status.unresolvable(f"namespace {pod.namespace} is frozen")
                return None, Status.success()
        ```
    """

    # PVs, PVCs, StorageClasses and CSI objects, for the volume plugins.
    storage: StorageState = field(default_factory=StorageState)
    # ResourceClaims, templates, DeviceClasses and ResourceSlices, for DynamicResources.
    dra: DraState = field(default_factory=DraState)
    # The cluster's PodDisruptionBudgets (preemption prefers not to violate them).
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    # Namespaces by name, for InterPodAffinity's namespaceSelector.
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    # The selectors PodTopologySpread's default constraints are built from, by
    # (namespace, kind, name); None: not known (see Handle.workload_selectors).
    workload_selectors: dict[tuple[str, str, str], LabelSelector] | None = None
    # scheduler-plugins' PodGroups and their pods, for Coscheduling.
    pod_groups: PodGroupState = field(default_factory=PodGroupState)
    # The Workload API's PodGroups (scheduling.k8s.io/v1alpha2, GenericWorkload), by
    # "namespace/name".
    workload_pod_groups: WorkloadPodGroupLister = field(default_factory=WorkloadPodGroupLister)


@dataclass
class Handle:
    """What the framework lends to the plugins of one profile; built once, never
    re-wired. Each profile's framework holds its own copy, with itself as `framework`.
    A plugin reaches it as `self.handle`.

    Example:
        ```python
        from kubesched.framework.interfaces import PostBindPlugin

        class Welcome(PostBindPlugin):
            # An Event on each pod it binds, naming the node.
            name = "Welcome"

            def post_bind(self, state, pod, node_name):
                message = f"placed on {node_name} at {self.handle.clock.now():.0f}s"
                self.handle.cluster.record_event(pod.pod, "Normal", "Welcome", message)
        ```
    """

    nodes: NodeTable
    clock: Clock = field(default_factory=SimClock)
    cluster: ClusterClient | None = None
    waiting_pods: WaitingPods | None = None
    parallelism: int = 16
    # Ask the queue to retry pods (used by plugins that free or reserve resources).
    activate: Callable[[list[str]], None] = lambda keys: None
    # Activate after an API error that came after the attempt: retried after backoff.
    retry_after_error: Callable[[list[str]], None] = lambda keys: None
    # The cluster objects the plugins read besides nodes and pods; `storage`, `dra`,
    # `pdbs`, `namespaces`, `workload_selectors`, `pod_groups` and
    # `workload_pod_groups` below read through to them.
    listers: Listers = field(default_factory=Listers)
    nominated: NominatedPods = field(default_factory=NoNominations)
    # Take away the nominations of these pods (status and scheduler memory).
    clear_nominated_node: Callable[[list[PodInfo]], None] = lambda pods: None
    # The scheduler's seeded random source.
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    # Run API calls after the scheduling cycle (the scheduler tracks the tasks).
    spawn: Callable[[Coroutine[Any, Any, None]], None] = run_in_background
    # The framework of the profile this handle belongs to: Filter over nodes, with
    # nominated pods, and PreFilterExtensions, for PostFilter plugins.
    framework: FrameworkRunner | None = None
    # Where the framework and the plugins report metrics (the scheduler's metrics
    # package upstream, which they write to directly); NO_METRICS drops them all.
    metrics: MetricsRecorder = NO_METRICS
    # The cache's pod group states (Handle.PodGroupManager().PodGroupStates() upstream).
    pod_group_states: PodGroupStates = field(default_factory=PodGroupStates)
    # The scheduler's HTTP extenders (Handle.Extenders() upstream), for preemption.
    extenders: Sequence[Extender] = ()

    # --- the listers, read through (one declaration each: Listers) -----------------

    @property
    def storage(self) -> StorageState:
        return self.listers.storage

    @property
    def dra(self) -> DraState:
        return self.listers.dra

    @property
    def pdbs(self) -> list[PodDisruptionBudget]:
        return self.listers.pdbs

    @property
    def namespaces(self) -> dict[str, Namespace]:
        return self.listers.namespaces

    @property
    def workload_selectors(self) -> dict[tuple[str, str, str], LabelSelector] | None:
        """By (namespace, kind, name): kind "Service" (its spec.selector as
        matchLabels), "ReplicaSet", "StatefulSet", "ReplicationController". None:
        not known, and the pod's own labels stand in for its controller's selector."""
        return self.listers.workload_selectors

    @property
    def pod_groups(self) -> PodGroupState:
        return self.listers.pod_groups

    @property
    def workload_pod_groups(self) -> WorkloadPodGroupLister:
        return self.listers.workload_pod_groups
