"""kubesched in-process on a run's state: score_step re-runs kubesched's framework
for one pod on the nodes and bound pods before a step (feasible nodes, score
totals, or the FailedScheduling message and whom preemption may nominate), with
the namespace objects the run made; simulate runs kubesched's simulator on a
whole scenario without a cluster."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import msgspec

# Which kubesched these are is settled before the interpreter starts (make diff's
# KUBESCHED_SRC goes into PYTHONPATH), so they need not wait until first use.
from kubesched.api.objects import LabelSelector, PersistentVolume, PersistentVolumeClaim
from kubesched.api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from kubesched.api.workloads import ReplicaSet, ReplicationController, Service, StatefulSet
from kubesched.cluster.manifests import load_documents
from kubesched.config.file import parse_config
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extender import ExtenderError
from kubesched.framework.handle import Listers
from kubesched.framework.state.dra import DraState
from kubesched.framework.state.storage import StorageState
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo, QueuedPodInfo
from kubesched.kube.workload_selectors import WorkloadSelectors
from kubesched.kube.workload_selectors import _keep as keep_selector
from kubesched.plugins.defaultpreemption.candidates import pick_one_node_for_preemption
from kubesched.plugins.defaultpreemption.plugin import DefaultPreemption
from kubesched.scheduler import Scheduler
from kubesched.scheduler.extender import build_extenders
from kubesched.scheduler.schedule_one import FitError, as_new_nodes
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import simulate as run_simulation
from tests.differential import generator as gen
from tests.differential.harness.records import (
    SCHEDULER_NAME,
    HarnessError,
    Prediction,
    normalise_claim_names,
)


# --------------------------------------------------------------------- in-process scores
def score_step(
    scenario: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    bound: Sequence[Mapping[str, Any]],
    pod: Mapping[str, Any],
    logical: Mapping[str, str],
    namespace_state: Sequence[Mapping[str, Any]] = (),
    dra_objects: Sequence[Mapping[str, Any]] = (),
    extender_urls: Sequence[str] = (),
) -> Prediction:
    """Run kubesched's framework for POD on NODES with the BOUND pods (API objects)
    exactly as Scheduler.schedule_pod does, and return the score totals; when no
    node fits, the FailedScheduling message with PostFilter's (preemption's) part,
    as Scheduler.schedule_one writes it (nothing is evicted). NAMESPACE_STATE: the
    run's Namespace, PDBs, PVs and PVCs as the API server had them (Run.objects),
    with its Services, ReplicationControllers, ReplicaSets and StatefulSets (whose
    selectors go to Listers.workload_selectors, as `kubesched run`'s informers keep
    them, not to the manifest loader, which would expand the controllers into pods)
    and the RuntimeClasses (the pods already carry what admission took from them).
    DRA_OBJECTS: the DeviceClasses, ResourceSlices, templates and claims (as they
    were before the step) the DynamicResources plugin reads through Listers.dra.
    EXTENDER_URLS: where the run's extenders are served (Run.extender_urls); they
    are called as the run called them."""
    docs: list[tuple[str, int, object]] = []
    selecting = [o for o in namespace_state if o.get("kind") in _SELECTING_TYPES]
    objects: list[Mapping[str, Any]] = [
        *gen.priority_class_manifests(),
        *(o for o in namespace_state if o.get("kind") not in _SELECTING_TYPES),
        *({"apiVersion": "v1", "kind": "Node", **n} for n in nodes),
        *({"apiVersion": "v1", "kind": "Pod", **p} for p in bound),
        {"apiVersion": "v1", "kind": "Pod", **pod},
    ]
    for i, obj in enumerate(objects):
        docs.append(("harness", i + 1, _plain(obj)))
    state = load_documents(docs)
    if state.problems:
        raise HarnessError("in-process state: " + "; ".join(map(str, state.problems)))
    config = parse_config(gen.scheduler_config(scenario, SCHEDULER_NAME, "", extender_urls))
    cluster = InMemoryCluster()
    name = pod["metadata"]["name"]
    pending = None
    for n in state.nodes:
        cluster.nodes[n.metadata.name] = n
    for p in state.pods:
        if p.spec.node_name:
            cluster.pods[f"{p.metadata.namespace}/{p.metadata.name}"] = p
        elif p.metadata.name == name:
            pending = p
    if pending is None:
        raise HarnessError(f"in-process state: pod {name} not loaded")
    # As the simulator builds it. Not state.storage: the manifest loader plays the PV
    # controller (and completes the bindings) itself; these are the real binder's.
    listers = Listers(
        storage=_storage(namespace_state),
        pdbs=list(state.pdbs),
        namespaces=dict(state.namespaces),
        dra=dra_state(dra_objects),
        workload_selectors=workload_selectors(selecting),
    )
    extenders = build_extenders(config.extenders)
    try:
        sched = Scheduler(config.profiles, cluster, seed=0, listers=listers, extenders=extenders)
        return _predict(sched, cluster, pending, logical)
    finally:
        for extender in extenders:
            extender.close()


def _predict(
    sched: Scheduler, cluster: InMemoryCluster, pending: Any, logical: Mapping[str, str]
) -> Prediction:
    """score_step's part once the scheduler is built: PENDING's attempt."""
    fw = sched.frameworks[SCHEDULER_NAME]
    # Preemption's evictions (if it finds victims) must not happen: drop them.
    fw.handle.spawn = lambda coro: coro.close()
    cluster.watch(sched)
    cycle = CycleState()
    info = PodInfo(pending)
    try:
        feasible, diagnosis, _, _ = sched.find_nodes_that_fit(fw, cycle, info)
    except ExtenderError as exc:
        # A failing extender (not ignorable): the attempt is a SchedulerError.
        return Prediction([], {}, [], str(exc), error=True)
    table = sched.table
    names = [logical.get(table.names[int(r)], table.names[int(r)]) for r in feasible]
    if len(feasible) == 0:
        # What Scheduler.schedule_one does with the FitError: PostFilter, then the message.
        fit = FitError(info, len(table), diagnosis)
        nominated = sched._post_filter(fw, cycle, QueuedPodInfo(info, timestamp=0.0), fit)
        # The run's messages name the claims made from templates without their random
        # suffix (runner._normalise); so must the prediction.
        prediction = Prediction([], {}, [], normalise_claim_names(str(fit)))
        if nominated:
            prediction.preemption, prediction.victims = _preemption_choices(
                fw, cycle, info, diagnosis, logical
            )
        return prediction
    if len(feasible) == 1:
        return Prediction(names, {names[0]: 0}, names)
    # As Scheduler.prioritize_nodes scores: nodes an extender answered whole are
    # scored as new NodeInfos (no pods, no images), as upstream's extender.go makes them.
    with as_new_nodes(table, feasible) if sched.extender_new_nodes else nullcontext():
        fw.run_pre_score(cycle, info, table, feasible)
        totals, plugin_scores = fw.run_score(cycle, info, table, feasible)
    if sched.extenders:
        # As Scheduler.prioritize_nodes adds them (score × weight, on the plugins' scale).
        added = sched.extender_scores(cycle, info, feasible)
        totals = totals + added
        plugin_scores = {**plugin_scores, "extenders": added}
    by_node = {n: int(t) for n, t in zip(names, totals, strict=True)}
    by_plugin = {
        plugin: {n: int(v) for n, v in zip(names, scores, strict=True)}
        for plugin, scores in plugin_scores.items()
    }
    top = max(by_node.values())
    best = sorted(n for n, t in by_node.items() if t == top)
    return Prediction(names, by_node, best, by_plugin=by_plugin)


def _preemption_choices(
    fw: Any, cycle: Any, info: Any, diagnosis: Any, logical: Mapping[str, str]
) -> tuple[list[str], dict[str, list[str]]]:
    """Every node DefaultPreemption may nominate for INFO: its dry run over all
    potential nodes (kube-scheduler's candidate count is every node below 100
    nodes; only the random offset, i.e. the order, is left to chance), then the
    candidates pickOneNodeForPreemption leaves tied (its last tie-break is the
    first candidate: a candidate is among the tied ones iff it wins when put first)."""
    plugin = next((p for p in fw.post_filter if isinstance(p, DefaultPreemption)), None)
    if plugin is None:
        return [], {}
    potential = plugin.evaluator.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
    candidates, _ = plugin.evaluator.dry_run_preemption(
        cycle, info, potential, plugin.handle.pdbs, 0, len(potential)
    )
    # The extenders that preempt narrow the candidates before one is picked.
    candidates, status = plugin.evaluator.call_extenders(info, candidates)
    if not status.is_success():
        return [], {}
    tied = [
        c
        for c in candidates
        if pick_one_node_for_preemption([c, *(o for o in candidates if o is not c)]) is c
    ]
    victims = {logical.get(c.name, c.name): [v.pod.metadata.name for v in c.victims] for c in tied}
    return sorted(victims), victims


def namespace_objects(scenario: Mapping[str, Any], ns: str) -> list[dict[str, Any]]:
    """The PDBs, PVs and PVCs Harness._create_namespace_objects creates for a run in
    NS, as it posts them: their statuses (and the PV/PVC binding) are left to
    kube-controller-manager's disruption controller and PV binder."""
    out: list[dict[str, Any]] = [gen.pdb_manifest(pdb, ns) for pdb in scenario.get("pdbs", [])]
    volumes = scenario.get("volumes")
    if volumes:
        pvs, pvcs = gen.volume_manifests(volumes, ns, ns)
        out += [*pvs, *pvcs]
    return out


