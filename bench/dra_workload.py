"""SchedulingWithResourceClaimTemplate: pods that each claim one device through a
ResourceClaimTemplate, modelled on scheduler_perf's DRA workload (v1.36.3,
test/integration/scheduler_perf/dra/performance-config.yaml and templates/):

* nodes with devices as templates/node-with-dra-test-driver.yaml (4 CPU, 32Gi,
  110 pods, label node-with-dra=true), plus templates/node-default.yaml nodes
  without any (nodesWithoutDRA);
* createResourceDriver (scheduler_perf/dra.go, resourceSlice): one
  ResourceSlice per device node, named after the node, driver
  test-driver.cdi.k8s.io, pool = the node's name, `maxClaimsPerNode` devices
  instance-<i> with attributes model A100, family GPU, driverVersion 1.2.3,
  dra.example.com/numa <i> and capacity memory 1Gi;
* templates/deviceclass.yaml: DeviceClass test-class selecting
  `device.driver == "test-driver.cdi.k8s.io"`;
* templates/resourceclaimtemplate.yaml: test-claim-template (one request req-0,
  exactly one device of test-class) in each namespace, the init pods' and the
  measured pods' (upstream's "init" and "test");
* templates/pod-with-claim-template.yaml: pause, no requests, a container claim
  "resource" made from test-claim-template (generateName test-dra: here
  test-dra-<i>, as the harness watches pods by name).

The claims are made by the resourceclaim controller: kube-controller-manager's
end to end, kubesched.cluster.dra_manifests' emulation in process.

Differences, so that runs do not collide on one cluster: the DeviceClass (the
only cluster-scoped object besides nodes and slices) is named
<run>-test-class, node names start with the run id, and every object carries
the run label.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from typing import Any

from bench.workloads import (
    PAUSE_IMAGE,
    ROLE_INIT,
    ROLE_LABEL,
    ROLE_MEASURE,
    RUN_LABEL,
    ClaimState,
    Manifest,
    Plan,
    PodState,
    Size,
    make_node,
)

RESOURCE_API = "resource.k8s.io/v1"
DRIVER = "test-driver.cdi.k8s.io"
CLASS_NAME = "test-class"
TEMPLATE_NAME = "test-claim-template"
REQUEST_NAME = "req-0"
POD_CLAIM = "resource"
DRA_NODE_LABEL = "node-with-dra"


def class_name(run_id: str) -> str:
    return f"{run_id}-{CLASS_NAME}"


def device_class(run_id: str) -> Manifest:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": class_name(run_id), "labels": {RUN_LABEL: run_id}},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def resource_slice(run_id: str, node_name: str, devices: int) -> Manifest:
    """scheduler_perf's resourceSlice(driverName, nodeName, capacity)."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": node_name, "labels": {RUN_LABEL: run_id}},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 0, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def claim_template(run_id: str, namespace: str) -> Manifest:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": TEMPLATE_NAME,
            "namespace": namespace,
            "labels": {RUN_LABEL: run_id},
        },
        "spec": {
            "spec": {
                "devices": {
                    "requests": [
                        {"name": REQUEST_NAME, "exactly": {"deviceClassName": class_name(run_id)}}
                    ]
                }
            }
        },
    }


def claim_pod(name: str, namespace: str, scheduler: str, run_id: str, role: str) -> Manifest:
    """templates/pod-with-claim-template.yaml (no port, no requests, unlike pod-default)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {RUN_LABEL: run_id, ROLE_LABEL: role},
        },
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "pause",
                    "image": PAUSE_IMAGE,
                    "resources": {"claims": [{"name": POD_CLAIM}]},
                }
            ],
            "resourceClaims": [{"name": POD_CLAIM, "resourceClaimTemplateName": TEMPLATE_NAME}],
        },
    }


def build(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    """ns[0] holds the init pods, ns[1] the measured ones (upstream: init, test)."""
    dra_nodes = [
        make_node(f"{run_id}-scheduler-perf-dra-{i}", run_id, {DRA_NODE_LABEL: "true"})
        for i in range(size.nodes)
    ]
    plain_nodes = [make_node(f"{run_id}-node-{i}", run_id) for i in range(size.plain_nodes)]
    objects = [
        device_class(run_id),
        *(resource_slice(run_id, n["metadata"]["name"], size.devices_per_node) for n in dra_nodes),
        *(claim_template(run_id, namespace) for namespace in ns),
    ]
    return Plan(
        [*plain_nodes, *dra_nodes],
        [
            claim_pod(f"test-dra-{i}", ns[0], scheduler, run_id, ROLE_INIT)
            for i in range(size.init_pods)
        ],
        [
            claim_pod(f"test-dra-{i}", ns[1], scheduler, run_id, ROLE_MEASURE)
            for i in range(size.measure_pods)
        ],
        ns,
        objects=objects,
        claim_checks=[check_claims],
    )


# ------------------------------------------------------------------- checks


def claim_state(claim: Mapping[str, Any]) -> ClaimState:
    """A ResourceClaim in API shape (as listed, or kubesched's struct through
    msgspec.to_builtins) reduced to what the checks look at."""
    meta = claim.get("metadata", {})
    owner = next(
        (
            ref.get("name", "")
            for ref in meta.get("ownerReferences", ())
            if ref.get("controller") and ref.get("kind") == "Pod"
        ),
        "",
    )
    status = claim.get("status") or {}
    allocation = status.get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results", ())
    return ClaimState(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        owner=owner,
        devices=[(r.get("driver", ""), r.get("pool", ""), r.get("device", "")) for r in results],
        reserved_for=[ref.get("name", "") for ref in status.get("reservedFor", ())],
    )


def check_claims(plan: Plan, pods: Sequence[PodState], claims: Sequence[ClaimState]) -> list[str]:
    """Every bound pod of the run has its own claim, allocated one device of its
    node's pool and reserved for it; no device is allocated twice."""
    problems: list[str] = []
    by_owner = {(c.namespace, c.owner): c for c in claims if c.owner}
    wrong: list[str] = []
    for pod in pods:
        if not pod.node_name or pod.role not in (ROLE_INIT, ROLE_MEASURE):
            continue
        claim = by_owner.get((pod.namespace, pod.name))
        if (
            claim is None
            or len(claim.devices) != 1
            or claim.devices[0][1] != pod.node_name
            or pod.name not in claim.reserved_for
        ):
            wrong.append(pod.key)
    if wrong:
        problems.append(
            f"{len(wrong)} bound pods without a claim allocated on their node and "
            f"reserved for them (e.g. {wrong[0]})"
        )
    taken = collections.Counter(d for c in claims for d in c.devices)
    twice = [d for d, n in taken.items() if n > 1]
    if twice:
        problems.append(f"{len(twice)} devices allocated more than once (e.g. {twice[0]})")
    return problems
