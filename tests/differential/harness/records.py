"""What the harness's parts share: the scheduler name and the two sides, the kinds
and modes of disagreements, HarnessError, the records of a run (Step, Run), of a
comparison (Disagreement, Prediction, Comparison), and the status.startTime the
harness gives each bound pod (START_TIME_BASE, start_times)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.differential.generator.dra import POD_CLAIM_NAMES

SCHEDULER_NAME = "differential"
KUBE = "kube-scheduler"
KUBESCHED = "kubesched"
SIDES = (KUBE, KUBESCHED)

# Disagreement kinds. "bound", "message", "event" and "state" are what the CI
# test asserts on; "node" where the best score is unique; "predict" when the
# kubesched process chose a node its own framework does not rank best.
# "claims": a pod bound in both runs whose claims are not allocated alike (dra).
# "attempts": a pod the schedulers attempted a different number of times where
# that number is deterministic (see compare.compare_attempts), or whose last
# FailedScheduling message differs at the end of runs that never diverged.
KINDS = ("bound", "message", "event", "node", "state", "claims", "predict", "error", "attempts")
STRICT_KINDS = ("bound", "message", "event", "state", "claims", "error")

# How a disagreement was seen: the two runs in the same state; kube-scheduler's
# run against kubesched's framework in-process on kube-scheduler's state (after
# the states diverged); kubesched's run against its own framework in-process.
MODE_DIRECT = "direct"
MODE_KUBE = "kube-scheduler vs kubesched in-process"
MODE_KS = "kubesched run vs kubesched in-process"
MODES = (MODE_DIRECT, MODE_KUBE, MODE_KS)

# status.startTime the harness gives a bound pod (what a kubelet would report): this
# base plus the pod's index in the scenario, in whole seconds (RFC 3339 has second
# resolution). Without it, util.GetPodStartTime returns time.Now() at each call, and
# preemption's victim order among pods of equal priority (MoreImportantPod inside
# sort.Slice) and pickOneNodeForPreemption's last criterion are left to call order.
START_TIME_BASE = datetime(2024, 1, 1, tzinfo=UTC)


class HarnessError(RuntimeError):
    """The harness could not run the scenario (not a scheduler disagreement)."""


# --------------------------------------------------------------------- results
@dataclass
class Step:
    pod: str
    outcome: str  # bound | unschedulable | error | timeout | rejected | created
    node: str | None = None  # logical node name
    reason: str = ""
    message: str = ""
    nominated: str | None = None
    # After the step: every pod of the run that exists -> logical node or None.
    placements: dict[str, str | None] = field(default_factory=dict)
    seconds: float = 0.0
    created: dict[str, Any] = field(default_factory=dict, repr=False)  # as the API stored it
    # Wall-clock time (time.time()) just before the pod was created: events the
    # schedulers recorded (eventTime) before it come from the steps before.
    began: float | None = None
    # dra: the run's ResourceClaims after the step (by name, as the API had them), and
    # per pod its status.resourceClaimStatuses (the claims made from its templates).
    claims: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    claim_statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    # gangs: the PodGroup the pod belongs to. Such a step is placed with its whole
    # group (no single-pod prediction); a member before the gang's last is only
    # created (outcome "created"), the last one's step waits for the whole gang.
    group: str = ""


@dataclass
class Run:
    side: str
    namespace: str
    steps: list[Step] = field(default_factory=list)
    events: dict[str, list[str]] = field(default_factory=dict)  # FailedScheduling messages
    # Per pod, parallel to events: when each message was first recorded (eventTime,
    # time.time() scale); absent: every message counts wherever events are compared.
    event_times: dict[str, list[float]] = field(default_factory=dict)
    final: dict[str, str | None] = field(default_factory=dict)
    # Per unbound pod, its PodScheduled=False message once the run settled.
    conditions: dict[str, str] = field(default_factory=dict)
    log: str = ""
    nodes: list[dict[str, Any]] = field(default_factory=list, repr=False)
    # The run's Namespace, PDBs, PVs and PVCs as the API server had them when the
    # scheduler started (after kube-controller-manager acted on them).
    objects: list[dict[str, Any]] = field(default_factory=list, repr=False)
    # Seconds spent per phase: start (scheduler up), steps, settle, cleanup.
    timings: dict[str, float] = field(default_factory=dict)
    # Per pod, when each of its scheduling attempts began (time.time() scale), from
    # the scheduler's "Attempting to schedule pod" log lines (attempts_in_log); None
    # if the log was not read or not verbose enough (ATTEMPT_VERBOSITY).
    attempts: dict[str, list[float]] | None = None
    # Where the scenario's extenders were served during the run (harness/extenders.py),
    # in the specs' order: the in-process re-run calls the same servers.
    extender_urls: list[str] = field(default_factory=list)


@dataclass
class Disagreement:
    kind: str
    step: int
    pod: str
    kube: Any
    kubesched: Any
    detail: str = ""
    mode: str = "direct"  # see MODES

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Prediction:
    """kubesched's framework, in-process, on the state before a step."""

    feasible: list[str]
    totals: dict[str, int]  # logical node -> weighted score total (feasible nodes)
    best: list[str]
    message: str = ""  # the FitError text when nothing is feasible
    by_plugin: dict[str, dict[str, int]] = field(default_factory=dict)  # weighted scores
    # When nothing is feasible and preemption nominates a node: the nodes preemption
    # may nominate (the candidates pickOneNodeForPreemption leaves tied) and, per
    # candidate, the victims. The pod is then bound there once the victims are gone
    # (kube-scheduler tries a pod's nominated node first).
    preemption: list[str] = field(default_factory=list)
    victims: dict[str, list[str]] = field(default_factory=dict)
    # The attempt fails as an error (an extender that is not ignorable failed):
    # message is the error's text, the pod's SchedulerError condition.
    error: bool = False

    @property
    def choices(self) -> list[str]:
        """Where the pod may be bound: the best-scored feasible nodes, or else the
        nodes preemption may nominate."""
        return self.best if self.feasible else self.preemption

    @property
    def unique(self) -> bool:
        return len(self.choices) == 1


