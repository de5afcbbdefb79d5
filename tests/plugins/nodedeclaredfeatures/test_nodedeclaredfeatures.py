"""NodeDeclaredFeatures: PreFilter's skip, Filter's verdicts and text, events and hints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import FilterScope
from kubesched.framework.state.node_table import NodeTable
from kubesched.framework.status import Code
from kubesched.framework.types import ActionType, PodInfo, Resource
from kubesched.plugins.nodedeclaredfeatures import NodeDeclaredFeatures
from kubesched.testing import make_node, make_pod, make_table

REASON = "node(s) didn't match Pod's required features"
RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOSTNET = "UserNamespacesHostNetworkSupport"

RESTART_ALL_RULE = {
    "action": "RestartAllContainers",
    "exitCodes": {"operator": "In", "values": [42]},
}


def restart_all_pod(name: str = "p", uid: str = "") -> PodInfo:
    container = {"name": "c", "image": "i", "restartPolicyRules": [RESTART_ALL_RULE]}
    pod = make_pod(name, spec={"containers": [container]})
    if uid:
        pod.metadata.uid = uid
    return PodInfo(pod)


def userns_hostnet_pod() -> PodInfo:
    return PodInfo(make_pod("p", spec={"hostNetwork": True, "hostUsers": False}))


def both_pod() -> PodInfo:
    container = {"name": "c", "image": "i", "restartPolicyRules": [RESTART_ALL_RULE]}
    spec: dict[str, Any] = {"hostNetwork": True, "hostUsers": False, "containers": [container]}
    return PodInfo(make_pod("p", spec=spec))


def table() -> NodeTable:
    return make_table(
        [
            make_node("none"),
            make_node("restart", declared_features=[RESTART_ALL]),
            make_node("userns", declared_features=["SomeOtherFeature", USERNS_HOSTNET]),
            make_node("both", declared_features=["Anything", RESTART_ALL, USERNS_HOSTNET]),
        ]
    )


def run(pod: PodInfo, nodes: NodeTable) -> dict[str, tuple[int, list[str]]] | Code:
    """The Filter verdict per node, or PreFilter's code when it does not succeed."""
    plugin = NodeDeclaredFeatures()
    state = CycleState()
    _result, status = plugin.pre_filter(state, pod, nodes)
    if status.code != Code.SUCCESS:
        return status.code
    rows = nodes.order()
    verdicts = plugin.filter(state, pod, nodes, rows)
    out = {}
    for i, row in enumerate(rows):
        reasons = [r for r, mask in verdicts.reasons if mask[i]]
        out[nodes.names[row]] = (int(verdicts.codes[i]), reasons)
    return out


def test_a_pod_needing_nothing_skips_the_filter() -> None:
    assert run(PodInfo(make_pod("p")), table()) == Code.SKIP
    # A rule that restarts only its own container needs nothing of the node.
    own = {"name": "c", "image": "i", "restartPolicyRules": [{"action": "Restart"}]}
    assert run(PodInfo(make_pod("p", spec={"containers": [own]})), table()) == Code.SKIP
    # The host's network with the host's user namespace (hostUsers unset or true).
    assert run(PodInfo(make_pod("p", spec={"hostNetwork": True})), table()) == Code.SKIP
    hostusers = {"hostNetwork": True, "hostUsers": True}
    assert run(PodInfo(make_pod("p", spec=hostusers)), table()) == Code.SKIP


FAIL: tuple[int, list[str]] = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON])
OK: tuple[int, list[str]] = (Code.SUCCESS, [])


def test_restart_all_containers_needs_nodes_declaring_it() -> None:
    assert run(restart_all_pod(), table()) == {
        "none": FAIL,
        "restart": OK,
        "userns": FAIL,
        "both": OK,
    }


def test_user_namespace_with_host_network_needs_nodes_declaring_it() -> None:
    assert run(userns_hostnet_pod(), table()) == {
        "none": FAIL,
        "restart": FAIL,
        "userns": OK,
        "both": OK,
    }


def test_a_pod_needing_both_fits_only_nodes_with_both() -> None:
    # One reason per node, whichever features it lacks (the text names none).
    assert run(both_pod(), table()) == {"none": FAIL, "restart": FAIL, "userns": FAIL, "both": OK}


