"""The benchmark workloads, modelled on kube-scheduler's scheduler_perf (v1.36.3).

Each workload turns a :class:`Size` into a :class:`Plan`: Node and Pod
manifests in API shape (the same dicts are POSTed to a real apiserver and
converted for the in-process simulator), an optional churn, and a check of the
final placements. Shapes follow test/integration/scheduler_perf (misc/,
affinity/, topology_spreading/ performance-config.yaml and templates/):

* nodes as templates/node-default.yaml: 4 CPU, 32Gi, 110 pods;
* pods as templates/pod-default.yaml: pause, 100m CPU / 500Mi requests = limits.

The names of the sizes: ``tiny`` (scheduler_perf's integration-test sizes, for
CI), ``small`` (the default: every workload in a few minutes on 2 cores),
``500`` and ``5000`` (scheduler_perf's 500Nodes / 5000Nodes cases), and ``15000``
(SchedulingBasic only: SchedulingDaemonset 15000Nodes' 15,000 nodes and 30,000 pods).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.quantity import resource_amount

Manifest = dict[str, Any]

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
RUN_LABEL = "bench.kubesched.io/run"
ROLE_LABEL = "bench.kubesched.io/role"
# Pods the scheduler places before the measurement (scheduler_perf's initPods).
ROLE_INIT = "init"
# Pods whose scheduling is measured (measurePods, collectMetrics: true).
ROLE_MEASURE = "measure"
# Pods that cannot fit anywhere, created among the measured ones; must stay pending.
ROLE_UNSCHEDULABLE = "unschedulable"
# Nodes and pods created and deleted while the measured pods are scheduled.
ROLE_CHURN = "churn"

PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"
HIGH_PRIORITY_CLASS = "bench-high-priority"
HIGH_PRIORITY = 10  # templates/pod-high-priority.yaml: priority 10
PRIORITY_CLASS: Manifest = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": HIGH_PRIORITY_CLASS},
    "value": HIGH_PRIORITY,
    "description": "kubesched benchmarks: scheduler_perf's high-priority pods",
}

# Default-profile score weights (apis/config/v1 getDefaultPlugins) of the plugins
# a workload names explicitly: naming a plugin in multiPoint without its weight
# would change kube-scheduler's weight from the default to 1.
DEFAULT_WEIGHTS = {"PodTopologySpread": 2, "InterPodAffinity": 2, "DynamicResources": 2}


@dataclass(frozen=True)
class Size:
    nodes: int
    init_pods: int
    measure_pods: int
    unschedulable_pods: int = 0
    # DRA workloads: nodes without devices besides the `nodes` with them, and the
    # devices in each of those nodes' ResourceSlice (scheduler_perf's
    # nodesWithoutDRA and maxClaimsPerNode).
    plain_nodes: int = 0
    devices_per_node: int = 0
    # Gang workloads: the PodGroups among the measured pods (bench.gang_workload).
    gangs: int = 0

    def as_dict(self) -> dict[str, int]:
        out = {
            "nodes": self.nodes,
            "init_pods": self.init_pods,
            "measure_pods": self.measure_pods,
            "unschedulable_pods": self.unschedulable_pods,
        }
        # Only when set, so that the other workloads' params stay as they were.
        if self.plain_nodes:
            out["plain_nodes"] = self.plain_nodes
        if self.devices_per_node:
            out["devices_per_node"] = self.devices_per_node
        if self.gangs:
            out["gangs"] = self.gangs
        return out


@dataclass(frozen=True)
class Churn:
    """scheduler_perf's churn opcode, mode "recreate", number 1: every interval one
    Node that takes no pods and one high-priority pod that fits nowhere are
    created and the previous pair deleted. ``every_decisions`` is the in-process
    interval (the simulator has no wall clock worth using)."""

    interval_seconds: float = 0.25
    every_decisions: int = 32

    def node(self, run_id: str, index: int) -> Manifest:
        name = f"{run_id}-churn-node-{index}"
        resources = {"pods": "0"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {HOSTNAME_LABEL: name, RUN_LABEL: run_id, ROLE_LABEL: ROLE_CHURN},
            },
            "spec": {},
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "phase": "Running",
            },
        }

    def pod(self, run_id: str, namespace: str, scheduler: str, index: int) -> Manifest:
        return make_pod(
            f"churn-{index}",
            namespace,
            scheduler,
            run_id,
            ROLE_CHURN,
            cpu="9",
            limits=False,
            priority_class=HIGH_PRIORITY_CLASS,
        )


@dataclass
class PodState:
    """A pod as found at the end of a run."""

    namespace: str
    name: str
    labels: dict[str, str]
    node_name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def role(self) -> str:
        return self.labels.get(ROLE_LABEL, "")


@dataclass
class ClaimState:
    """A ResourceClaim as found at the end of a run."""

    namespace: str
    name: str
    owner: str  # the pod controlling it (a claim made from a template), or ""
    devices: list[tuple[str, str, str]]  # allocated (driver, pool, device)
    reserved_for: list[str]  # names of the pods reserving it


Check = Callable[["Plan", Sequence[PodState]], list[str]]
Tally = Callable[["Plan", Sequence[PodState]], dict[str, int]]
ClaimCheck = Callable[["Plan", Sequence[PodState], Sequence[ClaimState]], list[str]]


@dataclass
class Plan:
    """What one run of a workload creates, in creation order."""

    nodes: list[Manifest]
    init_pods: list[Manifest]
    # Measured pods, with the unschedulable ones interleaved in creation order.
    measure_pods: list[Manifest]
    namespaces: list[str]
    churn: Churn | None = None
    checks: list[Check] = field(default_factory=list)
    # API objects created after the nodes and before any pod, in this order
    # (DeviceClasses, ResourceSlices, ResourceClaimTemplates); a run names them
    # after its run id where they are cluster-scoped, and deletes them at its end.
    objects: list[Manifest] = field(default_factory=list)
    # Checks of the ResourceClaims at the end of the run (the runner reads them
    # back when there are any).
    claim_checks: list[ClaimCheck] = field(default_factory=list)
    # How many measured pods a correct scheduler binds when not all of them can
    # be (gangs refused whole); None: every one. The runs wait for that many.
    bindable: int | None = None
    # Checks whose failure voids the run (status error; violations too): a gang bound in part.
    invariants: list[Check] = field(default_factory=list)
    # Figures of the final placements, by the result key they go under.
    tallies: dict[str, Tally] = field(default_factory=dict)

    @property
    def measured(self) -> int:
        """The measured pods the run waits for: `bindable`, or all of them."""
        return (
            self.bindable
            if self.bindable is not None
            else sum(1 for p in self.measure_pods if _role(p) == ROLE_MEASURE)
        )

    def broken(self, pods: Sequence[PodState]) -> list[str]:
        """The invariants' problems with the final placements."""
        return [problem for check in self.invariants for problem in check(self, pods)]

    def tally(self, pods: Sequence[PodState]) -> dict[str, dict[str, int]]:
        return {key: count(self, pods) for key, count in self.tallies.items()}

    def node_labels(self) -> dict[str, dict[str, str]]:
        return {n["metadata"]["name"]: n["metadata"]["labels"] for n in self.nodes}

    def requests(self) -> dict[str, collections.Counter[str]]:
        """pod key -> the amounts it requests (milli-CPU, bytes, units), "pods" 1."""
        out: dict[str, collections.Counter[str]] = {}
        for pod in (*self.init_pods, *self.measure_pods):
            meta = pod["metadata"]
            amounts = collections.Counter({"pods": 1})
            for c in pod["spec"]["containers"]:
                for resource, quantity in c.get("resources", {}).get("requests", {}).items():
                    amounts[resource] += resource_amount(resource, quantity)
            out[f"{meta['namespace']}/{meta['name']}"] = amounts
        return out

    def verify(
        self, pods: Sequence[PodState], claims: Sequence[ClaimState] | None = None
    ) -> list[str]:
        """Problems with the final placements: measured pods left unbound, pods
        that should not fit but were bound, overcommitted nodes, the workload's
        own constraint (spread, anti-affinity, node affinity), and its claims'
        allocations (CLAIMS: the run's ResourceClaims, when the workload has any)."""
        problems: list[str] = []
        by_role = collections.Counter(p.role for p in pods if p.node_name)
        measured = self.measured
        if by_role[ROLE_MEASURE] != measured:
            problems.append(f"{by_role[ROLE_MEASURE]}/{measured} measured pods bound")
        if by_role[ROLE_UNSCHEDULABLE]:
            problems.append(f"{by_role[ROLE_UNSCHEDULABLE]} pods that fit nowhere were bound")
        problems.extend(_overcommit(self, pods))
        for check in (*self.checks, *self.invariants):
            problems.extend(check(self, pods))
        if self.claim_checks:
            if claims is None:
                problems.append("the ResourceClaims were not read back")
            else:
                for claim_check in self.claim_checks:
                    problems.extend(claim_check(self, pods, claims))
        return problems