@dataclass
class PodAttempts:
    """One pod in one run: how many times the scheduler attempted it (None: its log
    does not say), per step window (attempts after step i's pod was created and
    before the next one was: steps[i].began), and its first and last FailedScheduling
    messages (the first event note; the PodScheduled condition once the run settled)."""

    count: int | None
    windows: dict[int, int] = field(default_factory=dict)
    first: str = ""
    last: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    scenario: str
    steps: int = 0
    compared: int = 0
    bound_agree: int = 0
    unbound_both: int = 0
    message_agree: int = 0
    bound_both: int = 0
    unique: int = 0
    unique_agree: int = 0
    ties: int = 0
    swaps: int = 0
    indirect: int = 0  # steps compared through in-process predictions
    # gangs: steps of gang pods after the states diverged, which no in-process
    # prediction can judge (the pod group cycle places the gang together).
    unjudged: int = 0
    # dra: pods bound in both runs (directly compared) that have claims; of them, those
    # whose claims are allocated alike (see harness.dra.allocations).
    claims: int = 0
    claims_agree: int = 0
    # gangs: alike members whose FailedScheduling notes agree only as a set (the order
    # kube-scheduler tries them in is random: see compare._alike_members_swapped).
    member_orders: int = 0
    # Pods whose number of attempts was compared (deterministic in both runs, see
    # compare.compare_attempts), and of them those attempted alike.
    attempts: int = 0
    attempts_agree: int = 0
    # The same of kube-scheduler's run against kubesched's simulator given the pods
    # one at a time (harness.stepped), where it can load the scenario.
    simulated: int = 0
    simulated_agree: int = 0
    # Per pod and side: its attempts (all, in the run's log), first and last
    # FailedScheduling message (first event note, PodScheduled condition at the end).
    pod_attempts: dict[str, dict[str, PodAttempts]] = field(default_factory=dict, repr=False)
    diverged_at: int | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict, repr=False)
    predictions: dict[str, Prediction] = field(default_factory=dict, repr=False)

    def failures(self, kinds: Sequence[str] = KINDS) -> list[Disagreement]:
        return [d for d in self.disagreements if d.kind in kinds]

    @property
    def ok(self) -> bool:
        return not self.disagreements

    def summary(self) -> str:
        text = (
            f"{self.scenario}: {self.compared}/{self.steps} steps compared "
            f"({self.indirect} in-process), "
            f"bound {self.bound_agree}/{self.compared}, "
            f"messages {self.message_agree}/{self.unbound_both}, "
            f"unique nodes {self.unique_agree}/{self.unique} ({self.ties} ties, "
            f"{self.swaps} swaps)"
        )
        if self.claims:
            text += f", claims {self.claims_agree}/{self.claims}"
        if self.member_orders:
            text += f", {self.member_orders} gang members' notes in another order"
        if self.attempts:
            text += f", attempts {self.attempts_agree}/{self.attempts}"
        if self.simulated:
            text += f" (simulate {self.simulated_agree}/{self.simulated})"
        if self.diverged_at is not None:
            text += f", states diverged after a tie at step {self.diverged_at}"
        if self.unjudged:
            text += f", {self.unjudged} gang steps not judged after the states diverged"
        for d in self.disagreements:
            left, right = ("in-process", "kubesched") if d.mode == MODE_KS else (KUBE, KUBESCHED)
            text += (
                f"\n  {d.kind} at step {d.step} ({d.pod}, {d.mode}): "
                f"{left}={d.kube!r} {right}={d.kubesched!r}"
            )
            if d.detail:
                text += f" [{d.detail}]"
        return text

    def report(self) -> dict[str, Any]:
        """What a regression file keeps of the comparison."""
        out: dict[str, Any] = {
            "disagreements": [d.as_dict() for d in self.disagreements],
            "steps": {},
        }
        for side, run in self.runs.items():
            out["steps"][side] = [
                {
                    "pod": s.pod,
                    "outcome": s.outcome,
                    **({"node": s.node} if s.node else {}),
                    **({"message": s.message} if s.message else {}),
                }
                for s in run.steps
            ]
        if self.pod_attempts:
            out["attempts"] = {
                pod: {side: got.as_dict() for side, got in sides.items()}
                for pod, sides in self.pod_attempts.items()
            }
        return out


