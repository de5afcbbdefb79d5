"""Batch placement: a set of pending pods placed jointly by a solver, never worse
than the one-at-a-time greedy placement kube-scheduler makes (issue 17)."""

from kubesched.batch.engine import BatchPlacement, Objective, load_solvers, place_batch

__all__ = ["BatchPlacement", "Objective", "load_solvers", "place_batch"]
