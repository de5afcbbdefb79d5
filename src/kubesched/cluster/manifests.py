"""Reading Kubernetes manifests, the way users have them, into a ClusterState.

Input is what people keep in folders or get from kubectl: multi-document YAML,
JSON, `kind: List` (and `PodList`, `NodeList`, ... as the API returns them),
bare Pods and Nodes, PriorityClasses, Namespaces, and workloads that are
expanded into the pods their controllers would create.

What the apiserver and the controllers would do is done here too:

- defaulting: `metadata.namespace` "default", names from `generateName`,
  node allocatable from capacity, pod phase Pending, a uid for every pod and
  node (deterministic, derived from kind and name);
- Priority admission: `spec.priorityClassName` becomes `spec.priority` and
  `spec.preemptionPolicy`, the globalDefault class applies to pods naming
  none, the built-in `system-*` classes always exist, and a pod naming an
  unknown class is rejected. A pod that already carries `spec.priority` (from
  a dump of a live cluster, whose PriorityClasses were not dumped with it)
  keeps it; a note lists such pods;
- controllers: Deployments, ReplicaSets, StatefulSets, Jobs and DaemonSets
  create their pods with the names, labels and ownerReferences the real
  controllers give them. Pods already in the input that a workload in the
  input owns count towards its replicas (so a dump of `kubectl get all` is not
  doubled). A DaemonSet pod is pinned to its node with required node affinity
  on `metadata.name`, as the controller does, and goes through the scheduler.

Bad input never raises and never costs other objects: each bad object is one
LoadProblem naming file, document, object and field, and is skipped. A YAML
syntax error costs only its document: reading resumes at the next `---`. A
mapping that names one key twice is refused, as the apiserver's strict decoding
does (PyYAML would keep the last value).

Speed: JSON is decoded by msgspec; YAML by PyYAML's C loader (libyaml, its
pure-Python loader where libyaml is missing), document by document; then
msgspec.convert builds the structs.

Pod order (`ClusterState.pods`, hence `pending_pods`): input order, except
that pods carrying `metadata.creationTimestamp` are ordered among themselves
by it. The stable sort only permutes the pods that have a timestamp, within
the positions they occupy; a pod without one keeps its exact input position.
Workload pods carry their workload's timestamp (replicas keep their order).

This module is the entry point (ClusterState, the load functions, and what
follows the reading: pod names, duplicates, admission, order, namespaces,
budgets' status, storage). The steps live beside it:

- manifest_reader: files, folders and stdin into YAML and JSON documents;
- manifest_loader: documents into typed objects, or LoadProblems;
- manifest_validation: quantities, workloads' counts and selectors, and the field
  paths of decoding errors;
- validation/: the apiserver's validation of every object read (names, labels,
  annotations, pod specs, affinity, spread, taints, PriorityClasses, PDBs);
- workload_controllers: the pods the workload controllers create;
- admission: Priority admission, built-in PriorityClasses, implicit namespaces;
- volume_manifests: the storage objects and what their controllers do;
- dra_manifests: the DRA objects, and the claims made from the pods' templates;
- generated_names: uids and names from generateName.
"""

from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kubesched.api.disruption import compute_status
from kubesched.api.node import RuntimeClass
from kubesched.api.objects import (
    LabelSelector,
    Namespace,
    Node,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
)
from kubesched.api.pod_groups import PodGroup
from kubesched.api.scheduling import PodGroup as WorkloadPodGroup
from kubesched.api.scheduling import Workload
from kubesched.api.workloads import DaemonSet, selector_of, stand_in_selector
from kubesched.cluster.admission import (
    SYSTEM_NAMESPACES,
    _admit_priority,
    _implicit_namespace,
    builtin_priority_classes,
)
from kubesched.cluster.dra_manifests import build_dra
from kubesched.cluster.generated_names import _uid
from kubesched.cluster.load_problems import LoadProblem, _Origin, duplicate_problem
from kubesched.cluster.manifest_loader import MAX_FIELD_WARNINGS, _Loader, _PodItem
from kubesched.cluster.manifest_reader import _read_path
from kubesched.cluster.runtime_classes import admit_runtime_class
from kubesched.cluster.volume_manifests import build_storage
from kubesched.cluster.workload_controllers import _Expander, _is_live
from kubesched.framework.state.dra import DraState
from kubesched.framework.state.storage import StorageState

