"""The Kubernetes API objects kubesched reads, as msgspec structs.

Only the fields scheduling needs are declared: msgspec skips the rest while
decoding, which is what keeps decoding thousands of pods per second cheap.
Field names are the Python spelling of the API's camelCase names.
"""

from __future__ import annotations

import msgspec

# A resource.Quantity as it appears on the wire: "100m", "1Gi", 2, 0.5.
RawQuantity = str | int | float
ResourceList = dict[str, RawQuantity]


class _Api(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    pass


class OwnerReference(_Api):
    kind: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    controller: bool | None = None


class ObjectMeta(_Api):
    name: str = ""
    generate_name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


# --- selectors -------------------------------------------------------------------


class LabelSelectorRequirement(_Api):
    key: str
    operator: str
    values: list[str] = []


class LabelSelector(_Api):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(_Api):
    key: str
    operator: str
    values: list[str] = []


class NodeSelectorTerm(_Api):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_Api):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_Api):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(_Api):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_Api):
    topology_key: str = ""
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_Api):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(_Api):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_Api):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


# --- pods ------------------------------------------------------------------------


class Toleration(_Api):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class ContainerPort(_Api):
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class ResourceRequirements(_Api):
    requests: ResourceList = {}
    limits: ResourceList = {}


class Container(_Api):
    name: str = ""
    image: str = ""
    ports: list[ContainerPort] = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    restart_policy: str | None = None


class PodSchedulingGate(_Api):
    name: str


class TopologySpreadConstraint(_Api):
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class PersistentVolumeClaimVolumeSource(_Api):
    claim_name: str
    read_only: bool = False


class Volume(_Api):
    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None


class PodSpec(_Api):
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: ResourceList = {}
    resources: ResourceRequirements | None = None
    scheduling_gates: list[PodSchedulingGate] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    volumes: list[Volume] = []
    host_network: bool = False
    restart_policy: str = "Always"


class PodCondition(_Api):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class PodStatus(_Api):
    phase: str = ""
    nominated_node_name: str = ""
    conditions: list[PodCondition] = []


class Pod(_Api):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    @property
    def key(self) -> str:
        """The "namespace/name" a pod is known by in messages and reports."""
        return f"{self.metadata.namespace}/{self.metadata.name}"


# --- nodes -----------------------------------------------------------------------


class Taint(_Api):
    key: str
    effect: str
    value: str = ""
    time_added: str | None = None


class NodeSpec(_Api):
    unschedulable: bool = False
    taints: list[Taint] = []


class ContainerImage(_Api):
    names: list[str] = []
    size_bytes: int = 0


class NodeCondition(_Api):
    type: str
    status: str


class NodeStatus(_Api):
    capacity: ResourceList = {}
    allocatable: ResourceList = {}
    images: list[ContainerImage] = []
    conditions: list[NodeCondition] = []


class Node(_Api):
    api_version: str = "v1"
    kind: str = "Node"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)

    @property
    def name(self) -> str:
        return self.metadata.name


# --- cluster-scoped policy objects -----------------------------------------------


class PriorityClass(_Api):
    api_version: str = "scheduling.k8s.io/v1"
    kind: str = "PriorityClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    value: int = 0
    global_default: bool = False
    preemption_policy: str | None = None


class Namespace(_Api):
    api_version: str = "v1"
    kind: str = "Namespace"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
