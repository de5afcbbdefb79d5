"""Batch placement: a set of pending pods placed jointly by a solver, never worse
than the one-at-a-time greedy placement kube-scheduler makes (issue 17)."""

from kubesched.batch.engine import BatchPlacement, Objective, place_batch
from kubesched.batch.solver import load_cp_model

__all__ = ["BatchPlacement", "Objective", "load_cp_model", "place_batch"]