__all__ = [
    "DEFAULT_MAX_PODS",
    "ClusterState",
    "LoadProblem",
    "builtin_priority_classes",
    "load_documents",
    "load_paths",
    "pending_pods",
    "running_pods",
]


# --- results -----------------------------------------------------------------------


@dataclass
class ClusterState:
    """Everything read from the manifests."""

    nodes: list[Node] = field(default_factory=list)
    # All pods: bound ones (spec.nodeName set) and pending ones, in the order of
    # the module docstring (input order; timestamped pods by creationTimestamp).
    pods: list[Pod] = field(default_factory=list)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    namespaces: dict[str, Namespace] = field(default_factory=dict)
    # With a status: as read, or computed as the disruption controller would.
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    # PVs, PVCs (with those controllers create), StorageClasses, CSI objects.
    storage: StorageState = field(default_factory=StorageState)
    # DeviceClasses, ResourceSlices, ResourceClaimTemplates and ResourceClaims (with
    # those the resourceclaim controller creates for the pods' templates).
    dra: DraState = field(default_factory=DraState)
    # scheduler-plugins' PodGroups, for Coscheduling.
    pod_groups: list[PodGroup] = field(default_factory=list)
    # The Workload API's (scheduling.k8s.io/v1alpha2, GenericWorkload) PodGroups and
    # Workloads, by key.
    workload_pod_groups: dict[str, WorkloadPodGroup] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    # The DaemonSets read (their pods for the input's nodes are in `pods`): `plan`
    # puts theirs on the new nodes too.
    daemon_sets: list[DaemonSet] = field(default_factory=list)
    # What PodTopologySpread's default constraints read (Listers.workload_selectors):
    # the selectors of the Services, ReplicationControllers, ReplicaSets and
    # StatefulSets, by (namespace, kind, name).
    workload_selectors: dict[tuple[str, str, str], LabelSelector] = field(default_factory=dict)
    runtime_classes: dict[str, RuntimeClass] = field(default_factory=dict)
    problems: list[LoadProblem] = field(default_factory=list)  # errors: objects skipped
    notes: list[str] = field(default_factory=list)  # informational


def pending_pods(state: ClusterState) -> list[Pod]:
    """Pods the scheduler has to place, in scheduling order: not bound to a node,
    not finished (Succeeded/Failed) and not being deleted."""
    return [
        p
        for p in state.pods
        if not p.spec.node_name and _is_live(p) and p.metadata.deletion_timestamp is None
    ]


def running_pods(state: ClusterState) -> list[Pod]:
    """Pods bound to a node that still hold its resources (not Succeeded/Failed;
    the scheduler never sees finished pods)."""
    return [p for p in state.pods if p.spec.node_name and _is_live(p)]


# --- entry points ------------------------------------------------------------------


# The most pods a load holds (input and created by the workloads): Kubernetes'
# documented limit for large clusters ("no more than 150,000 total pods"). A
# workload whose pods would go past it creates none and is a LoadProblem.
DEFAULT_MAX_PODS = 150_000


def load_paths(
    paths: Sequence[str | Path],
    before: Iterable[tuple[str, int, object]] = (),
    max_pods: int = DEFAULT_MAX_PODS,
    validate: str = "strict",
) -> ClusterState:
    """Load files and folders (folders: *.yaml, *.yml, *.json, recursively, sorted
    by path; hidden files and folders skipped). "-" reads YAML from stdin.
    `before` are already-parsed documents read first (a live cluster's objects).
    `validate`: kubectl's --validate, strict, warn or ignore."""
    # A live cluster's objects were accepted by its API server (of whatever
    # version): only what cannot be decoded at all is refused.
    loader = _Loader("ignore")
    with _gc_paused():
        for source, document, obj in before:
            loader.live_sources.add(source)
            loader.add_document(_Origin(source, document), obj)
        loader.validate = validate
        for path in paths:
            for source, data, is_json in _read_path(path, loader):
                loader.add_stream(source, data, is_json)
        return _finish(loader, max_pods)


