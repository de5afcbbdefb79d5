"""NodePorts: host port conflicts by protocol, port and IP; PreFilter skip; hints."""

from __future__ import annotations

import numpy as np
import pytest

from kubesched.api.objects import Container, ContainerPort, ObjectMeta, Pod, PodSpec, PodStatus
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, HostPort, PodInfo, Resource
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.nodeports.plugin import host_ports
from kubesched.testing import make_node, make_table

REASON = "node(s) didn't have free ports for the requested pod ports"
FAIL = (Code.UNSCHEDULABLE, [REASON])
PASS: tuple[int, list[str]] = (Code.SUCCESS, [])

Port = tuple[int, str, str]  # (host port, protocol, host IP)


def port_pod(
    name: str,
    *ports: Port,
    node: str = "",
    init: tuple[Port, ...] = (),
    init_restart: str | None = None,
) -> Pod:
    def container(name: str, ps: tuple[Port, ...], restart: str | None = None) -> Container:
        return Container(
            name=name,
            ports=[
                ContainerPort(container_port=80, host_port=p, protocol=pr, host_ip=ip)
                for p, pr, ip in ps
            ],
            restart_policy=restart,
        )

    init_containers = [container("init", init, init_restart)] if init else []
    return Pod(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodSpec(
            node_name=node,
            containers=[container("c", ports)],
            init_containers=init_containers,
        ),
    )


def table() -> NodeTable:
    """any: TCP 8080 on every IP; ip1: TCP 8080 on 10.0.0.1; udp: UDP 8080; free: nothing."""
    nodes = [make_node(n) for n in ["any", "ip1", "udp", "free"]]
    placed = [
        port_pod("a", (8080, "TCP", ""), node="any"),
        port_pod("b", (8080, "TCP", "10.0.0.1"), node="ip1"),
        port_pod("c", (8080, "UDP", "0.0.0.0"), node="udp"),
        port_pod("d", node="free"),
    ]
    return make_table(nodes, placed)


def verdicts(pod: Pod, nodes: NodeTable | None = None) -> dict[str, tuple[int, list[str]]]:
    nodes = nodes or table()
    plugin, state, info = NodePorts(), CycleState(), PodInfo(pod)
    result, status = plugin.pre_filter(state, info, nodes)
    assert result is None and status.code == Code.SUCCESS
    rows = nodes.order()
    got = plugin.filter(state, info, nodes, rows)
    return {
        nodes.names[row]: (int(got.codes[i]), [r for r, mask in got.reasons if mask[i]])
        for i, row in enumerate(rows)
    }


def test_any_ip_conflicts_with_every_ip_of_the_same_protocol_and_port() -> None:
    got = verdicts(port_pod("p", (8080, "TCP", "")))
    assert got == {"any": FAIL, "ip1": FAIL, "udp": PASS, "free": PASS}
    assert verdicts(port_pod("p", (8080, "TCP", "0.0.0.0"))) == got


def test_specific_ip_conflicts_with_same_ip_or_any_ip() -> None:
    assert verdicts(port_pod("p", (8080, "TCP", "10.0.0.2"))) == {
        "any": FAIL,
        "ip1": PASS,  # a different IP on the same port is fine
        "udp": PASS,
        "free": PASS,
    }
    assert verdicts(port_pod("p", (8080, "TCP", "10.0.0.1"))) == {
        "any": FAIL,
        "ip1": FAIL,
        "udp": PASS,
        "free": PASS,
    }


def test_protocol_must_match() -> None:
    assert verdicts(port_pod("p", (8080, "UDP", ""))) == {
        "any": PASS,
        "ip1": PASS,
        "udp": FAIL,
        "free": PASS,
    }
    got = verdicts(port_pod("p", (8080, "SCTP", "")))
    assert all(v == PASS for v in got.values())


def test_other_port_is_free() -> None:
    got = verdicts(port_pod("p", (9090, "TCP", "")))
    assert all(v == PASS for v in got.values())


def test_any_wanted_port_in_conflict_fails_the_node() -> None:
    got = verdicts(port_pod("p", (9090, "TCP", ""), (8080, "UDP", "10.1.1.1")))
    assert got == {"any": PASS, "ip1": PASS, "udp": FAIL, "free": PASS}


