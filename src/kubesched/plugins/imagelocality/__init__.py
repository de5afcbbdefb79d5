"""ImageLocality score plugin."""

from kubesched.plugins.imagelocality.plugin import ImageLocality

__all__ = ["ImageLocality"]
