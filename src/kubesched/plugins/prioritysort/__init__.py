"""PrioritySort queue sort plugin."""

from kubesched.plugins.prioritysort.plugin import PrioritySort

__all__ = ["PrioritySort"]