# kube-scheduler logs "Attempting to schedule pod" at V(3) once per scheduling cycle
# of a pod (scheduleOnePod, after skipPodSchedule), kubesched likewise (SchedulingCycle.
# schedule_one). A pod group's cycle logs "Attempting to schedule pod group" instead.
ATTEMPT_VERBOSITY = 3
_ATTEMPT_LINE = re.compile(
    r'^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6}) .*?"Attempting to schedule pod" '
    r'pod="([^"/]+)/([^"]+)"'
)


def attempts_in_log(text: str, namespace: str, near: float) -> dict[str, list[float]]:
    """Per pod of NAMESPACE, when each scheduling attempt began, from a klog text
    log (either scheduler's). klog's header has no year and is in local time: the
    year is NEAR's (a time.time() of the run), or the one before if that would put
    the line more than a day after NEAR (a run across New Year)."""
    year = datetime.fromtimestamp(near).year
    out: dict[str, list[float]] = {}
    for line in text.splitlines():
        m = _ATTEMPT_LINE.match(line)
        if m is None or m.group(7) != namespace:
            continue
        month, day, hour, minute, second, micro = (int(g) for g in m.groups()[:6])
        when = datetime(year, month, day, hour, minute, second, micro).timestamp()
        if when > near + 86400:
            when = datetime(year - 1, month, day, hour, minute, second, micro).timestamp()
        out.setdefault(m.group(8), []).append(when)
    return out


def start_times(scenario: Mapping[str, Any]) -> dict[str, str]:
    """The status.startTime the harness gives each pod of SCENARIO once it is bound:
    START_TIME_BASE plus the pod's index in the scenario, in seconds."""
    return {
        pod["name"]: (START_TIME_BASE + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for i, pod in enumerate(scenario["pods"])
    }


# A claim the resourceclaim controller generated: "<pod>-<pod claim>-" and 5 random characters.
_GENERATED_CLAIM = re.compile(
    rf"\b(p\d\d+-(?:{'|'.join(map(re.escape, POD_CLAIM_NAMES))})-)[a-z0-9]{{5}}\b"
)


def normalise_claim_names(message: str) -> str:
    """Generated claim names differ between runs: their random suffix -> <generated>."""
    return _GENERATED_CLAIM.sub(r"\1<generated>", message)
