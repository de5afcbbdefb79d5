"""Scheduler extenders: their configuration and the interface the scheduler and
DefaultPreemption call (fwk.Extender in kube-scheduler v1.36.3's
staging/src/k8s.io/kube-scheduler/framework/extender.go; the HTTP implementation is
kubesched.scheduler.extender, as pkg/scheduler/extender.go upstream).

An extender is an HTTP service named in the configuration file's `extenders:`. It
filters the nodes the plugins found feasible, adds weighted scores after
normalisation, may narrow preemption's victims, and may bind instead of the bind
plugins. Extenders are the scheduler's, not a profile's: every profile calls them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kubesched.api.objects import Node, Pod

# The extender protocol's score range (extenderv1.MaxExtenderPriority); the
# scheduler scales a score by MaxNodeScore / MaxExtenderPriority.
MAX_EXTENDER_PRIORITY = 10
# The default httpTimeout (DefaultExtenderTimeout in extender.go).
DEFAULT_EXTENDER_TIMEOUT = 5.0
# What the scheduler puts in a pod's unschedulable plugins when an extender
# rejected nodes (framework.ExtenderName): any cluster event then retries the pod.
EXTENDER_NAME = "Extender"


@dataclass(frozen=True, slots=True)
class ExtenderTLS:
    """An extender's tlsConfig (ExtenderTLSConfig upstream). *Data fields are PEM
    bytes and take precedence over the matching *File."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """One entry of the configuration file's `extenders:`, checked and defaulted."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls: ExtenderTLS | None = None
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT
    node_cache_capable: bool = False
    # managedResources: name -> ignoredByScheduler.
    managed_resources: Mapping[str, bool] = field(default_factory=dict)
    ignorable: bool = False

    @property
    def ignored_resources(self) -> list[str]:
        """The managed resources NodeResourcesFit leaves to this extender."""
        return [name for name, ignored in self.managed_resources.items() if ignored]


class ExtenderError(Exception):
    """An extender's verb failed: it could not be reached, answered with a status
    other than 200, sent a body that does not decode, or reported an error. The
    text is what the FailedScheduling event says."""


@dataclass(frozen=True, slots=True)
class FilterResult:
    """What an extender's filter verb answered (ExtenderFilterResult upstream):
    the node names kept, in its order, and the rejected ones with their messages."""

    nodes: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)
    # The answer listed whole Nodes (an extender that is not nodeCacheCapable):
    # upstream then goes on with new NodeInfos made from them, without their pods
    # or images, and scores those (HTTPExtender.Filter's NewNodeInfo + SetNode).
    as_new_nodes: bool = False


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods preemption would evict on one node, and how many PDBs that breaks
    (extenderv1.Victims)."""

    pods: list[Pod]
    num_pdb_violations: int = 0


class Extender(Protocol):
    """What the scheduler calls on an extender (fwk.Extender upstream)."""

    @property
    def name(self) -> str:
        """The extender's urlPrefix: it names the extender in logs, messages and
        explanations."""
        ...

    @property
    def ignorable(self) -> bool:
        """A failure of this extender skips it instead of failing the pod."""
        ...

    @property
    def is_filter(self) -> bool: ...

    @property
    def is_prioritizer(self) -> bool: ...

    @property
    def is_binder(self) -> bool: ...

    @property
    def supports_preemption(self) -> bool: ...

    def is_interested(self, pod: Pod) -> bool:
        """True unless the extender manages resources and the pod requests none of them."""
        ...

    def close(self) -> None:
        """Release its connections (the scheduler that used it is done)."""
        ...

    def filter(self, pod: Pod, nodes: Sequence[Node]) -> FilterResult:
        """The nodes of `nodes` the pod may go to. Raises ExtenderError."""
        ...

    def prioritize(self, pod: Pod, nodes: Sequence[Node]) -> tuple[dict[str, int], int]:
        """Each node's score (0 to MAX_EXTENDER_PRIORITY) and the extender's weight.
        Raises ExtenderError."""
        ...

    def bind(self, pod: Pod, node: str) -> None:
        """Bind the pod to the node. Raises ExtenderError."""
        ...

    def process_preemption(
        self,
        pod: Pod,
        victims: Mapping[str, Victims],
        pods_on_node: Mapping[str, Sequence[Pod]],
    ) -> dict[str, Victims]:
        """The candidates the extender keeps, each with the victims it agrees to;
        `pods_on_node` resolves the pod UIDs it answers with. Raises ExtenderError."""
        ...


def managed_resources_requested(pod: Pod, managed: Mapping[str, bool]) -> bool:
    """Whether a container or init container of the pod requests or limits one of
    the managed resources (IsInterested and hasManagedResources in extender.go)."""
    if not managed:
        return True
    for container in (*pod.spec.containers, *pod.spec.init_containers):
        resources = container.resources
        if any(name in managed for name in resources.requests) or any(
            name in managed for name in resources.limits
        ):
            return True
    return False
