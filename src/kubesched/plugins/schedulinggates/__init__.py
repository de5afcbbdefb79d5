"""SchedulingGates pre-enqueue plugin."""

from kubesched.plugins.schedulinggates.plugin import SchedulingGates

__all__ = ["SchedulingGates"]
