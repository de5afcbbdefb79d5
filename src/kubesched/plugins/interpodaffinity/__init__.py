"""InterPodAffinity filter and score plugin."""

from kubesched.plugins.interpodaffinity.plugin import InterPodAffinity

__all__ = ["InterPodAffinity"]
