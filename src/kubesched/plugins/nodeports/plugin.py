"""NodePorts: a node must have the host ports the pod asks for free."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    FilterScope,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.signature import (
    HOST_PORTS_SIGNER,
    SignFragment,
    SignPlugin,
    host_ports_signer,
)
from kubesched.framework.state.node_table import NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, HostPort, PodInfo, Resource
from kubesched.plugins.helpers.hints import as_pod

PRE_FILTER_STATE_KEY = "PreFilterNodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"
DEFAULT_PROTOCOL = "TCP"


def host_ports(pod: Pod) -> tuple[HostPort, ...]:
    """util.GetHostPorts: host ports of the restartable (sidecar) init containers and of
    the containers, with HostPortInfo's defaults (IP 0.0.0.0, protocol TCP)."""
    sidecars = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
    return tuple(
        HostPort(p.host_ip or DEFAULT_BIND_ALL_HOST_IP, p.protocol or DEFAULT_PROTOCOL, p.host_port)
        for c in (*sidecars, *pod.spec.containers)
        for p in c.ports
        if p.host_port > 0
    )


def check_conflict(used: Iterable[HostPort], wanted: HostPort) -> bool:
    """HostPortInfo.CheckConflict: same protocol and port, and IPs overlapping
    (either side binds 0.0.0.0, or both bind the same IP)."""
    for port in used:
        if port.protocol != wanted.protocol or port.port != wanted.port:
            continue
        if DEFAULT_BIND_ALL_HOST_IP in (wanted.ip, port.ip) or port.ip == wanted.ip:
            return True
    return False


def fits_ports(wanted: Iterable[HostPort], used: Iterable[HostPort]) -> bool:
    used = tuple(used)
    return not any(check_conflict(used, port) for port in wanted)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    ports: tuple[HostPort, ...]


def conflicting_rows(nodes: NodeTable, wanted: Iterable[HostPort]) -> list[int]:
    """The rows (of the whole table) where some wanted port conflicts.

    Only the nodes that use the (protocol, port) pair are looked at, through the
    table's port index, so the cost does not grow with the cluster.
    """
    found: set[int] = set()
    for want in wanted:
        users = nodes.ports.get((want.protocol, want.port))
        if not users:
            continue
        if want.ip == DEFAULT_BIND_ALL_HOST_IP:
            found.update(users)
            continue
        on_all = HostPort(DEFAULT_BIND_ALL_HOST_IP, want.protocol, want.port)
        for row in users:
            node_row = nodes.rows[row]
            if node_row is not None and (
                on_all in node_row.host_ports or want in node_row.host_ports
            ):
                found.add(row)
    return sorted(found)


class NodePorts(SignPlugin, PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    name = "NodePorts"

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's host ports."""
        return [(HOST_PORTS_SIGNER, host_ports_signer(pod.pod))], Status.success()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        ports = pod.host_ports  # host_ports(pod.pod), worked out once per PodInfo
        if not ports:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(ports))
        return None, Status.success()

    def filter_scope(self, pod: PodInfo) -> FilterScope:
        # The verdict reads the host ports its pods use.
        return FilterScope.ROW

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        wanted = state.read(PRE_FILTER_STATE_KEY, _PreFilterState).ports
        bad = conflicting_rows(nodes, wanted)
        if not bad:
            return NodeVerdicts.passing(len(rows))
        conflict = np.isin(rows, np.array(bad, dtype=np.intp))
        return NodeVerdicts.failing(len(rows), [(ERR_REASON, conflict)], Code.UNSCHEDULABLE)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Container ports are immutable, so pod updates never matter.
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, ActionType.DELETE), self.is_schedulable_after_pod_deleted
            ),
            # No hint: a node being added always deserves a retry.
            ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: PodInfo, old: object, new: object) -> bool:
        """The deleted pod was placed (or nominated) and held a port this pod wants."""
        deleted = as_pod(old)
        if deleted is None:
            return True
        if not deleted.spec.node_name and not deleted.status.nominated_node_name:
            return False
        freed = host_ports(deleted)
        if not freed:
            return False
        return not fits_ports(host_ports(pod.pod), freed)
