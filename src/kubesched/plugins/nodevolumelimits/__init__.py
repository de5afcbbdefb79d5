"""NodeVolumeLimits (CSI volume limits) filter plugin."""

from kubesched.plugins.nodevolumelimits.plugin import NodeVolumeLimits

__all__ = ["NodeVolumeLimits"]