def load_documents(
    docs: Iterable[tuple[str, int, object]],
    max_pods: int = DEFAULT_MAX_PODS,
    validate: str = "strict",
) -> ClusterState:
    """Load already-parsed documents: (source, 1-based document index, object)."""
    loader = _Loader(validate)
    with _gc_paused():
        for source, document, obj in docs:
            loader.add_document(_Origin(source, document), obj)
        return _finish(loader, max_pods)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Loading allocates millions of objects and frees next to none: the cyclic
    garbage collector would run over and over for nothing (it doubles the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# --- after all documents -----------------------------------------------------------


def _finish(loader: _Loader, max_pods: int) -> ClusterState:
    classes = builtin_priority_classes()
    classes.update((name, pc) for name, (pc, _) in loader.priority_classes.items())
    namespaces = {name: ns for name, (ns, _) in loader.namespaces.items()}

    expander = _Expander(loader, max_pods)
    items: list[_PodItem] = []
    for entry in loader.items:
        if isinstance(entry, _PodItem):
            items.append(entry)
        else:
            items.extend(expander.expand(entry))
    if expander.reconciled:
        loader.notes.append(
            f"{expander.reconciled} pods in the input already belong to workloads in the "
            f"input; those workloads only got the pods they were missing"
        )
    for workload_kind, key, origin in expander.skipped_deployments:
        loader.notes.append(
            f"{workload_kind} {key} at {origin} has its ReplicaSets in the input; "
            f"its pods come from them"
        )

    runtime_classes = {name: rc for name, (rc, _) in loader.runtime_classes.items()}
    items = _admit(loader, items, classes, runtime_classes)
    _sort_by_creation(items)

    pods = [item.pod for item in items]
    selectors = _workload_selectors(loader, expander.selectors, pods)
    for name in SYSTEM_NAMESPACES:
        namespaces.setdefault(name, _implicit_namespace(name))
    for pod in pods:
        if pod.metadata.namespace not in namespaces:
            namespaces[pod.metadata.namespace] = _implicit_namespace(pod.metadata.namespace)

    unknown = [p for p in pods if p.spec.node_name and p.spec.node_name not in loader.node_origin]
    if unknown:
        example = unknown[0]
        loader.notes.append(
            f"{len(unknown)} pods are bound to nodes not in the input "
            f"(e.g. {example.key} on {example.spec.node_name})"
        )
    if loader.field_warnings > MAX_FIELD_WARNINGS:
        loader.notes.append(
            f"… and {loader.field_warnings - MAX_FIELD_WARNINGS} more field warnings"
        )
    # Problems found after reading (priorities, duplicates) go to their place.
    loader.problems.sort(key=lambda p: (loader.sources.get(p.source, 0), p.document, p.item or 0))
    pdbs = [pdb for pdb, _ in loader.pdbs.values()]
    for pdb in pdbs:
        if pdb.status is None:
            pdb.status = compute_status(pdb, pods)
    storage = build_storage(
        loader.storage_objects, pods, loader.stateful_set_claims, loader.notes.append
    )
    dra = build_dra(loader.dra_objects, pods, loader.generate_name, loader.notes.append)
    return ClusterState(
        storage=storage,
        dra=dra,
        nodes=loader.nodes,
        pods=pods,
        priority_classes=classes,
        namespaces=namespaces,
        pdbs=pdbs,
        pod_groups=[group for group, _ in loader.pod_groups.values()],
        workload_pod_groups={key: pg for key, (pg, _) in loader.workload_pod_groups.items()},
        workloads={key: w for key, (w, _) in loader.workload_objects.items()},
        daemon_sets=expander.daemon_sets,
        workload_selectors=selectors,
        runtime_classes=runtime_classes,
        problems=loader.problems,
        notes=loader.notes,
    )


_SPREAD_CONTROLLERS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})


