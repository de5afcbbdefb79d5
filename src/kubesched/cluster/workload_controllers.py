"""The workload controllers: the pods Deployments, ReplicaSets, StatefulSets,
Jobs and DaemonSets create, with the names, labels and ownerReferences the real
controllers give them (ReplicaSetController.manageReplicas with the
Deployment's pod-template-hash from controller.ComputeHash,
newVersionedStatefulSetPod, JobController.manageJob, and the DaemonSet
controller's syncNodes with nodeShouldRunDaemonPod).

Pods already in the input that a workload in the input owns count towards its
replicas. A DaemonSet pod is pinned to its node with required node affinity on
`metadata.name`, as the controller does, and goes through the scheduler; which
nodes it is for is decided with kubesched.api's node affinity and taints.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict

import msgspec

from kubesched.api.node_affinity import required_node_affinity
from kubesched.api.objects import (
    Affinity,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    OwnerReference,
    PersistentVolumeClaimVolumeSource,
    Pod,
    PodSpec,
    Toleration,
    Volume,
)
from kubesched.api.taints import do_not_schedule_taints, find_matching_untolerated_taint
from kubesched.api.workloads import (
    DaemonSet,
    Deployment,
    Job,
    PodTemplateSpec,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
    selector_of,
)
from kubesched.cluster.generated_names import (
    _MAX_GENERATE_NAME_BASE,
    _random_chars,
    _safe_encode,
    _uid,
)
from kubesched.cluster.load_problems import _Origin
from kubesched.cluster.manifest_loader import _Loader, _OwnerKey, _PodItem, _WorkloadItem
from kubesched.cluster.volume_manifests import StatefulSetClaim

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

# The tolerations the DaemonSet controller adds (AddOrUpdateDaemonPodTolerations).
_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
_DAEMON_HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")


def _is_live(pod: Pod) -> bool:
    return pod.status.phase not in _TERMINAL_PHASES


def _template_hash(raw: object, template: PodTemplateSpec) -> str:
    """A 10-character pod-template-hash: a 32-bit hash of the template printed
    in decimal (zero-padded to 10 digits) and safe-encoded, as ComputeHash does."""
    try:
        data = msgspec.json.encode(raw, order="sorted")
    except (TypeError, ValueError, OverflowError, RecursionError):
        data = msgspec.json.encode(template, order="sorted")
    value = int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "big")
    return _safe_encode(f"{value:010d}")


# --- selectors, node affinity and taints (as the DaemonSet controller checks them) ---


def _daemon_tolerations(spec: PodSpec) -> list[Toleration]:
    """The template's tolerations with the DaemonSet controller's added
    (v1helper.AddOrUpdateTolerationInPodSpec: a matching one is replaced)."""
    tolerations = list(spec.tolerations)
    added = list(_DAEMON_TOLERATIONS)
    if spec.host_network:
        added.append(_DAEMON_HOST_NETWORK_TOLERATION)
    for key, effect in added:
        new = Toleration(key=key, operator="Exists", effect=effect)
        matches = [
            i
            for i, have in enumerate(tolerations)
            if (have.key, have.operator, have.value, have.effect) == (key, "Exists", "", effect)
        ]
        for i in matches:
            tolerations[i] = new
        if not matches:
            tolerations.append(new)
    return tolerations


def _pin_to_node(affinity: Affinity | None, node_name: str) -> Affinity:
    """ReplaceDaemonSetPodNodeNameNodeAffinity, without touching shared objects."""
    required = NodeSelector(
        node_selector_terms=[
            NodeSelectorTerm(
                match_fields=[
                    NodeSelectorRequirement(key="metadata.name", operator="In", values=[node_name])
                ]
            )
        ]
    )
    if affinity is None:
        return Affinity(
            node_affinity=NodeAffinity(required_during_scheduling_ignored_during_execution=required)
        )
    if affinity.node_affinity is None:
        node_affinity = NodeAffinity(required_during_scheduling_ignored_during_execution=required)
    else:
        node_affinity = msgspec.structs.replace(
            affinity.node_affinity, required_during_scheduling_ignored_during_execution=required
        )
    return msgspec.structs.replace(affinity, node_affinity=node_affinity)


def _daemon_target(pod: Pod) -> str | None:
    """GetTargetNodeName: the node a (possibly pending) daemon pod is for."""
    if pod.spec.node_name:
        return pod.spec.node_name
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    required = affinity.node_affinity.required_during_scheduling_ignored_during_execution
    if required is None:
        return None
    for term in required.node_selector_terms:
        for req in term.match_fields:
            if req.key == "metadata.name" and req.operator == "In" and len(req.values) == 1:
                return req.values[0]
    return None


# --- controllers -------------------------------------------------------------------


class _Expander:
    """Creates the pods workload controllers would, minus those already there."""

    def __init__(self, loader: _Loader, max_pods: int) -> None:
        self.loader = loader
        self.max_pods = max_pods
        # Pods that may still be created: the limit less the pods in the input.
        self.room = max_pods - sum(isinstance(entry, _PodItem) for entry in loader.items)
        self.reconciled = 0
        self.skipped_deployments: list[tuple[str, str, _Origin]] = []
        # The DaemonSets read, for nodes that are not in the input (plan's templates).
        self.daemon_sets: list[DaemonSet] = []
        # Pods in the input by their controller: (namespace, kind, name) -> pods.
        self.owned: defaultdict[_OwnerKey, list[Pod]] = defaultdict(list)
        # Deployment -> its pods in the input, through their ReplicaSets' names.
        self.deployment_pods: defaultdict[tuple[str, str], list[Pod]] = defaultdict(list)
        # What PodTopologySpread's default constraints read of the controllers
        # (helper.DefaultSelector): (namespace, kind, name) -> selector, for the
        # ReplicaSets, StatefulSets and ReplicationControllers in the input and the
        # ReplicaSets the Deployments' controller would make.
        self.selectors: dict[_OwnerKey, LabelSelector] = {}
        for entry in loader.items:
            if isinstance(entry, _PodItem):
                self.index(entry.pod)

    def index(self, pod: Pod) -> None:
        meta = pod.metadata
        for ref in meta.owner_references:
            if not ref.controller:
                continue
            self.owned[meta.namespace, ref.kind, ref.name].append(pod)
            template_hash = meta.labels.get("pod-template-hash")
            suffix = f"-{template_hash}"
            if ref.kind == "ReplicaSet" and template_hash and ref.name.endswith(suffix):
                deployment = ref.name[: -len(suffix)]
                self.deployment_pods[meta.namespace, deployment].append(pod)

    def existing(self, namespace: str, kind: str, name: str) -> list[Pod]:
        pods = [
            p
            for p in self.owned.get((namespace, kind, name), ())
            if _is_live(p) and p.metadata.deletion_timestamp is None
        ]
        self.reconciled += len(pods)
        return pods

    def make_room(self, item: _WorkloadItem, count: int, field: str | None) -> bool:
        """Whether `count` more pods stay within --max-pods; if not, the workload
        is a problem (naming the field that asks for them) and creates none, before
        any pod is built: a count of 2**31 costs nothing."""
        if count == 0 or count <= self.room:
            self.room -= count
            return True
        self.loader.problem(
            item.origin,
            item.workload.kind,
            item.key,
            field,
            f"{count} pods would go past the limit of {self.max_pods} pods in the "
            f"simulation (raise it with --max-pods); the {item.workload.kind} was skipped",
        )
        return False

    def expand(self, item: _WorkloadItem) -> list[_PodItem]:
        workload = item.workload
        if isinstance(workload, ReplicaSet | StatefulSet | ReplicationController):
            selector = selector_of(workload)
            if selector is not None:
                meta = workload.metadata
                self.selectors[meta.namespace, workload.kind, meta.name] = selector
        if isinstance(workload, Deployment):
            return self.deployment(item, workload)
        if isinstance(workload, ReplicaSet | ReplicationController):
            return self.replica_set(item, workload)
        if isinstance(workload, StatefulSet):
            return self.stateful_set(item, workload)
        if isinstance(workload, DaemonSet):
            self.daemon_sets.append(workload)
            return self.daemon_set(item, workload)
        return self.job(item, workload)

    # -- building pods

    def new_pod(
        self,
        item: _WorkloadItem,
        template: PodTemplateSpec,
        name: str,
        generate_name: str,
        labels: dict[str, str],
        owner: OwnerReference,
        spec: PodSpec | None = None,
        annotations: dict[str, str] | None = None,
    ) -> _PodItem:
        meta = item.workload.metadata
        pod = Pod(
            metadata=ObjectMeta(
                name=name,
                generate_name=generate_name,
                namespace=meta.namespace,
                labels=labels,
                annotations=annotations
                if annotations is not None
                else dict(template.metadata.annotations),
                owner_references=[owner],
                creation_timestamp=meta.creation_timestamp,
            ),
            # Each pod gets its own PodSpec (binding sets spec.nodeName) but shares
            # the template's containers, tolerations, ... which nobody modifies.
            spec=spec if spec is not None else msgspec.structs.replace(template.spec),
        )
        self.loader.taken.add(pod.key)
        return _PodItem(
            pod,
            item.origin,
            item.created,
            kind=item.workload.kind,
            name=item.key,
            spec_path="spec.template.spec",
        )

    def generated_name(self, namespace: str, prefix: str, seed: str) -> str:
        """`prefix` plus 5 characters derived from `seed`, not yet in use."""
        base = prefix[:_MAX_GENERATE_NAME_BASE]
        attempt = 0
        while True:
            name = base + _random_chars(seed if attempt == 0 else f"{seed}#{attempt}")
            if f"{namespace}/{name}" not in self.loader.taken:
                return name
            attempt += 1

    def replicas(
        self,
        item: _WorkloadItem,
        template: PodTemplateSpec,
        rs_name: str,
        count: int,
        labels: dict[str, str],
        owner: OwnerReference,
    ) -> list[_PodItem]:
        if not self.make_room(item, count, "spec.replicas"):
            return []
        namespace = item.workload.metadata.namespace
        prefix = f"{rs_name}-"
        return [
            self.new_pod(
                item,
                template,
                self.generated_name(namespace, prefix, f"{namespace}/{rs_name}/{i}"),
                prefix,
                dict(labels),
                owner,
            )
            for i in range(count)
        ]

    # -- the controllers

    def deployment(self, item: _WorkloadItem, deploy: Deployment) -> list[_PodItem]:
        meta = deploy.metadata
        if (meta.namespace, meta.name) in self.loader.deployments_with_replicasets:
            self.skipped_deployments.append(("Deployment", item.key, item.origin))
            return []
        template = deploy.spec.template
        template_hash = _template_hash(item.raw_template, template)
        rs_name = f"{meta.name}-{template_hash}"
        live = [
            p
            for p in self.deployment_pods.get((meta.namespace, meta.name), ())
            if _is_live(p) and p.metadata.deletion_timestamp is None
        ]
        self.reconciled += len(live)
        replicas = 1 if deploy.spec.replicas is None else deploy.spec.replicas
        owner = OwnerReference(
            api_version="apps/v1",
            kind="ReplicaSet",
            name=rs_name,
            uid=_uid("ReplicaSet", meta.namespace, rs_name),
            controller=True,
        )
        labels = {**template.metadata.labels, "pod-template-hash": template_hash}
        # The ReplicaSet's selector: the Deployment's and the template hash
        # (deploymentutil.CloneSelectorAndAddLabel).
        selector = deploy.spec.selector or LabelSelector()
        self.selectors[meta.namespace, "ReplicaSet", rs_name] = msgspec.structs.replace(
            selector,
            match_labels={**selector.match_labels, "pod-template-hash": template_hash},
        )
        return self.replicas(item, template, rs_name, max(0, replicas - len(live)), labels, owner)

    def replica_set(
        self, item: _WorkloadItem, rs: ReplicaSet | ReplicationController
    ) -> list[_PodItem]:
        """ReplicaSetController.manageReplicas; ReplicationManager is the same
        controller for the core group's kind."""
        meta = rs.metadata
        live = self.existing(meta.namespace, rs.kind, meta.name)
        replicas = 1 if rs.spec.replicas is None else rs.spec.replicas
        api_version = "v1" if isinstance(rs, ReplicationController) else "apps/v1"
        owner = _controller_ref(api_version, rs.kind, meta)
        template = rs.spec.template
        labels = dict(template.metadata.labels)
        return self.replicas(item, template, meta.name, max(0, replicas - len(live)), labels, owner)

    def stateful_set(self, item: _WorkloadItem, sts: StatefulSet) -> list[_PodItem]:
        meta = sts.metadata
        spec = sts.spec
        template = spec.template
        present = {p.metadata.name for p in self.existing(meta.namespace, "StatefulSet", meta.name)}
        revision = f"{meta.name}-{_template_hash(item.raw_template, template)}"
        owner = _controller_ref("apps/v1", "StatefulSet", meta)
        claims = [claim.metadata.name for claim in spec.volume_claim_templates]
        start = spec.ordinals.start if spec.ordinals is not None else 0
        replicas = 1 if spec.replicas is None else spec.replicas
        pods: list[_PodItem] = []
        selector_labels = spec.selector.match_labels if spec.selector is not None else {}
        if not self.make_room(item, max(0, replicas - len(present)), "spec.replicas"):
            return []
        for ordinal in range(start, start + replicas):
            for claim_template in spec.volume_claim_templates:
                self.loader.stateful_set_claims.append(
                    StatefulSetClaim(
                        meta.namespace,
                        f"{claim_template.metadata.name}-{meta.name}-{ordinal}",
                        claim_template,
                        selector_labels,
                    )
                )
            name = f"{meta.name}-{ordinal}"
            if name in present:
                continue
            labels = {
                **template.metadata.labels,
                "controller-revision-hash": revision,
                "statefulset.kubernetes.io/pod-name": name,
                "apps.kubernetes.io/pod-index": str(ordinal),
            }
            pod_spec = msgspec.structs.replace(template.spec)
            if claims:
                # updateStorage: a volume per claim template, then the template's others.
                pod_spec.volumes = [
                    Volume(
                        name=claim,
                        persistent_volume_claim=PersistentVolumeClaimVolumeSource(
                            claim_name=f"{claim}-{meta.name}-{ordinal}"
                        ),
                    )
                    for claim in claims
                ] + [v for v in template.spec.volumes if v.name not in claims]
            pods.append(self.new_pod(item, template, name, "", labels, owner, pod_spec))
        return pods

    def daemon_set(self, item: _WorkloadItem, ds: DaemonSet) -> list[_PodItem]:
        meta = ds.metadata
        template = ds.spec.template
        covered = {_daemon_target(p) for p in self.existing(meta.namespace, "DaemonSet", meta.name)}
        owner = _controller_ref("apps/v1", "DaemonSet", meta)
        labels = {
            **template.metadata.labels,
            "controller-revision-hash": _template_hash(item.raw_template, template),
            "pod-template-generation": "1",
        }
        tolerations = _daemon_tolerations(template.spec)
        prefix = f"{meta.name}-"
        pods: list[_PodItem] = []
        nodes = [
            node
            for node in self.loader.nodes
            if node.metadata.name not in covered
            and _daemon_should_run(template.spec, tolerations, node)
        ]
        if not self.make_room(item, len(nodes), None):
            return []
        for node in nodes:
            node_name = node.metadata.name
            pod_spec = msgspec.structs.replace(
                template.spec,
                tolerations=tolerations,
                affinity=_pin_to_node(template.spec.affinity, node_name),
            )
            name = self.generated_name(
                meta.namespace, prefix, f"{meta.namespace}/{meta.name}@{node_name}"
            )
            pods.append(self.new_pod(item, template, name, prefix, dict(labels), owner, pod_spec))
        return pods

    def job(self, item: _WorkloadItem, job: Job) -> list[_PodItem]:
        meta = job.metadata
        spec = job.spec
        template = spec.template
        owned = self.owned.get((meta.namespace, "Job", meta.name), [])
        succeeded = [p for p in owned if p.status.phase == "Succeeded"]
        live = self.existing(meta.namespace, "Job", meta.name)
        if spec.suspend:
            return []
        want = 1 if spec.parallelism is None else spec.parallelism
        if spec.completions is not None:
            want = min(want, max(0, spec.completions - len(succeeded)))
        count = max(0, want - len(live))
        if not self.make_room(item, count, "spec.parallelism"):
            return []
        labels = dict(template.metadata.labels)
        if not spec.manual_selector:
            labels.update(
                {
                    "batch.kubernetes.io/controller-uid": meta.uid,
                    "batch.kubernetes.io/job-name": meta.name,
                    "controller-uid": meta.uid,
                    "job-name": meta.name,
                }
            )
        owner = _controller_ref("batch/v1", "Job", meta)
        index_key = "batch.kubernetes.io/job-completion-index"
        pods: list[_PodItem] = []
        if spec.completion_mode == "Indexed":
            used = {p.metadata.annotations.get(index_key) for p in (*succeeded, *live)}
            # Lazily: completions may be 2**31 - 1; only `count` indexes are taken.
            free = (i for i in range(spec.completions or 0) if str(i) not in used)
            indexes = list(itertools.islice(free, count))
            for index in indexes:
                prefix = f"{meta.name}-{index}-"
                name = self.generated_name(meta.namespace, prefix, f"{meta.namespace}/{prefix}")
                annotations = {**template.metadata.annotations, index_key: str(index)}
                pod_labels = {**labels, index_key: str(index)}
                pods.append(
                    self.new_pod(
                        item, template, name, prefix, pod_labels, owner, annotations=annotations
                    )
                )
            return pods
        prefix = f"{meta.name}-"
        for i in range(count):
            name = self.generated_name(meta.namespace, prefix, f"{meta.namespace}/{meta.name}/{i}")
            pods.append(self.new_pod(item, template, name, prefix, dict(labels), owner))
        return pods


