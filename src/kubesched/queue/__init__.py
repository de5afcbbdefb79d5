"""The scheduling queue: activeQ, backoffQ, the unschedulable pool and event-driven requeue."""

from kubesched.queue.scheduling_queue import SchedulingQueue

__all__ = ["SchedulingQueue"]
