"""The kinds kubesched reads, and who reads each of them: one list for `run`'s
informers, `simulate`'s manifest loader and `simulate --from-cluster`'s snapshot.

kube-scheduler v1.36.3 reads the kinds of SCHEDULER_KINDS through its informer
factory (pkg/scheduler/eventhandlers.go addAllEventHandlers, and the listers the
default plugins take in their New). `run` watches exactly those (PLUGIN_KINDS too
when a profile runs an out-of-tree plugin that reads one). `simulate` reads them
all from manifests or the live cluster, and ADMISSION_KINDS and CONTROLLER_KINDS
besides: in a cluster, the API server's admission plugins and the controllers
have done their part before the scheduler sees a pod; the simulator does it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Kind:
    kind: str
    group: str  # "" is the core group
    version: str  # the version kubesched reads and lists
    resource: str  # the REST resource (plural)
    namespaced: bool
    # What reads it, and what it changes in scheduling: the note `simulate` gives
    # for a kind it does not model says this.
    reads: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_path(self) -> str:
        """The path that lists it in every namespace."""
        prefix = f"/apis/{self.group}" if self.group else "/api"
        return f"{prefix}/{self.version}/{self.resource}"


POD = Kind("Pod", "", "v1", "pods", True, "the pods to place and those placed")
NODE = Kind("Node", "", "v1", "nodes", False, "the nodes")
NAMESPACE = Kind("Namespace", "", "v1", "namespaces", False, "InterPodAffinity's namespaceSelector")
PDB = Kind(
    "PodDisruptionBudget",
    "policy",
    "v1",
    "poddisruptionbudgets",
    True,
    "DefaultPreemption's choice of victims",
)
_SPREAD = "PodTopologySpread's default constraints (the selector of the pods it spreads)"
SERVICE = Kind("Service", "", "v1", "services", True, _SPREAD)
REPLICATION_CONTROLLER = Kind(
    "ReplicationController", "", "v1", "replicationcontrollers", True, _SPREAD
)
REPLICA_SET = Kind("ReplicaSet", "apps", "v1", "replicasets", True, _SPREAD)
STATEFUL_SET = Kind("StatefulSet", "apps", "v1", "statefulsets", True, _SPREAD)
_VOLUMES = "the volume plugins (VolumeBinding, VolumeZone, NodeVolumeLimits, VolumeRestrictions)"
PERSISTENT_VOLUME = Kind("PersistentVolume", "", "v1", "persistentvolumes", False, _VOLUMES)
PERSISTENT_VOLUME_CLAIM = Kind(
    "PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True, _VOLUMES
)
STORAGE_CLASS = Kind("StorageClass", "storage.k8s.io", "v1", "storageclasses", False, _VOLUMES)
CSI_NODE = Kind("CSINode", "storage.k8s.io", "v1", "csinodes", False, _VOLUMES)
CSI_DRIVER = Kind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", False, _VOLUMES)
CSI_STORAGE_CAPACITY = Kind(
    "CSIStorageCapacity", "storage.k8s.io", "v1", "csistoragecapacities", True, _VOLUMES
)
VOLUME_ATTACHMENT = Kind(
    "VolumeAttachment", "storage.k8s.io", "v1", "volumeattachments", False, _VOLUMES
)
_DRA = "DynamicResources"
RESOURCE_CLAIM = Kind("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", True, _DRA)
RESOURCE_SLICE = Kind("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", False, _DRA)
DEVICE_CLASS = Kind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", False, _DRA)
WORKLOAD_POD_GROUP = Kind(
    "PodGroup",
    "scheduling.k8s.io",
    "v1alpha2",
    "podgroups",
    True,
    "gang scheduling (GenericWorkload): the pod groups of the Workload API",
)

# kube-scheduler v1.36.3's informers. The volume kinds are watched when a profile
# runs a plugin that reads storage, the DRA kinds when one runs DynamicResources,
# and the Workload API's PodGroups with the GenericWorkload gate on.
SCHEDULER_KINDS: tuple[Kind, ...] = (
    NODE,
    POD,
    PDB,
    NAMESPACE,
    SERVICE,
    REPLICATION_CONTROLLER,
    REPLICA_SET,
    STATEFUL_SET,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    CSI_NODE,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
    VOLUME_ATTACHMENT,
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    DEVICE_CLASS,
    WORKLOAD_POD_GROUP,
)

# scheduler-plugins' PodGroup CRD, read when a profile runs Coscheduling.
COSCHEDULING_POD_GROUP = Kind(
    "PodGroup",
    "scheduling.x-k8s.io",
    "v1alpha1",
    "podgroups",
    True,
    "Coscheduling (scheduler-plugins)",
)
PLUGIN_KINDS: tuple[Kind, ...] = (COSCHEDULING_POD_GROUP,)

# The API server's admission plugins read these before a pod is stored.
PRIORITY_CLASS = Kind(
    "PriorityClass",
    "scheduling.k8s.io",
    "v1",
    "priorityclasses",
    False,
    "Priority admission: a pod's priority and preemption policy",
)
RUNTIME_CLASS = Kind(
    "RuntimeClass",
    "node.k8s.io",
    "v1",
    "runtimeclasses",
    False,
    "RuntimeClass admission: a pod's overhead, node selector and tolerations",
)
ADMISSION_KINDS: tuple[Kind, ...] = (PRIORITY_CLASS, RUNTIME_CLASS)

# The controllers that create pods and claims, whose part the simulator plays.
_CREATES_PODS = "the pods its controller creates"
DEPLOYMENT = Kind("Deployment", "apps", "v1", "deployments", True, _CREATES_PODS)
DAEMON_SET = Kind("DaemonSet", "apps", "v1", "daemonsets", True, _CREATES_PODS)
JOB = Kind("Job", "batch", "v1", "jobs", True, _CREATES_PODS)
RESOURCE_CLAIM_TEMPLATE = Kind(
    "ResourceClaimTemplate",
    "resource.k8s.io",
    "v1",
    "resourceclaimtemplates",
    True,
    "the claims the resourceclaim controller makes for pods",
)
WORKLOAD = Kind(
    "Workload",
    "scheduling.k8s.io",
    "v1alpha2",
    "workloads",
    True,
    "the pod groups of the Workload API",
)
CONTROLLER_KINDS: tuple[Kind, ...] = (
    DEPLOYMENT,
    DAEMON_SET,
    JOB,
    RESOURCE_CLAIM_TEMPLATE,
    WORKLOAD,
)

SIMULATOR_KINDS: tuple[Kind, ...] = (
    *SCHEDULER_KINDS,
    *PLUGIN_KINDS,
    *ADMISSION_KINDS,
    *CONTROLLER_KINDS,
)
