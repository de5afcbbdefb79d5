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
    # What must happen before the object goes (e.g. DRA's delete-protection).
    finalizers: list[str] = []
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None

    @property
    def key(self) -> str:
        """The object's key (cache.MetaNamespaceKeyFunc): "namespace/name", or the name
        alone for a cluster-scoped object. The one way kubesched names objects."""
        return namespaced_name(self.namespace, self.name)


def namespaced_name(namespace: str, name: str) -> str:
    """ "namespace/name", or the name alone when there is no namespace."""
    return f"{namespace}/{name}" if namespace else name


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
    name: str = ""
    container_port: int = 0
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = msgspec.field(default="", name="hostIP")


class ResourceClaimRef(_Api):
    """A container's use of one of the pod's resource claims (resources.claims)."""

    name: str = ""
    request: str = ""


class ResourceRequirements(_Api):
    requests: ResourceList = {}
    limits: ResourceList = {}
    claims: list[ResourceClaimRef] = []


class ContainerRestartRule(_Api):
    """restartPolicyRules[]: only the action is read (NodeDeclaredFeatures infers
    RestartAllContainersOnContainerExits from it); exitCodes are skipped."""

    action: str = ""


class Container(_Api):
    name: str = ""
    image: str = ""
    ports: list[ContainerPort] = []
    resources: ResourceRequirements = msgspec.field(default_factory=ResourceRequirements)
    restart_policy: str | None = None
    restart_policy_rules: list[ContainerRestartRule] = []


class PodSchedulingGate(_Api):
    name: str


class PodSchedulingGroup(_Api):
    """spec.schedulingGroup (GenericWorkload, v1.36): the PodGroup the pod belongs
    to. A union of which podGroupName is the one member in v1.36.3."""

    pod_group_name: str | None = None


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


class GCEPersistentDiskVolumeSource(_Api):
    pd_name: str = ""
    read_only: bool = False


class AWSElasticBlockStoreVolumeSource(_Api):
    volume_id: str = msgspec.field(default="", name="volumeID")
    read_only: bool = False


class ISCSIVolumeSource(_Api):
    iqn: str = ""
    read_only: bool = False


class RBDVolumeSource(_Api):
    monitors: list[str] = []
    image: str = ""
    pool: str = "rbd"
    read_only: bool = False


class CSIVolumeSource(_Api):
    driver: str = ""


class VolumeResourceRequirements(_Api):
    requests: ResourceList = {}
    limits: ResourceList = {}


class PersistentVolumeClaimSpec(_Api):
    access_modes: list[str] = []
    selector: LabelSelector | None = None
    resources: VolumeResourceRequirements = msgspec.field(
        default_factory=VolumeResourceRequirements
    )
    volume_name: str = ""
    storage_class_name: str | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None


