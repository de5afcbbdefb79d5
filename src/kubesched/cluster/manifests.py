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
syntax error costs only its document: reading resumes at the next `---`.

Speed: JSON is decoded by msgspec; YAML by a fast reader for the block YAML
kubectl and people write (falling back to PyYAML, document by document, for
anything else), then msgspec.convert builds the structs. About 10,000 pods a
second from YAML, more from JSON.

Pod order (`ClusterState.pods`, hence `pending_pods`): input order, except
that pods carrying `metadata.creationTimestamp` are ordered among themselves
by it. The stable sort only permutes the pods that have a timestamp, within
the positions they occupy; a pod without one keeps its exact input position.
Workload pods carry their workload's timestamp (replicas keep their order).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from kubesched.api.disruption import compute_status
from kubesched.api.node_affinity import required_node_affinity
from kubesched.api.objects import (
    Affinity,
    Namespace,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    PriorityClass,
    Toleration,
    Volume,
)
from kubesched.api.taints import do_not_schedule_taints, find_matching_untolerated_taint
from kubesched.api.workloads import (
    DaemonSet,
    Deployment,
    Job,
    PodTemplateSpec,
    ReplicaSet,
    StatefulSet,
    Workload,
)
from kubesched.cluster.admission import (
    BUILTIN_PRIORITY_CLASSES,
    HIGHEST_USER_DEFINABLE_PRIORITY,
    NAMESPACE_NAME_LABEL,
    PREEMPT_LOWER_PRIORITY,
    SYSTEM_NAMESPACES,
    _admit_priority,
    _implicit_namespace,
    builtin_priority_classes,
)
from kubesched.cluster.generated_names import (
    _MAX_GENERATE_NAME_BASE,
    _random_chars,
    _safe_encode,
    _uid,
)
from kubesched.cluster.manifest_reader import _json_documents, _read_path, _yaml_documents
from kubesched.cluster.manifest_validation import (
    _check_pod_spec,
    _check_quantities,
    _check_workload,
    _type_word,
    _validation_field,
)
from kubesched.cluster.volume_manifests import (
    CLUSTER_SCOPED_STORAGE,
    STORAGE_GROUPS,
    STORAGE_KINDS,
    StatefulSetClaim,
    StorageObjects,
    build_storage,
)
from kubesched.framework.storage import StorageState

__all__ = [
    "ClusterState",
    "LoadProblem",
    "builtin_priority_classes",
    "load_documents",
    "load_paths",
    "pending_pods",
    "running_pods",
]

T = TypeVar("T")


_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

# The API groups each kind is read from ("" is the core group, "v1").
_GROUPS: Mapping[str, tuple[str, ...]] = {
    "Pod": ("",),
    "Node": ("",),
    "Namespace": ("",),
    "PriorityClass": ("scheduling.k8s.io",),
    "PodDisruptionBudget": ("policy",),
    "Deployment": ("apps", "extensions"),
    "ReplicaSet": ("apps", "extensions"),
    "DaemonSet": ("apps", "extensions"),
    "StatefulSet": ("apps",),
    "Job": ("batch",),
    **STORAGE_GROUPS,
}
_CLUSTER_SCOPED = frozenset({"Node", "Namespace", "PriorityClass"}) | CLUSTER_SCOPED_STORAGE

# The tolerations the DaemonSet controller adds (AddOrUpdateDaemonPodTolerations).
_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_DAEMON_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


# --- results -----------------------------------------------------------------------


@dataclass
class LoadProblem:
    """One object that could not be loaded, and why. The object was skipped."""

    source: str
    document: int  # 1-based index of the document in the file; 0 for the file itself
    kind: str
    name: str  # "namespace/name" for namespaced objects, "name" otherwise; "" if unknown
    field: str | None  # e.g. "spec.containers[0].resources.requests.cpu"
    message: str
    item: int | None = None  # 1-based index in the items of a `kind: List`

    @property
    def location(self) -> str:
        """Where the object is: "file: document 3, item 5"."""
        if self.document <= 0:
            return self.source
        where = f"{self.source}: document {self.document}"
        return where if self.item is None else f"{where}, item {self.item}"

    def __str__(self) -> str:
        text = self.location
        if self.kind or self.name:
            text += f" ({' '.join(p for p in (self.kind, self.name) if p)})"
        if self.field:
            text += f": field {self.field}"
        return f"{text}: {self.message}".replace("\r", " ").replace("\n", " ")


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
    problems: list[LoadProblem] = field(default_factory=list)  # errors: objects skipped
    notes: list[str] = field(default_factory=list)  # informational


def _is_live(pod: Pod) -> bool:
    return pod.status.phase not in _TERMINAL_PHASES


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


