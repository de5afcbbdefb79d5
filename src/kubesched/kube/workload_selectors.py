"""The selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets,
watched so that PodTopologySpread's default constraints select what upstream's do.

helper.DefaultSelector reads these objects through the scheduler's listers: the
Services that select the pod, and the pod's controlling ReplicationController,
ReplicaSet or StatefulSet. The store maps (namespace, kind, name) to the selector,
a Service's or ReplicationController's label map as matchLabels.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import kinds
from kubesched.api.kinds import Kind
from kubesched.api.objects import LabelSelector
from kubesched.api.workloads import (
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    selector_of,
)
from kubesched.kube.client import KubeClient
from kubesched.kube.informer import Handlers, Informer

WorkloadSelectors = dict[tuple[str, str, str], LabelSelector]

Selecting = Service | ReplicationController | ReplicaSet | StatefulSet


def _key(obj: Selecting) -> tuple[str, str, str]:
    return (obj.metadata.namespace, obj.kind, obj.metadata.name)


def _keep(store: WorkloadSelectors, obj: Selecting) -> None:
    selector = selector_of(obj)
    if selector is None:
        # Nil selects nothing: DefaultSelector skips it, so does an absent entry.
        store.pop(_key(obj), None)
    else:
        store[_key(obj)] = selector


def _forget(store: WorkloadSelectors, obj: Selecting) -> None:
    store.pop(_key(obj), None)


def workload_selector_informers(
    client: KubeClient, store: WorkloadSelectors
) -> list[Informer[Any]]:
    """One informer per kind, each keeping `store` current."""

    def handlers() -> Handlers[Any]:
        return Handlers(
            lambda obj: _keep(store, obj),
            lambda _old, obj: _keep(store, obj),
            lambda obj: _forget(store, obj),
        )

    sources: list[tuple[Kind, type[Selecting]]] = [
        (kinds.SERVICE, Service),
        (kinds.REPLICATION_CONTROLLER, ReplicationController),
        (kinds.REPLICA_SET, ReplicaSet),
        (kinds.STATEFUL_SET, StatefulSet),
    ]
    return [
        Informer(client, kind.list_path, struct, handlers(), name=kind.resource)
        for kind, struct in sources
    ]
