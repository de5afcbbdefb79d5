"""NodeResourcesFit and NodeResourcesBalancedAllocation (noderesources upstream)."""

from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.noderesources.args import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
)
from kubesched.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.plugins.noderesources.fit import NodeResourcesFit

__all__ = [
    "ArgsError",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesBalancedAllocationArgs",
    "NodeResourcesFit",
    "NodeResourcesFitArgs",
    "ResourceSpec",
]
