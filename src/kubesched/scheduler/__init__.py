"""The scheduler: scheduling cycle, binding cycle, failure handling and cluster event handlers."""

from kubesched.scheduler.scheduler import Outcome, Scheduler

__all__ = ["Outcome", "Scheduler"]