def test_unregistered_and_unsorted_declarations() -> None:
    # Names the library does not know count for nothing; an unsorted list is read
    # the way TryMap walks it, which misses what comes after a larger name.
    nodes = make_table(
        [
            make_node("sorted", declared_features=["A", RESTART_ALL, "Zeta"]),
            make_node("unsorted", declared_features=[USERNS_HOSTNET, RESTART_ALL]),
        ]
    )
    assert run(restart_all_pod(), nodes) == {"sorted": OK, "unsorted": FAIL}


def test_filter_follows_node_updates_and_removals() -> None:
    nodes = table()
    nodes.upsert_node(make_node("none", declared_features=[RESTART_ALL]))
    nodes.upsert_node(make_node("restart"))
    nodes.remove_node("userns")
    nodes.upsert_node(make_node("new", declared_features=[RESTART_ALL]))
    got = run(restart_all_pod(), nodes)
    assert got == {"none": OK, "restart": FAIL, "both": OK, "new": OK}


def test_filter_over_some_rows_and_a_grown_table() -> None:
    nodes = NodeTable(capacity=2)
    for i in range(5):
        features = [RESTART_ALL] if i % 2 else []
        nodes.upsert_node(make_node(f"n{i}", declared_features=features))
    plugin = NodeDeclaredFeatures()
    state = CycleState()
    plugin.pre_filter(state, restart_all_pod(), nodes)
    rows = np.array([nodes.row_of("n3"), nodes.row_of("n0")], dtype=np.intp)
    verdicts = plugin.filter(state, restart_all_pod(), nodes, rows)
    assert verdicts.codes.tolist() == [Code.SUCCESS, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
    assert [(r, m.tolist()) for r, m in verdicts.reasons] == [(REASON, [False, True])]


def test_filter_without_prefilter_state_raises() -> None:
    nodes = table()
    with pytest.raises(KeyError):
        NodeDeclaredFeatures().filter(CycleState(), restart_all_pod(), nodes, nodes.order())


def test_filter_scope_is_the_node_object() -> None:
    assert NodeDeclaredFeatures().filter_scope(restart_all_pod()) is FilterScope.NODE


def test_events() -> None:
    events = NodeDeclaredFeatures().events_to_register()
    assert [(e.event.resource, e.event.action) for e in events] == [
        (Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
        (Resource.POD, ActionType.UPDATE),
    ]
    assert all(e.hint is not None for e in events)


def test_node_hint() -> None:
    plugin = NodeDeclaredFeatures()
    pod = restart_all_pod()
    plain, declaring = make_node("n"), make_node("n", declared_features=[RESTART_ALL])
    other = make_node("n", declared_features=["Other"])
    # Any node added, whatever it declares.
    assert plugin.is_schedulable_after_node_change(pod, None, plain)
    assert plugin.is_schedulable_after_node_change(pod, None, declaring)
    # Any change of the declared features, even one that drops some.
    assert plugin.is_schedulable_after_node_change(pod, plain, declaring)
    assert plugin.is_schedulable_after_node_change(pod, declaring, plain)
    assert plugin.is_schedulable_after_node_change(pod, declaring, other)
    assert not plugin.is_schedulable_after_node_change(pod, declaring, declaring)
    relabelled = make_node("n", labels={"a": "b"})
    assert not plugin.is_schedulable_after_node_change(pod, plain, relabelled)
    assert plugin.is_schedulable_after_node_change(pod, None, make_pod("x"))


def test_pod_update_hint() -> None:
    plugin = NodeDeclaredFeatures()
    target = restart_all_pod(uid="u1")
    relaxed = make_pod("p")
    relaxed.metadata.uid = "u1"
    still = restart_all_pod(uid="u1").pod
    still.metadata.labels = {"changed": "yes"}
    # The pod itself, needing other features now.
    assert plugin.is_schedulable_after_pod_update(target, target.pod, relaxed)
    # The pod itself, needing the same ones.
    assert not plugin.is_schedulable_after_pod_update(target, target.pod, still)
    # Another pod.
    other = restart_all_pod(uid="u2").pod
    assert not plugin.is_schedulable_after_pod_update(target, relaxed, other)
    assert plugin.is_schedulable_after_pod_update(target, None, make_node("n"))
