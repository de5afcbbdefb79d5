"""NodeUnschedulable filter plugin."""

from kubesched.plugins.nodeunschedulable.plugin import NodeUnschedulable

__all__ = ["NodeUnschedulable"]