class VolumeClaimTemplate(_Api):
    """A generic ephemeral volume's PersistentVolumeClaimTemplate."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)


class EphemeralVolumeSource(_Api):
    volume_claim_template: VolumeClaimTemplate | None = None


class EmptyDirVolumeSource(_Api):
    medium: str = ""  # "" (the node's disk) or "Memory" (tmpfs)


class HostPathVolumeSource(_Api):
    path: str = ""
    type: str | None = None


class Volume(_Api):
    name: str = ""
    persistent_volume_claim: PersistentVolumeClaimVolumeSource | None = None
    # The sources the volume plugins look at (VolumeBinding, VolumeRestrictions,
    # NodeVolumeLimits); the others (configMap, secret, ...) are skipped.
    ephemeral: EphemeralVolumeSource | None = None
    gce_persistent_disk: GCEPersistentDiskVolumeSource | None = None
    aws_elastic_block_store: AWSElasticBlockStoreVolumeSource | None = None
    iscsi: ISCSIVolumeSource | None = None
    rbd: RBDVolumeSource | None = None
    csi: CSIVolumeSource | None = None
    # Local storage, which only `kubesched plan --remove-nodes` reads: a pod with it
    # blocks its node's removal (cluster-autoscaler's drain rules).
    empty_dir: EmptyDirVolumeSource | None = None
    host_path: HostPathVolumeSource | None = None


class PodResourceClaim(_Api):
    """spec.resourceClaims[]: a claim by name, or one made from a template."""

    name: str = ""
    resource_claim_name: str | None = None
    resource_claim_template_name: str | None = None


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
    # None when unset, which is not the same as true (NodeDeclaredFeatures reads it).
    host_users: bool | None = None
    restart_policy: str = "Always"
    resource_claims: list[PodResourceClaim] = []
    scheduling_group: PodSchedulingGroup | None = None
    # Read by the RuntimeClass admission the simulator plays (the scheduler reads
    # what it set: overhead, node selector, tolerations).
    runtime_class_name: str | None = None


class PodCondition(_Api):
    type: str
    status: str
    reason: str = ""
    message: str = ""


class PodResourceClaimStatus(_Api):
    """status.resourceClaimStatuses[]: the claim generated for a template entry."""

    name: str = ""
    resource_claim_name: str | None = None


class ContainerExtendedResourceRequest(_Api):
    container_name: str = ""
    resource_name: str = ""
    request_name: str = ""


class PodExtendedResourceClaimStatus(_Api):
    """status.extendedResourceClaimStatus: the claim that backs DRA extended resources."""

    request_mappings: list[ContainerExtendedResourceRequest] = []
    resource_claim_name: str = ""


class PodStatus(_Api):
    phase: str = ""
    nominated_node_name: str = ""
    conditions: list[PodCondition] = []
    start_time: str | None = None  # RFC 3339; preemption prefers to keep older pods
    resource_claim_statuses: list[PodResourceClaimStatus] = []
    extended_resource_claim_status: PodExtendedResourceClaimStatus | None = None


class Pod(_Api):
    api_version: str = "v1"
    kind: str = "Pod"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)

    @property
    def key(self) -> str:
        """The "namespace/name" a pod is known by in messages and reports."""
        return self.metadata.key


def same_pod(a: Pod, b: Pod) -> bool:
    """pod.UID == other.UID; pods without a UID (simulations) compare by namespace/name."""
    if a.metadata.uid and b.metadata.uid:
        return a.metadata.uid == b.metadata.uid
    return a.key == b.key


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
    # Features the node declares (NodeDeclaredFeatures, beta and on in 1.36).
    declared_features: list[str] = []


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


# --- storage ---------------------------------------------------------------------
# What the volume plugins read: PersistentVolumes and claims, StorageClasses, and
# the CSI objects (storage.k8s.io/v1) that describe drivers, nodes and capacity.


class ObjectReference(_Api):
    kind: str = ""
    namespace: str = ""
    name: str = ""
    uid: str = ""
    api_version: str = ""
    resource_version: str = ""


class PersistentVolumeClaimStatus(_Api):
    phase: str = ""


class PersistentVolumeClaim(_Api):
    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeClaimSpec = msgspec.field(default_factory=PersistentVolumeClaimSpec)
    status: PersistentVolumeClaimStatus = msgspec.field(default_factory=PersistentVolumeClaimStatus)

    @property
    def key(self) -> str:
        return self.metadata.key


class VolumeNodeAffinity(_Api):
    required: NodeSelector | None = None


class CSIPersistentVolumeSource(_Api):
    driver: str = ""
    volume_handle: str = ""


class PersistentVolumeSpec(_Api):
    capacity: ResourceList = {}
    access_modes: list[str] = []
    claim_ref: ObjectReference | None = None
    storage_class_name: str = ""
    node_affinity: VolumeNodeAffinity | None = None
    volume_mode: str | None = None
    volume_attributes_class_name: str | None = None
    csi: CSIPersistentVolumeSource | None = None


class PersistentVolumeStatus(_Api):
    phase: str = ""


class PersistentVolume(_Api):
    api_version: str = "v1"
    kind: str = "PersistentVolume"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PersistentVolumeSpec = msgspec.field(default_factory=PersistentVolumeSpec)
    status: PersistentVolumeStatus = msgspec.field(default_factory=PersistentVolumeStatus)


class TopologySelectorLabelRequirement(_Api):
    key: str = ""
    values: list[str] = []


class TopologySelectorTerm(_Api):
    match_label_expressions: list[TopologySelectorLabelRequirement] = []


class StorageClass(_Api):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "StorageClass"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    provisioner: str = ""
    volume_binding_mode: str | None = None
    allowed_topologies: list[TopologySelectorTerm] = []


class VolumeNodeResources(_Api):
    count: int | None = None


class CSINodeDriver(_Api):
    name: str = ""
    node_id: str = msgspec.field(default="", name="nodeID")
    topology_keys: list[str] = []
    allocatable: VolumeNodeResources | None = None


class CSINodeSpec(_Api):
    drivers: list[CSINodeDriver] = []


class CSINode(_Api):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSINode"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSINodeSpec = msgspec.field(default_factory=CSINodeSpec)


class CSIDriverSpec(_Api):
    storage_capacity: bool | None = None
    attach_required: bool | None = None


class CSIDriver(_Api):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIDriver"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: CSIDriverSpec = msgspec.field(default_factory=CSIDriverSpec)


class CSIStorageCapacity(_Api):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "CSIStorageCapacity"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    node_topology: LabelSelector | None = None
    storage_class_name: str = ""
    capacity: RawQuantity | None = None
    maximum_volume_size: RawQuantity | None = None


class VolumeAttachmentSource(_Api):
    persistent_volume_name: str | None = None


class VolumeAttachmentSpec(_Api):
    attacher: str = ""
    node_name: str = ""
    source: VolumeAttachmentSource = msgspec.field(default_factory=VolumeAttachmentSource)


class VolumeAttachment(_Api):
    api_version: str = "storage.k8s.io/v1"
    kind: str = "VolumeAttachment"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: VolumeAttachmentSpec = msgspec.field(default_factory=VolumeAttachmentSpec)


# --- policy/v1 -------------------------------------------------------------------

IntOrString = int | str


class PodDisruptionBudgetSpec(_Api):
    selector: LabelSelector | None = None
    min_available: IntOrString | None = None
    max_unavailable: IntOrString | None = None


class PodDisruptionBudgetStatus(_Api):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    # pod name -> when the eviction was accepted (counted as disrupted already)
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(_Api):
    api_version: str = "policy/v1"
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    # None when the object was read without one (a manifest): the loader fills it
    # in as the disruption controller would.
    status: PodDisruptionBudgetStatus | None = None
