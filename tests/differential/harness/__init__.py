"""Run one scenario through kube-scheduler and through kubesched on a real control plane.

For a scenario (see the generator package) the harness

1. creates the PriorityClasses (shared, fixed) and the nodes, named
   ``<prefix>-n0``...; the nodes stay for both runs and nothing else may be in
   the cluster (a foreign node would change every "0/N nodes" count);
2. writes ONE KubeSchedulerConfiguration file (profile ``schedulerName:
   differential``) and runs, one after the other, the real kube-scheduler and
   ``kubesched run`` with it, each in a fresh namespace with the scenario's PDBs,
   PersistentVolumes and claims: once the cluster's kube-controller-manager has
   bound the claims and written the PDBs' status, the scheduler is
   started, then the pods are created one at a time, each one only after the
   previous one was bound or got its Unschedulable condition, so both schedulers
   see the same sequence of states. After each pod the namespace's placements are
   recorded. The scheduler is stopped, its pods deleted (grace 0), and the other
   one runs on the same nodes;
3. compares the runs step by step (:func:`compare`): bound or not, the
   FailedScheduling text (PodScheduled condition and events), and the node,
   wherever kubesched's own framework, re-run in-process on the same state
   (:func:`score_step`), says the best score is unique (on a tie, kube-scheduler's
   pick must still be among kubesched's best). Ties are broken at random by both
   schedulers: if they pick different but interchangeable nodes (same relevant
   labels, taints, capacity, images and pods) the comparison goes on with the two
   names swapped. Otherwise the two states differ from that step on, and each run
   is checked against kubesched's framework re-run in-process on that run's own
   state: kube-scheduler's decisions are still compared with kubesched's on
   the same state, and the kubesched process with its own framework.

This package's modules: records (names, errors and the records of runs and
comparisons), runner (Harness, which drives the control plane), compare (the
step-by-step comparison), inprocess (kubesched's framework and simulator
in-process), report (totals and regression files). Every name other modules use
is importable from the package.
"""

from __future__ import annotations

from tests.differential.harness.compare import compare, events_agree, events_before, isomorphic
from tests.differential.harness.inprocess import namespace_objects, score_step, simulate
from tests.differential.harness.records import (
    KINDS,
    KUBE,
    KUBESCHED,
    MODE_DIRECT,
    MODE_KS,
    MODE_KUBE,
    MODES,
    SCHEDULER_NAME,
    SIDES,
    START_TIME_BASE,
    STRICT_KINDS,
    Comparison,
    Disagreement,
    HarnessError,
    Prediction,
    Run,
    Step,
    start_times,
)
from tests.differential.harness.report import Totals, regression_document
from tests.differential.harness.runner import POLL, QUIET, STEP_TIMEOUT, Harness, unique_prefix

__all__ = [
    "KINDS",
    "KUBE",
    "KUBESCHED",
    "MODES",
    "MODE_DIRECT",
    "MODE_KS",
    "MODE_KUBE",
    "POLL",
    "QUIET",
    "SCHEDULER_NAME",
    "SIDES",
    "START_TIME_BASE",
    "STEP_TIMEOUT",
    "STRICT_KINDS",
    "Comparison",
    "Disagreement",
    "Harness",
    "HarnessError",
    "Prediction",
    "Run",
    "Step",
    "Totals",
    "compare",
    "events_agree",
    "events_before",
    "isomorphic",
    "namespace_objects",
    "regression_document",
    "score_step",
    "simulate",
    "start_times",
    "unique_prefix",
]