def load_paths(
    paths: Sequence[str | Path], before: Iterable[tuple[str, int, object]] = ()
) -> ClusterState:
    """Load files and folders (folders: *.yaml, *.yml, *.json, recursively, sorted
    by path; hidden files and folders skipped). "-" reads YAML from stdin.
    `before` are already-parsed documents read first (a live cluster's objects)."""
    loader = _Loader()
    with _gc_paused():
        for source, document, obj in before:
            loader.add_document(_Origin(source, document), obj)
        for path in paths:
            for source, data, is_json in _read_path(path, loader):
                loader.add_stream(source, data, is_json)
        return _finish(loader)


def load_documents(docs: Iterable[tuple[str, int, object]]) -> ClusterState:
    """Load already-parsed documents: (source, 1-based document index, object)."""
    loader = _Loader()
    with _gc_paused():
        for source, document, obj in docs:
            loader.add_document(_Origin(source, document), obj)
        return _finish(loader)


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


# --- small helpers -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Origin:
    source: str
    document: int
    item: int | None = None

    def __str__(self) -> str:
        where = f"{self.source} document {self.document}"
        return where if self.item is None else f"{where}, item {self.item}"


def _template_hash(raw: object, template: PodTemplateSpec) -> str:
    """A 10-character pod-template-hash: a 32-bit hash of the template printed
    in decimal (zero-padded to 10 digits) and safe-encoded, as ComputeHash does."""
    try:
        data = msgspec.json.encode(raw, order="sorted")
    except (TypeError, ValueError, OverflowError):
        data = msgspec.json.encode(template, order="sorted")
    value = int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "big")
    return _safe_encode(f"{value:010d}")


def _parse_time(text: str) -> datetime:
    stamp = datetime.fromisoformat(text.upper())  # RFC 3339 allows "t" and "z"
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _raw_name(obj: Mapping[str, Any], kind: str) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return ""
    name = meta.get("name") or meta.get("generateName") or ""
    if not isinstance(name, str) or not name:
        return ""
    if kind in _CLUSTER_SCOPED:
        return name
    namespace = meta.get("namespace") or "default"
    return f"{namespace}/{name}" if isinstance(namespace, str) else name


# --- selectors, node affinity and taints (as the DaemonSet controller checks them) ---


def _daemon_tolerations(spec: PodSpec) -> list[Toleration]:
    """The template's tolerations with the DaemonSet controller's added
    (v1helper.AddOrUpdateTolerationInPodSpec: a matching one is replaced)."""
    tolerations = list(spec.tolerations)
    added = list(_DAEMON_TOLERATIONS)
    if spec.host_network:
        added.append(_DAEMON_HOST_NETWORK_TOLERATION)
    for key, effect in added:
        new = Toleration(key=key, operator="Exists", effect=effect)
        matches = [
            i
            for i, have in enumerate(tolerations)
            if (have.key, have.operator, have.value, have.effect) == (key, "Exists", "", effect)
        ]
        for i in matches:
            tolerations[i] = new
        if not matches:
            tolerations.append(new)
    return tolerations


def _pin_to_node(affinity: Affinity | None, node_name: str) -> Affinity:
    """ReplaceDaemonSetPodNodeNameNodeAffinity, without touching shared objects."""
    required = NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_fields=[
                    NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])
                ]
            )
        ]
    )
    if affinity is None:
        return Affinity(
            node_affinity=NodeAffinity(required_during_scheduling_ignored_during_execution=required)
        )
    if affinity.node_affinity is None:
        node_affinity = NodeAffinity(required_during_scheduling_ignored_during_execution=required)
    else:
        node_affinity = msgspec.structs.replace(
            affinity.node_affinity, required_during_scheduling_ignored_during_execution=required
        )
    return msgspec.structs.replace(affinity, node_affinity=node_affinity)


def _daemon_target(pod: Pod) -> str | None:
    """GetTargetNodeName: the node a (possibly pending) daemon pod is for."""
    if pod.spec.node_name:
        return pod.spec.node_name
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required is None:
        return None
    for term in required.node_selector_terms:
        for req in term.match_fields:
            if req.key == "metadata.name" and req.operator == "In" and len(req.values) == 1:
                return req.values[0]
    return None


# --- the loader --------------------------------------------------------------------


class _PodItem:
    """A pod on its way into the state, with where it came from."""

    __slots__ = ("created", "generated", "kind", "name", "origin", "pod", "spec_path")

    def __init__(
        self,
        pod: Pod,
        origin: _Origin,
        created: datetime | None,
        *,
        kind: str = "Pod",
        name: str = "",
        spec_path: str = "spec",
    ) -> None:
        self.pod = pod
        self.origin = origin
        self.created = created
        self.kind = kind  # the object problems name: the Pod itself or its workload
        self.name = name  # that object's key; "" means the pod's own key
        self.spec_path = spec_path
        self.generated = False

    @property
    def object_name(self) -> str:
        return self.name or self.pod.key