def _workload_selectors(
    loader: _Loader, controllers: dict[tuple[str, str, str], LabelSelector], pods: list[Pod]
) -> dict[tuple[str, str, str], LabelSelector]:
    """The Services' selectors and the controllers' (the expander's). A pod whose
    controller is not in the input gets its labels as the controller's selector
    (stand_in_selector), with a note: the input has only part of the cluster."""
    selectors = dict(controllers)
    for service, _ in loader.services.values():
        selector = selector_of(service)
        if selector is not None:
            meta = service.metadata
            selectors[meta.namespace, "Service", meta.name] = selector
    missing: list[str] = []
    for pod in pods:
        for ref in pod.metadata.owner_references:
            if not ref.controller or ref.kind not in _SPREAD_CONTROLLERS:
                continue
            owner = (pod.metadata.namespace, ref.kind, ref.name)
            if owner not in selectors:
                selectors[owner] = stand_in_selector(pod.metadata.labels)
                missing.append(f"{ref.kind} {pod.metadata.namespace}/{ref.name}")
    if missing:
        loader.notes.append(
            f"{len(missing)} controllers of pods are not in the input "
            f"(e.g. {missing[0]}): their pods' labels stand in for their selectors "
            f"in PodTopologySpread's default constraints"
        )
    return selectors


def _admit(
    loader: _Loader,
    items: list[_PodItem],
    classes: Mapping[str, PriorityClass],
    runtime_classes: Mapping[str, RuntimeClass],
) -> list[_PodItem]:
    """Names from generateName, uids, duplicate keys, Priority and RuntimeClass
    admission."""
    default_class = next((pc for pc in classes.values() if pc.global_default), None)
    seen: dict[str, _Origin] = {}
    rejected: set[_Origin] = set()
    kept_priority: list[str] = []
    kept_overhead: list[str] = []
    admitted: list[_PodItem] = []
    for item in items:
        pod = item.pod
        meta = pod.metadata
        if item.generated and not meta.name:
            meta.name = loader.generate_name(
                "Pod",
                meta.namespace,
                meta.generate_name,
                functools.partial(loader.pod_name_taken, meta.namespace),
            )
            loader.taken.add(pod.key)
        key = pod.key
        first = seen.get(key)
        if first is not None:
            loader.problem(
                item.origin, item.kind, item.object_name, *duplicate_problem("Pod", key, first)
            )
            continue
        error = _admit_priority(pod.spec, classes, default_class, kept_priority, key)
        refusal = None if error is None else ("priorityClassName", error)
        if refusal is None and item.origin.source not in loader.live_sources:
            # A live cluster's pods went through RuntimeClass admission when they were
            # made; a class changed since must not refuse them now.
            refusal = admit_runtime_class(pod.spec, runtime_classes, kept_overhead, key)
        if refusal is not None:
            if item.origin not in rejected:  # once per workload, not per replica
                rejected.add(item.origin)
                field_name, message = refusal
                loader.problem(
                    item.origin,
                    item.kind,
                    item.object_name,
                    f"{item.spec_path}.{field_name}",
                    message,
                )
            continue
        seen[key] = item.origin
        if not meta.uid:
            meta.uid = _uid("Pod", meta.namespace, meta.name)
        if not pod.status.phase:
            pod.status.phase = "Pending"
        admitted.append(item)
    if kept_priority:
        loader.notes.append(
            f"kept spec.priority of {len(kept_priority)} pods whose priorityClassName is "
            f"unknown or has another value (pods already admitted, e.g. from a cluster "
            f"dump): {', '.join(kept_priority[:5])}{', ...' if len(kept_priority) > 5 else ''}"
        )
    if kept_overhead:
        loader.notes.append(
            f"kept spec.overhead of {len(kept_overhead)} pods whose RuntimeClass is not in "
            f"the input (pods already admitted, e.g. from a cluster dump): "
            f"{', '.join(kept_overhead[:5])}{', ...' if len(kept_overhead) > 5 else ''}"
        )
    return admitted


def _sort_by_creation(items: list[_PodItem]) -> None:
    slots: list[int] = []
    stamped: list[tuple[datetime, _PodItem]] = []
    for i, item in enumerate(items):
        if item.created is not None:
            slots.append(i)
            stamped.append((item.created, item))
    stamped.sort(key=lambda pair: pair[0])  # stable: equal times keep input order
    for slot, (_, item) in zip(slots, stamped, strict=True):
        items[slot] = item