def _role(pod: Manifest) -> str:
    return str(pod["metadata"].get("labels", {}).get(ROLE_LABEL, ""))


def make_node(
    name: str,
    run_id: str,
    labels: Mapping[str, str] | None = None,
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
) -> Manifest:
    """templates/node-default.yaml, with allocatable = capacity (no kubelet here)."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {HOSTNAME_LABEL: name, RUN_LABEL: run_id, **(labels or {})},
        },
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "phase": "Running",
        },
    }


def make_pod(
    name: str,
    namespace: str,
    scheduler: str,
    run_id: str,
    role: str,
    *,
    cpu: str = "100m",
    memory: str = "500Mi",
    limits: bool = True,
    labels: Mapping[str, str] | None = None,
    priority_class: str | None = None,
    **spec: Any,
) -> Manifest:
    """templates/pod-default.yaml with the given requests (and limits = requests)."""
    requests = {"cpu": cpu, "memory": memory}
    resources: dict[str, Any] = {"requests": requests}
    if limits:
        resources["limits"] = dict(requests)
    pod_spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {
                "name": "pause",
                "image": PAUSE_IMAGE,
                "ports": [{"containerPort": 80}],
                "resources": resources,
            }
        ],
        **spec,
    }
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {RUN_LABEL: run_id, ROLE_LABEL: role, **(labels or {})},
        },
        "spec": pod_spec,
    }


# ------------------------------------------------------------------- checks


def _overcommit(plan: Plan, pods: Sequence[PodState]) -> list[str]:
    """Nodes whose pods request more of a resource (pods, CPU, memory, GPUs, ...)
    than the node has allocatable."""
    allocatable = {
        n["metadata"]["name"]: {
            resource: resource_amount(resource, quantity)
            for resource, quantity in n["status"]["allocatable"].items()
        }
        for n in plan.nodes
    }
    requests = plan.requests()
    used: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for pod in pods:
        if pod.node_name and pod.key in requests:
            used[pod.node_name].update(requests[pod.key])
    over = [
        name
        for name, amounts in used.items()
        if name in allocatable
        and any(amount > allocatable[name].get(r, 0) for r, amount in amounts.items())
    ]
    return [f"{len(over)} nodes overcommitted (e.g. {over[0]})"] if over else []


def _spread_check(max_skew: int, selector: Mapping[str, str]) -> Check:
    def check(plan: Plan, pods: Sequence[PodState]) -> list[str]:
        zones = plan.node_labels()
        counts = {z[ZONE_LABEL]: 0 for z in zones.values() if ZONE_LABEL in z}
        for pod in pods:
            if pod.node_name in zones and all(pod.labels.get(k) == v for k, v in selector.items()):
                counts[zones[pod.node_name][ZONE_LABEL]] += 1
        if counts and max(counts.values()) - min(counts.values()) > max_skew:
            return [f"topology spread skew {dict(sorted(counts.items()))} exceeds {max_skew}"]
        return []

    return check


def _anti_affinity_check(selector: Mapping[str, str]) -> Check:
    def check(plan: Plan, pods: Sequence[PodState]) -> list[str]:
        per_node = collections.Counter(
            p.node_name
            for p in pods
            if p.node_name and all(p.labels.get(k) == v for k, v in selector.items())
        )
        crowded = [n for n, c in per_node.items() if c > 1]
        if crowded:
            return [f"{len(crowded)} nodes run more than one anti-affine pod"]
        return []

    return check


def _node_affinity_check(zones: Sequence[str]) -> Check:
    def check(plan: Plan, pods: Sequence[PodState]) -> list[str]:
        labels = plan.node_labels()
        wrong = [
            p.key
            for p in pods
            if p.role == ROLE_MEASURE
            and p.node_name
            and labels.get(p.node_name, {}).get(ZONE_LABEL) not in zones
        ]
        return [f"{len(wrong)} pods placed outside zones {list(zones)}"] if wrong else []

    return check


# ------------------------------------------------------------------- workloads


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    sizes: Mapping[str, Size]
    build: Callable[[Size, str, str, list[str]], Plan]
    namespaces: int = 1
    # Plugins the workload needs: named in the profile's multiPoint so that a
    # scheduler without them refuses the configuration rather than ignore them.
    required_plugins: tuple[str, ...] = ()
    churn: Churn | None = None
    upstream: str = ""
    # kube-controller-manager controllers the end-to-end run needs beside the
    # control plane (e.g. resourceclaim-controller to make template claims).
    controllers: tuple[str, ...] = ()
    # Both schedulers' --feature-gates; whether the control plane must serve the alpha
    # Workload API (hack/cluster-up.sh's KUBESCHED_WORKLOAD_API=1).
    feature_gates: str = ""
    workload_api: bool = False

    def plan(self, size: Size, scheduler: str, run_id: str, namespaces: list[str]) -> Plan:
        if len(namespaces) != self.namespaces:
            raise ValueError(f"{self.name} needs {self.namespaces} namespaces")
        plan = self.build(size, scheduler, run_id, namespaces)
        plan.churn = self.churn
        return plan

    def size(self, name: str) -> Size:
        try:
            return self.sizes[name]
        except KeyError:
            raise ValueError(
                f"{self.name}: unknown size {name!r} (known: {', '.join(self.sizes)})"
            ) from None


def _nodes(count: int, run_id: str, zones: Sequence[str] = ()) -> list[Manifest]:
    """createNodes with labelNodePrepareStrategy: zone values round robin."""
    return [
        make_node(
            f"{run_id}-node-{i}",
            run_id,
            {ZONE_LABEL: zones[i % len(zones)]} if zones else None,
        )
        for i in range(count)
    ]


def _basic(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    return Plan(
        _nodes(size.nodes, run_id),
        [make_pod(f"init-{i}", ns[0], scheduler, run_id, ROLE_INIT) for i in range(size.init_pods)],
        [
            make_pod(f"pod-{i}", ns[0], scheduler, run_id, ROLE_MEASURE)
            for i in range(size.measure_pods)
        ],
        ns,
    )


_AFFINITY_ZONES = ("zone1", "zone2")


def _node_affinity(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": ZONE_LABEL, "operator": "In", "values": list(_AFFINITY_ZONES)}
                        ]
                    }
                ]
            }
        }
    }

    def pod(name: str, role: str) -> Manifest:
        return make_pod(name, ns[0], scheduler, run_id, role, affinity=affinity)

    return Plan(
        _nodes(size.nodes, run_id, ["zone1"]),
        [pod(f"init-{i}", ROLE_INIT) for i in range(size.init_pods)],
        [pod(f"pod-{i}", ROLE_MEASURE) for i in range(size.measure_pods)],
        ns,
        checks=[_node_affinity_check(_AFFINITY_ZONES)],
    )


_SPREAD_SELECTOR = {"color": "blue"}
_SPREAD_MAX_SKEW = 5


def _topology_spreading(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    constraint = {
        "maxSkew": _SPREAD_MAX_SKEW,
        "topologyKey": ZONE_LABEL,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": dict(_SPREAD_SELECTOR)},
    }
    return Plan(
        _nodes(size.nodes, run_id, ["moon-1", "moon-2", "moon-3"]),
        [make_pod(f"init-{i}", ns[0], scheduler, run_id, ROLE_INIT) for i in range(size.init_pods)],
        [
            make_pod(
                f"spreading-pod-{i}",
                ns[0],
                scheduler,
                run_id,
                ROLE_MEASURE,
                labels=_SPREAD_SELECTOR,
                topologySpreadConstraints=[constraint],
            )
            for i in range(size.measure_pods)
        ],
        ns,
        checks=[_spread_check(_SPREAD_MAX_SKEW, _SPREAD_SELECTOR)],
    )


_ANTI_SELECTOR = {"color": "green"}


def _pod_anti_affinity(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": dict(_ANTI_SELECTOR)},
                    "topologyKey": HOSTNAME_LABEL,
                    "namespaces": [ns[1], ns[0]],
                }
            ]
        }
    }

    def pod(name: str, namespace: str, role: str) -> Manifest:
        return make_pod(
            name, namespace, scheduler, run_id, role, labels=_ANTI_SELECTOR, affinity=affinity
        )

    return Plan(
        _nodes(size.nodes, run_id),
        [pod(f"init-{i}", ns[0], ROLE_INIT) for i in range(size.init_pods)],
        [pod(f"anti-affinity-pod-{i}", ns[1], ROLE_MEASURE) for i in range(size.measure_pods)],
        ns,
        checks=[_anti_affinity_check(_ANTI_SELECTOR)],
    )


def _preemption(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    # templates/pod-low-priority.yaml (900m: four fill 3.6 of a node's 4 CPU) and
    # pod-high-priority.yaml (3 CPU, priority 10: three victims per node).
    def preempted(plan: Plan, pods: Sequence[PodState]) -> list[str]:
        left = sum(1 for p in pods if p.role == ROLE_INIT)
        needed = 3 * plan.measured
        victims = len(plan.init_pods) - left
        return [] if victims >= needed else [f"{victims} victims preempted, {needed} needed"]

    return Plan(
        _nodes(size.nodes, run_id),
        [
            make_pod(f"low-{i}", ns[0], scheduler, run_id, ROLE_INIT, cpu="900m")
            for i in range(size.init_pods)
        ],
        [
            make_pod(
                f"high-{i}",
                ns[0],
                scheduler,
                run_id,
                ROLE_MEASURE,
                cpu="3000m",
                priority_class=HIGH_PRIORITY_CLASS,
            )
            for i in range(size.measure_pods)
        ],
        ns,
        checks=[preempted],
    )


def _interleave(measured: list[Manifest], extra: list[Manifest], every: int) -> list[Manifest]:
    """Every `every`-th pod created is one of `extra` (while they last)."""
    out: list[Manifest] = []
    extras = iter(extra)
    for i, pod in enumerate(measured):
        if i % every == every - 1:
            stuck = next(extras, None)
            if stuck is not None:
                out.append(stuck)
        out.append(pod)
    out.extend(extras)
    return out


def _unschedulable(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    # scheduler_perf creates templates/pod-high-priority-large-cpu.yaml (9 CPU,
    # priority 10: fits no 4-CPU node, preemption cannot help) every 200 ms while
    # the measured pods are scheduled; here a fixed number is created among them.
    stuck = [
        make_pod(
            f"large-cpu-{i}",
            ns[0],
            scheduler,
            run_id,
            ROLE_UNSCHEDULABLE,
            cpu="9",
            limits=False,
            priority_class=HIGH_PRIORITY_CLASS,
        )
        for i in range(size.unschedulable_pods)
    ]
    measured = [
        make_pod(f"pod-{i}", ns[0], scheduler, run_id, ROLE_MEASURE)
        for i in range(size.measure_pods)
    ]
    every = max(1, size.measure_pods // max(1, size.unschedulable_pods))
    return Plan(
        _nodes(size.nodes, run_id),
        [make_pod(f"init-{i}", ns[0], scheduler, run_id, ROLE_INIT) for i in range(size.init_pods)],
        _interleave(measured, stuck, every),
        ns,
    )


def _resource_claim_template(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    # Imported here: bench.dra_workload builds on this module's Plan and nodes.
    from bench.dra_workload import build

    return build(size, scheduler, run_id, ns)


def _gang_scheduling(size: Size, scheduler: str, run_id: str, ns: list[str]) -> Plan:
    from bench.gang_workload import build  # builds on this module, as DRA's does

    return build(size, scheduler, run_id, ns)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "SchedulingBasic",
            "default pods on default nodes",
            {
                "tiny": Size(5, 5, 10),
                "small": Size(100, 100, 500),
                "500": Size(500, 500, 1000),
                "5000": Size(5000, 1000, 10000),
                # SchedulingDaemonset 15000Nodes' counts (no init pods), default pods.
                "15000": Size(15000, 0, 30000),
            },
            _basic,
            upstream=(
                "misc/performance-config.yaml SchedulingBasic 500Nodes, 5000Nodes_10000Pods; "
                "15000: SchedulingDaemonset 15000Nodes' counts"
            ),
        ),
        Workload(
            "SchedulingNodeAffinity",
            "required node affinity (zone In [zone1, zone2]); every node in zone1",
            {
                "tiny": Size(5, 5, 10),
                "small": Size(100, 100, 500),
                "500": Size(500, 500, 1000),
                "5000": Size(5000, 5000, 10000),
            },
            _node_affinity,
            upstream="affinity/performance-config.yaml SchedulingNodeAffinity",
        ),
        Workload(
            "TopologySpreading",
            "zone spread, maxSkew 5, DoNotSchedule; 3 zones",
            {
                "tiny": Size(5, 10, 10),
                "small": Size(100, 200, 500),
                "500": Size(500, 1000, 1000),
                "5000": Size(5000, 5000, 5000),
            },
            _topology_spreading,
            required_plugins=("PodTopologySpread",),
            upstream="topology_spreading/performance-config.yaml TopologySpreading",
        ),
        Workload(
            "SchedulingPodAntiAffinity",
            "required pod anti-affinity per hostname across 2 namespaces",
            {
                "tiny": Size(5, 1, 4),
                "small": Size(100, 20, 80),
                "500": Size(500, 100, 400),
                "5000": Size(5000, 1000, 2000),
            },
            _pod_anti_affinity,
            namespaces=2,
            required_plugins=("InterPodAffinity",),
            upstream="affinity/performance-config.yaml SchedulingPodAntiAffinity",
        ),
        Workload(
            "PreemptionBasic",
            "4 low-priority pods (900m) per node, then priority-10 pods of 3 CPU",
            {
                "tiny": Size(5, 20, 5),
                "small": Size(100, 400, 100),
                "500": Size(500, 2000, 500),
                # scheduler_perf's largest enabled case (its 5000-node one is disabled).
                "5000": Size(1000, 4000, 1000),
            },
            _preemption,
            required_plugins=("DefaultPreemption",),
            upstream="misc/performance-config.yaml PreemptionBasic 5Nodes, 1000Nodes",
        ),
        Workload(
            "Unschedulable",
            "default pods with 9-CPU priority-10 pods (fit nowhere) among them, 1 in 10",
            {
                "tiny": Size(5, 1, 10, 2),
                "small": Size(100, 10, 500, 50),
                "500": Size(500, 10, 1000, 100),
                "5000": Size(5000, 100, 10000, 1000),
            },
            _unschedulable,
            upstream="misc/performance-config.yaml Unschedulable",
        ),
        Workload(
            "MixedChurn",
            "default pods while a no-pods node and a 9-CPU pod are recreated every 250 ms",
            {
                "tiny": Size(10, 0, 100),
                "small": Size(100, 0, 500),
                "500": Size(500, 0, 1000),
                "5000": Size(5000, 0, 10000),
            },
            _basic,  # the churn is the Workload's
            churn=Churn(),
            upstream="misc/performance-config.yaml SchedulingWithMixedChurn",
        ),
        Workload(
            "SchedulingWithResourceClaimTemplate",
            "pods claiming one device each through a ResourceClaimTemplate (DRA)",
            {
                "tiny": Size(1, 0, 10, plain_nodes=1, devices_per_node=10),
                "small": Size(100, 1000, 1000, devices_per_node=20),
                "500": Size(500, 2500, 2500, devices_per_node=10),
                "5000": Size(5000, 5000, 10000, devices_per_node=10),
            },
            _resource_claim_template,
            namespaces=2,
            required_plugins=("DynamicResources",),
            controllers=("resourceclaim-controller",),
            upstream=(
                "dra/performance-config.yaml SchedulingWithResourceClaimTemplate: "
                "tiny = fast, small = 2000pods_100nodes, 500 = 5000pods_500nodes; "
                "5000 has no upstream case (5000pods_500nodes' 10 devices per node "
                "on 5,000 nodes, 5,000 init and 10,000 measured pods)"
            ),
        ),
        Workload(
            "GangScheduling",
            "PodGroups (Workload API) of 8 one-GPU pods among single pods; too few GPUs",
            {
                "tiny": Size(2, 0, 48, plain_nodes=1, gangs=2),
                "small": Size(90, 0, 1600, plain_nodes=10, gangs=100),
                "500": Size(225, 0, 4000, plain_nodes=275, gangs=250),
                "5000": Size(800, 0, 10000, plain_nodes=4200, gangs=750),
            },
            _gang_scheduling,
            feature_gates="GenericWorkload=true,GangScheduling=true",
            workload_api=True,
            upstream="none in scheduler_perf v1.36.3; the shape of make bench-gangs",
        ),
    )
}

SIZES = ("tiny", "small", "500", "5000", "15000")


def scheduler_config(
    scheduler_name: str, required_plugins: Sequence[str], kubeconfig: str = ""
) -> dict[str, Any]:
    """The KubeSchedulerConfiguration both schedulers get: one profile, the
    default plugins plus those the workload needs, client QPS/burst 5000 as
    scheduler_perf sets them, no leader election."""
    profile: dict[str, Any] = {"schedulerName": scheduler_name}
    if required_plugins:
        enabled = []
        for name in required_plugins:
            ref: dict[str, Any] = {"name": name}
            if name in DEFAULT_WEIGHTS:
                ref["weight"] = DEFAULT_WEIGHTS[name]
            enabled.append(ref)
        profile["plugins"] = {"multiPoint": {"enabled": enabled}}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig, "qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False},
        "profiles": [profile],
    }
