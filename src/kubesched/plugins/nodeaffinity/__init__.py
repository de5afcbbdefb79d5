"""NodeAffinity filter and score plugin."""

from kubesched.plugins.nodeaffinity.plugin import NodeAffinity

__all__ = ["NodeAffinity"]