def test_empty_protocol_means_tcp() -> None:
    got = verdicts(port_pod("p", (8080, "", "10.0.0.1")))
    assert got == {"any": FAIL, "ip1": FAIL, "udp": PASS, "free": PASS}


def test_port_freed_when_the_pod_leaves() -> None:
    nodes = table()
    row = nodes.row_of("any")
    assert row is not None
    placed = next(nodes.pods_on(row))
    nodes.remove_pod(placed, row)
    assert verdicts(port_pod("p", (8080, "TCP", "")), nodes)["any"] == PASS


def test_rows_subset() -> None:
    nodes = table()
    plugin, state, info = NodePorts(), CycleState(), PodInfo(port_pod("p", (8080, "TCP", "")))
    plugin.pre_filter(state, info, nodes)
    rows = np.array([nodes.row_of(n) for n in ["free", "ip1"]], dtype=np.intp)
    assert plugin.filter(state, info, nodes, rows).codes.tolist() == [0, Code.UNSCHEDULABLE]


def test_pre_filter_skips_pods_without_host_ports() -> None:
    nodes = table()
    for pod in [
        port_pod("p"),
        port_pod("p", (0, "TCP", "")),  # a container port only
        port_pod("p", init=((8080, "TCP", ""),)),  # a plain init container's ports do not stay
    ]:
        result, status = NodePorts().pre_filter(CycleState(), PodInfo(pod), nodes)
        assert (result, status.code) == (None, Code.SKIP)


def test_sidecar_init_container_ports_count() -> None:
    pod = port_pod("p", init=((8080, "UDP", ""),), init_restart="Always")
    assert host_ports(pod) == (HostPort("0.0.0.0", "UDP", 8080),)
    assert verdicts(pod)["udp"] == FAIL


def test_pod_info_host_ports_are_get_host_ports() -> None:
    """PreFilter reads PodInfo.host_ports: the same ports as host_ports (GetHostPorts)."""
    for pod in [
        port_pod("p"),
        port_pod("p", (8080, "TCP", ""), (53, "UDP", "10.0.0.1"), (0, "TCP", "")),
        port_pod("p", (80, "", ""), init=((8080, "UDP", ""),), init_restart="Always"),
        port_pod("p", (80, "TCP", ""), init=((9090, "TCP", ""),)),
    ]:
        assert PodInfo(pod).host_ports == host_ports(pod)


def test_filter_without_pre_filter_is_an_error() -> None:
    nodes = table()
    with pytest.raises(KeyError):
        NodePorts().filter(CycleState(), PodInfo(port_pod("p")), nodes, nodes.order())


def test_events() -> None:
    events = NodePorts().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.POD, ActionType.DELETE),
        (Resource.NODE, ActionType.ADD),
    ]
    assert events[0].hint is not None
    assert events[1].hint is None


def test_pod_deleted_hint() -> None:
    plugin = NodePorts()
    target = PodInfo(port_pod("p", (8080, "TCP", "10.0.0.1")))
    holder = port_pod("a", (8080, "TCP", ""), node="n")
    assert plugin.is_schedulable_after_pod_deleted(target, holder, None)
    other_ip = port_pod("a", (8080, "TCP", "10.0.0.2"), node="n")
    assert not plugin.is_schedulable_after_pod_deleted(target, other_ip, None)
    other_port = port_pod("a", (9090, "TCP", ""), node="n")
    assert not plugin.is_schedulable_after_pod_deleted(target, other_port, None)
    no_ports = port_pod("a", node="n")
    assert not plugin.is_schedulable_after_pod_deleted(target, no_ports, None)
    unscheduled = port_pod("a", (8080, "TCP", ""))
    assert not plugin.is_schedulable_after_pod_deleted(target, unscheduled, None)
    nominated = port_pod("a", (8080, "TCP", ""))
    nominated.status = PodStatus(nominated_node_name="n")
    assert plugin.is_schedulable_after_pod_deleted(target, nominated, None)
    assert plugin.is_schedulable_after_pod_deleted(target, make_node("n"), None)
