"""Run one scenario through kube-scheduler and through kubesched on a real control plane.

For a scenario (see generator.py) the harness

1. creates the PriorityClasses (shared, fixed) and the nodes, named
   ``<prefix>-n0``...; the nodes stay for both runs and nothing else may be in
   the cluster (a foreign node would change every "0/N nodes" count);
2. writes ONE KubeSchedulerConfiguration file (profile ``schedulerName:
   differential``) and runs, one after the other, the real kube-scheduler and
   ``kubesched run`` with it, each in a fresh namespace: the scheduler is
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
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.differential import generator as gen
from tests.integration.conftest import (
    AdminApi,
    ApiError,
    ControlPlane,
    event_fields,
    start_kube_scheduler,
)
from tests.integration.kubesched_proc import start_kubesched

SCHEDULER_NAME = "differential"
KUBE = "kube-scheduler"
KUBESCHED = "kubesched"
SIDES = (KUBE, KUBESCHED)

# Disagreement kinds. "bound", "message", "event" and "state" are what the CI
# test asserts on; "node" where the best score is unique; "predict" when the
# kubesched process chose a node its own framework does not rank best.
KINDS = ("bound", "message", "event", "node", "state", "predict", "error")
STRICT_KINDS = ("bound", "message", "event", "state", "error")

# How a disagreement was seen: the two runs in the same state; kube-scheduler's
# run against kubesched's framework in-process on kube-scheduler's state (after
# the states diverged); kubesched's run against its own framework in-process.
MODE_DIRECT = "direct"
MODE_KUBE = "kube-scheduler vs kubesched in-process"
MODE_KS = "kubesched run vs kubesched in-process"
MODES = (MODE_DIRECT, MODE_KUBE, MODE_KS)

STEP_TIMEOUT = 30.0
POLL = 0.05
# After a step that bound or evicted pods while earlier pods are pending: how long no
# pod may change before the next pod is created (retries woken by the step land first).
QUIET = 0.3
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
    outcome: str  # bound | unschedulable | error | timeout | rejected
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
    # Seconds spent per phase: start (scheduler up), steps, settle, cleanup.
    timings: dict[str, float] = field(default_factory=dict)


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

    @property
    def choices(self) -> list[str]:
        """Where the pod may be bound: the best-scored feasible nodes, or else the
        nodes preemption may nominate."""
        return self.best if self.feasible else self.preemption

    @property
    def unique(self) -> bool:
        return len(self.choices) == 1


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
        if self.diverged_at is not None:
            text += f", states diverged after a tie at step {self.diverged_at}"
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
        return out


# --------------------------------------------------------------------- the harness
_counter = 0


def unique_prefix() -> str:
    global _counter
    _counter += 1
    return f"d{_counter}{secrets.token_hex(2)}"


class Harness:
    """Runs scenarios on control plane CP; WORKDIR keeps configs and logs."""

    def __init__(
        self,
        cp: ControlPlane,
        workdir: Path,
        *,
        step_timeout: float = STEP_TIMEOUT,
        kubesched_seed: int = 1,
        log: Callable[[str], None] | None = None,
        sabotage: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        kube_verbosity: int = 2,
        kubesched_verbosity: int | None = None,
    ) -> None:
        """SABOTAGE (for testing the harness only) changes the configuration file of
        the kubesched run, so that the two schedulers really disagree."""
        self.cp = cp
        self.api = AdminApi(cp)
        # For watches (a stream each; the API client's connection stays free).
        self._watcher = httpx.Client(
            base_url=cp.url,
            verify=cp.ssl_context(client_cert=True),
            headers={"Accept": "application/json", "User-Agent": "kubesched-differential"},
        )
        self.workdir = workdir
        self.step_timeout = step_timeout
        self.kubesched_seed = kubesched_seed
        self.say = log or (lambda _msg: None)
        self.sabotage = sabotage
        self.kube_verbosity = kube_verbosity  # 10 logs every plugin's score per node
        self.kubesched_verbosity = kubesched_verbosity  # kubesched run -v

    def close(self) -> None:
        self.api.close()
        self._watcher.close()

    # ----------------------------------------------------------------- one scenario
    def run(self, scenario: Mapping[str, Any]) -> Comparison:
        prefix = unique_prefix()
        names = {n["name"]: f"{prefix}-{n['name']}" for n in scenario["nodes"]}
        work = self.workdir / f"{scenario['name']}-{prefix}"
        work.mkdir(parents=True, exist_ok=True)
        (work / "scenario.yaml").write_text(yaml.safe_dump(dict(scenario), sort_keys=False))
        config = gen.scheduler_config(scenario, SCHEDULER_NAME, str(self.cp.scheduler_kubeconfig))
        config_path = work / "config.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        paths = {KUBE: config_path, KUBESCHED: config_path}
        if self.sabotage is not None:
            paths[KUBESCHED] = work / "config-sabotaged.yaml"
            sabotaged = self.sabotage(copy.deepcopy(config))
            paths[KUBESCHED].write_text(yaml.safe_dump(sabotaged, sort_keys=False))
        runs: dict[str, Run] = {}
        try:
            self._ensure_priority_classes()
            nodes = self._create_nodes(scenario, names)
            for side in SIDES:
                ns = f"{prefix}-{'kube' if side == KUBE else 'ks'}"
                runs[side] = self._run_side(side, scenario, ns, prefix, names, paths[side], work)
                runs[side].nodes = nodes
        finally:
            self._delete_nodes(names.values())
        comparison = compare(scenario, runs[KUBE], runs[KUBESCHED], names)
        (work / "comparison.txt").write_text(comparison.summary() + "\n")
        return comparison

    # ----------------------------------------------------------------- setup
    def _ensure_priority_classes(self) -> None:
        for manifest in gen.priority_class_manifests():
            try:
                self.api.post("/apis/scheduling.k8s.io/v1/priorityclasses", manifest)
            except ApiError as exc:
                if exc.code != 409:
                    raise

    def _create_nodes(
        self, scenario: Mapping[str, Any], names: Mapping[str, str]
    ) -> list[dict[str, Any]]:
        foreign = [n["metadata"]["name"] for n in self.api.list_nodes()]
        if foreign:
            raise HarnessError(
                f"the cluster must have no nodes but this scenario's; found {foreign[:5]}"
            )
        created = []
        for node in scenario["nodes"]:
            manifest = gen.node_manifest(node, names[node["name"]])
            created.append(self.api.post("/api/v1/nodes", manifest))
        return created

    def _delete_nodes(self, names: Iterable[str]) -> None:
        for name in names:
            with contextlib.suppress(ApiError, httpx.HTTPError):
                self.api.delete_node(name)

    def _create_namespace_objects(
        self, scenario: Mapping[str, Any], ns: str, prefix: str
    ) -> list[str]:
        """Namespace, PDBs and volumes of one run; the PV names to delete afterwards."""
        self.api.create_namespace(ns, labels={"kubesched.test/differential": prefix})
        for pdb in scenario.get("pdbs", []):
            self.api.post(
                f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
                gen.pdb_manifest(pdb, ns),
            )
        volumes = scenario.get("volumes")
        if not volumes:
            return []
        pvs, pvcs = gen.volume_manifests(volumes, ns, ns)
        for pv in pvs:
            self.api.post("/api/v1/persistentvolumes", pv)
            self.api.patch(
                f"/api/v1/persistentvolumes/{pv['metadata']['name']}/status",
                {"status": {"phase": "Bound"}},
                "merge-patch",
            )
        for pvc in pvcs:
            self.api.post(f"/api/v1/namespaces/{ns}/persistentvolumeclaims", pvc)
            self.api.patch(
                f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{pvc['metadata']['name']}/status",
                {"status": {"phase": "Bound", "accessModes": pvc["spec"]["accessModes"]}},
                "merge-patch",
            )
        return [pv["metadata"]["name"] for pv in pvs]

    # ----------------------------------------------------------------- one run
    def _start(self, side: str, config_path: Path, work: Path) -> Any:
        if side == KUBE:
            try:
                return start_kube_scheduler(self.cp, config_path, verbosity=self.kube_verbosity)
            except RuntimeError as exc:
                raise HarnessError(f"kube-scheduler did not start: {exc}") from exc
        proc = start_kubesched(
            self.cp,
            work,
            "--config",
            str(config_path),
            "--no-leader-elect",
            "--seed",
            str(self.kubesched_seed),
            *(
                ("-v", str(self.kubesched_verbosity))
                if self.kubesched_verbosity is not None
                else ()
            ),
            name="kubesched",
        )
        try:
            proc.wait_ready()
        except AssertionError as exc:
            proc.stop()
            raise HarnessError(f"kubesched did not start: {str(exc)[-2000:]}") from exc
        except BaseException:
            proc.stop()
            raise
        return proc

    def _run_side(
        self,
        side: str,
        scenario: Mapping[str, Any],
        ns: str,
        prefix: str,
        names: Mapping[str, str],
        config_path: Path,
        work: Path,
    ) -> Run:
        logical = {v: k for k, v in names.items()}
        run = Run(side, ns)
        clock = time.monotonic()

        def lap(phase: str) -> None:
            nonlocal clock
            now = time.monotonic()
            run.timings[phase] = round(run.timings.get(phase, 0.0) + now - clock, 3)
            clock = now

        pvs = self._create_namespace_objects(scenario, ns, prefix)
        proc = self._start(side, config_path, work)
        lap("start")
        # Pods still to get their status.startTime once bound.
        unstarted = start_times(scenario)
        try:
            for pod in scenario["pods"]:
                before = run.steps[-1].placements if run.steps else {}
                run.steps.append(self._step(pod, ns, names, logical, before, unstarted))
            lap("steps")
            run.events, run.event_times, run.final = self._settle(ns, run, logical)
            lap("settle")
        finally:
            run.log = str(proc.log_path)
            proc.stop()
            self._delete_pods(ns)
            for pv in pvs:
                with contextlib.suppress(ApiError, httpx.HTTPError):
                    self.api.request("DELETE", f"/api/v1/persistentvolumes/{pv}", ok=(404,))
            lap("cleanup")
        times = " ".join(f"{k} {v:.1f}s" for k, v in run.timings.items())
        self.say(f"  {side}: {_outcomes(run)} ({times})")
        return run

    def _step(
        self,
        pod: Mapping[str, Any],
        ns: str,
        names: Mapping[str, str],
        logical: Mapping[str, str],
        before: Mapping[str, str | None],
        unstarted: dict[str, str],
    ) -> Step:
        """Create POD and wait for its outcome; BEFORE: the placements before it;
        UNSTARTED: the status.startTime of each pod not given it yet (updated)."""
        manifest = gen.pod_manifest(pod, ns, SCHEDULER_NAME, names)
        began = time.time()
        started = time.monotonic()
        try:
            created = self.api.post(f"/api/v1/namespaces/{ns}/pods", manifest)
        except ApiError as exc:
            message = str(exc.body.get("message", exc))
            return Step(
                pod["name"],
                "rejected",
                message=_normalise(message, ns, logical),
                placements=self._placements(ns, logical),
            )
        step = Step(pod["name"], "timeout", created=created, began=began)
        deadline = started + self.step_timeout
        for current in self._watch_pod(ns, pod["name"], created, deadline):
            node = current["spec"].get("nodeName")
            if node:
                step.outcome, step.node = "bound", logical.get(node, node)
                break
            nominated = current["status"].get("nominatedNodeName")
            condition = next(
                (
                    c
                    for c in current["status"].get("conditions", [])
                    if c.get("type") == "PodScheduled" and c.get("status") == "False"
                ),
                None,
            )
            if condition is None:
                continue
            step.reason = condition.get("reason", "")
            step.message = _normalise(condition.get("message", ""), ns, logical)
            step.outcome = "unschedulable" if step.reason == "Unschedulable" else "error"
            step.nominated = logical.get(nominated, nominated) if nominated else None
            # Both schedulers write the PodScheduled=False condition and the
            # nominatedNodeName preemption chose in ONE status patch (kube-scheduler
            # v1.36: handleSchedulingFailure -> updatePod; kubesched: StatusWriter):
            # without a nomination the step is over; with one, the pod is bound once
            # the victims are gone (or the step times out).
            if not nominated:
                break
        placements, rv = self._list_placements(ns, logical)
        if self._start_bound(ns, placements, unstarted):
            placements, rv = self._list_placements(ns, logical)
        pending = [p for p, n in placements.items() if n is None and p != step.pod]
        # A binding or an eviction may wake earlier pods (queueing hints), and an idle
        # scheduler retries them at once (kube-scheduler pops them from backoffQ): let
        # those retries land before the next pod is created, so that both schedulers
        # go on from the same state.
        woken = pending and (step.outcome == "bound" or set(before) - set(placements))
        if woken and self._quiesce(ns, rv, started + self.step_timeout):
            placements, _ = self._list_placements(ns, logical)
            self._start_bound(ns, placements, unstarted)  # pods bound by retries
        step.seconds = round(time.monotonic() - started, 3)
        step.placements = placements
        return step

    def _start_bound(
        self, ns: str, placements: Mapping[str, str | None], unstarted: dict[str, str]
    ) -> bool:
        """Give each bound pod of NS in UNSTARTED its status.startTime (see
        START_TIME_BASE), as the kubelet would once it runs the pod; whether any."""
        patched = False
        for pod, node in placements.items():
            if node is None or pod not in unstarted:
                continue
            when = unstarted.pop(pod)
            with contextlib.suppress(ApiError):  # e.g. evicted meanwhile
                self.api.patch(
                    f"/api/v1/namespaces/{ns}/pods/{pod}/status",
                    {"status": {"startTime": when}},
                    "merge-patch",
                )
                patched = True
        return patched

    def _quiesce(self, ns: str, rv: str, deadline: float) -> bool:
        """Wait until no pod of NS has changed for QUIET seconds (from list
        resourceVersion RV on), or DEADLINE; whether anything changed."""
        changed = False
        path = f"/api/v1/namespaces/{ns}/pods"
        while time.monotonic() < deadline:
            params = {"watch": "true", "resourceVersion": rv, "timeoutSeconds": "60"}
            try:
                with self._watcher.stream(
                    "GET", path, params=params, timeout=httpx.Timeout(QUIET, connect=5)
                ) as response:
                    if not response.is_success:
                        return changed
                    for line in response.iter_lines():
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        if event.get("type") == "ERROR":
                            return changed
                        rv = event["object"]["metadata"].get("resourceVersion", rv)
                        changed = True
                        if time.monotonic() >= deadline:
                            return changed
            except httpx.TimeoutException:
                return changed  # QUIET seconds without an event
            except (httpx.HTTPError, ValueError, KeyError):
                return changed
        return changed

    def _watch_pod(
        self, ns: str, name: str, created: Mapping[str, Any], deadline: float
    ) -> Iterator[dict[str, Any]]:
        """The pod as it changes, from CREATED on, until DEADLINE: a watch from the
        creation's resourceVersion (so no update is missed), re-opened from the last
        one seen if it ends; if watching fails, one GET per POLL."""
        rv = created["metadata"].get("resourceVersion", "")
        path = f"/api/v1/namespaces/{ns}/pods"
        while (remaining := deadline - time.monotonic()) > 0:
            params = {
                "watch": "true",
                "fieldSelector": f"metadata.name={name}",
                "resourceVersion": rv,
                "timeoutSeconds": str(max(1, math.ceil(remaining))),
            }
            try:
                with self._watcher.stream(
                    "GET", path, params=params, timeout=httpx.Timeout(remaining + 5, connect=5)
                ) as response:
                    if not response.is_success:
                        raise HarnessError(f"watch {path}: HTTP {response.status_code}")
                    for line in response.iter_lines():
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        obj = event.get("object", {})
                        if event.get("type") == "ERROR":  # e.g. 410 Gone: read it afresh
                            rv = ""
                            break
                        rv = obj.get("metadata", {}).get("resourceVersion", rv)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            yield obj
                        if time.monotonic() >= deadline:
                            return
                    if rv == "":
                        current = self.api.get_pod(ns, name)
                        rv = current["metadata"]["resourceVersion"]
                        yield current
            except (httpx.HTTPError, HarnessError, ValueError):
                time.sleep(POLL)
                with contextlib.suppress(ApiError, httpx.HTTPError):
                    current = self.api.get_pod(ns, name)
                    rv = current["metadata"]["resourceVersion"]
                    yield current

    def _placements(self, ns: str, logical: Mapping[str, str]) -> dict[str, str | None]:
        return self._list_placements(ns, logical)[0]

    def _list_placements(
        self, ns: str, logical: Mapping[str, str]
    ) -> tuple[dict[str, str | None], str]:
        """Every pod of NS -> logical node or None; the list's resourceVersion."""
        answer = self.api.get(f"/api/v1/namespaces/{ns}/pods")
        out: dict[str, str | None] = {}
        for pod in answer["items"]:
            node = pod["spec"].get("nodeName")
            out[pod["metadata"]["name"]] = logical.get(node, node) if node else None
        return dict(sorted(out.items())), answer["metadata"].get("resourceVersion", "")

    def _settle(
        self, ns: str, run: Run, logical: Mapping[str, str]
    ) -> tuple[dict[str, list[str]], dict[str, list[float]], dict[str, str | None]]:
        """Wait (up to 10 s) until every unbound pod has its FailedScheduling
        event; the events (with when each message was first recorded) and final
        placements."""
        deadline = time.monotonic() + 10.0
        while True:
            final = self._placements(ns, logical)
            events: dict[str, list[str]] = {}
            times: dict[str, list[float]] = {}
            for event in self.api.list_events(ns):
                f = event_fields(event)
                if f["reason"] == "FailedScheduling" and f["kind"] == "Pod":
                    messages = events.setdefault(f["object"], [])
                    when = times.setdefault(f["object"], [])
                    text = _normalise(f["message"], ns, logical)
                    at = _event_time(event)
                    if text not in messages:
                        messages.append(text)
                        when.append(at)
                    else:
                        i = messages.index(text)
                        when[i] = min(when[i], at)
            waiting = [
                s.pod
                for s in run.steps
                if s.outcome in ("unschedulable", "error") and s.pod not in events
            ]
            if not waiting or time.monotonic() > deadline:
                run.conditions = self._conditions(ns, logical)
                return dict(sorted(events.items())), times, final
            time.sleep(0.2)

    def _conditions(self, ns: str, logical: Mapping[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for pod in self.api.list_pods(ns):
            for c in pod["status"].get("conditions", []):
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    out[pod["metadata"]["name"]] = _normalise(c.get("message", ""), ns, logical)
        return out

    def _delete_pods(self, ns: str) -> None:
        for pod in self.api.list_pods(ns):
            with contextlib.suppress(ApiError, httpx.HTTPError):
                self.api.delete_pod(ns, pod["metadata"]["name"])
        self.api.wait_for(lambda: not self.api.list_pods(ns), timeout=30, message=f"pods of {ns}")


def start_times(scenario: Mapping[str, Any]) -> dict[str, str]:
    """The status.startTime the harness gives each pod of SCENARIO once it is bound:
    START_TIME_BASE plus the pod's index in the scenario, in seconds."""
    return {
        pod["name"]: (START_TIME_BASE + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for i, pod in enumerate(scenario["pods"])
    }


def _event_time(event: Mapping[str, Any]) -> float:
    """When a scheduler recorded EVENT (time.time() scale): eventTime (the
    events.k8s.io recorders' clock at Eventf), else the older API's timestamps."""
    for text in (
        event.get("eventTime"),
        event.get("firstTimestamp"),
        event.get("metadata", {}).get("creationTimestamp"),
    ):
        if text:
            with contextlib.suppress(ValueError):
                return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    return 0.0


def events_agree(
    seen_a: Sequence[str], seen_b: Sequence[str], condition_a: str, condition_b: str
) -> bool:
    """Whether two runs' FailedScheduling notes for one pod agree. The first note
    (the pod's own attempt) must be the same. A retry's note starts a new Event
    only if the pod's resourceVersion changed since the last one (client-go's
    isomorphic-event key), i.e. only if the scheduler's informer had already seen its
    own status write of the previous attempt: a race in kube-scheduler itself. So a
    later note of one run must be a note of the other, or the other's latest message
    (its PodScheduled condition), which a retry folded into an earlier series."""
    if list(seen_a) == list(seen_b):
        return True
    if not seen_a or not seen_b or seen_a[0] != seen_b[0]:
        return False
    return set(seen_a) <= {*seen_b, condition_b} and set(seen_b) <= {*seen_a, condition_a}


def events_before(run: Run, pod: str, cutoff: float | None) -> list[str]:
    """POD's FailedScheduling messages in RUN first recorded before CUTOFF (all
    without a cutoff, or without their times)."""
    messages = run.events.get(pod, [])
    times = run.event_times.get(pod)
    if cutoff is None or times is None:
        return list(messages)
    return [m for m, t in zip(messages, times, strict=True) if t < cutoff]


def _normalise(message: str, ns: str, logical: Mapping[str, str]) -> str:
    """Real node names -> logical ones; the run's namespace -> <namespace>."""
    if not message:
        return message
    for real, name in sorted(logical.items(), key=lambda kv: -len(kv[0])):
        message = message.replace(real, name)
    return re.sub(rf"\b{re.escape(ns)}\b", "<namespace>", message)


def _outcomes(run: Run) -> str:
    return " ".join(
        f"{s.pod}={s.node if s.outcome == 'bound' else s.outcome[:5]}" for s in run.steps
    )


# --------------------------------------------------------------------- in-process scores
def score_step(
    scenario: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    bound: Sequence[Mapping[str, Any]],
    pod: Mapping[str, Any],
    logical: Mapping[str, str],
    namespace: str | None = None,
) -> Prediction:
    """Run kubesched's framework for POD on NODES with the BOUND pods (API objects)
    exactly as Scheduler.schedule_pod does, and return the score totals; when no
    node fits, the FailedScheduling message with PostFilter's (preemption's) part,
    as Scheduler.schedule_one writes it (nothing is evicted). With NAMESPACE (the
    run's), the scenario's Namespace, PDBs and volumes are there as the run made them."""
    from kubesched.cluster.manifests import load_documents
    from kubesched.cluster.memory import InMemoryCluster
    from kubesched.config.file import parse_config
    from kubesched.framework.cycle_state import CycleState
    from kubesched.framework.types import PodInfo, QueuedPodInfo
    from kubesched.scheduler import Scheduler
    from kubesched.scheduler.scheduler import FitError

    docs: list[tuple[str, int, object]] = []
    objects: list[Mapping[str, Any]] = [
        *gen.priority_class_manifests(),
        *(namespace_objects(scenario, namespace) if namespace else []),
        *({"apiVersion": "v1", "kind": "Node", **n} for n in nodes),
        *({"apiVersion": "v1", "kind": "Pod", **p} for p in bound),
        {"apiVersion": "v1", "kind": "Pod", **pod},
    ]
    for i, obj in enumerate(objects):
        docs.append(("harness", i + 1, _plain(obj)))
    state = load_documents(docs)
    if state.problems:
        raise HarnessError("in-process state: " + "; ".join(map(str, state.problems)))
    config = parse_config(gen.scheduler_config(scenario, SCHEDULER_NAME))
    cluster = InMemoryCluster()
    name = pod["metadata"]["name"]
    pending = None
    for n in state.nodes:
        cluster.nodes[n.metadata.name] = n
    for p in state.pods:
        if p.spec.node_name:
            cluster.pods[f"{p.metadata.namespace}/{p.metadata.name}"] = p
        elif p.metadata.name == name:
            pending = p
    if pending is None:
        raise HarnessError(f"in-process state: pod {name} not loaded")
    sched = Scheduler(config.profiles, cluster, seed=0)
    # As the simulator sets them up.
    sched.handle.pdbs = list(state.pdbs)
    sched.handle.namespaces = dict(state.namespaces)
    sched.handle.priority_classes = dict(state.priority_classes)
    # Not state.storage: the manifest loader plays the PV controller (and completes
    # the bindings), which the harness's API server does not run.
    sched.handle.storage = _storage(scenario, namespace)
    # Preemption's evictions (if it finds victims) must not happen: drop them.
    sched.handle.spawn = lambda coro: coro.close()
    cluster.watch(sched)
    fw = sched.frameworks[SCHEDULER_NAME]
    cycle = CycleState()
    info = PodInfo(pending)
    feasible, diagnosis, _ = sched.find_nodes_that_fit(fw, cycle, info)
    table = sched.table
    names = [logical.get(table.names[int(r)], table.names[int(r)]) for r in feasible]
    if len(feasible) == 0:
        # What Scheduler.schedule_one does with the FitError: PostFilter, then the message.
        fit = FitError(info, len(table), diagnosis)
        nominated = sched._post_filter(fw, cycle, QueuedPodInfo(info, timestamp=0.0), fit)
        prediction = Prediction([], {}, [], str(fit))
        if nominated:
            prediction.preemption, prediction.victims = _preemption_choices(
                fw, cycle, info, diagnosis, logical
            )
        return prediction
    if len(feasible) == 1:
        return Prediction(names, {names[0]: 0}, names)
    fw.run_pre_score(cycle, info, table, feasible)
    totals, plugin_scores = fw.run_score(cycle, info, table, feasible)
    by_node = {n: int(t) for n, t in zip(names, totals, strict=True)}
    by_plugin = {
        plugin: {n: int(v) for n, v in zip(names, scores, strict=True)}
        for plugin, scores in plugin_scores.items()
    }
    top = max(by_node.values())
    best = sorted(n for n, t in by_node.items() if t == top)
    return Prediction(names, by_node, best, by_plugin=by_plugin)


def _preemption_choices(
    fw: Any, cycle: Any, info: Any, diagnosis: Any, logical: Mapping[str, str]
) -> tuple[list[str], dict[str, list[str]]]:
    """Every node DefaultPreemption may nominate for INFO: its dry run over all
    potential nodes (kube-scheduler's candidate count is every node below 100
    nodes; only the random offset, i.e. the order, is left to chance), then the
    candidates pickOneNodeForPreemption leaves tied (its last tie-break is the
    first candidate: a candidate is among the tied ones iff it wins when put first)."""
    from kubesched.framework.status import Code
    from kubesched.plugins.defaultpreemption.candidates import pick_one_node_for_preemption
    from kubesched.plugins.defaultpreemption.plugin import DefaultPreemption

    plugin = next((p for p in fw.post_filter if isinstance(p, DefaultPreemption)), None)
    if plugin is None:
        return [], {}
    potential = plugin.nodes_for_status_code(diagnosis, Code.UNSCHEDULABLE)
    candidates, _ = plugin.dry_run_preemption(
        cycle, info, potential, plugin.handle.pdbs, 0, len(potential)
    )
    tied = [
        c
        for c in candidates
        if pick_one_node_for_preemption([c, *(o for o in candidates if o is not c)]) is c
    ]
    victims = {logical.get(c.name, c.name): [v.pod.metadata.name for v in c.victims] for c in tied}
    return sorted(victims), victims


def namespace_objects(scenario: Mapping[str, Any], ns: str) -> list[dict[str, Any]]:
    """The Namespace, PDBs, PVs and PVCs Harness._create_namespace_objects makes for
    a run in NS, with the statuses it patches in."""
    # The run's namespace is <prefix>-kube or <prefix>-ks; the API server adds the name label.
    labels = {
        "kubesched.test/differential": ns.rsplit("-", 1)[0],
        "kubernetes.io/metadata.name": ns,
    }
    out: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": labels},
        },
        *(gen.pdb_manifest(pdb, ns) for pdb in scenario.get("pdbs", [])),
    ]
    volumes = scenario.get("volumes")
    if volumes:
        pvs, pvcs = gen.volume_manifests(volumes, ns, ns)
        for pv in pvs:
            out.append({**pv, "status": {"phase": "Bound"}})
        for pvc in pvcs:
            status = {"phase": "Bound", "accessModes": pvc["spec"]["accessModes"]}
            out.append({**pvc, "status": status})
    return out


def _storage(scenario: Mapping[str, Any], namespace: str | None) -> Any:
    """A StorageState with the run's PVs and PVCs exactly as the API server has them."""
    import msgspec

    from kubesched.api.objects import PersistentVolume, PersistentVolumeClaim
    from kubesched.framework.storage import StorageState

    storage = StorageState()
    for obj in namespace_objects(scenario, namespace) if namespace else []:
        raw = json.dumps(obj).encode()
        if obj["kind"] == "PersistentVolume":
            storage.upsert_pv(msgspec.json.decode(raw, type=PersistentVolume))
        elif obj["kind"] == "PersistentVolumeClaim":
            storage.upsert_pvc(msgspec.json.decode(raw, type=PersistentVolumeClaim))
    return storage


def _plain(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Drop bookkeeping the manifest loader need not see."""
    out = copy.deepcopy(dict(obj))
    meta = out.get("metadata", {})
    meta.pop("managedFields", None)
    return out


# --------------------------------------------------------------------- comparison
def _pod_signature(scenario: Mapping[str, Any]) -> dict[str, str]:
    return {
        p["name"]: json.dumps({"labels": p["labels"], "spec": p["spec"]}, sort_keys=True)
        for p in scenario["pods"]
    }


def _node_signatures(
    scenario: Mapping[str, Any], placements: Mapping[str, str | None], pods: Mapping[str, str]
) -> dict[str, str]:
    """Per logical node: everything a scheduler can tell it by but its name (unless
    some pod names it): the label keys some pod looks at, taints, capacity, the
    images some pod uses, and the pods on it (by content)."""
    referenced = gen.referenced_nodes(scenario)
    keys = gen.referenced_label_keys(scenario)
    images = gen.referenced_images(scenario)
    on: dict[str, list[str]] = {}
    for pod, node in placements.items():
        if node is not None:
            on.setdefault(node, []).append(pods.get(pod, pod))
    out = {}
    for node in scenario["nodes"]:
        body = {k: v for k, v in node.items() if k not in ("name", "labels", "images")}
        body["labels"] = {k: v for k, v in node["labels"].items() if k in keys}
        body["images"] = [i for i in node.get("images", []) if any(n in images for n in i["names"])]
        if node["name"] in referenced:
            body["name"] = node["name"]
        body["pods"] = sorted(on.get(node["name"], []))
        out[node["name"]] = json.dumps(body, sort_keys=True)
    return out


def isomorphic(
    scenario: Mapping[str, Any],
    a: Mapping[str, str | None],
    b: Mapping[str, str | None],
    perm: Mapping[str, str],
) -> bool:
    """Whether placements A (kube-scheduler) and B (kubesched) are the same state
    once A's node n is read as B's perm[n]: the same pods exist and are bound, and
    each node carries the same (by content) pods."""
    if set(a) != set(b) or any((a[p] is None) != (b[p] is None) for p in a):
        return False
    pods = _pod_signature(scenario)
    sig_a = _node_signatures(scenario, a, pods)
    sig_b = _node_signatures(scenario, b, pods)
    return all(sig_a[n] == sig_b[perm.get(n, n)] for n in sig_a)


def _swap(perm: Mapping[str, str], x: str, y: str) -> dict[str, str]:
    return {k: (y if v == x else x if v == y else v) for k, v in perm.items()}


def _predict(
    scenario: Mapping[str, Any],
    run: Run,
    before: Mapping[str, str | None],
    step: Step,
    names: Mapping[str, str],
) -> Prediction | None:
    """score_step on the state RUN was in before STEP."""
    if not step.created:
        return None
    created = {s.pod: s.created for s in run.steps if s.created}
    # The harness gave every pod bound before this step its status.startTime.
    started = start_times(scenario)
    bound = []
    for pod, node in before.items():
        if node is not None and pod in created:
            obj = copy.deepcopy(created[pod])
            obj["spec"]["nodeName"] = names.get(node, node)
            obj.setdefault("status", {})["startTime"] = started[pod]
            bound.append(obj)
    logical = {v: k for k, v in names.items()}
    return score_step(scenario, run.nodes, bound, step.created, logical, run.namespace)


def _against(
    side: str, step: Step, prediction: Prediction, events: Sequence[str]
) -> tuple[list[tuple[str, Any, Any, str]], bool | None, bool | None]:
    """STEP of SIDE checked against kubesched's in-process PREDICTION on the same
    state: (problems as (kind, predicted, seen, detail), message ok or None if not
    applicable, unique node ok or None)."""
    detail = f"{side} vs kubesched in-process on {side}'s own state; " + _prediction_text(
        prediction
    )
    problems: list[tuple[str, Any, Any, str]] = []
    if step.outcome in ("rejected", "timeout", "error"):
        return [("error", "-", step.outcome, detail + " " + step.message)], None, None
    bound = step.outcome == "bound"
    if bound != bool(prediction.choices):
        seen = step.node if bound else step.message
        want = prediction.choices or prediction.message
        return [("bound", want, seen, detail)], None, None
    if not bound:
        if step.message != prediction.message:
            problems.append(("message", prediction.message, step.message, detail))
        elif list(events) != [prediction.message]:
            problems.append(("event", [prediction.message], list(events), detail))
        return problems, not problems, None
    if step.node not in prediction.choices:
        problems.append(("node", prediction.choices, step.node, detail))
    return problems, None, (not problems) if prediction.unique else None


def compare(
    scenario: Mapping[str, Any], kube: Run, ks: Run, names: Mapping[str, str]
) -> Comparison:
    """Step by step. While both runs are in the same state (up to interchangeable
    nodes) the two schedulers are compared directly; from the first step where the
    states differ (a tie broken differently between nodes that are not
    interchangeable, or a disagreement that changed what is bound) each run is
    checked against kubesched's framework re-run in-process on that run's own
    state, so kube-scheduler is still compared with kubesched on equal terms."""
    result = Comparison(scenario["name"], runs={KUBE: kube, KUBESCHED: ks})
    perm = {n["name"]: n["name"] for n in scenario["nodes"]}
    result.steps = len(scenario["pods"])
    before_a: dict[str, str | None] = {}
    before_b: dict[str, str | None] = {}
    in_sync = True

    def disagree(
        kind: str, i: int, pod: str, a: Any, b: Any, detail: str = "", mode: str = MODE_DIRECT
    ) -> None:
        result.disagreements.append(Disagreement(kind, i, pod, a, b, detail, mode))

    # Direct comparisons of FailedScheduling events wait for the end: only events
    # recorded while both runs were in the same state count (a retry after the
    # states diverged may legitimately fail differently, or succeed in one run).
    event_checks: list[tuple[int, Step, Step]] = []
    diverged_step: int | None = None

    def until_next(run: Run, i: int) -> float | None:
        return run.steps[i + 1].began if i + 1 < len(run.steps) else None

    for i, (a, b) in enumerate(zip(kube.steps, ks.steps, strict=True)):
        result.compared += 1
        pred_b = _predict(scenario, ks, before_b, b, names)
        if pred_b is not None:
            result.predictions[b.pod] = pred_b
        if not in_sync:
            result.indirect += 1
            pred_a = _predict(scenario, kube, before_a, a, names)
            problems: list[tuple[str, Any, Any, str]] = []
            messages: list[bool] = []
            uniques: list[bool] = []
            # Against the state before the step: the events of the pod's attempts
            # until the next pod is created.
            for side, step, pred, events in (
                (KUBE, a, pred_a, events_before(kube, a.pod, until_next(kube, i))),
                (KUBESCHED, b, pred_b, events_before(ks, b.pod, until_next(ks, i))),
            ):
                if pred is None:
                    if step.outcome != "rejected":
                        problems.append(("error", "-", step.outcome, f"{side}: no prediction"))
                    continue
                found, message_ok, unique_ok = _against(side, step, pred, events)
                problems.extend(found)
                if message_ok is not None:
                    messages.append(message_ok)
                if unique_ok is not None:
                    uniques.append(unique_ok)
            bound_problem = any(k in ("bound", "error") for k, *_ in problems)
            result.bound_agree += not bound_problem
            if messages:
                result.unbound_both += 1
                result.message_agree += all(messages)
            if uniques:
                result.unique += 1
                result.unique_agree += all(uniques)
            for kind, want, seen, detail in problems:
                if detail.startswith(KUBE):
                    # kube=what kube-scheduler did, kubesched=what kubesched's framework says
                    disagree(kind, i, a.pod, seen, want, detail, MODE_KUBE)
                else:
                    # kube=what kubesched's framework says, kubesched=what the process did
                    disagree("predict", i, b.pod, want, seen, f"{kind}: {detail}", MODE_KS)
            before_a, before_b = a.placements, b.placements
            continue

        bound_a, bound_b = a.outcome == "bound", b.outcome == "bound"
        diverges = False
        if "rejected" in (a.outcome, b.outcome) or "timeout" in (a.outcome, b.outcome):
            if (a.outcome, a.message) != (b.outcome, b.message):
                disagree("error", i, a.pod, a.outcome, b.outcome, a.message or b.message)
                diverges = True
            else:
                result.bound_agree += 1
        elif bound_a != bound_b:
            disagree(
                "bound",
                i,
                a.pod,
                a.node if bound_a else a.message,
                b.node if bound_b else b.message,
                _prediction_text(pred_b),
            )
            diverges = True
        elif not bound_a:
            result.bound_agree += 1
            result.unbound_both += 1
            if a.message != b.message or a.reason != b.reason:
                disagree("message", i, a.pod, a.message, b.message, "PodScheduled condition")
            else:
                event_checks.append((i, a, b))
        else:
            result.bound_agree += 1
            result.bound_both += 1
            assert a.node is not None and b.node is not None
            expected = perm[a.node]
            if pred_b is not None and pred_b.unique:
                result.unique += 1
                if b.node == expected:
                    result.unique_agree += 1
                else:
                    disagree("node", i, a.pod, expected, b.node, _prediction_text(pred_b))
                    diverges = True
            elif pred_b is not None:
                result.ties += 1
                if expected not in pred_b.choices:
                    disagree(
                        "node",
                        i,
                        a.pod,
                        expected,
                        b.node,
                        "kube-scheduler chose a node kubesched does not rank best; "
                        + _prediction_text(pred_b),
                    )
                    diverges = True
            if pred_b is not None and b.node not in pred_b.choices and not diverges:
                disagree(
                    "predict",
                    i,
                    a.pod,
                    expected,
                    b.node,
                    "kubesched run chose a node its framework in-process does not rank best; "
                    + _prediction_text(pred_b),
                )
                diverges = True
        after_a, after_b = a.placements, b.placements
        if not diverges and not isomorphic(scenario, after_a, after_b, perm):
            swapped = None
            if bound_a and bound_b and a.node is not None and b.node is not None:
                swapped = _swap(perm, perm[a.node], b.node)
            if swapped is not None and isomorphic(scenario, after_a, after_b, swapped):
                perm = swapped
                result.swaps += 1
            elif bound_a and bound_b and a.node is not None and perm[a.node] != b.node:
                result.diverged_at = i  # a tie, broken differently
                diverges = True
            else:
                disagree("state", i, a.pod, after_a, after_b, "placements after the step")
                diverges = True
        if diverges and diverged_step is None:
            diverged_step = i
        in_sync = not diverges
        before_a, before_b = after_a, after_b
    if in_sync and not isomorphic(scenario, kube.final, ks.final, perm):
        # Pods bound later (retries after events) must agree too.
        disagree("state", result.steps, "*", kube.final, ks.final, "final placements")
    cut_a = kube.steps[diverged_step].began if diverged_step is not None else None
    cut_b = ks.steps[diverged_step].began if diverged_step is not None else None
    for i, a, b in event_checks:
        seen_a, seen_b = events_before(kube, a.pod, cut_a), events_before(ks, b.pod, cut_b)
        if not events_agree(
            seen_a, seen_b, kube.conditions.get(a.pod, ""), ks.conditions.get(b.pod, "")
        ):
            detail = "FailedScheduling events"
            if diverged_step is not None:
                detail += f" recorded before step {diverged_step} (the states differ from there)"
            disagree("event", i, a.pod, seen_a, seen_b, detail)
        else:
            result.message_agree += 1
    result.disagreements.sort(key=lambda d: d.step)
    return result


def _prediction_text(p: Prediction | None) -> str:
    if p is None:
        return ""
    if not p.feasible and p.preemption:
        return (
            f"in-process: no feasible node ({p.message}); preemption may nominate "
            f"{p.preemption}, victims {p.victims}"
        )
    if not p.feasible:
        return f"in-process: no feasible node ({p.message})"
    return f"in-process totals {p.totals}, best {p.best}"


# --------------------------------------------------------------------- aggregates
@dataclass
class Totals:
    scenarios: int = 0
    scenarios_ok: int = 0
    steps: int = 0
    compared: int = 0
    bound_agree: int = 0
    unbound_both: int = 0
    message_agree: int = 0
    unique: int = 0
    unique_agree: int = 0
    ties: int = 0
    swaps: int = 0
    indirect: int = 0
    diverged: int = 0
    kinds: Counter[str] = field(default_factory=Counter)

    def add(self, c: Comparison) -> None:
        self.scenarios += 1
        self.scenarios_ok += c.ok
        for name in (
            "steps",
            "compared",
            "bound_agree",
            "unbound_both",
            "message_agree",
            "unique",
            "unique_agree",
            "ties",
            "swaps",
            "indirect",
        ):
            setattr(self, name, getattr(self, name) + getattr(c, name))
        self.diverged += c.diverged_at is not None
        self.kinds.update(d.kind for d in c.disagreements)

    def lines(self) -> list[str]:
        def rate(n: int, d: int) -> str:
            return f"{n}/{d} ({100.0 * n / d:.1f}%)" if d else "0/0 (-)"

        return [
            f"scenarios without disagreement: {rate(self.scenarios_ok, self.scenarios)}",
            f"steps compared:                 {rate(self.compared, self.steps)}: "
            f"{self.compared - self.indirect} run against run, {self.indirect} each run "
            f"against kubesched in-process",
            f"ties:                           {self.ties} ({self.swaps} resolved as "
            f"interchangeable nodes, {self.diverged} scenarios diverged after one)",
            f"bound set agreement:            {rate(self.bound_agree, self.compared)}",
            f"message agreement:              {rate(self.message_agree, self.unbound_both)}",
            f"node agreement (unique best):   {rate(self.unique_agree, self.unique)}",
            "disagreements by kind:          "
            + (", ".join(f"{k}={v}" for k, v in sorted(self.kinds.items())) or "none"),
        ]


def regression_document(scenario: Mapping[str, Any], comparison: Comparison) -> dict[str, Any]:
    """A regression file: the scenario plus what was seen (for humans; the test
    re-runs both schedulers)."""
    return {
        "scenario": dict(scenario),
        "found": comparison.report(),
    }


def simulate(scenario: Mapping[str, Any], seed: int = 1) -> Any:
    """kubesched's simulator on the scenario's objects (logical node names), as
    `kubesched simulate` would run it: a quick look without a cluster."""
    from kubesched.cluster.manifests import load_documents
    from kubesched.config.file import parse_config
    from kubesched.simulator import simulate as run_simulation

    names = {n["name"]: n["name"] for n in scenario["nodes"]}
    objects: list[Mapping[str, Any]] = [
        *gen.priority_class_manifests(),
        *(gen.node_manifest(n, n["name"]) for n in scenario["nodes"]),
        *(gen.pod_manifest(p, "default", SCHEDULER_NAME, names) for p in scenario["pods"]),
    ]
    state = load_documents([("scenario", i + 1, dict(o)) for i, o in enumerate(objects)])
    if state.problems:
        raise HarnessError("; ".join(map(str, state.problems)))
    config = parse_config(gen.scheduler_config(scenario, SCHEDULER_NAME))
    return run_simulation(state.nodes, state.pods, config.profiles, seed=seed)
