"""NodeResourcesFit and NodeResourcesBalancedAllocation (noderesources upstream)."""

from kubesched.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.plugins.noderesources.fit import NodeResourcesFit
from kubesched.plugins.noderesources.resource_allocation import ArgsError, ResourceSpec

__all__ = [
    "ArgsError",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "ResourceSpec",
]