class _WorkloadItem:
    __slots__ = ("created", "key", "origin", "raw_template", "workload")

    def __init__(
        self, workload: Workload, raw_template: object, origin: _Origin, created: datetime | None
    ) -> None:
        self.workload = workload
        self.raw_template = raw_template
        self.origin = origin
        self.created = created
        self.key = f"{workload.metadata.namespace}/{workload.metadata.name}"


_OwnerKey = tuple[str, str, str]  # (namespace, kind, name)


class _Loader:
    def __init__(self) -> None:
        self.problems: list[LoadProblem] = []
        self.notes: list[str] = []
        self.nodes: list[Node] = []
        self.node_origin: dict[str, _Origin] = {}
        self.items: list[_PodItem | _WorkloadItem] = []
        self.priority_classes: dict[str, tuple[PriorityClass, _Origin]] = {}
        self.namespaces: dict[str, tuple[Namespace, _Origin]] = {}
        self.pdbs: dict[str, tuple[PodDisruptionBudget, _Origin]] = {}
        self.workload_origin: dict[tuple[str, str], _Origin] = {}
        self.storage_objects = StorageObjects()
        self.stateful_set_claims: list[StatefulSetClaim] = []
        self.deployments_with_replicasets: set[tuple[str, str]] = set()
        self.generated: Counter[str] = Counter()
        self.taken: set[str] = set()  # pod keys in use
        self.sources: dict[str, int] = {}  # input order, to sort problems by

    # -- reporting

    def problem(
        self, origin: _Origin, kind: str, name: str, field: str | None, message: str
    ) -> None:
        self.problems.append(
            LoadProblem(origin.source, origin.document, kind, name, field, message, origin.item)
        )

    def file_problem(self, source: str, message: str) -> None:
        self.sources.setdefault(source, len(self.sources))
        self.problems.append(LoadProblem(source, 0, "", "", None, message))

    # -- input

    def add_stream(self, source: str, data: bytes, is_json: bool) -> None:
        self.sources.setdefault(source, len(self.sources))

        def report(document: int, message: str) -> None:
            self.problem(_Origin(source, document), "", "", None, message)

        documents: Iterator[tuple[int, object]]
        if is_json:
            documents = _json_documents(data, report)
        else:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                self.file_problem(source, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
                return
            documents = _yaml_documents(text, report)
        for index, obj in documents:
            self.add_document(_Origin(source, index), obj)

    def add_document(self, origin: _Origin, obj: object) -> None:
        self.sources.setdefault(origin.source, len(self.sources))
        try:
            self.read_document(origin, obj)
        except Exception as exc:  # a safety net: one odd document must not stop the load
            self.problem(origin, "", "", None, f"cannot read: {type(exc).__name__}: {exc}")

    def read_document(self, origin: _Origin, obj: object) -> None:
        if obj is None:
            return
        if not isinstance(obj, dict):
            self.problem(
                origin, "", "", None, f"expected an object (a mapping), got {_type_word(obj)}"
            )
            return
        kind = obj.get("kind")
        api_version = obj.get("apiVersion") or ""
        if not isinstance(kind, str) or not kind:
            message = (
                "missing required field `kind`"
                if kind is None or kind == ""
                else f"Expected `str`, got `{_type_word(kind)}`"
            )
            self.problem(origin, "", _raw_name(obj, ""), "kind", message)
            return
        if not isinstance(api_version, str):
            self.problem(
                origin,
                kind,
                _raw_name(obj, kind),
                "apiVersion",
                f"Expected `str`, got `{_type_word(api_version)}`",
            )
            return
        if kind.endswith("List") and (kind == "List" or "items" in obj):
            self.add_list(origin, kind, api_version, obj)
            return
        groups = _GROUPS.get(kind)
        group = api_version.rpartition("/")[0]
        if groups is None or (api_version and group not in groups):
            shown = api_version or "no apiVersion"
            self.notes.append(f"skipped kind {kind} ({shown}) at {origin}")
            return
        if kind == "Pod":
            self.add_pod(origin, obj)
        elif kind == "Node":
            self.add_node(origin, obj)
        elif kind == "PriorityClass":
            self.add_priority_class(origin, obj)
        elif kind == "Namespace":
            self.add_namespace(origin, obj)
        elif kind in STORAGE_KINDS:
            self.add_storage_object(origin, kind, obj)
        elif kind == "PodDisruptionBudget":
            self.add_pdb(origin, obj)
        else:
            self.add_workload(origin, kind, obj)

    def add_list(
        self, origin: _Origin, kind: str, api_version: str, obj: Mapping[str, Any]
    ) -> None:
        items = obj.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            self.problem(origin, kind, "", "items", f"Expected `array`, got `{_type_word(items)}`")
            return
        if origin.item is not None:
            self.notes.append(f"skipped a {kind} nested in a list at {origin}")
            return
        item_kind = kind[: -len("List")]
        for index, item in enumerate(items, 1):
            if item_kind and isinstance(item, dict) and not item.get("kind"):
                # The API's typed lists (PodList, ...) leave kind out of their items.
                item = {
                    **item,
                    "kind": item_kind,
                    "apiVersion": item.get("apiVersion") or api_version,
                }
            self.add_document(_Origin(origin.source, origin.document, index), item)

    def decode(
        self, origin: _Origin, obj: Mapping[str, Any], kind: str, type_: type[T]
    ) -> T | None:
        try:
            return msgspec.convert(obj, type=type_)
        except msgspec.ValidationError as exc:
            path, message = _validation_field(str(exc), obj)
            self.problem(origin, kind, _raw_name(obj, kind), path, message)
            return None

    def check_time(
        self, origin: _Origin, kind: str, meta: ObjectMeta, name: str
    ) -> tuple[bool, datetime | None]:
        if meta.creation_timestamp is None:
            return True, None
        try:
            return True, _parse_time(meta.creation_timestamp)
        except ValueError:
            self.problem(
                origin,
                kind,
                name,
                "metadata.creationTimestamp",
                f"expected an RFC 3339 time like 2024-05-01T12:00:00Z, "
                f"got {meta.creation_timestamp!r}",
            )
            return False, None

    def generate_name(
        self, kind: str, namespace: str, base: str, taken: Callable[[str], bool]
    ) -> str:
        base = base[:_MAX_GENERATE_NAME_BASE]
        while True:
            counter_key = f"{kind}/{namespace}/{base}"
            self.generated[counter_key] += 1
            name = base + _random_chars(f"{counter_key}#{self.generated[counter_key]}")
            if not taken(name):
                return name

    def pod_name_taken(self, namespace: str, name: str) -> bool:
        return f"{namespace}/{name}" in self.taken

    def add_pod(self, origin: _Origin, obj: Mapping[str, Any]) -> None:
        pod = self.decode(origin, obj, "Pod", Pod)
        if pod is None:
            return
        meta = pod.metadata
        if not meta.namespace:
            meta.namespace = "default"
        if not meta.name and not meta.generate_name:
            self.problem(origin, "Pod", "", "metadata.name", "name or generateName is required")
            return
        name = f"{meta.namespace}/{meta.name or meta.generate_name}"
        ok, created = self.check_time(origin, "Pod", meta, name)
        if not ok:
            return
        error = _check_pod_spec(pod.spec, "spec")
        if error is not None:
            self.problem(origin, "Pod", name, *error)
            return
        item = _PodItem(pod, origin, created)
        if meta.name:
            self.taken.add(pod.key)
        else:
            item.generated = True
        self.items.append(item)

    def add_node(self, origin: _Origin, obj: Mapping[str, Any]) -> None:
        node = self.decode(origin, obj, "Node", Node)
        if node is None:
            return
        meta = node.metadata
        if not meta.name:
            if not meta.generate_name:
                self.problem(
                    origin, "Node", "", "metadata.name", "name or generateName is required"
                )
                return
            meta.name = self.generate_name(
                "Node", "", meta.generate_name, lambda n: n in self.node_origin
            )
        status = node.status
        if not status.allocatable and status.capacity:
            status.allocatable = dict(status.capacity)  # SetDefaults_NodeStatus
        error = _check_quantities(status.capacity, "status.capacity") or _check_quantities(
            status.allocatable, "status.allocatable"
        )
        if error is not None:
            self.problem(origin, "Node", meta.name, *error)
            return
        first = self.node_origin.get(meta.name)
        if first is not None:
            self.problem(
                origin,
                "Node",
                meta.name,
                "metadata.name",
                f"duplicate: a Node named {meta.name} was already loaded from {first}",
            )
            return
        if not meta.uid:
            meta.uid = _uid("Node", "", meta.name)
        self.node_origin[meta.name] = origin
        self.nodes.append(node)

    def add_priority_class(self, origin: _Origin, obj: Mapping[str, Any]) -> None:
        pc = self.decode(origin, obj, "PriorityClass", PriorityClass)
        if pc is None:
            return
        name = pc.metadata.name
        if not name:
            self.problem(origin, "PriorityClass", "", "metadata.name", "name is required")
            return
        builtin = BUILTIN_PRIORITY_CLASSES.get(name)
        error: tuple[str, str] | None = None
        if name.startswith("system-") and builtin is None:
            error = (
                "metadata.name",
                "priority class names with 'system-' prefix are reserved for system use only",
            )
        elif builtin is not None and pc.value != builtin:
            error = ("value", f"the system priority class {name} has value {builtin}")
        elif builtin is None and pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
            error = (
                "value",
                f"maximum allowed value of a user defined priority is "
                f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        elif name in self.priority_classes:
            error = (
                "metadata.name",
                f"duplicate: a PriorityClass named {name} was already loaded from "
                f"{self.priority_classes[name][1]}",
            )
        elif pc.global_default:
            other = next((p for p, _ in self.priority_classes.values() if p.global_default), None)
            if other is not None:
                error = (
                    "globalDefault",
                    f"PriorityClass {other.metadata.name} is already marked as default. "
                    f"Only one default can exist",
                )
        if error is not None:
            self.problem(origin, "PriorityClass", name, *error)
            return
        if pc.preemption_policy is None:
            pc.preemption_policy = PREEMPT_LOWER_PRIORITY
        if not pc.metadata.uid:
            pc.metadata.uid = _uid("PriorityClass", "", name)
        self.priority_classes[name] = (pc, origin)

    def add_namespace(self, origin: _Origin, obj: Mapping[str, Any]) -> None:
        ns = self.decode(origin, obj, "Namespace", Namespace)
        if ns is None:
            return
        name = ns.metadata.name
        if not name:
            self.problem(origin, "Namespace", "", "metadata.name", "name is required")
            return
        if name in self.namespaces:
            self.problem(
                origin,
                "Namespace",
                name,
                "metadata.name",
                f"duplicate: a Namespace named {name} was already loaded from "
                f"{self.namespaces[name][1]}",
            )
            return
        ns.metadata.labels = {**ns.metadata.labels, NAMESPACE_NAME_LABEL: name}
        if not ns.metadata.uid:
            ns.metadata.uid = _uid("Namespace", "", name)
        self.namespaces[name] = (ns, origin)

    def add_pdb(self, origin: _Origin, obj: Mapping[str, Any]) -> None:
        pdb = self.decode(origin, obj, "PodDisruptionBudget", PodDisruptionBudget)
        if pdb is None:
            return
        meta = pdb.metadata
        if not meta.namespace:
            meta.namespace = "default"
        if not meta.name:
            self.problem(origin, "PodDisruptionBudget", "", "metadata.name", "name is required")
            return
        key = f"{meta.namespace}/{meta.name}"
        if key in self.pdbs:
            self.problem(
                origin,
                "PodDisruptionBudget",
                key,
                "metadata.name",
                f"duplicate: a PodDisruptionBudget named {key} was already loaded from "
                f"{self.pdbs[key][1]}",
            )
            return
        if not meta.uid:
            meta.uid = _uid("PodDisruptionBudget", meta.namespace, meta.name)
        self.pdbs[key] = (pdb, origin)

    def add_storage_object(self, origin: _Origin, kind: str, obj: Mapping[str, Any]) -> None:
        decoded = self.decode(origin, obj, kind, STORAGE_KINDS[kind][0])
        if decoded is None:
            return
        problem = self.storage_objects.add(kind, decoded, str(origin))
        if problem is not None:
            meta = decoded.metadata
            name = meta.name if kind in _CLUSTER_SCOPED else f"{meta.namespace}/{meta.name}"
            self.problem(origin, kind, name if meta.name else "", *problem)

    def add_workload(self, origin: _Origin, kind: str, obj: Mapping[str, Any]) -> None:
        types: dict[str, type[Workload]] = {
            "Deployment": Deployment,
            "ReplicaSet": ReplicaSet,
            "StatefulSet": StatefulSet,
            "DaemonSet": DaemonSet,
            "Job": Job,
        }
        workload = self.decode(origin, obj, kind, types[kind])
        if workload is None:
            return
        meta = workload.metadata
        if not meta.namespace:
            meta.namespace = "default"
        if not meta.name:
            if not meta.generate_name:
                self.problem(origin, kind, "", "metadata.name", "name or generateName is required")
                return
            meta.name = self.generate_name(
                kind,
                meta.namespace,
                meta.generate_name,
                lambda n: (kind, f"{meta.namespace}/{n}") in self.workload_origin,
            )
        key = f"{meta.namespace}/{meta.name}"
        ok, created = self.check_time(origin, kind, meta, key)
        if not ok:
            return
        error = _check_workload(workload)
        if error is not None:
            self.problem(origin, kind, key, *error)
            return
        first = self.workload_origin.get((kind, key))
        if first is not None:
            self.problem(
                origin,
                kind,
                key,
                "metadata.name",
                f"duplicate: a {kind} named {key} was already loaded from {first}",
            )
            return
        self.workload_origin[kind, key] = origin
        if not meta.uid:
            meta.uid = _uid(kind, meta.namespace, meta.name)
        if isinstance(workload, ReplicaSet):
            for ref in meta.owner_references:
                if ref.controller and ref.kind == "Deployment":
                    self.deployments_with_replicasets.add((meta.namespace, ref.name))
        spec = obj.get("spec")
        raw_template = spec.get("template") if isinstance(spec, dict) else None
        self.items.append(_WorkloadItem(workload, raw_template, origin, created))


# --- after all documents -----------------------------------------------------------


def _finish(loader: _Loader) -> ClusterState:
    classes = builtin_priority_classes()
    classes.update((name, pc) for name, (pc, _) in loader.priority_classes.items())
    namespaces = {name: ns for name, (ns, _) in loader.namespaces.items()}

    expander = _Expander(loader)
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

    items = _admit(loader, items, classes)
    _sort_by_creation(items)

    pods = [item.pod for item in items]
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
    # Problems found after reading (priorities, duplicates) go to their place.
    loader.problems.sort(key=lambda p: (loader.sources.get(p.source, 0), p.document, p.item or 0))
    pdbs = [pdb for pdb, _ in loader.pdbs.values()]
    for pdb in pdbs:
        if pdb.status is None:
            pdb.status = compute_status(pdb, pods)
    storage = build_storage(
        loader.storage_objects, pods, loader.stateful_set_claims, loader.notes.append
    )
    return ClusterState(
        storage=storage,
        nodes=loader.nodes,
        pods=pods,
        priority_classes=classes,
        namespaces=namespaces,
        pdbs=pdbs,
        problems=loader.problems,
        notes=loader.notes,
    )


def _admit(
    loader: _Loader, items: list[_PodItem], classes: Mapping[str, PriorityClass]
) -> list[_PodItem]:
    """Names from generateName, uids, duplicate keys, Priority admission."""
    default_class = next((pc for pc in classes.values() if pc.global_default), None)
    seen: dict[str, _Origin] = {}
    rejected: set[_Origin] = set()
    kept_priority: list[str] = []
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
                item.origin,
                item.kind,
                item.object_name,
                "metadata.name",
                f"duplicate: a Pod named {key} was already loaded from {first}",
            )
            continue
        error = _admit_priority(pod.spec, classes, default_class, kept_priority, key)
        if error is not None:
            if item.origin not in rejected:  # once per workload, not per replica
                rejected.add(item.origin)
                loader.problem(
                    item.origin,
                    item.kind,
                    item.object_name,
                    f"{item.spec_path}.priorityClassName",
                    error,
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


# --- controllers -------------------------------------------------------------------


class _Expander:
    """Creates the pods workload controllers would, minus those already there."""

    def __init__(self, loader: _Loader) -> None:
        self.loader = loader
        self.reconciled = 0
        self.skipped_deployments: list[tuple[str, str, _Origin]] = []
        # Pods in the input by their controller: (namespace, kind, name) -> pods.
        self.owned: defaultdict[_OwnerKey, list[Pod]] = defaultdict(list)
        # Deployment -> its pods in the input, through their ReplicaSets' names.
        self.deployment_pods: defaultdict[tuple[str, str], list[Pod]] = defaultdict(list)
        for entry in loader.items:
            if isinstance(entry, _PodItem):
                self.index(entry.pod)

    def index(self, pod: Pod) -> None:
        meta = pod.metadata
        for ref in meta.owner_references:
            if not ref.controller:
                continue
            self.owned[meta.namespace, ref.kind, ref.name].append(pod)
            template_hash = meta.labels.get("pod-template-hash")
            suffix = f"-{template_hash}"
            if ref.kind == "ReplicaSet" and template_hash and ref.name.endswith(suffix):
                deployment = ref.name[: -len(suffix)]
                self.deployment_pods[meta.namespace, deployment].append(pod)

    def existing(self, namespace: str, kind: str, name: str) -> list[Pod]:
        pods = [
            p
            for p in self.owned.get((namespace, kind, name), ())
            if _is_live(p) and p.metadata.deletion_timestamp is None
        ]
        self.reconciled += len(pods)
        return pods

    def expand(self, item: _WorkloadItem) -> list[_PodItem]:
        workload = item.workload
        if isinstance(workload, Deployment):
            return self.deployment(item, workload)
        if isinstance(workload, ReplicaSet):
            return self.replica_set(item, workload)
        if isinstance(workload, StatefulSet):
            return self.stateful_set(item, workload)
        if isinstance(workload, DaemonSet):
            return self.daemon_set(item, workload)
        return self.job(item, workload)

    # -- building pods

    def new_pod(
        self,
        item: _WorkloadItem,
        template: PodTemplateSpec,
        name: str,
        generate_name: str,
        labels: dict[str, str],
        owner: OwnerReference,
        spec: PodSpec | None = None,
        annotations: dict[str, str] | None = None,
    ) -> _PodItem:
        meta = item.workload.metadata
        pod = Pod(
            metadata=ObjectMeta(
                name=name,
                generate_name=generate_name,
                namespace=meta.namespace,
                labels=labels,
                annotations=annotations
                if annotations is not None
                else dict(template.metadata.annotations),
                owner_references=[owner],
                creation_timestamp=meta.creation_timestamp,
            ),
            # Each pod gets its own PodSpec (binding sets spec.nodeName) but shares
            # the template's containers, tolerations, ... which nobody modifies.
            spec=spec if spec is not None else msgspec.structs.replace(template.spec),
        )
        self.loader.taken.add(pod.key)
        return _PodItem(
            pod,
            item.origin,
            item.created,
            kind=item.workload.kind,
            name=item.key,
            spec_path="spec.template.spec",
        )

    def generated_name(self, namespace: str, prefix: str, seed: str) -> str:
        """`prefix` plus 5 characters derived from `seed`, not yet in use."""
        base = prefix[:_MAX_GENERATE_NAME_BASE]
        attempt = 0
        while True:
            name = base + _random_chars(seed if attempt == 0 else f"{seed}#{attempt}")
            if f"{namespace}/{name}" not in self.loader.taken:
                return name
            attempt += 1

    def replicas(
        self,
        item: _WorkloadItem,
        template: PodTemplateSpec,
        rs_name: str,
        count: int,
        labels: dict[str, str],
        owner: OwnerReference,
    ) -> list[_PodItem]:
        namespace = item.workload.metadata.namespace
        prefix = f"{rs_name}-"
        return [
            self.new_pod(
                item,
                template,
                self.generated_name(namespace, prefix, f"{namespace}/{rs_name}/{i}"),
                prefix,
                dict(labels),
                owner,
            )
            for i in range(count)
        ]

    # -- the controllers

    def deployment(self, item: _WorkloadItem, deploy: Deployment) -> list[_PodItem]:
        meta = deploy.metadata
        if (meta.namespace, meta.name) in self.loader.deployments_with_replicasets:
            self.skipped_deployments.append(("Deployment", item.key, item.origin))
            return []
        template = deploy.spec.template
        template_hash = _template_hash(item.raw_template, template)
        rs_name = f"{meta.name}-{template_hash}"
        live = [
            p
            for p in self.deployment_pods.get((meta.namespace, meta.name), ())
            if _is_live(p) and p.metadata.deletion_timestamp is None
        ]
        self.reconciled += len(live)
        replicas = 1 if deploy.spec.replicas is None else deploy.spec.replicas
        owner = OwnerReference(
            api_version="apps/v1",
            kind="ReplicaSet",
            name=rs_name,
            uid=_uid("ReplicaSet", meta.namespace, rs_name),
            controller=True,
        )
        labels = {**template.metadata.labels, "pod-template-hash": template_hash}
        return self.replicas(item, template, rs_name, max(0, replicas - len(live)), labels, owner)

    def replica_set(self, item: _WorkloadItem, rs: ReplicaSet) -> list[_PodItem]:
        meta = rs.metadata
        live = self.existing(meta.namespace, "ReplicaSet", meta.name)
        replicas = 1 if rs.spec.replicas is None else rs.spec.replicas
        owner = _controller_ref("apps/v1", "ReplicaSet", meta)
        template = rs.spec.template
        labels = dict(template.metadata.labels)
        return self.replicas(item, template, meta.name, max(0, replicas - len(live)), labels, owner)

    def stateful_set(self, item: _WorkloadItem, sts: StatefulSet) -> list[_PodItem]:
        meta = sts.metadata
        spec = sts.spec
        template = spec.template
        present = {p.metadata.name for p in self.existing(meta.namespace, "StatefulSet", meta.name)}
        revision = f"{meta.name}-{_template_hash(item.raw_template, template)}"
        owner = _controller_ref("apps/v1", "StatefulSet", meta)
        claims = [claim.metadata.name for claim in spec.volume_claim_templates]
        start = spec.ordinals.start if spec.ordinals is not None else 0
        replicas = 1 if spec.replicas is None else spec.replicas
        pods: list[_PodItem] = []
        selector_labels = spec.selector.match_labels if spec.selector is not None else {}
        for ordinal in range(start, start + replicas):
            for claim_template in spec.volume_claim_templates:
                self.loader.stateful_set_claims.append(
                    StatefulSetClaim(
                        meta.namespace,
                        f"{claim_template.metadata.name}-{meta.name}-{ordinal}",
                        claim_template,
                        selector_labels,
                    )
                )
            name = f"{meta.name}-{ordinal}"
            if name in present:
                continue
            labels = {
                **template.metadata.labels,
                "controller-revision-hash": revision,
                "statefulset.kubernetes.io/pod-name": name,
                "apps.kubernetes.io/pod-index": str(ordinal),
            }
            pod_spec = msgspec.structs.replace(template.spec)
            if claims:
                # updateStorage: a volume per claim template, then the template's others.
                pod_spec.volumes = [
                    Volume(
                        name=claim,
                        persistent_volume_claim=PersistentVolumeClaimVolumeSource(
                            claim_name=f"{claim}-{meta.name}-{ordinal}"
                        ),
                    )
                    for claim in claims
                ] + [v for v in template.spec.volumes if v.name not in claims]
            pods.append(self.new_pod(item, template, name, "", labels, owner, pod_spec))
        return pods

    def daemon_set(self, item: _WorkloadItem, ds: DaemonSet) -> list[_PodItem]:
        meta = ds.metadata
        template = ds.spec.template
        covered = {_daemon_target(p) for p in self.existing(meta.namespace, "DaemonSet", meta.name)}
        owner = _controller_ref("apps/v1", "DaemonSet", meta)
        labels = {
            **template.metadata.labels,
            "controller-revision-hash": _template_hash(item.raw_template, template),
            "pod-template-generation": "1",
        }
        tolerations = _daemon_tolerations(template.spec)
        prefix = f"{meta.name}-"
        pods: list[_PodItem] = []
        for node in self.loader.nodes:
            node_name = node.metadata.name
            if node_name in covered or not _daemon_should_run(template.spec, tolerations, node):
                continue
            pod_spec = msgspec.structs.replace(
                template.spec,
                tolerations=tolerations,
                affinity=_pin_to_node(template.spec.affinity, node_name),
            )
            name = self.generated_name(
                meta.namespace, prefix, f"{meta.namespace}/{meta.name}@{node_name}"
            )
            pods.append(self.new_pod(item, template, name, prefix, dict(labels), owner, pod_spec))
        return pods

    def job(self, item: _WorkloadItem, job: Job) -> list[_PodItem]:
        meta = job.metadata
        spec = job.spec
        template = spec.template
        owned = self.owned.get((meta.namespace, "Job", meta.name), [])
        succeeded = [p for p in owned if p.status.phase == "Succeeded"]
        live = self.existing(meta.namespace, "Job", meta.name)
        if spec.suspend:
            return []
        want = 1 if spec.parallelism is None else spec.parallelism
        if spec.completions is not None:
            want = min(want, max(0, spec.completions - len(succeeded)))
        count = max(0, want - len(live))
        labels = dict(template.metadata.labels)
        if not spec.manual_selector:
            labels.update(
                {
                    "batch.kubernetes.io/controller-uid": meta.uid,
                    "batch.kubernetes.io/job-name": meta.name,
                    "controller-uid": meta.uid,
                    "job-name": meta.name,
                }
            )
        owner = _controller_ref("batch/v1", "Job", meta)
        index_key = "batch.kubernetes.io/job-completion-index"
        pods: list[_PodItem] = []
        if spec.completion_mode == "Indexed":
            used = {p.metadata.annotations.get(index_key) for p in (*succeeded, *live)}
            indexes = [i for i in range(spec.completions or 0) if str(i) not in used][:count]
            for index in indexes:
                prefix = f"{meta.name}-{index}-"
                name = self.generated_name(meta.namespace, prefix, f"{meta.namespace}/{prefix}")
                annotations = {**template.metadata.annotations, index_key: str(index)}
                pod_labels = {**labels, index_key: str(index)}
                pods.append(
                    self.new_pod(
                        item, template, name, prefix, pod_labels, owner, annotations=annotations
                    )
                )
            return pods
        prefix = f"{meta.name}-"
        for i in range(count):
            name = self.generated_name(meta.namespace, prefix, f"{meta.namespace}/{meta.name}/{i}")
            pods.append(self.new_pod(item, template, name, prefix, dict(labels), owner))
        return pods


def _controller_ref(api_version: str, kind: str, meta: ObjectMeta) -> OwnerReference:
    return OwnerReference(
        api_version=api_version, kind=kind, name=meta.name, uid=meta.uid, controller=True
    )


def _daemon_should_run(spec: PodSpec, tolerations: list[Toleration], node: Node) -> bool:
    """nodeShouldRunDaemonPod's predicates: node name, required node affinity
    (nodeSelector included) and NoSchedule/NoExecute taints tolerated."""
    if spec.node_name and spec.node_name != node.metadata.name:
        return False
    if not required_node_affinity(Pod(spec=spec)).matches(node):
        return False
    untolerated = find_matching_untolerated_taint(
        node.spec.taints, tolerations, do_not_schedule_taints
    )
    return untolerated is None
