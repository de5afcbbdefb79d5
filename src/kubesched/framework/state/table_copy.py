"""A copy of the node table to try pods on, leaving the live table alone.

RunFilterPluginsWithNominatedPods filters a node with the pods nominated to it
added: upstream adds them to a clone of the node's NodeInfo (addGENominatedPods),
so the snapshot other goroutines read never changes. `TableCopy` is that clone for
the columnar table: the amounts arrays are copied (a memory copy, tens of
microseconds at 5,000 nodes), and a row's pods, ports and volumes are copied the
first time a pod goes onto it. As with NodeInfo's clone, only the node's own data
changes: the cluster-wide pod lists (`pod_index`, the snapshot's
HavePodsWithAffinityList upstream) stay the live table's, and the plugins that
read them follow added pods through their PreFilterExtensions (AddPod).
"""

from __future__ import annotations

import numpy as np

from kubesched.framework.state.node_table import IntArray, NodeRow, NodeTable, Rows
from kubesched.framework.types import PodInfo


class TableCopy(NodeTable):
    """The live table as it is, with pods added to some rows (`add_pod`, `remove_pod`)
    or amounts shifted (`shift_requested`) in the copy alone; `undo` makes it the
    live table again, for trying one row after another on one copy. Nodes, and
    `save_row`/`restore_row`, are the live table's to change: a copy shares them."""

    _live: NodeTable
    _owned_rows: set[int]  # rows whose NodeRow is the copy's own
    _changed_rows: list[Rows]  # rows whose amounts may differ from the live table's
    _owned_ports: set[tuple[str, int]]
    _owned_claims: set[str]

    @classmethod
    def of(cls, live: NodeTable) -> TableCopy:
        copy = cls.__new__(cls)
        copy.__dict__.update(live.__dict__)
        copy._live = live
        copy.requested = live.requested.copy()
        copy.free = live.free.copy()
        # A pod with a resource no node has widens the copy's columns only.
        copy.resources = list(live.resources)
        copy.resource_index = dict(live.resource_index)
        # `rows` and `non_zero_requested` stay the live table's until a pod moves (a
        # third of the copy's time at 5,000 nodes, which shifted amounts never need).
        copy._owned_rows = set()
        copy._changed_rows = []
        copy._owned_ports = set()
        copy._owned_claims = set()
        # Never a live generation, so nothing cached of the live table matches it.
        copy.generation = -1 - live.generation
        return copy

    def add_pod(self, pod: PodInfo, row: int) -> None:
        self._own(pod, row)
        super().add_pod(pod, row)  # takes an older copy of the pod off through remove_pod

    def remove_pod(self, pod: PodInfo, row: int) -> None:
        self._own(pod, row)
        super().remove_pod(pod, row)

    def shift_requested(self, rows: Rows, delta: IntArray) -> None:
        self._changed_rows.append(rows)
        super().shift_requested(rows, delta)

    def _index_pod(self, pod: PodInfo, row: int, sign: int) -> None:
        pass  # the live pod index stays as it is (see the module's docstring)

    def _own(self, pod: PodInfo, row: int) -> None:
        """Give the copy its own row and its own counts of the ports and claims the
        pod uses, before they change."""
        live = self._live
        if self.rows is live.rows:
            self.rows = list(live.rows)
            self.non_zero_requested = live.non_zero_requested.copy()
        if row not in self._owned_rows:
            shared = self.rows[row]
            assert shared is not None
            self.rows[row] = NodeRow(
                node=shared.node,
                pods=dict(shared.pods),
                host_ports=dict(shared.host_ports),
                images=shared.images,  # pods never change it
                volume_pods=dict(shared.volume_pods),
                lacks_cpu_or_memory=shared.lacks_cpu_or_memory,
                pod_changes=shared.pod_changes,
                zone=shared.zone,
            )
            self._owned_rows.add(row)
            self._changed_rows.append(np.array([row], dtype=np.intp))
        for port in pod.host_ports:
            key = (port.protocol, port.port)
            if key not in self._owned_ports:
                if not self._owned_ports:
                    self.ports = dict(self.ports)
                self.ports[key] = dict(self.ports.get(key, {}))
                self._owned_ports.add(key)
        for volume in pod.pod.spec.volumes:
            claim = volume.persistent_volume_claim
            if claim is None:
                continue
            claim_key = f"{pod.namespace}/{claim.claim_name}"
            if claim_key not in self._owned_claims:
                if not self._owned_claims:
                    self.pvc_refs = dict(self.pvc_refs)
                if claim_key in self.pvc_refs:
                    self.pvc_refs[claim_key] = dict(self.pvc_refs[claim_key])
                self._owned_claims.add(claim_key)

    def undo(self) -> None:
        """Make the copy the live table again: every row, port and claim it changed."""
        live = self._live
        if self.requested.shape[1] != live.requested.shape[1]:
            # A pod brought a resource in: start from whole copies again (rare).
            self.requested = live.requested.copy()
            self.free = live.free.copy()
            self.non_zero_requested = live.non_zero_requested.copy()
            self.allocatable = live.allocatable
            self.resources = list(live.resources)
            self.resource_index = dict(live.resource_index)
        elif self._changed_rows:
            rows = np.concatenate(self._changed_rows)
            self.requested[rows] = live.requested[rows]
            self.free[rows] = live.free[rows]
            if self.non_zero_requested is not live.non_zero_requested:
                self.non_zero_requested[rows] = live.non_zero_requested[rows]
        for row in self._owned_rows:
            self.rows[row] = live.rows[row]
        if self._owned_ports:
            self.ports = live.ports
        if self._owned_claims:
            self.pvc_refs = live.pvc_refs
        self._owned_rows.clear()
        self._changed_rows.clear()
        self._owned_ports.clear()
        self._owned_claims.clear()
        self.has_negative = live.has_negative