def _controller_ref(api_version: str, kind: str, meta: ObjectMeta) -> OwnerReference:
    return OwnerReference(
        api_version=api_version, kind=kind, name=meta.name, uid=meta.uid, controller=True
    )


def _daemon_should_run(spec: PodSpec, tolerations: list[Toleration], node: Node) -> bool:
    """nodeShouldRunDaemonPod's predicates: node name, required node affinity
    (nodeSelector included) and NoSchedule/NoExecute taints tolerated."""
    if spec.node_name and spec.node_name != node.metadata.name:
        return False
    if not required_node_affinity(Pod(spec=spec)).matches(node):
        return False
    untolerated = find_matching_untolerated_taint(
        node.spec.taints, tolerations, do_not_schedule_taints
    )
    return untolerated is None


def daemon_pod(ds: DaemonSet, node: Node) -> Pod | None:
    """The pod of `ds` for `node` as the DaemonSet controller makes it (its
    tolerations added, pinned by ReplaceDaemonSetPodNodeNameNodeAffinity) and
    bound there; None where nodeShouldRunDaemonPod says the node runs none."""
    spec = ds.spec.template.spec
    tolerations = _daemon_tolerations(spec)
    if not _daemon_should_run(spec, tolerations, node):
        return None
    node_name = node.metadata.name
    meta = ds.metadata
    pod_spec = msgspec.structs.replace(
        spec,
        tolerations=tolerations,
        affinity=_pin_to_node(spec.affinity, node_name),
        node_name=node_name,
    )
    pod_meta = ObjectMeta(
        name=f"{meta.name}-{node_name}",
        namespace=meta.namespace,
        uid=f"{meta.uid or meta.name}-{node_name}",
        labels=dict(ds.spec.template.metadata.labels),
        owner_references=[_controller_ref("apps/v1", "DaemonSet", meta)],
    )
    return Pod(metadata=pod_meta, spec=pod_spec)