def _storage(objects: Sequence[Mapping[str, Any]]) -> Any:
    """A StorageState with the run's PVs and PVCs exactly as the API server has them."""
    storage = StorageState()
    for obj in objects:
        raw = json.dumps(_plain(obj)).encode()
        if obj["kind"] == "PersistentVolume":
            storage.upsert_pv(msgspec.json.decode(raw, type=PersistentVolume))
        elif obj["kind"] == "PersistentVolumeClaim":
            storage.upsert_pvc(msgspec.json.decode(raw, type=PersistentVolumeClaim))
    return storage


_SELECTING_TYPES: dict[str, type] = {
    "Service": Service,
    "ReplicationController": ReplicationController,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
}


def workload_selectors(objects: Sequence[Mapping[str, Any]]) -> WorkloadSelectors:
    """(namespace, kind, name) -> selector of the Services, ReplicationControllers,
    ReplicaSets and StatefulSets among OBJECTS (API objects), as `kubesched run`'s
    informers keep them (kube/workload_selectors.py); empty, not None, without any:
    the run knows there are none."""
    store: dict[tuple[str, str, str], LabelSelector] = {}
    for obj in objects:
        kind = obj.get("kind", "")
        if kind in _SELECTING_TYPES:
            raw = json.dumps(_plain(obj)).encode()
            keep_selector(store, msgspec.json.decode(raw, type=_SELECTING_TYPES[kind]))
    return store


