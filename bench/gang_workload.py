"""GangScheduling: PodGroups of the Workload API (scheduling.k8s.io/v1alpha2)
among single pods, on nodes with 8 GPUs, with more GPUs asked than exist.

scheduler_perf v1.36.3 has no gang case; this one has the shape of
``make bench-gangs`` (bench/gangs.py, Coscheduling in process), here for both
schedulers end to end with GenericWorkload and GangScheduling on:

* ``size.nodes`` nodes as templates/node-default.yaml plus ``nvidia.com/gpu: 8``
  (an extended resource: NodeResourcesFit counts it in both schedulers, no DRA
  needed), and ``size.plain_nodes`` without GPUs;
* one Workload ``training`` per run with the pod group template ``worker``
  (gang, minCount 8), and ``size.gangs`` PodGroups made from it (as a controller
  would: the template's policy copied, the template referenced);
* each gang's 8 pods (pod-default.yaml plus one GPU, ``spec.schedulingGroup``
  naming their PodGroup), then single pods up to ``size.measure_pods``, spread
  evenly between the gangs; one single in four asks for a GPU, as many as a
  multiple of 8.

The GPUs asked (8 per gang plus the singles') exceed those that exist, so some
gangs must be refused whole. What binds then depends on the order the pods are
decided in, but not how many: the GPU pods refused leave fewer than 8 GPUs free
(else a refused gang would fit), and every amount asked is a multiple of 8, so a
correct scheduler binds every GPU and every single pod without one
(``Plan.bindable``). The run waits for that many; a gang bound in part breaks the
run (``Plan.invariants``: status error), and the ``gangs`` tally counts the
gangs bound whole, in part and not at all.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence

from bench.workloads import (
    ROLE_LABEL,
    ROLE_MEASURE,
    RUN_LABEL,
    Manifest,
    Plan,
    PodState,
    Size,
    make_node,
    make_pod,
)

API_VERSION = "scheduling.k8s.io/v1alpha2"
GPU = "nvidia.com/gpu"
GPUS_PER_NODE = 8
GANG_SIZE = 8  # pods per gang, and its minCount
WORKLOAD_NAME = "training"
TEMPLATE_NAME = "worker"
# The PodGroup a measured pod belongs to (none: a single pod).
GANG_LABEL = "bench.kubesched.io/gang"
# One single pod in this many asks for a GPU.
GPU_SINGLE_EVERY = 4


def _policy() -> Manifest:
    return {"gang": {"minCount": GANG_SIZE}}


def workload_object(run_id: str, namespace: str) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": "Workload",
        "metadata": {"name": WORKLOAD_NAME, "namespace": namespace, "labels": {RUN_LABEL: run_id}},
        "spec": {"podGroupTemplates": [{"name": TEMPLATE_NAME, "schedulingPolicy": _policy()}]},
    }


def pod_group(name: str, run_id: str, namespace: str) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": {RUN_LABEL: run_id}},
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": WORKLOAD_NAME, "podGroupTemplateName": TEMPLATE_NAME}
            },
            "schedulingPolicy": _policy(),
        },
    }


def gpu_node(name: str, run_id: str) -> Manifest:
    node = make_node(name, run_id)
    for amounts in (node["status"]["capacity"], node["status"]["allocatable"]):
        amounts[GPU] = str(GPUS_PER_NODE)
    return node


def _pod(name: str, ns: str, scheduler: str, run_id: str, gpu: bool, group: str = "") -> Manifest:
    labels = {GANG_LABEL: group} if group else None
    pod = make_pod(name, ns, scheduler, run_id, ROLE_MEASURE, labels=labels)
    if group:
        pod["spec"]["schedulingGroup"] = {"podGroupName": group}
    if gpu:
        resources = pod["spec"]["containers"][0]["resources"]
        resources["requests"][GPU] = resources["limits"][GPU] = "1"
    return pod


def gpu_singles(singles: int) -> int:
    """How many of SINGLES single pods ask for a GPU: one in GPU_SINGLE_EVERY, down
    to a multiple of 8 (see the module's docstring)."""
    return singles // GPU_SINGLE_EVERY // GANG_SIZE * GANG_SIZE


def _asks_gpu(single: int, with_gpu: int) -> bool:
    return single % GPU_SINGLE_EVERY == 0 and single // GPU_SINGLE_EVERY < with_gpu


def build(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    namespace = ns[0]
    singles = size.measure_pods - GANG_SIZE * size.gangs
    if singles < 0:
        raise ValueError(f"{size.gangs} gangs of {GANG_SIZE} exceed {size.measure_pods} pods")
    with_gpu = gpu_singles(singles)
    nodes = [gpu_node(f"{run_id}-gpu-node-{i}", run_id) for i in range(size.nodes)]
    nodes += [make_node(f"{run_id}-node-{i}", run_id) for i in range(size.plain_nodes)]
    groups = [f"gang-{g}" for g in range(size.gangs)]
    gang_pods = [
        _pod(f"{group}-{i}", namespace, scheduler, run_id, True, group)
        for group in groups
        for i in range(GANG_SIZE)
    ]
    single_pods = [
        _pod(f"single-{j}", namespace, scheduler, run_id, _asks_gpu(j, with_gpu))
        for j in range(singles)
    ]
    # Each gang's pods together, the singles spread evenly after them.
    per_gang = singles // max(1, size.gangs)
    measure: list[Manifest] = []
    for g in range(size.gangs):
        measure += gang_pods[g * GANG_SIZE : (g + 1) * GANG_SIZE]
        measure += single_pods[g * per_gang : (g + 1) * per_gang]
    measure += single_pods[size.gangs * per_gang :]
    gpus = GPUS_PER_NODE * size.nodes
    asked = GANG_SIZE * size.gangs + with_gpu
    return Plan(
        nodes,
        [],
        measure,
        ns,
        objects=[
            workload_object(run_id, namespace),
            *(pod_group(g, run_id, namespace) for g in groups),
        ],
        # Every GPU, and every single pod without one (the module's docstring).
        bindable=gpus + singles - with_gpu if asked > gpus else None,
        invariants=[no_gang_in_part],
        tallies={"gangs": count_gangs},
    )


def _bound_by_gang(plan: Plan, pods: Sequence[PodState]) -> dict[str, int]:
    """PodGroup key -> its pods bound, for every PodGroup of PLAN."""
    bound = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": 0
        for o in plan.objects
        if o["kind"] == "PodGroup"
    }
    for pod in pods:
        key = f"{pod.namespace}/{pod.labels.get(GANG_LABEL, '')}"
        if pod.node_name and key in bound:
            bound[key] += 1
    return bound


def no_gang_in_part(plan: Plan, pods: Sequence[PodState]) -> list[str]:
    """A gang bound in part (some pods but fewer than minCount): what gang
    scheduling exists to prevent."""
    part = {k: n for k, n in _bound_by_gang(plan, pods).items() if 0 < n < GANG_SIZE}
    if not part:
        return []
    key, n = next(iter(part.items()))
    return [f"{len(part)} gangs bound in part (e.g. {key}: {n}/{GANG_SIZE} pods bound)"]


def count_gangs(plan: Plan, pods: Sequence[PodState]) -> dict[str, int]:
    """Gangs bound whole, in part and not at all; measured pods bound, in gangs and
    single (with a GPU or not)."""
    by_gang = _bound_by_gang(plan, pods)
    bound = [p for p in pods if p.node_name and p.labels.get(ROLE_LABEL) == ROLE_MEASURE]
    gpu = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in plan.measure_pods
        if GPU in p["spec"]["containers"][0]["resources"]["requests"]
    }
    kinds = collections.Counter(
        "gang" if GANG_LABEL in p.labels else "gpu_single" if p.key in gpu else "single"
        for p in bound
    )
    return {
        "gangs": len(by_gang),
        "whole": sum(1 for n in by_gang.values() if n >= GANG_SIZE),
        "in_part": sum(1 for n in by_gang.values() if 0 < n < GANG_SIZE),
        "refused": sum(1 for n in by_gang.values() if n == 0),
        "pods_bound": len(bound),
        "gang_pods_bound": kinds["gang"],
        "gpu_single_pods_bound": kinds["gpu_single"],
        "single_pods_bound": kinds["single"],
    }
