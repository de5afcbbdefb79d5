"""TaintToleration filter and score plugin."""

from kubesched.plugins.tainttoleration.plugin import TaintToleration

__all__ = ["TaintToleration"]
