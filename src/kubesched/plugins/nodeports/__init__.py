"""NodePorts filter plugin."""

from kubesched.plugins.nodeports.plugin import NodePorts

__all__ = ["NodePorts"]
