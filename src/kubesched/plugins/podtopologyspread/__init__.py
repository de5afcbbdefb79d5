"""PodTopologySpread filter and score plugin."""

from kubesched.plugins.podtopologyspread.plugin import PodTopologySpread

__all__ = ["PodTopologySpread"]
