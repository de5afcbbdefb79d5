"""Why a pod fits no node: the Diagnosis and the FailedScheduling text, worded as
kube-scheduler words it (Diagnosis and FitError.Error in framework/types.go)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kubesched.framework.state.node_table import Rows
from kubesched.framework.status import Code, Status

_NO_ROWS: Rows = np.empty(0, np.intp)
_NO_ROWS.flags.writeable = False
_NO_CODES: npt.NDArray[np.int8] = np.empty(0, np.int8)
_NO_CODES.flags.writeable = False


@dataclass(slots=True)
class Diagnosis:
    """Why a pod fits no node: per-node codes and reasons, as kube-scheduler's Diagnosis."""

    rows: Rows  # nodes that failed, in evaluation order
    codes: npt.NDArray[np.int8]  # their codes, aligned with rows
    plugins: list[str]  # the failing plugin of each row
    reasons: list[tuple[str, Rows]] = field(default_factory=list)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_message: str = ""
    post_filter_message: str = ""
    # Status for nodes that were never evaluated (PreFilter rejected, or left out
    # by a PreFilter node set), and how many such nodes there are.
    absent_status: Status | None = None
    absent_count: int = 0

    @classmethod
    def empty(cls) -> Diagnosis:
        # Shared read-only empties: the arrays are only ever replaced, never changed.
        return cls(_NO_ROWS, _NO_CODES, [])

    def reason_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for reason, rows in self.reasons:
            counts[reason] = counts.get(reason, 0) + len(rows)
        if self.absent_status is not None and self.absent_count:
            for reason in self.absent_status.reasons:
                counts[reason] = counts.get(reason, 0) + self.absent_count
        return counts

    def reasons_of(self, row: int) -> list[str]:
        return [reason for reason, rows in self.reasons if row in rows]

    def code_of(self, row: int) -> Code | None:
        hit = np.nonzero(self.rows == row)[0]
        return Code(int(self.codes[hit[0]])) if len(hit) else None

    def status_of(self, row: int) -> Status | None:
        """The Filter status of a node that failed (None if it did not)."""
        hit = np.nonzero(self.rows == row)[0]
        if not len(hit):
            return None
        index = int(hit[0])
        return Status(Code(int(self.codes[index])), self.reasons_of(row), self.plugins[index])

    def extend(self, other: Diagnosis) -> None:
        """Add the failed nodes of `other` (which this one does not have)."""
        self.rows = np.concatenate([self.rows, other.rows])
        self.codes = np.concatenate([self.codes, other.codes])
        self.plugins = [*self.plugins, *other.plugins]
        self.reasons.extend(other.reasons)
        self.unschedulable_plugins |= other.unschedulable_plugins
        self.pending_plugins |= other.pending_plugins

    def sort_rows(self, order: Rows, capacity: int) -> None:
        """Put the failed nodes in the order they have in `order`."""
        position = np.empty(capacity, dtype=np.intp)
        position[order] = np.arange(len(order))
        ranks = np.argsort(position[self.rows], kind="stable")
        self.rows = self.rows[ranks]
        self.codes = self.codes[ranks]
        self.plugins = [self.plugins[int(i)] for i in ranks]


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
