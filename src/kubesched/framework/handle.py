"""Handle: what the framework lends to plugins (framework.Handle upstream)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubesched.api.objects import PriorityClass
from kubesched.cache.node_table import NodeTable
from kubesched.framework.clock import Clock, SimClock

if TYPE_CHECKING:
    from kubesched.cluster.client import ClusterClient
    from kubesched.framework.waiting import WaitingPods


@dataclass
class Handle:
    nodes: NodeTable
    clock: Clock = field(default_factory=SimClock)
    cluster: ClusterClient | None = None
    waiting_pods: WaitingPods | None = None
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    parallelism: int = 16
    # Ask the queue to retry pods (used by plugins that free or reserve resources).
    activate: Callable[[list[str]], None] = lambda keys: None
