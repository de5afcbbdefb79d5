"""NodeName filter plugin."""

from kubesched.plugins.nodename.plugin import NodeName

__all__ = ["NodeName"]
