"""The FailedScheduling text, worded as kube-scheduler words it (FitError.Error)."""

from __future__ import annotations

from kubesched.framework.runtime import Diagnosis

NO_NODE_AVAILABLE = "0/{} nodes are available"
NO_NODES_AT_ALL = "no nodes available to schedule pods"


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """`0/N nodes are available: <sorted "count reason" list>.` plus PreFilter and
    PostFilter messages. Reasons are sorted as strings, so "10 X" sorts before "2 Y",
    exactly as upstream does."""
    message = NO_NODE_AVAILABLE.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_message:
        message += f" {diagnosis.pre_filter_message}."
    else:
        counted = sorted(f"{count} {reason}" for reason, count in diagnosis.reason_counts().items())
        if counted:
            message += f" {', '.join(counted)}."
    if diagnosis.post_filter_message:
        message += f" {diagnosis.post_filter_message}"  # upstream adds no period here
    return message
