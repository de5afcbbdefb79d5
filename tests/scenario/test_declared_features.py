"""NodeDeclaredFeatures in whole runs: the FailedScheduling text of v1.36.3, and the
node updates that wake a pod it rejected."""

from __future__ import annotations

import asyncio

from kubesched.framework.clock import SimClock
from kubesched.framework.profile import ProfileConfig
from kubesched.framework.types import ActionType, Resource
from kubesched.scheduler import Scheduler
from kubesched.scheduler.eventhandlers import node_update_events
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import run_until_quiet
from kubesched.testing import make_node, make_pod
from tests.scenario.conftest import Simulate

RESTART_ALL = "RestartAllContainersOnContainerExits"


def node(name: str, features: str = "") -> str:
    declared = f", declaredFeatures: [{features}]" if features else ""
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {{cpu: "4", memory: 16Gi, pods: "110"}}{declared}}}
"""


RESTARTING_POD = """
---
apiVersion: v1
kind: Pod
metadata: {name: restarting, namespace: default}
spec:
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: 100m}}
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
"""

HOST_NETWORK_POD = """
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet, namespace: default}
spec:
  hostNetwork: true
  hostUsers: false
  containers:
  - {name: c, image: nginx}
"""


def test_no_node_declares_the_feature(simulate_yaml: Simulate) -> None:
    code, out, _ = simulate_yaml(node("a"), node("b", "SomethingElse"), RESTARTING_POD)
    assert code == 0
    assert out["placements"] == {"default/restarting": None}
    assert out["reasons"]["default/restarting"] == (
        "0/2 nodes are available: 2 node(s) didn't match Pod's required features. "
        "no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_pods_go_to_the_nodes_declaring_what_they_need(simulate_yaml: Simulate) -> None:
    nodes = (
        node("plain"),
        node("restart", RESTART_ALL),
        node("userns", "UserNamespacesHostNetworkSupport"),
    )
    _code, out, _ = simulate_yaml(*nodes, RESTARTING_POD, HOST_NETWORK_POD)
    assert out["placements"] == {"default/restarting": "restart", "default/hostnet": "userns"}


def test_declaring_the_feature_wakes_the_pod() -> None:
    container = {
        "name": "c",
        "image": "i",
        "restartPolicyRules": [{"action": "RestartAllContainers"}],
    }
    pod = make_pod("waiter", cpu="100m", spec={"containers": [container]})
    pod.metadata.uid = "uid-waiter"

    async def scenario() -> None:
        clock = SimClock()
        cluster = InMemoryCluster(nodes={"a": make_node("a")})
        cluster.pods[pod.key] = pod
        sched = Scheduler([ProfileConfig.default()], cluster, clock=clock, seed=1)
        cluster.watch(sched)
        await run_until_quiet(sched, clock)
        waiting = sched.queue.unschedulable["default/waiter"]
        assert waiting.unschedulable_plugins == {"NodeDeclaredFeatures"}
        # A label change is no declared-features update: the pod keeps waiting.
        cluster.add_node(make_node("a", labels={"x": "y"}))
        assert "default/waiter" in sched.queue.unschedulable
        cluster.add_node(make_node("a", labels={"x": "y"}, declared_features=[RESTART_ALL]))
        assert "default/waiter" not in sched.queue.unschedulable
        await run_until_quiet(sched, clock)
        assert cluster.pods["default/waiter"].spec.node_name == "a"

    asyncio.run(scenario())


def test_node_update_events_name_a_declared_features_change() -> None:
    plain, declaring = make_node("a"), make_node("a", declared_features=[RESTART_ALL])
    events = node_update_events(plain, declaring)
    assert [(e.resource, e.action, e.label) for e in events] == [
        (Resource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeUpdateNodeDeclaredFeature")
    ]
    assert node_update_events(declaring, declaring) == []
