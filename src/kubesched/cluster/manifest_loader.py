"""The loader: the documents read from manifests become typed objects.

Each document (or item of a `kind: List`) is decoded by msgspec into its
struct and defaulted as the apiserver would (namespace "default", names from
generateName, node allocatable from capacity, deterministic uids); a bad
object becomes one LoadProblem naming file, document, object and field, and is
skipped. The loader only collects: the pods workload controllers create,
admission and the ClusterState come after all documents (see manifests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from kubesched.api import kinds
from kubesched.api.node import RuntimeClass
from kubesched.api.objects import (
    Namespace,
    Node,
    ObjectMeta,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
)
from kubesched.api.pod_groups import POD_GROUP_GROUP, PodGroup
from kubesched.api.scheduling import API_VERSION as SCHEDULING_API_VERSION
from kubesched.api.scheduling import PodGroup as WorkloadPodGroup
from kubesched.api.scheduling import Workload as WorkloadObject
from kubesched.api.workloads import (
    DaemonSet,
    Deployment,
    Job,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    Workload,
)
from kubesched.cluster.admission import (
    NAMESPACE_NAME_LABEL,
    PREEMPT_LOWER_PRIORITY,
)
from kubesched.cluster.dra_manifests import (
    DRA_KINDS,
    DraObjects,
    check_version,
)
from kubesched.cluster.generated_names import _MAX_GENERATE_NAME_BASE, _random_chars, _uid
from kubesched.cluster.load_problems import LoadProblem, _Origin, duplicate_problem
from kubesched.cluster.manifest_reader import _json_documents, _yaml_documents
from kubesched.cluster.manifest_validation import (
    _check_pod_spec,
    _check_quantities,
    _check_workload,
    _type_word,
    _validation_field,
    validate_workload_object,
)
from kubesched.cluster.pod_group_manifests import (
    POD_GROUP_KIND,
    pod_group_problem,
    pod_group_warnings,
)
from kubesched.cluster.runtime_classes import validate_runtime_class
from kubesched.cluster.validation.field_errors import FieldError, FieldErrors, required
from kubesched.cluster.validation.fields import (
    check_fields,
    copy_object,
    duplicate_fields,
    triage,
)
from kubesched.cluster.validation.names_labels import (
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_object_meta,
)
from kubesched.cluster.validation.pod_spec import validate_pod_spec
from kubesched.cluster.validation.scheduling_objects import (
    validate_node,
    validate_pdb,
    validate_priority_class,
)
from kubesched.cluster.validation.services import validate_service
from kubesched.cluster.validation.workload_api import validate_pod_group, validate_workload
from kubesched.cluster.volume_manifests import (
    STORAGE_KINDS,
    StatefulSetClaim,
    StorageObjects,
)

T = TypeVar("T")

# The API groups each kind is read from: api/kinds.py's one list ("" is the core
# group), and the retired `extensions` group old manifests still name.
_GROUPS: dict[str, tuple[str, ...]] = {}
for _kind in kinds.SIMULATOR_KINDS:
    _GROUPS[_kind.kind] = (*_GROUPS.get(_kind.kind, ()), _kind.group)
for _legacy in ("Deployment", "ReplicaSet", "DaemonSet"):
    _GROUPS[_legacy] += ("extensions",)
_CLUSTER_SCOPED = frozenset(k.kind for k in kinds.SIMULATOR_KINDS if not k.namespaced)


def _first(errors: FieldErrors) -> FieldError | None:
    """The first problem the apiserver's validation finds (it lists them all; the
    loader reports one line per skipped object)."""
    return next(errors, None)


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


# The warnings `--validate=warn` lists at most; the rest are counted.
MAX_FIELD_WARNINGS = 100


class _Loader:
    def __init__(self, validate: str = "strict") -> None:
        # kubectl's --validate: strict (the default), warn or ignore
        # (cluster/validation/fields.py says what each does).
        self.validate = validate
        self.unvalidated: set[tuple[str, str]] = set()  # (kind, apiVersion) without a schema
        # Sources read from a live cluster: its pods were admitted there already.
        self.live_sources: set[str] = set()
        self.field_warnings = 0
        self.problems: list[LoadProblem] = []
        self.notes: list[str] = []
        self.nodes: list[Node] = []
        self.node_origin: dict[str, _Origin] = {}
        self.items: list[_PodItem | _WorkloadItem] = []
        self.priority_classes: dict[str, tuple[PriorityClass, _Origin]] = {}
        self.namespaces: dict[str, tuple[Namespace, _Origin]] = {}
        self.pdbs: dict[str, tuple[PodDisruptionBudget, _Origin]] = {}
        self.services: dict[str, tuple[Service, _Origin]] = {}
        self.runtime_classes: dict[str, tuple[RuntimeClass, _Origin]] = {}
        # scheduling.k8s.io/v1alpha2 objects (GenericWorkload), by "namespace/name".
        self.workload_pod_groups: dict[str, tuple[WorkloadPodGroup, _Origin]] = {}
        self.workload_objects: dict[str, tuple[WorkloadObject, _Origin]] = {}
        self.workload_origin: dict[tuple[str, str], _Origin] = {}
        self.storage_objects = StorageObjects()
        self.dra_objects = DraObjects()
        self.pod_groups: dict[str, tuple[PodGroup, _Origin]] = {}
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
            documents = _json_documents(data, report, find_duplicates=self.validate != "ignore")
        else:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                self.file_problem(source, f"not UTF-8 text: {exc.reason} at byte {exc.start}")
                return
            documents = _yaml_documents(text, report)
        read = 0
        for index, obj in documents:
            read += 1
            self.add_document(_Origin(source, index), obj)
        if not read and not any(p.source == source for p in self.problems):
            self.notes.append(f"{source} holds no objects")

    def add_document(self, origin: _Origin, obj: object) -> None:
        self.sources.setdefault(origin.source, len(self.sources))
        try:
            self.read_document(origin, obj)
        except RecursionError:  # msgspec and the checks recurse into what they read
            self.problem(origin, "", "", None, "nested too deeply to read")
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
        if self.refused_fields(origin, kind, api_version, obj):
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
        elif kind in DRA_KINDS:
            self.add_dra_object(origin, kind, api_version, obj)
        elif kind == "PodDisruptionBudget":
            self.add_pdb(origin, obj)
        elif kind == "Service":
            self.add_service(origin, obj)
        elif kind == "RuntimeClass":
            self.add_runtime_class(origin, obj)
        elif kind == POD_GROUP_KIND and group in ("", POD_GROUP_GROUP):
            # scheduler-plugins' PodGroup (Coscheduling); scheduling.k8s.io's below.
            self.add_pod_group(origin, api_version, obj)
        elif kind in ("PodGroup", "Workload"):
            self.add_scheduling_object(origin, kind, api_version, obj)
        else:
            self.add_workload(origin, kind, obj)

    def refused_fields(
        self, origin: _Origin, kind: str, api_version: str, obj: Mapping[str, Any]
    ) -> bool:
        """Field validation as the apiserver's strict decoding (fieldValidation): unknown
        and duplicate fields, values of the wrong type, integers out of range. Whether
        the object is refused (a LoadProblem); `warn` lists the fields in notes."""
        problems = check_fields(obj, api_version, kind)
        if problems is None:
            problems = duplicate_fields(obj)
            if (kind, api_version) not in self.unvalidated:
                self.unvalidated.add((kind, api_version))
                shown = api_version or "no apiVersion"
                self.notes.append(
                    f"the fields of {kind} ({shown}) are not validated: no schema for it here"
                )
        refused, warnings = triage(problems, self.validate)
        name = _raw_name(obj, kind)
        for warning in warnings:
            self.field_warnings += 1
            if self.field_warnings <= MAX_FIELD_WARNINGS:
                where = " ".join(p for p in (kind, name) if p)
                self.notes.append(
                    f"warning: {origin} ({where}): field {warning.field}: {warning.message}"
                )
        if refused is not None:
            self.problem(origin, kind, name, *refused.error)
        return refused is not None

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
                # copy_object keeps the mark of duplicate keys (DuplicateKeyDict).
                item = copy_object(
                    item,
                    {"kind": item_kind, "apiVersion": item.get("apiVersion") or api_version},
                )
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

    def invalid_meta(self, origin: _Origin, kind: str, meta: ObjectMeta) -> bool:
        """ValidateObjectMeta for the storage and DRA kinds (DNS-subdomain names);
        a missing name is left to their own checks."""
        if not meta.name:
            return False
        namespaced = kind not in _CLUSTER_SCOPED
        error = _first(validate_object_meta(meta, name_is_dns_subdomain, namespaced=namespaced))
        if error is None:
            return False
        name = f"{meta.namespace or 'default'}/{meta.name}" if namespaced else meta.name
        self.problem(origin, kind, name, *error)
        return True

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
        error = (
            _check_pod_spec(pod.spec, "spec")
            or _first(validate_object_meta(meta, name_is_dns_subdomain, namespaced=True))
            or _first(validate_pod_spec(pod.spec, meta.labels, "spec"))
        )
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
        error = (
            _check_quantities(status.capacity, "status.capacity")
            or _check_quantities(status.allocatable, "status.allocatable")
            or _first(validate_node(node))
        )
        if error is not None:
            self.problem(origin, "Node", meta.name, *error)
            return
        first = self.node_origin.get(meta.name)
        if first is not None:
            self.problem(origin, "Node", meta.name, *duplicate_problem("Node", meta.name, first))
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
        error = _first(validate_priority_class(pc))
        if error is None and name in self.priority_classes:
            error = duplicate_problem("PriorityClass", name, self.priority_classes[name][1])
        elif error is None and pc.global_default:
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
        error = _first(validate_object_meta(ns.metadata, name_is_dns_label, namespaced=False))
        if error is not None:
            self.problem(origin, "Namespace", name, *error)
            return
        if name in self.namespaces:
            self.problem(
                origin,
                "Namespace",
                name,
                *duplicate_problem("Namespace", name, self.namespaces[name][1]),
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
        error = _first(validate_pdb(pdb, obj.get("spec")))
        if error is not None:
            self.problem(origin, "PodDisruptionBudget", key, *error)
            return
        if key in self.pdbs:
            self.problem(
                origin,
                "PodDisruptionBudget",
                key,
                *duplicate_problem("PodDisruptionBudget", key, self.pdbs[key][1]),
            )
            return
        if not meta.uid:
            meta.uid = _uid("PodDisruptionBudget", meta.namespace, meta.name)
        self.pdbs[key] = (pdb, origin)

    def add_service(self, origin: _Origin, obj: Mapping[str, Any]) -> None:
        """Read for its selector (PodTopologySpread's default constraints)."""
        service = self.decode(origin, obj, "Service", Service)
        if service is None:
            return
        meta = service.metadata
        meta.namespace = meta.namespace or "default"
        key = f"{meta.namespace}/{meta.name}" if meta.name else ""
        error = _first(validate_service(service))
        if error is None and key in self.services:
            error = duplicate_problem("Service", key, self.services[key][1])
        if error is not None:
            self.problem(origin, "Service", key, *error)
            return
        if not meta.uid:
            meta.uid = _uid("Service", meta.namespace, meta.name)
        self.services[key] = (service, origin)

    def add_runtime_class(self, origin: _Origin, obj: Mapping[str, Any]) -> None:
        """Read for RuntimeClass admission (cluster/runtime_classes.py)."""
        rc = self.decode(origin, obj, "RuntimeClass", RuntimeClass)
        if rc is None:
            return
        name = rc.metadata.name
        error = _first(validate_runtime_class(rc))
        if error is None and name in self.runtime_classes:
            error = duplicate_problem("RuntimeClass", name, self.runtime_classes[name][1])
        if error is not None:
            self.problem(origin, "RuntimeClass", name, *error)
            return
        if not rc.metadata.uid:
            rc.metadata.uid = _uid("RuntimeClass", "", name)
        self.runtime_classes[name] = (rc, origin)

    def add_pod_group(self, origin: _Origin, api_version: str, obj: Mapping[str, Any]) -> None:
        group = self.decode(origin, obj, POD_GROUP_KIND, PodGroup)
        if group is None:
            return
        meta = group.metadata
        if not meta.namespace:
            meta.namespace = "default"
        problem = pod_group_problem(api_version, group)
        if problem is None and self.invalid_meta(origin, POD_GROUP_KIND, meta):
            return
        key = meta.key if meta.name else ""
        if problem is None and key in self.pod_groups:
            problem = duplicate_problem("PodGroup", key, self.pod_groups[key][1])
        if problem is not None:
            self.problem(origin, POD_GROUP_KIND, key, *problem)
            return
        self.notes.extend(pod_group_warnings(obj, str(origin), key))
        if not meta.uid:
            meta.uid = _uid(POD_GROUP_KIND, meta.namespace, meta.name)
        self.pod_groups[key] = (group, origin)

    def add_scheduling_object(
        self, origin: _Origin, kind: str, api_version: str, obj: Mapping[str, Any]
    ) -> None:
        """A PodGroup or a Workload: scheduling.k8s.io/v1alpha2 only (v1.36.3 serves
        them at that version alone), checked as kube-apiserver validates them."""
        if api_version != SCHEDULING_API_VERSION:
            self.problem(
                origin,
                kind,
                _raw_name(obj, kind),
                "apiVersion",
                f'{kind} is served at "{SCHEDULING_API_VERSION}" only, got "{api_version}"',
            )
            return
        decoded: WorkloadPodGroup | WorkloadObject | None
        if kind == "PodGroup":
            decoded = self.decode(origin, obj, kind, WorkloadPodGroup)
        else:
            decoded = self.decode(origin, obj, kind, WorkloadObject)
        if decoded is None:
            return
        meta = decoded.metadata
        meta.namespace = meta.namespace or "default"
        name = f"{meta.namespace}/{meta.name}" if meta.name else ""
        if isinstance(decoded, WorkloadPodGroup):
            error = _first(validate_pod_group(decoded))
        else:
            error = _first(validate_workload(decoded))
        if error is not None:
            self.problem(origin, kind, name, *error)
            return
        store: dict[str, Any] = (
            self.workload_pod_groups if kind == "PodGroup" else self.workload_objects
        )
        if name in store:
            self.problem(origin, kind, name, *duplicate_problem(kind, name, store[name][1]))
            return
        if not meta.uid:
            meta.uid = _uid(kind, meta.namespace, meta.name)
        store[name] = (decoded, origin)

    def add_storage_object(self, origin: _Origin, kind: str, obj: Mapping[str, Any]) -> None:
        decoded = self.decode(origin, obj, kind, STORAGE_KINDS[kind][0])
        if decoded is None:
            return
        if self.invalid_meta(origin, kind, decoded.metadata):
            return
        problem = self.storage_objects.add(kind, decoded, str(origin))
        if problem is not None:
            meta = decoded.metadata
            name = meta.name if kind in _CLUSTER_SCOPED else f"{meta.namespace}/{meta.name}"
            self.problem(origin, kind, name if meta.name else "", *problem)

    def add_dra_object(
        self, origin: _Origin, kind: str, api_version: str, obj: Mapping[str, Any]
    ) -> None:
        problem = check_version(api_version)
        if problem is not None:
            self.problem(origin, kind, _raw_name(obj, kind), *problem)
            return
        decoded = self.decode(origin, obj, kind, DRA_KINDS[kind][0])
        if decoded is None:
            return
        if self.invalid_meta(origin, kind, decoded.metadata):
            return
        problem = self.dra_objects.add(kind, decoded, obj, str(origin))
        if problem is not None:
            name = decoded.metadata.key if decoded.metadata.name else ""
            self.problem(origin, kind, name, *problem)

    def add_workload(self, origin: _Origin, kind: str, obj: Mapping[str, Any]) -> None:
        types: dict[str, type[Workload]] = {
            "Deployment": Deployment,
            "ReplicaSet": ReplicaSet,
            "StatefulSet": StatefulSet,
            "DaemonSet": DaemonSet,
            "Job": Job,
            "ReplicationController": ReplicationController,
        }
        workload = self.decode(origin, obj, kind, types[kind])
        if workload is None:
            return
        if isinstance(workload, ReplicationController):
            spec = obj.get("spec")
            if not isinstance(spec, dict) or spec.get("template") is None:
                self.problem(origin, kind, _raw_name(obj, kind), *required("spec.template"))
                return
            # SetDefaults_ReplicationController: the selector is the template's labels.
            if not workload.spec.selector:
                workload.spec.selector = dict(workload.spec.template.metadata.labels)
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
        error = _check_workload(workload) or _first(validate_workload_object(workload))
        if error is not None:
            self.problem(origin, kind, key, *error)
            return
        first = self.workload_origin.get((kind, key))
        if first is not None:
            self.problem(origin, kind, key, *duplicate_problem(kind, key, first))
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
