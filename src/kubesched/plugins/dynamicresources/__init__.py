"""DynamicResources: Dynamic Resource Allocation with structured parameters."""

from kubesched.plugins.dynamicresources.plugin import DynamicResources

__all__ = ["DynamicResources"]
