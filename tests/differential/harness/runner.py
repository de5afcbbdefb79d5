"""Harness: one scenario on a real control plane, through kube-scheduler and then
kubesched. It creates the PriorityClasses, nodes, namespace objects and pods
through the API, waits for kube-controller-manager to act on the namespace
objects (PV binding, PDB status), starts and stops each scheduler, waits for each pod's outcome
(a watch, then a quiet period for retries the step woke), settles the
FailedScheduling events, cleans up, and hands both runs to compare."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.differential import generator as gen
from tests.differential.harness import dra, extenders, workloads
from tests.differential.harness.compare import compare
from tests.differential.harness.inprocess import namespace_objects
from tests.differential.harness.records import (
    ATTEMPT_VERBOSITY,
    KUBE,
    KUBESCHED,
    SCHEDULER_NAME,
    SIDES,
    Comparison,
    HarnessError,
    Run,
    Step,
    attempts_in_log,
    normalise_claim_names,
    start_times,
)
from tests.integration.conftest import (
    AdminApi,
    ApiError,
    ControlPlane,
    WaitTimeout,
    event_fields,
    start_kube_scheduler,
)
from tests.integration.kubesched_proc import start_kubesched

STEP_TIMEOUT = 30.0
POLL = 0.05
# After a step that bound or evicted pods while earlier pods are pending: how long no
# pod may change before the next pod is created (retries woken by the step land first).
QUIET = 0.3
# kube-controller-manager's controllers the volumes and pdbs features rely on, and
# how long they may take to act on a new object (well under a second here).
NEEDED_CONTROLLERS = ("persistentvolume-binder-controller", "disruption-controller")
CONTROLLER_TIMEOUT = 30.0
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


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
        claim_controller: bool | None = None,
        kubesched_content_type: str = "",
    ) -> None:
        """SABOTAGE (for testing the harness only) changes the configuration file of
        the kubesched run, so that the two schedulers really disagree.
        CLAIM_CONTROLLER: whether a resourceclaim controller makes the claims of pods'
        templates; None: find out (dra.controller_runs); if not, the harness does."""
        self.cp = cp
        # kubesched's clientConnection.contentType when not the shared file's default.
        self.kubesched_content_type = kubesched_content_type
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
        self._claim_controller = claim_controller
        # Per run's namespace: pod_manifest's owners (controllers' uids) and
        # runtime_classes (the workloads feature's; see _create_namespace_objects).
        self._pod_args: dict[str, dict[str, Any]] = {}

    def close(self) -> None:
        self.api.close()
        self._watcher.close()

    # ----------------------------------------------------------------- one scenario
    def run(self, scenario: Mapping[str, Any]) -> Comparison:
        # The extenders (if any) serve both runs and the comparison's in-process
        # re-runs, and stop with the scenario.
        with extenders.serving(scenario.get("extenders") or []) as servers:
            return self._run(scenario, [s.url for s in servers])

    def _run(self, scenario: Mapping[str, Any], extender_urls: list[str]) -> Comparison:
        prefix = unique_prefix()
        names = {n["name"]: f"{prefix}-{n['name']}" for n in scenario["nodes"]}
        work = self.workdir / f"{scenario['name']}-{prefix}"
        work.mkdir(parents=True, exist_ok=True)
        (work / "scenario.yaml").write_text(yaml.safe_dump(dict(scenario), sort_keys=False))
        config = gen.scheduler_config(
            scenario, SCHEDULER_NAME, str(self.cp.scheduler_kubeconfig), extender_urls
        )
        config_path = work / "config.yaml"
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        paths = {KUBE: config_path, KUBESCHED: config_path}
        if self.kubesched_content_type:
            # Only kubesched's file: kube-scheduler runs with its file unchanged.
            own = copy.deepcopy(config)
            own.setdefault("clientConnection", {})["contentType"] = self.kubesched_content_type
            paths[KUBESCHED] = work / "config-kubesched.yaml"
            paths[KUBESCHED].write_text(yaml.safe_dump(own, sort_keys=False))
        if self.sabotage is not None:
            paths[KUBESCHED] = work / "config-sabotaged.yaml"
            sabotaged = self.sabotage(copy.deepcopy(config))
            paths[KUBESCHED].write_text(yaml.safe_dump(sabotaged, sort_keys=False))
        runs: dict[str, Run] = {}
        shared: list[tuple[str, str]] = []
        runtime_classes: list[dict[str, Any]] = []
        try:
            self._ensure_priority_classes()
            nodes = self._create_nodes(scenario, names)
            shared = dra.create_cluster_objects(self.api, scenario, prefix, names)
            runtime_classes = workloads.create_cluster_objects(self.api, scenario, prefix)
            for side in SIDES:
                ns = f"{prefix}-{'kube' if side == KUBE else 'ks'}"
                runs[side] = self._run_side(side, scenario, ns, prefix, names, paths[side], work)
                runs[side].nodes = nodes
                runs[side].extender_urls = list(extender_urls)
                # What RuntimeClass admission read (for the in-process re-run).
                runs[side].objects += runtime_classes
        finally:
            workloads.delete_cluster_objects(self.api, runtime_classes)
            dra.delete_cluster_objects(self.api, shared)
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
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """Namespace, PDBs, volumes and DRA claims and templates of one run, once
        kube-controller-manager has acted on the PDBs and volumes: the PV names to delete
        afterwards, and those objects as the API server then has them (what the
        in-process side loads; the DRA objects reach it through the step records)."""
        missing = [c for c in NEEDED_CONTROLLERS if c not in self.cp.controllers]
        if missing and (scenario.get("pdbs") or scenario.get("volumes")):
            raise HarnessError(
                f"this scenario needs kube-controller-manager's {', '.join(missing)}; the "
                f"cluster of {self.cp.dir} runs {self.cp.controllers or 'none'} "
                "(start it with hack/cluster-up.sh's default KUBESCHED_CONTROLLERS)"
            )
        self.api.create_namespace(ns, labels={"kubesched.test/differential": prefix})
        dra.create_namespace_objects(self.api, scenario, ns, prefix)
        # Services and controllers (workloads): the pods name the controllers' uids.
        selecting = workloads.create_namespace_objects(self.api, scenario, ns)
        self._pod_args[ns] = {
            "owners": workloads.owner_uids(selecting),
            "runtime_classes": gen.runtime_class_names(scenario.get("workloads"), prefix),
        }
        objects = namespace_objects(scenario, ns)
        for obj in objects:
            self.api.post(self.api.resource_path(obj), obj)
        # Only a scheduler started after the controllers acted sees one and the same
        # state in both runs (and the state the in-process side loads).
        settled = [self.api.get(f"/api/v1/namespaces/{ns}")]
        settled += [self._settled(obj) for obj in objects]
        settled += selecting
        pvs = [o["metadata"]["name"] for o in objects if o["kind"] == "PersistentVolume"]
        return pvs, settled

    def _settled(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """OBJ as the API server has it once its controller acted on it: a PDB with
        the disruption controller's status for its generation; a PV and a PVC both
        Bound by the PV binder (which sets the claim's bind-completed annotation:
        without it, VolumeBinding takes the claim for an unbound immediate one)."""
        path = f"{self.api.resource_path(obj)}/{obj['metadata']['name']}"

        def done() -> dict[str, Any] | None:
            current = self.api.get(path)
            status = current.get("status", {})
            if obj["kind"] == "PodDisruptionBudget":
                generation = current["metadata"].get("generation", 1)
                ok = status.get("observedGeneration", 0) >= generation
            elif obj["kind"] == "PersistentVolumeClaim":
                notes = current["metadata"].get("annotations", {})
                ok = status.get("phase") == "Bound" and ANN_BIND_COMPLETED in notes
            else:
                ok = status.get("phase") == "Bound"
            return current if ok else None

        try:
            return self.api.wait_for(done, timeout=CONTROLLER_TIMEOUT, interval=POLL)
        except WaitTimeout as exc:
            raise HarnessError(
                f"kube-controller-manager did not act on {obj['kind']} {path}: {exc} "
                f"(see kube-controller-manager.log in {self.cp.dir})"
            ) from exc

    # ----------------------------------------------------------------- one run
    def _start(self, side: str, config_path: Path, work: Path, gates: str = "") -> Any:
        """GATES: --feature-gates for both schedulers (the gangs feature's)."""
        if side == KUBE:
            try:
                return start_kube_scheduler(
                    self.cp,
                    config_path,
                    # At least ATTEMPT_VERBOSITY: each attempt's log line.
                    verbosity=max(self.kube_verbosity, ATTEMPT_VERBOSITY),
                    extra_args=[f"--feature-gates={gates}"] if gates else [],
                )
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
            *(("--feature-gates", gates) if gates else ()),
            "-v",
            str(max(self.kubesched_verbosity or 0, ATTEMPT_VERBOSITY)),
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

        pvs, run.objects = self._create_namespace_objects(scenario, ns, prefix)
        gangs = scenario.get("gangs") or []
        for gang in gangs:
            self._create_pod_group(gang, ns)
        proc = self._start(side, config_path, work, gen.GANG_GATES if gangs else "")
        lap("start")
        # Pods still to get their status.startTime once bound.
        unstarted = start_times(scenario)
        last = gen.last_members(dict(scenario))
        try:
            for pod in scenario["pods"]:
                before = run.steps[-1].placements if run.steps else {}
                group = (pod["spec"].get("schedulingGroup") or {}).get("podGroupName", "")
                if gen.waits_for_group(dict(scenario), pod["name"]):
                    run.steps.append(self._create_member(pod, ns, names, logical, group))
                    continue
                step = self._step(pod, ns, names, logical, before, unstarted)
                step.group = group
                if pod["name"] in last:
                    self._settle_group(ns, last[pod["name"]], logical, step, unstarted)
                run.steps.append(step)
                if "dra" in scenario:
                    self._record_claims(ns, run.steps[-1])
            lap("steps")
            run.events, run.event_times, run.final = self._settle(ns, run, logical)
            lap("settle")
        finally:
            run.log = str(proc.log_path)
            proc.stop()
            self._delete_pods(ns)
            workloads.delete_namespace_objects(self.api, run.objects)
            self._pod_args.pop(ns, None)
            if "dra" in scenario:
                # The next run must find every device free (see harness/dra.py).
                dra.delete_claims(self.api, ns)
            for pv in pvs:
                with contextlib.suppress(ApiError, httpx.HTTPError):
                    self.api.request("DELETE", f"/api/v1/persistentvolumes/{pv}", ok=(404,))
            lap("cleanup")
        with contextlib.suppress(OSError):
            # Each pod's attempts, from the stopped scheduler's whole log.
            text = Path(run.log).read_text(errors="replace")
            run.attempts = attempts_in_log(text, ns, time.time())
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
        manifest = gen.pod_manifest(pod, ns, SCHEDULER_NAME, names, **self._pod_args.get(ns, {}))
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
        # A real resourceclaim controller makes the claims of the pod's templates on its
        # own (the pod's outcome waits for them); else the harness does it.
        if not self.claim_controller:
            dra.play_claim_controller(self.api, ns, created)
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

    # ----------------------------------------------------------------- gangs
    def _create_pod_group(self, gang: Mapping[str, Any], ns: str) -> None:
        try:
            self.api.post(
                f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{ns}/podgroups",
                gen.pod_group_manifest(dict(gang), ns),
            )
        except ApiError as exc:
            raise HarnessError(
                f"PodGroup {gang['name']} not created ({exc}): the gangs feature needs a "
                "control plane serving scheduling.k8s.io/v1alpha2 "
                "(hack/cluster-up.sh with KUBESCHED_WORKLOAD_API=1)"
            ) from exc

    def _create_member(
        self,
        pod: Mapping[str, Any],
        ns: str,
        names: Mapping[str, str],
        logical: Mapping[str, str],
        group: str,
    ) -> Step:
        """A gang member before the gang's last: created, not waited for (its group
        holds it at PreEnqueue until the last member exists)."""
        manifest = gen.pod_manifest(pod, ns, SCHEDULER_NAME, names, **self._pod_args.get(ns, {}))
        began = time.time()
        try:
            created = self.api.post(f"/api/v1/namespaces/{ns}/pods", manifest)
        except ApiError as exc:
            message = str(exc.body.get("message", exc))
            return Step(pod["name"], "rejected", message=_normalise(message, ns, logical))
        return Step(
            pod["name"],
            "created",
            created=created,
            began=began,
            group=group,
            placements=self._placements(ns, logical),
        )

    def _settle_group(
        self,
        ns: str,
        members: list[str],
        logical: Mapping[str, str],
        step: Step,
        unstarted: dict[str, str],
    ) -> None:
        """After the gang's last pod's step: wait until every member is bound or has
        its PodScheduled=False condition, then take the placements again."""

        def settled() -> bool:
            pods = {p["metadata"]["name"]: p for p in self.api.list_pods(ns)}
            for name in members:
                pod = pods.get(name)
                if pod is None:
                    continue
                if pod["spec"].get("nodeName"):
                    continue
                if not any(
                    c.get("type") == "PodScheduled" and c.get("status") == "False"
                    for c in pod["status"].get("conditions", [])
                ):
                    return False
            return True

        with contextlib.suppress(WaitTimeout):
            self.api.wait_for(settled, timeout=self.step_timeout, interval=POLL)
        placements, rv = self._list_placements(ns, logical)
        if self._start_bound(ns, placements, unstarted):
            placements, rv = self._list_placements(ns, logical)
        self._quiesce(ns, rv, time.monotonic() + self.step_timeout)
        step.placements, _ = self._list_placements(ns, logical)

    @property
    def claim_controller(self) -> bool:
        if self._claim_controller is None:
            # hack/cluster-up.sh lists the controllers it started; another cluster
            # (--cluster-env) may not, so look for the controller manager itself.
            self._claim_controller = "resourceclaim-controller" in self.cp.controllers or (
                not self.cp.controllers and dra.controller_runs(self.api, self.cp.env)
            )
        return self._claim_controller

    def _record_claims(self, ns: str, step: Step) -> None:
        """The claims after STEP, and the pods' claim statuses (for the in-process
        re-run and the comparison of allocations)."""
        step.claims = dra.list_claims(self.api, ns)
        step.claim_statuses = dra.claim_statuses(self.api.list_pods(ns))

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


def _normalise(message: str, ns: str, logical: Mapping[str, str]) -> str:
    """Real node names -> logical ones; the run's namespace -> <namespace>."""
    if not message:
        return message
    for real, name in sorted(logical.items(), key=lambda kv: -len(kv[0])):
        message = message.replace(real, name)
    message = normalise_claim_names(message)
    return re.sub(rf"\b{re.escape(ns)}\b", "<namespace>", message)


def _outcomes(run: Run) -> str:
    return " ".join(
        f"{s.pod}={s.node if s.outcome == 'bound' else s.outcome[:5]}" for s in run.steps
    )
