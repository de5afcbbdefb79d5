"""The columnar node table: the snapshot every scheduling cycle reads.

One row per node. Amounts live in 2-D int64 arrays (row x resource) so that a
plugin answers "which nodes fit" for every node with one numpy expression.
Labels are dictionary-encoded columns (one int32 code per row and key), taints
are grouped into the few distinct taint sets a cluster has, and host ports and
images are indexed by what pods ask for. The table is changed only between
scheduling cycles, so a cycle may read it without copying it.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kubesched.api.declared_features import try_map
from kubesched.api.objects import Node, Taint
from kubesched.api.requests import amounts
from kubesched.framework.state.pod_index import PodIndex
from kubesched.framework.types import HostPort, PodInfo

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.intp]

# The first columns are fixed; extended resources get columns as they appear.
CPU, MEMORY, EPHEMERAL_STORAGE, PODS = 0, 1, 2, 3
BASE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")

TaintKey = tuple[str, str, str]


class LabelColumn:
    """One label key over all rows: value codes (-1 where the node lacks the key)."""

    __slots__ = ("_numeric", "codes", "values", "vocab")

    def __init__(self, capacity: int) -> None:
        self.codes = np.full(capacity, -1, dtype=np.int32)
        self.vocab: dict[str, int] = {}
        self.values: list[str] = []
        self._numeric: npt.NDArray[np.float64] | None = None

    def code_of(self, value: str) -> int:
        code = self.vocab.get(value)
        if code is None:
            code = len(self.values)
            self.vocab[value] = code
            self.values.append(value)
            self._numeric = None
        return code

    def codes_for(self, values: Iterable[str]) -> npt.NDArray[np.int32]:
        return np.array([self.vocab[v] for v in values if v in self.vocab], dtype=np.int32)

    def numeric(self) -> npt.NDArray[np.float64]:
        """Each vocabulary value as an integer (NaN when it is not one), for Gt/Lt."""
        if self._numeric is None:
            out = np.full(len(self.values), np.nan)
            for i, v in enumerate(self.values):
                with contextlib.suppress(ValueError):
                    out[i] = int(v)
            self._numeric = out
        return self._numeric

    def grow(self, capacity: int) -> None:
        grown = np.full(capacity, -1, dtype=np.int32)
        grown[: len(self.codes)] = self.codes
        self.codes = grown

    def compacted(self) -> LabelColumn | None:
        """The column with only the values some row still holds (in the order they
        came), or None when no row holds the key. A new object, so that what is kept
        per column object (selectors' parsed integers) starts again."""
        used = np.flatnonzero(np.bincount(self.codes[self.codes >= 0], minlength=len(self.values)))
        if len(used) == 0:
            return None
        column = LabelColumn(len(self.codes))
        # remap[-1] is the last slot: rows without the key stay -1.
        remap = np.full(len(self.values) + 1, -1, dtype=np.int32)
        for code in used:
            remap[code] = column.code_of(self.values[code])
        column.codes = remap[self.codes]
        return column


@dataclass(slots=True)
class SavedRow:
    """What `NodeTable.save_row` kept of one row, for `restore_row`."""

    row: int
    requested: IntArray
    non_zero_requested: IntArray
    pods: dict[str, PodInfo]
    host_ports: dict[HostPort, int]
    port_users: dict[tuple[str, int], dict[int, int]]
    port_keys: int


@dataclass(slots=True)
class NodeRow:
    """Everything about one node that is not a number in a column."""

    node: Node
    pods: dict[str, PodInfo] = field(default_factory=dict)
    host_ports: dict[HostPort, int] = field(default_factory=dict)
    images: dict[str, int] = field(default_factory=dict)
    # Pods with volumes the volume plugins count (claims, ephemeral, in-tree disks).
    volume_pods: dict[str, PodInfo] = field(default_factory=dict)
    # allocatable has no cpu or no memory (counted in num_without_cpu_or_memory)
    lacks_cpu_or_memory: bool = False
    # Bumped whenever `pods` changes, for what plugins keep per row across cycles
    # (with the NodeRow itself: a row reused by another node is a new NodeRow).
    pod_changes: int = 0
    # GetZoneKey of the node: the zone list of NodeTable.order it is in.
    zone: str = ""


def _counts_the_same(old: PodInfo, new: PodInfo) -> bool:
    """Whether everything the table sums and indexes for a pod (amounts, host ports,
    volumes, the pod index's namespace, labels, deletion and pod affinity) is the
    same for both."""
    if (
        (old.requests is not new.requests and old.requests != new.requests)
        or old.non_zero_cpu != new.non_zero_cpu
        or old.non_zero_memory != new.non_zero_memory
        or old.host_ports != new.host_ports
    ):
        return False
    a, b = old.pod, new.pod
    if a is b:
        return True
    ma, mb = a.metadata, b.metadata
    return (
        ma.namespace == mb.namespace
        and ma.deletion_timestamp == mb.deletion_timestamp
        and ma.labels == mb.labels
        and (a.spec.volumes is b.spec.volumes or a.spec.volumes == b.spec.volumes)
        and (a.spec.affinity is b.spec.affinity or a.spec.affinity == b.spec.affinity)
    )


def normalized_image_name(name: str) -> str:
    """A pod's image name as ImageLocality looks it up: a missing tag means :latest."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class UnrepresentableNode(ValueError):
    """A node with an amount the table's int64 columns cannot hold (e.g. cpu
    2^63-1, which the apiserver accepts: 1000 times that in milli-CPU)."""

    def __init__(self, node: str, field: str, quantity: str) -> None:
        self.node = node
        self.field = field
        super().__init__(
            f'node "{node}": {field}: {quantity} is too large for a 64-bit integer '
            "(cpu is counted in milli-CPU); the node is not used until it changes"
        )


def check_representable(node: Node) -> None:
    """Raise UnrepresentableNode for the first allocatable amount outside int64."""
    field = "allocatable" if node.status.allocatable else "capacity"
    resources = node.status.allocatable or node.status.capacity
    for resource, amount in amounts(resources).items():
        if not INT64_MIN <= amount <= INT64_MAX:
            raise UnrepresentableNode(
                node.metadata.name, f"status.{field}[{resource}]", str(resources[resource])
            )


class NodeTable:
    """All nodes of the cluster as columns, with the pods placed on them.

    A Filter or Score plugin gets the table and `rows`, the row numbers of the
    candidate nodes. `names[row]` is a node's name; `allocatable`, `requested` and
    `free` are arrays of row x resource (cpu in millicores, memory in bytes), their
    columns given by `resource_index`; `label_value(row, key)` reads a label.

    Example:
        ```python
        from kubesched.framework.interfaces import ScorePlugin

        class MostFreeMemory(ScorePlugin):
            name = "MostFreeMemory"

            def score(self, state, pod, nodes, rows):
                free = nodes.free[rows, nodes.resource_index["memory"]]
                return free * 100 // max(1, int(free.max(initial=0)))
        ```
    """

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.resources: list[str] = list(BASE_RESOURCES)
        self.resource_index: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        self.allocatable = np.zeros((capacity, len(self.resources)), dtype=np.int64)
        self.requested = np.zeros((capacity, len(self.resources)), dtype=np.int64)
        # allocatable - requested, kept up to date with both (NodeResourcesFit's Filter)
        self.free = np.zeros((capacity, len(self.resources)), dtype=np.int64)
        # cpu and memory requested with the scoring defaults for empty containers
        self.non_zero_requested = np.zeros((capacity, 2), dtype=np.int64)
        self.unschedulable = np.zeros(capacity, dtype=np.bool_)
        self.alive = np.zeros(capacity, dtype=np.bool_)
        self.taint_set = np.zeros(capacity, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        # The registered features each node declares, a bitmap per row (NodeInfo's
        # DeclaredFeatures upstream; api.declared_features has the bit order).
        self.declared_features = np.zeros(capacity, dtype=np.int64)
        # Live rows with any taint, and cordoned live rows: when there are none,
        # the plugins that look at them have nothing to do.
        self.num_tainted = 0
        self.num_unschedulable = 0
        # Live rows without any cpu or any memory allocatable (the scorers' shortcuts
        # are for nodes with both).
        self.num_without_cpu_or_memory = 0
        # Whether a negative amount ever reached the table (an allocatable or a pod's
        # request): the scorers' shortcuts assume amounts that are not negative.
        self.has_negative = False
        self._taint_set_ids: dict[tuple[TaintKey, ...], int] = {(): 0}
        self.labels: dict[str, LabelColumn] = {}
        self.rows: list[NodeRow | None] = [None] * capacity
        self.names: list[str] = [""] * capacity
        self.index: dict[str, int] = {}
        self._free: list[int] = []
        self._next_row = 0
        # nodeTree: each zone's live rows in the order they came, the zones in the
        # order they first came (an emptied zone goes). Kept as nodes come and go,
        # so that order() does not read every node again after each add or delete:
        # that took 9 ms at 5,000 nodes, and scheduler_perf's churn adds and deletes
        # a node every 250 ms.
        self._zones: dict[str, list[int]] = {}
        self._order: Rows | None = None
        # image name as the node reports it -> {row: size}; len() is how many nodes hold it
        self.images: dict[str, dict[int, int]] = {}
        # (protocol, port) -> {row: count of pods using it}; ports are rarely asked for
        self.ports: dict[tuple[str, int], dict[int, int]] = {}
        # "namespace/claim" -> {row: pods there using it} (PVCRefCounts upstream)
        self.pvc_refs: dict[str, dict[int, int]] = {}
        self.generation = 0  # bumped on every change, for plugins that cache per snapshot
        # Bumped when a node is added, changed or removed (not when pods move), for
        # plugins that cache what they read off the nodes alone across cycles.
        self.node_generation = 0
        # Bumped when a node takes a row or leaves one (not when a node changes), for
        # what is kept by row across node updates.
        self.row_generation = 0
        # the placed pods by namespace and labels (PodTopologySpread, InterPodAffinity)
        self.pod_index = PodIndex()
        # PodInfo -> amounts_of it, at the table width it was made at: the nominated
        # pods' amounts are asked for in every cycle while they wait. Weak, so that an
        # entry goes with its PodInfo. Columns are only ever added at the end, so an
        # entry of the current width is still right.
        self._amounts: weakref.WeakKeyDictionary[PodInfo, list[int]] = weakref.WeakKeyDictionary()
        # Label values and taint sets are only ever added as nodes come and change:
        # a cluster whose nodes come and go (each with its own hostname) would grow
        # them without bound. Node changes since the last compact().
        self._changes_since_compact = 0

    # --- shape -----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, name: str) -> bool:
        return name in self.index

    def resource_column(self, name: str) -> int:
        """The column of a resource, added (zero everywhere) when first seen."""
        col = self.resource_index.get(name)
        if col is None:
            col = len(self.resources)
            self.resources.append(name)
            self.resource_index[name] = col
            pad = np.zeros((self.capacity, 1), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.requested = np.hstack([self.requested, pad])
            self.free = np.hstack([self.free, pad])
        return col

    def _grow(self) -> None:
        old = self.capacity
        new = old * 2
        self.capacity = new

        def grown(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
            out = np.zeros((new, *a.shape[1:]), dtype=a.dtype)
            out[:old] = a
            return out

        self.allocatable = grown(self.allocatable)  # type: ignore[assignment]
        self.requested = grown(self.requested)  # type: ignore[assignment]
        self.free = grown(self.free)  # type: ignore[assignment]
        self.non_zero_requested = grown(self.non_zero_requested)  # type: ignore[assignment]
        self.unschedulable = grown(self.unschedulable)  # type: ignore[assignment]
        self.alive = grown(self.alive)  # type: ignore[assignment]
        self.taint_set = grown(self.taint_set)  # type: ignore[assignment]
        self.declared_features = grown(self.declared_features)  # type: ignore[assignment]
        for column in self.labels.values():
            column.grow(new)
        self.rows.extend([None] * (new - old))
        self.names.extend([""] * (new - old))

    # --- nodes -----------------------------------------------------------------

    def upsert_node(self, node: Node) -> int:
        """Add a node or refresh its columns; its pods stay where they are. Raises
        UnrepresentableNode, with nothing written, for a node whose amounts do not
        fit the int64 columns."""
        check_representable(node)
        name = node.metadata.name
        row = self.index.get(name)
        if row is None:
            if self._free:
                row = self._free.pop()
            else:
                if self._next_row == self.capacity:
                    self._grow()
                row = self._next_row
                self._next_row += 1
            self.index[name] = row
            self.names[row] = name
            self.rows[row] = NodeRow(node)
            self.alive[row] = True
            self._join_zone(row, _zone_key(node))
            self.row_generation += 1
        else:
            node_row = self.rows[row]
            assert node_row is not None
            old_labels = node_row.node.metadata.labels
            zone = _zone_key(node)
            if zone != node_row.zone:
                # nodeTree.updateNode: out of the old zone, to the end of the new one.
                self._leave_zone(row, node_row.zone)
                self._join_zone(row, zone)
            node_row.node = node
            for key in old_labels:
                if key not in node.metadata.labels:
                    self.labels[key].codes[row] = -1
            self._drop_images(row)
        self._write_node_columns(row, node)
        self.generation += 1
        self.node_generation += 1
        self._maybe_compact()
        return row

    def _write_node_columns(self, row: int, node: Node) -> None:
        alloc = amounts(node.status.allocatable or node.status.capacity)
        self.allocatable[row, :] = 0
        for resource, amount in alloc.items():
            col = self.resource_column(resource)  # may widen the arrays: look it up first
            self.allocatable[row, col] = amount
            if amount < 0:
                self.has_negative = True
        self.free[row] = self.allocatable[row] - self.requested[row]
        lacks = alloc.get("cpu", 0) == 0 or alloc.get("memory", 0) == 0
        node_row = self.rows[row]
        assert node_row is not None
        self.num_without_cpu_or_memory += int(lacks) - int(node_row.lacks_cpu_or_memory)
        node_row.lacks_cpu_or_memory = lacks
        self.num_unschedulable += int(node.spec.unschedulable) - int(self.unschedulable[row])
        self.unschedulable[row] = node.spec.unschedulable
        for key, value in node.metadata.labels.items():
            column = self.labels.get(key)
            if column is None:
                column = self.labels[key] = LabelColumn(self.capacity)
            column.codes[row] = column.code_of(value)
        taint_set = self._taint_set_id(node.spec.taints)
        self.num_tainted += int(taint_set != 0) - int(self.taint_set[row] != 0)
        self.taint_set[row] = taint_set
        self.declared_features[row] = try_map(node.status.declared_features)
        # Node image names are kept as reported; only a pod's image gets ":latest"
        # added when it has no tag (kube-scheduler compares them that way).
        for image in node.status.images:
            for image_name in image.names:
                node_row.images[image_name] = image.size_bytes
                self.images.setdefault(image_name, {})[row] = image.size_bytes

    def _drop_images(self, row: int) -> None:
        node_row = self.rows[row]
        assert node_row is not None
        for image_name in node_row.images:
            holders = self.images.get(image_name)
            if holders is not None:
                holders.pop(row, None)
                if not holders:
                    del self.images[image_name]
        node_row.images.clear()

    def _taint_set_id(self, taints: list[Taint]) -> int:
        key = tuple(sorted((t.key, t.value, t.effect) for t in taints))
        found = self._taint_set_ids.get(key)
        if found is None:
            found = len(self.taint_sets)
            self._taint_set_ids[key] = found
            self.taint_sets.append(tuple(taints))
        return found

    def remove_node(self, name: str) -> list[PodInfo]:
        """Drop a node; returns the pods that were on it."""
        row = self.index.pop(name, None)
        if row is None:
            return []
        node_row = self.rows[row]
        assert node_row is not None
        pods = list(node_row.pods.values())
        for pod in pods:
            self.remove_pod(pod, row)
        self._drop_images(row)
        for column in self.labels.values():
            column.codes[row] = -1
        self.num_without_cpu_or_memory -= int(node_row.lacks_cpu_or_memory)
        self.allocatable[row, :] = 0
        self.requested[row, :] = 0
        self.free[row, :] = 0
        self.non_zero_requested[row, :] = 0
        self.alive[row] = False
        self.num_unschedulable -= int(self.unschedulable[row])
        self.unschedulable[row] = False
        self.num_tainted -= int(self.taint_set[row] != 0)
        self.taint_set[row] = 0
        self.declared_features[row] = 0
        self._leave_zone(row, node_row.zone)
        self.rows[row] = None
        self.names[row] = ""
        self._free.append(row)
        self.generation += 1
        self.node_generation += 1
        self.row_generation += 1
        self._maybe_compact()
        return pods

    def _maybe_compact(self) -> None:
        # Amortised: a compaction reads every column once, after as many node
        # changes as there are nodes (at least 1,024).
        self._changes_since_compact += 1
        if self._changes_since_compact >= max(1024, len(self.index)):
            self.compact()

    def compact(self) -> None:
        """Drop the label values, label keys and taint sets no live node holds any
        more, renumbering the codes. Only between cycles, as every change: plugins
        that keep codes across cycles key them on node_generation, which moves."""
        self._changes_since_compact = 0
        for key, column in list(self.labels.items()):
            few = len(column.values) <= max(16, 2 * len(self.index))
            if few and (column.codes >= 0).any():
                # Few values for the nodes there are: not worth a renumbering
                # (unless the key is gone from every node).
                continue
            compacted = column.compacted()
            if compacted is None:
                del self.labels[key]
            else:
                self.labels[key] = compacted
        self._compact_taint_sets()
        self.generation += 1
        self.node_generation += 1

    def _compact_taint_sets(self) -> None:
        counts = np.bincount(self.taint_set[self.alive], minlength=len(self.taint_sets))
        used = np.flatnonzero(counts[1:]) + 1  # the empty set (0) always stays
        if len(used) + 1 == len(self.taint_sets):
            return
        remap = np.zeros(len(self.taint_sets), dtype=np.int32)
        sets: list[tuple[Taint, ...]] = [()]
        ids: dict[tuple[TaintKey, ...], int] = {(): 0}
        for old in used:
            taints = self.taint_sets[old]
            remap[old] = len(sets)
            ids[tuple(sorted((t.key, t.value, t.effect) for t in taints))] = len(sets)
            sets.append(taints)
        self.taint_set = remap[self.taint_set]
        self.taint_sets = sets
        self._taint_set_ids = ids

    # --- pods ------------------------------------------------------------------

    def add_pod(self, pod: PodInfo, row: int) -> None:
        node_row = self.rows[row]
        assert node_row is not None
        if pod.key in node_row.pods:
            self.remove_pod(node_row.pods[pod.key], row)
        node_row.pods[pod.key] = pod
        node_row.pod_changes += 1
        self._account(pod, row, +1)

    def replace_pod(self, pod: PodInfo, row: int) -> bool:
        """Put a newer PodInfo of a pod placed on the row in the old one's stead, when
        it counts exactly as the old one does (a binding coming back, a status
        change): the same as remove_pod then add_pod, without redoing the sums.
        False, and nothing done, otherwise."""
        node_row = self.rows[row]
        assert node_row is not None
        key = pod.key
        old = node_row.pods.get(key)
        if old is None or not _counts_the_same(old, pod):
            return False
        # Removing and adding again puts the pod last: so does this.
        del node_row.pods[key]
        node_row.pods[key] = pod
        node_row.pod_changes += 1
        if key in node_row.volume_pods:
            del node_row.volume_pods[key]
            node_row.volume_pods[key] = pod
        self.generation += 2  # as the removal and the addition would have
        return True

    def remove_pod(self, pod: PodInfo, row: int) -> None:
        node_row = self.rows[row]
        assert node_row is not None
        placed = node_row.pods.pop(pod.key, None)
        if placed is not None:
            node_row.pod_changes += 1
            self._account(placed, row, -1)

    def _account(self, pod: PodInfo, row: int, sign: int) -> None:
        requested = self.requested
        for resource, amount in pod.requests.items():
            col = self.resource_index.get(resource)
            if col is None:
                col = self.resource_column(resource)  # widens the arrays
                requested = self.requested
            requested[row, col] += sign * amount
            if amount < 0:
                self.has_negative = True
        requested[row, PODS] += sign
        self.free[row] = self.allocatable[row] - requested[row]
        if pod.non_zero_cpu < 0 or pod.non_zero_memory < 0:
            self.has_negative = True
        non_zero = self.non_zero_requested
        non_zero[row, 0] += sign * pod.non_zero_cpu
        non_zero[row, 1] += sign * pod.non_zero_memory
        node_row = self.rows[row]
        assert node_row is not None
        for port in pod.host_ports:
            users = self.ports.setdefault((port.protocol, port.port), {})
            count = node_row.host_ports.get(port, 0) + sign
            if count > 0:
                node_row.host_ports[port] = count
            else:
                node_row.host_ports.pop(port, None)
            total = users.get(row, 0) + sign
            if total > 0:
                users[row] = total
            else:
                users.pop(row, None)
        if pod.pod.spec.volumes:
            self._account_volumes(pod, row, node_row, sign)
        self._index_pod(pod, row, sign)
        self.generation += 1

    def _index_pod(self, pod: PodInfo, row: int, sign: int) -> None:
        # The cluster-wide lists of pods (with affinity, by labels) follow the rows.
        self.pod_index.account(pod, row, sign)

    def _account_volumes(self, pod: PodInfo, row: int, node_row: NodeRow, sign: int) -> None:
        counted = False
        for volume in pod.pod.spec.volumes:
            claim = volume.persistent_volume_claim
            if claim is not None:
                counted = True
                key = f"{pod.namespace}/{claim.claim_name}"
                refs = self.pvc_refs.setdefault(key, {})
                count = refs.get(row, 0) + sign
                if count > 0:
                    refs[row] = count
                else:
                    refs.pop(row, None)
                    if not refs:
                        del self.pvc_refs[key]
            elif (
                volume.ephemeral is not None
                or volume.gce_persistent_disk is not None
                or volume.aws_elastic_block_store is not None
                or volume.iscsi is not None
                or volume.rbd is not None
            ):
                counted = True
        if counted:
            if sign > 0:
                node_row.volume_pods[pod.key] = pod
            else:
                node_row.volume_pods.pop(pod.key, None)

    def _recount_volumes(self, row: int, node_row: NodeRow) -> None:
        """Bring the row's volume counts in line with its pods (after restore_row)."""
        for pod in list(node_row.volume_pods.values()):
            self._account_volumes(pod, row, node_row, -1)
        for pod in node_row.pods.values():
            if pod.pod.spec.volumes:
                self._account_volumes(pod, row, node_row, +1)

    # --- what-if changes to one row ----------------------------------------------

    def save_row(self, row: int) -> SavedRow:
        """Remember a row's pods and amounts, to try pods on it with `add_pod` and
        `remove_pod` (preemption, nominated pods) and then `restore_row`."""
        node_row = self.rows[row]
        assert node_row is not None
        users = {
            (port.protocol, port.port): dict(self.ports[(port.protocol, port.port)])
            for port in node_row.host_ports
        }
        return SavedRow(
            row,
            self.requested[row].copy(),
            self.non_zero_requested[row].copy(),
            dict(node_row.pods),
            dict(node_row.host_ports),
            users,
            len(self.ports),
        )

    def restore_row(self, saved: SavedRow) -> None:
        """Put a row back exactly as `save_row` found it: amounts, pods and ports
        (in their order). Only `generation` moves on, as after any change.

        Pods tried on the row are taken off and pods taken off are put back through
        the same accounting as add_pod/remove_pod, so every index kept per pod
        (ports, volumes, the pod index) is back too; then the orders are restored."""
        row = saved.row
        node_row = self.rows[row]
        assert node_row is not None
        touched = {(p.protocol, p.port) for p in node_row.host_ports}
        for pod_key, pod in list(node_row.pods.items()):
            if saved.pods.get(pod_key) is not pod:
                del node_row.pods[pod_key]
                self._account(pod, row, -1)
        for pod_key, pod in saved.pods.items():
            if node_row.pods.get(pod_key) is not pod:
                node_row.pods[pod_key] = pod
                self._account(pod, row, +1)
        width = len(saved.requested)
        self.requested[row, :width] = saved.requested
        self.requested[row, width:] = 0  # a column a tried pod brought in
        self.free[row] = self.allocatable[row] - self.requested[row]
        self.non_zero_requested[row] = saved.non_zero_requested
        node_row.pods.clear()
        node_row.pods.update(saved.pods)
        node_row.pod_changes += 1
        self._recount_volumes(row, node_row)
        node_row.host_ports.clear()
        node_row.host_ports.update(saved.host_ports)
        # Port keys are only ever added (at the end): drop the ones added since.
        while len(self.ports) > saved.port_keys:
            self.ports.popitem()
        for key in touched:
            users = self.ports.get(key)
            if users is not None and key not in saved.port_users:
                users.pop(row, None)
        for key, users in saved.port_users.items():
            self.ports[key] = dict(users)
        self.generation += 1

    def amounts_of(self, pod: PodInfo) -> list[int] | None:
        """What add_pod adds to a row's `requested`, one amount per resource column
        (PODS counted), for shift_requested; None when add_pod would do more than that
        to the amounts: a resource without a column (it widens the table) or a
        negative amount."""
        width = self.requested.shape[1]
        cached = self._amounts.get(pod)
        if cached is not None and len(cached) == width:
            return cached
        vector = [0] * width
        for resource, amount in pod.requests.items():
            col = self.resource_index.get(resource)
            if col is None or amount < 0:
                return None
            vector[col] += amount
        vector[PODS] += 1
        self._amounts[pod] = vector
        return vector

    def added_amounts(self, added: Mapping[int, Sequence[PodInfo]]) -> IntArray | None:
        """One line per row of `added` (in its order): what adding its pods with
        add_pod would add to the row's `requested`, for what-if runs whose filters
        read a row's pods only through the amounts (shift_requested). None when that
        is not all add_pod would change (amounts_of) or a pod is on its row already."""
        lines: list[list[int]] = []
        at: list[int] = []
        for i, (row, pods) in enumerate(added.items()):
            node_row = self.rows[row]
            for pod in pods:
                vector = self.amounts_of(pod)
                if vector is None or node_row is None or pod.key in node_row.pods:
                    return None
                lines.append(vector)
                at.append(i)
        delta = np.zeros((len(added), self.requested.shape[1]), dtype=np.int64)
        if lines:
            np.add.at(delta, at, np.array(lines, dtype=np.int64))
        return delta

    def shift_requested(self, rows: Rows, delta: IntArray) -> None:
        """Add `delta` (one line per row, over the first resource columns) to what the
        rows have requested, as taking pods off or putting pods on with those amounts
        would, and nothing else: no pod, port or index moves. For what-if runs whose
        filters only look at the amounts (the batched preemption dry run), which undo it
        with the opposite shift. Whatever is kept in step with `requested` must follow
        here too."""
        width = delta.shape[1]
        self.requested[rows, :width] += delta
        self.free[rows] = self.allocatable[rows] - self.requested[rows]
        self.generation += 1

    # --- reading ---------------------------------------------------------------

    def node(self, row: int) -> Node:
        node_row = self.rows[row]
        assert node_row is not None
        return node_row.node

    def row_of(self, name: str) -> int | None:
        return self.index.get(name)

    def pods_on(self, row: int) -> Iterator[PodInfo]:
        node_row = self.rows[row]
        assert node_row is not None
        return iter(node_row.pods.values())

    def label(self, key: str) -> LabelColumn | None:
        return self.labels.get(key)

    def label_value(self, row: int, key: str) -> str | None:
        column = self.labels.get(key)
        if column is None or column.codes[row] < 0:
            return None
        return column.values[int(column.codes[row])]

    def _join_zone(self, row: int, zone: str) -> None:
        """nodeTree.addNode: the row goes to the end of its zone's list."""
        node_row = self.rows[row]
        assert node_row is not None
        node_row.zone = zone
        self._zones.setdefault(zone, []).append(row)
        self._order = None

    def _leave_zone(self, row: int, zone: str) -> None:
        """nodeTree.removeNode: out of its zone's list, and an emptied zone goes
        (removeZone), so that it comes back last."""
        rows = self._zones[zone]
        rows.remove(row)
        if not rows:
            del self._zones[zone]
        self._order = None

    def order(self) -> Rows:
        """Live rows in the order kube-scheduler lists nodes (nodeTree.list): zones
        interleaved round-robin in the order they came, nodes within a zone in the
        order they came."""
        if self._order is None:
            lists = list(self._zones.values())
            if len(lists) == 1:
                self._order = np.array(lists[0], dtype=np.intp)
            else:
                rows = np.array([r for zone in lists for r in zone], dtype=np.intp)
                lengths = np.array([len(zone) for zone in lists], dtype=np.intp)
                # Round i takes each zone's i-th row, zones in their order.
                depth = np.arange(len(rows)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                zone_of = np.repeat(np.arange(len(lists)), lengths)
                self._order = rows[np.lexsort((zone_of, depth))]
        return self._order


def _zone_key(node: Node) -> str:
    labels = node.metadata.labels
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    return f"{region}:\x00:{zone}" if region or zone else ""