_DRA_TYPES: dict[str, type] = {
    "DeviceClass": DeviceClass,
    "ResourceSlice": ResourceSlice,
    "ResourceClaimTemplate": ResourceClaimTemplate,
    "ResourceClaim": ResourceClaim,
}


def dra_state(objects: Sequence[Mapping[str, Any]]) -> DraState:
    """A DraState holding OBJECTS (API objects of the four DRA kinds), as kubesched's
    informers would fill it."""
    state = DraState()
    for obj in objects:
        kind = obj.get("kind", "")
        if kind not in _DRA_TYPES:
            raise HarnessError(f"in-process state: not a DRA object: {kind!r}")
        decoded = msgspec.json.decode(json.dumps(_plain(obj)).encode(), type=_DRA_TYPES[kind])
        if isinstance(decoded, DeviceClass):
            state.upsert_class(decoded)
        elif isinstance(decoded, ResourceSlice):
            state.upsert_slice(decoded)
        elif isinstance(decoded, ResourceClaimTemplate):
            state.upsert_template(decoded)
        else:
            state.upsert_claim(decoded)
    return state


def _plain(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Drop bookkeeping the manifest loader need not see."""
    out = copy.deepcopy(dict(obj))
    meta = out.get("metadata", {})
    meta.pop("managedFields", None)
    return out


def simulate(scenario: Mapping[str, Any], seed: int = 1) -> Any:
    """kubesched's simulator on the scenario's objects (logical node names), as
    `kubesched simulate` would run it: a quick look without a cluster. The
    workloads feature's objects are in the manifests (pods name their controllers
    with a placeholder uid); what the simulator makes of them is the manifest
    loader's (Services, ReplicationControllers and RuntimeClasses: see
    kubesched.cluster)."""
    names = {n["name"]: n["name"] for n in scenario["nodes"]}
    workloads = scenario.get("workloads")
    objects: list[Mapping[str, Any]] = [
        *gen.priority_class_manifests(),
        *gen.runtime_class_manifests(workloads, ""),
        *(gen.node_manifest(n, n["name"]) for n in scenario["nodes"]),
        # No StatefulSets: the loader would make their pods `<name>-<ordinal>`, and the
        # scenario's are p00, p01, ... (ReplicaSets and ReplicationControllers count
        # the pods they own, as many as their replicas).
        *(m for m in gen.workload_manifests(workloads, "default") if m["kind"] != "StatefulSet"),
        *(gen.pod_manifest(p, "default", SCHEDULER_NAME, names) for p in scenario["pods"]),
    ]
    state = load_documents([("scenario", i + 1, dict(o)) for i, o in enumerate(objects)])
    if state.problems:
        raise HarnessError("; ".join(map(str, state.problems)))
    config = parse_config(gen.scheduler_config(scenario, SCHEDULER_NAME))
    return run_simulation(state.nodes, state.pods, config.profiles, seed=seed)
