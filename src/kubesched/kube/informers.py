"""The informers `kubesched run` keeps its caches with: the kinds of api/kinds.py
that kube-scheduler v1.36.3 watches (SCHEDULER_KINDS), those of the profiles'
out-of-tree plugins (PLUGIN_KINDS), and nothing else.

As upstream's informer factory starts only the informers something asked for, the
volume kinds are watched when a profile runs a plugin that reads storage, the DRA
kinds when one runs DynamicResources, the Workload API's PodGroups with the
GenericWorkload gate, and scheduler-plugins' PodGroups when one runs Coscheduling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api import kinds
from kubesched.api.objects import Namespace, Node, Pod, PodDisruptionBudget
from kubesched.framework.handle import Listers
from kubesched.kube.claims import DRA_KINDS, dra_informers
from kubesched.kube.client import KubeClient
from kubesched.kube.informer import Handlers, Informer
from kubesched.kube.pod_groups import KubePodGroupWriter, pod_group_informer
from kubesched.kube.startup_checks import (
    NeededKind,
    coscheduling_needs,
    generic_workload_needs,
    plugin_needs,
)
from kubesched.kube.storage import storage_informers
from kubesched.kube.workload_pod_groups import (
    KubePodGroupConditionWriter,
    workload_pod_group_informer,
)
from kubesched.kube.workload_selectors import workload_selector_informers
from kubesched.scheduler import Scheduler

# Pods that are done hold no resources: the scheduler never needs to see them.
LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"


@dataclass
class SchedulerInformers:
    nodes: Informer[Node]
    pods: Informer[Pod]
    # Synced after the nodes and before the pods, as upstream waits for every cache.
    others: list[Informer[Any]] = field(default_factory=list)

    @property
    def all(self) -> list[Informer[Any]]:
        return [self.nodes, self.pods, *self.others]


def uses_storage(sched: Scheduler) -> bool:
    return any(
        getattr(plugin, "uses_storage", False)
        for fw in sched.frameworks.values()
        for plugin in fw.instances.values()
    )


def dra_plugins(sched: Scheduler) -> list[str]:
    """The profiles' plugins that read the DRA kinds (DynamicResources, and
    out-of-tree plugins that say `uses_dra`), by name."""
    found = {
        name
        for fw in sched.frameworks.values()
        for name, plugin in fw.instances.items()
        if name == "DynamicResources" or getattr(plugin, "uses_dra", False)
    }
    return sorted(found)


def uses_dra(sched: Scheduler) -> bool:
    return bool(dra_plugins(sched))


def uses_coscheduling(sched: Scheduler) -> bool:
    return any("Coscheduling" in fw.instances for fw in sched.frameworks.values())


def needed_kinds(sched: Scheduler, *, generic_workload: bool) -> list[NeededKind]:
    """The kinds scheduler_informers watches for a plugin or a gate that an API server
    may not serve: a CRD (Coscheduling's PodGroups), an alpha API (the Workload API's
    PodGroups), resource.k8s.io/v1 (from v1.34 on). The core, policy, apps and
    storage kinds are GA in every API server v1.36.3 supports: not checked."""
    needs: list[NeededKind] = []
    if generic_workload:
        needs.extend(generic_workload_needs())
    dra = dra_plugins(sched)
    if dra:
        needs.extend(plugin_needs(DRA_KINDS, dra))
    if uses_coscheduling(sched):
        needs.extend(coscheduling_needs())
    return needs


def scheduler_informers(
    client: KubeClient,
    sched: Scheduler,
    listers: Listers,
    *,
    generic_workload: bool,
    may_write_pod_groups: Callable[[], bool],
) -> SchedulerInformers:
    """The informers, each wired to the scheduler's handlers or to its listers.
    `may_write_pod_groups`: whether this replica writes Coscheduling's PodGroup
    statuses now (only the leader does)."""
    nodes: Informer[Node] = Informer(
        client,
        kinds.NODE.list_path,
        Node,
        Handlers(sched.on_node_add, sched.on_node_update, sched.on_node_delete),
        name=kinds.NODE.resource,
    )
    pods: Informer[Pod] = Informer(
        client,
        kinds.POD.list_path,
        Pod,
        Handlers(sched.on_pod_add, sched.on_pod_update, sched.on_pod_delete),
        params={"fieldSelector": LIVE_PODS},
        name=kinds.POD.resource,
    )

    def refresh_pdbs() -> None:
        listers.pdbs[:] = pdbs.store.values()

    # Preemption reads the budgets as a list (the PDB lister upstream).
    pdbs: Informer[PodDisruptionBudget] = Informer(
        client,
        kinds.PDB.list_path,
        PodDisruptionBudget,
        Handlers(
            lambda _: refresh_pdbs(),
            lambda _old, _new: refresh_pdbs(),
            lambda _: refresh_pdbs(),
        ),
        name=kinds.PDB.resource,
    )
    # InterPodAffinity's namespaceSelector reads namespaces' labels.
    known = listers.namespaces

    def namespace_gone(ns: Namespace) -> None:
        known.pop(ns.metadata.name, None)

    namespaces: Informer[Namespace] = Informer(
        client,
        kinds.NAMESPACE.list_path,
        Namespace,
        Handlers(
            lambda ns: known.__setitem__(ns.metadata.name, ns),
            lambda _old, ns: known.__setitem__(ns.metadata.name, ns),
            namespace_gone,
        ),
        name=kinds.NAMESPACE.resource,
    )
    informers = SchedulerInformers(nodes, pods, [pdbs, namespaces])
    # PodTopologySpread's default constraints read the selectors of Services and controllers.
    if listers.workload_selectors is None:
        listers.workload_selectors = {}
    informers.others.extend(workload_selector_informers(client, listers.workload_selectors))
    if generic_workload:
        listers.workload_pod_groups.writer = KubePodGroupConditionWriter(client)
        informers.others.append(workload_pod_group_informer(client, sched))
    if uses_storage(sched):
        listers.storage.subscribe(sched.queue.on_event)
        informers.others.extend(storage_informers(client, listers.storage))
    if uses_dra(sched):
        listers.dra.subscribe(sched.queue.on_event)
        informers.others.extend(dra_informers(client, listers.dra))
    if uses_coscheduling(sched):
        listers.pod_groups.subscribe(sched.queue.on_event)
        listers.pod_groups.writer = KubePodGroupWriter(client, may_write_pod_groups)
        informers.others.append(pod_group_informer(client, listers.pod_groups))
    return informers
