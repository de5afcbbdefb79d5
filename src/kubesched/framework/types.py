"""The framework's view of pods and cluster events."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kubesched.api.objects import Pod
from kubesched.api.requests import Amounts, requests_and_non_zero


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


class PodInfo:
    """A pod with what every cycle needs computed once: requests, ports, priority.

    `pod` is the Pod object, `key` its "namespace/name", `requests` its effective
    requests by resource name (cpu in millicores, memory in bytes).

    Example:
        ```python
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Status

        class ReservedForCritical(NodeFilterPlugin):
            # Nodes labelled example.com/reserved take pods of priority 1000 and up.
            name = "ReservedForCritical"

            def filter_node(self, state, pod, node):
                if "example.com/reserved" in node.labels and pod.priority < 1000:
                    return Status.unschedulable("node(s) are reserved for critical pods")
                return Status.success()
        ```
    """

    # __weakref__: caches of per-pod derived data (DefaultPreemption's amounts) key
    # on the PodInfo weakly, so they never outlive it.
    __slots__ = (
        "__weakref__",
        "host_ports",
        "key",
        "non_zero_cpu",
        "non_zero_memory",
        "pod",
        "requests",
    )

    def __init__(self, pod: Pod, like: PodInfo | None = None) -> None:
        """`like`: an earlier PodInfo of the same pod; what it worked out from the
        containers is kept when they are unchanged (binding changes only nodeName)."""
        self.pod = pod
        self.key = pod.key
        self.requests: Amounts
        self.host_ports: tuple[HostPort, ...]
        self.non_zero_cpu: int
        self.non_zero_memory: int
        if like is not None and _same_resources(like.pod, pod):
            # Shared, not copied: nobody changes a PodInfo's amounts in place.
            self.requests = like.requests
            self.non_zero_cpu, self.non_zero_memory = like.non_zero_cpu, like.non_zero_memory
            self.host_ports = like.host_ports
            return
        self.requests, (self.non_zero_cpu, self.non_zero_memory) = requests_and_non_zero(pod)
        # Only sidecars keep their ports while the pod runs (GetHostPorts upstream).
        sidecars = [c for c in pod.spec.init_containers if c.restart_policy == "Always"]
        self.host_ports = tuple(
            HostPort(p.host_ip or "0.0.0.0", p.protocol or "TCP", p.host_port)
            for c in (*sidecars, *pod.spec.containers)
            for p in c.ports
            if p.host_port > 0
        )

    @property
    def priority(self) -> int:
        return self.pod.spec.priority or 0

    @property
    def name(self) -> str:
        return self.pod.metadata.name

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace

    @property
    def node_name(self) -> str:
        return self.pod.spec.node_name

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


def _same_resources(old: Pod, new: Pod) -> bool:
    """Whether everything PodInfo derives requests and host ports from is the same."""
    a, b = old.spec, new.spec
    if a is b:
        return True
    return (
        (a.containers is b.containers or a.containers == b.containers)
        and (a.init_containers is b.init_containers or a.init_containers == b.init_containers)
        and a.overhead == b.overhead
        and a.resources == b.resources
    )


@dataclass(slots=True)
class QueuedPodInfo:
    """A pod in the scheduling queue, with its attempt history."""

    pod_info: PodInfo
    timestamp: float  # when it last entered activeQ (PrioritySort's tie-break)
    initial_attempt_timestamp: float | None = None
    # The order in which pods got their initial_attempt_timestamp: the tie-break
    # when the clock gives two pods the same one (simulated time).
    initial_attempt_seq: int = 0
    attempts: int = 0
    # UnschedulableCount and ConsecutiveErrorsCount upstream: the backoff counts
    # rejections by plugins, or the run of errors since the last rejection, not
    # attempts (getBackoffTime).
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str = ""
    seq: int = 0  # enqueue order, the last tie-break so that the order is total
    # The node table's generation at the last attempt: retrying on an unchanged
    # cluster gives the same answer, which lets the simulator know it is done.
    tried_at_generation: int = -1
    # Opportunistic batching: the pod's signature (PodSignature upstream), and the
    # PodInfo it was worked out for; an update brings a new PodInfo, so the pod is
    # signed again (QueuedPodInfo.Update clears the signature upstream).
    signature: bytes | None = None
    signed: PodInfo | None = None

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod


class Resource(enum.StrEnum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnscheduledPod"
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    # scheduler-plugins' PodGroup, named as its Coscheduling plugin registers it.
    POD_GROUP = "podgroups.v1alpha1.scheduling.x-k8s.io"
    # The Workload API's PodGroup (scheduling.k8s.io/v1alpha2), fwk.PodGroup upstream.
    WORKLOAD_POD_GROUP = "PodGroup"
    WILDCARD = "*"


class ActionType(enum.IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    # Upstream places it after UpdateNodeAnnotation; the bit values are only ours.
    UPDATE_NODE_DECLARED_FEATURE = 4096
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_NODE_DECLARED_FEATURE
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """Something that changed in the cluster and may make pending pods schedulable:
    a Resource, an ActionType (flags: several actions at once), and a label for logs.

    Example:
        ```python
        from kubesched.framework.interfaces import ClusterEventWithHint, EnqueueExtensions
        from kubesched.framework.interfaces import NodeFilterPlugin
        from kubesched.framework.status import Status
        from kubesched.framework.types import ActionType, ClusterEvent, Resource

        class Untainted(NodeFilterPlugin, EnqueueExtensions):
            name = "Untainted"

            def filter_node(self, state, pod, node):
                tainted = bool(node.node.spec.taints)
                return Status.unschedulable("node(s) are tainted") if tainted else Status.success()

            def events_to_register(self):
                # A node that comes, or loses a taint, may take the pod.
                action = ActionType.ADD | ActionType.UPDATE_NODE_TAINT
                return [ClusterEventWithHint(ClusterEvent(Resource.NODE, action, "NodeTaint"))]
        ```
    """

    resource: Resource
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """Whether this event is one that `registered` (a plugin's interest) covers
        (MatchClusterEvents upstream): this event must be as specific as the
        registration or more, so a plain Update only reaches plugins that
        registered for every kind of update."""
        if registered.resource == Resource.WILDCARD:
            return bool(registered.action & self.action)
        same_resource = registered.resource == self.resource or (
            registered.resource == Resource.POD
            and self.resource in (Resource.ASSIGNED_POD, Resource.UNSCHEDULED_POD)
        )
        return (
            same_resource
            and bool(registered.action & self.action)
            and self.action <= registered.action
        )


# Well-known events the queue itself raises.
EVENT_NODE_ADD = ClusterEvent(Resource.NODE, ActionType.ADD, "NodeAdd")
EVENT_ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(
    Resource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"
)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(
    Resource.UNSCHEDULED_POD, ActionType.UPDATE, "UnscheduledPodUpdate"
)
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(
    Resource.WILDCARD, ActionType.ALL, "UnschedulableTimeout"
)
EVENT_FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, ActionType.ALL, "ForceActivate")
