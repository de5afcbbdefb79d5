"""The selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets,
watched so that PodTopologySpread's default constraints select what upstream's do.

helper.DefaultSelector reads these objects through the scheduler's listers: the
Services that select the pod, and the pod's controlling ReplicationController,
ReplicaSet or StatefulSet. The store maps (namespace, kind, name) to the selector,
a Service's or ReplicationController's label map as matchLabels.
"""

from __future__ import annotations

from typing import Any

from kubesched.api.objects import LabelSelector
from kubesched.api.workloads import ReplicaSet, ReplicationController, Service, StatefulSet
from kubesched.kube.client import KubeClient
from kubesched.kube.informer import Handlers, Informer

WorkloadSelectors = dict[tuple[str, str, str], LabelSelector]

Selecting = Service | ReplicationController | ReplicaSet | StatefulSet


def _selector(obj: Selecting) -> LabelSelector | None:
    if isinstance(obj, Service | ReplicationController):
        labels = obj.spec.selector
        return None if labels is None else LabelSelector(match_labels=dict(labels))
    return obj.spec.selector


def _key(obj: Selecting) -> tuple[str, str, str]:
    return (obj.metadata.namespace, obj.kind, obj.metadata.name)


def _keep(store: WorkloadSelectors, obj: Selecting) -> None:
    selector = _selector(obj)
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

    sources: list[tuple[str, type[Selecting], str]] = [
        ("/api/v1/services", Service, "services"),
        ("/api/v1/replicationcontrollers", ReplicationController, "replicationcontrollers"),
        ("/apis/apps/v1/replicasets", ReplicaSet, "replicasets"),
        ("/apis/apps/v1/statefulsets", StatefulSet, "statefulsets"),
    ]
    return [Informer(client, path, kind, handlers(), name=name) for path, kind, name in sources]
