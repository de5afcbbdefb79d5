"""The scheduler: scheduling cycle, binding cycle, failure handling and cluster event handlers."""

from kubesched.scheduler.scheduler import Observer, OutcomeObserver, Scheduler

__all__ = ["Observer", "OutcomeObserver", "Scheduler"]
