"""The scheduler (pkg/scheduler upstream): the Scheduler (scheduler.py), which builds
and wires the objects that do its work: the scheduling cycle (schedule_one.py), the
binding cycle (binding_cycle.py), the FailureHandler every failed attempt ends in
(failure.py), the pod group cycle (podgroup_cycle.py, podgroup_algorithm.py), the
explanations (explain.py), the cluster event handlers (eventhandlers.py) and the
batch window (batch_window.py); what they tell listeners is listeners.py's."""

from kubesched.scheduler.listeners import Observer, OutcomeObserver
from kubesched.scheduler.scheduler import Scheduler

__all__ = ["Observer", "OutcomeObserver", "Scheduler"]
