"""Allocator: finds devices for a pod's claims on one node (structured.Allocator).

THE INTERFACE BELOW IS FIXED (the DynamicResources plugin codes against it); the
body is being written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubesched.api.objects import Node
from kubesched.api.resource import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.framework.dra import AllocatedState


class AllocationError(Exception):
    """Allocation cannot be attempted or failed in a way that is not "does not fit": a
    missing class, a selector that does not compile or evaluate, a timeout. The text is
    upstream's (it ends up in the pod's FailedScheduling message)."""


@dataclass(frozen=True)
class Features:
    """The DRA feature gates the allocator honours (all on in v1.36.3's defaults)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    consumable_capacity: bool = True
    binding_conditions: bool = True


class Allocator:
    """Built once per scheduling cycle of a pod (PreFilter) for the claims that need an
    allocation; `allocate` runs once per node (Filter)."""

    def __init__(
        self,
        claims: Sequence[ResourceClaim],
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice],
        features: Features = Features(),
    ) -> None:
        self.claims = claims
        self.allocated = allocated
        self.classes = classes
        self.slices = slices
        self.features = features

    def allocate(self, node: Node) -> list[AllocationResult] | None:
        """One AllocationResult per claim, in the claims' order, for devices usable on
        `node`; None when they do not all fit there (upstream: nil, nil). Raises
        AllocationError for the other failures."""
        raise NotImplementedError
