"""The scheduler: scheduling cycle, binding cycle, failure handling and cluster event handlers."""

from kubesched.scheduler.listeners import Observer, OutcomeObserver
from kubesched.scheduler.scheduler import Scheduler

__all__ = ["Observer", "OutcomeObserver", "Scheduler"]
