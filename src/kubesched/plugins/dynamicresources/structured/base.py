"""The allocator's errors and feature switches (shared by allocator.py and search.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kubesched.api.resource import ResourceClaim


class AllocationError(Exception):
    """Allocation cannot be attempted or failed in a way that is not "does not fit": a
    missing class, a selector that does not compile or evaluate, a timeout. The text is
    upstream's (it ends up in the pod's FailedScheduling message)."""


class FailedAllocationOnNode(AllocationError):
    """Allocation failed on this node only (upstream: an error wrapping
    ErrFailedAllocationOnNode, e.g. "invalid resource pools were encountered"): the
    node is unschedulable with this text, other nodes may still work."""


class AllocationTimeout(AllocationError):
    """The search ran past its deadline (context.DeadlineExceeded upstream)."""


@dataclass(frozen=True)
class Features:
    """The DRA feature gates the allocator honours (all on in v1.36.3's defaults)."""

    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    consumable_capacity: bool = True
    binding_conditions: bool = True


DEFAULT_FEATURES = Features()


def random_share_id() -> str:
    """GenerateShareID: a fresh UID."""
    return str(uuid.uuid4())


def claim_ref(claim: ResourceClaim) -> str:
    """klog.KObj(claim)."""
    meta = claim.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
