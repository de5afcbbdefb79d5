"""In-process: kubesched's scheduling speed with no API in the way.

    python -m bench.inprocess --workload SchedulingBasic --size 5000
    python -m bench.inprocess --workload SchedulingBasic --size 5000 --profile prof.pstats

The workload's manifests (the very dicts the end-to-end run POSTs) are turned
into kubesched objects and scheduled by the scheduler `kubesched simulate`
drives, configured from the same KubeSchedulerConfiguration as the end-to-end
run: the init pods first (not measured), then the measured pods, timed from
the first pod handed to the scheduler until the queue is quiet (every bind
done). A workload's DRA objects (DeviceClasses, ResourceSlices,
ResourceClaimTemplates) go into the scheduler's DraState as `simulate` loads
them, and each phase's pods get their claims from the templates as the
resourceclaim controller would (kubesched.cluster.dra_manifests), inside the
timed section since end to end the controller's work is too. Peak memory is
the process's VmHWM: run one workload per process (``measure_in_subprocess``)
so that the figure is that workload's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from bench.dra_workload import claim_state
from bench.workloads import (
    HIGH_PRIORITY,
    HIGH_PRIORITY_CLASS,
    ROLE_CHURN,
    ROLE_MEASURE,
    WORKLOADS,
    ClaimState,
    Manifest,
    Plan,
    PodState,
    Workload,
    scheduler_config,
)
from kubesched.api.objects import Node, Pod
from kubesched.api.scheduling import PodGroup as WorkloadPodGroup
from kubesched.cluster.dra_manifests import DRA_KINDS, DraObjects, build_dra, create_pod_claims
from kubesched.cluster.generated_names import _random_chars
from kubesched.config.file import parse_config
from kubesched.framework.clock import SimClock
from kubesched.framework.features import parse_feature_gates
from kubesched.framework.handle import Listers
from kubesched.framework.registry import UnknownPluginError
from kubesched.framework.state.dra import DraState
from kubesched.framework.state.podgroup_states import WorkloadPodGroupLister
from kubesched.scheduler import Scheduler
from kubesched.simulation.claim_writer import InMemoryClaimWriter
from kubesched.simulation.memory import InMemoryCluster
from kubesched.simulation.simulator import OutcomeRecorder, run_until_quiet
from kubesched.simulation.workload_pod_group_writer import InMemoryPodGroupConditionWriter

PROFILE_NAME = "kubesched"


def to_pod(manifest: Manifest) -> Pod:
    """The manifest as kubesched decodes it; spec.priority as the Priority
    admission plugin would set it from priorityClassName."""
    pod = msgspec.convert(manifest, Pod)
    if not pod.metadata.uid:
        # The apiserver's: claims made from templates name their pod by uid.
        pod.metadata.uid = f"uid-{pod.metadata.namespace}-{pod.metadata.name}"
    if pod.spec.priority_class_name == HIGH_PRIORITY_CLASS:
        pod.spec.priority = HIGH_PRIORITY
    return pod


class _GeneratedNames:
    """metadata.generateName as the apiserver fills it in (five random characters),
    deterministic like the manifest loader's: the names of the template claims."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, kind: str, namespace: str, base: str, taken: Callable[[str], bool]) -> str:
        while True:
            self.count += 1
            name = base + _random_chars(f"{kind}/{namespace}/{base}#{self.count}")
            if not taken(name):
                return name


def dra_state(plan: Plan) -> DraState | None:
    """The plan's DRA objects, checked as the apiserver would (DraObjects.add), in a
    DraState whose writes land in itself (as `simulate` sets it up); None if it has none."""
    manifests = [m for m in plan.objects if m["kind"] in DRA_KINDS]
    if not manifests:
        return None
    objects = DraObjects()
    for manifest in manifests:
        kind = manifest["kind"]
        obj = msgspec.convert(manifest, DRA_KINDS[kind][0])
        problem = objects.add(kind, obj, manifest, "bench")
        if problem is not None:
            raise ValueError(f"{kind} {manifest['metadata']['name']}: {problem[0]}: {problem[1]}")
    state = build_dra(objects, [], _GeneratedNames(), lambda _: None)
    state.writer = InMemoryClaimWriter(state)
    return state


def workload_pod_groups(plan: Plan) -> WorkloadPodGroupLister:
    """The plan's PodGroups (scheduling.k8s.io/v1alpha2) in a lister whose status
    writes land in itself, as `simulate` sets it up. (Its Workloads: the scheduler
    does not read them.)"""
    groups = [msgspec.convert(m, WorkloadPodGroup) for m in plan.objects if m["kind"] == "PodGroup"]
    lister = WorkloadPodGroupLister({g.key: g for g in groups})
    lister.writer = InMemoryPodGroupConditionWriter(lister)
    return lister


def claim_states(state: DraState) -> list[ClaimState]:
    return [claim_state(msgspec.to_builtins(c)) for c in state.claims.values()]


def peak_rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def run_inprocess(
    workload: Workload, size_name: str, *, seed: int = 1, profiler: cProfile.Profile | None = None
) -> dict[str, Any]:
    """Schedule the workload in this process; the result as a JSON-able dict."""
    size = workload.size(size_name)
    run_id = "inproc"
    namespaces = [f"bench-{i}" for i in range(workload.namespaces)]
    plan = workload.plan(size, PROFILE_NAME, run_id, namespaces)
    # The gates choose the default plugins (GangScheduling's) as they do for `run`.
    gates = parse_feature_gates(workload.feature_gates)
    config = parse_config(scheduler_config(PROFILE_NAME, workload.required_plugins), gates=gates)
    clock = SimClock()
    cluster = InMemoryCluster()
    recorder = OutcomeRecorder()  # for the attempts count
    dra = dra_state(plan)
    claim_names = _GeneratedNames()
    try:
        scheduler = Scheduler(
            config.profiles,
            cluster,
            clock=clock,
            seed=seed,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            pod_initial_backoff=config.pod_initial_backoff,
            pod_max_backoff=config.pod_max_backoff,
            outcome_observer=recorder,
            listers=Listers(
                dra=DraState() if dra is None else dra,
                workload_pod_groups=workload_pod_groups(plan),
            ),
            gates=gates,
        )
    except UnknownPluginError as exc:
        plugin = exc.args[0] if exc.args else str(exc)
        return {"status": "n/a", "reason": f"plugin not available ({plugin})", "plugin": plugin}
    for manifest in plan.nodes:
        cluster.add_node(msgspec.convert(manifest, Node))
    if dra is not None:
        # Claims and their allocations reach the queue as the informers' events would.
        dra.subscribe(scheduler.queue.on_event)
    cluster.watch(scheduler)
    init = [to_pod(p) for p in plan.init_pods]
    measure = [to_pod(p) for p in plan.measure_pods]

    async def schedule(pods: list[Pod], churn: bool) -> tuple[float, float]:
        """Wall and CPU seconds (this process's) to schedule the pods."""
        progress = _churner(workload, cluster, namespaces[0]) if churn else None
        started, cpu_started = time.perf_counter(), time.process_time()
        if dra is not None:
            create_pod_claims(dra, pods, claim_names)
        for pod in pods:
            cluster.add_pod(pod)
        await run_until_quiet(scheduler, clock, progress, len(pods))
        return time.perf_counter() - started, time.process_time() - cpu_started

    async def both_phases() -> tuple[float, float, int]:
        await schedule(init, False)
        # As simulate and run do after their initial sync (large clusters only).
        _freeze_after_sync(len(plan.nodes) + len(init))
        attempts_before = recorder.attempts
        if profiler is not None:
            profiler.enable()
        seconds, cpu_seconds = await schedule(measure, workload.churn is not None)
        if profiler is not None:
            profiler.disable()
        return seconds, cpu_seconds, attempts_before

    seconds, cpu_seconds, attempts_before = asyncio.run(both_phases())
    attempts = recorder.attempts - attempts_before
    states = [
        PodState(p.metadata.namespace, p.metadata.name, dict(p.metadata.labels), p.spec.node_name)
        for p in cluster.pods.values()
        if p.metadata.labels.get("bench.kubesched.io/role") != ROLE_CHURN
    ]
    bound = sum(1 for p in states if p.role == ROLE_MEASURE and p.node_name)
    broken = plan.broken(states)
    return {
        # A broken invariant (a gang bound in part) voids the figures, as end to end.
        "status": "error" if broken else "ok" if bound == plan.measured else "incomplete",
        **({"reason": "; ".join(broken), "broken": broken} if broken else {}),
        "measured_pods": plan.measured,
        "bound": bound,
        "seconds": round(seconds, 3),
        "pods_per_second": round(bound / seconds, 1) if seconds > 0 else None,
        # On a shared machine the wall figure swings with the other processes'
        # load; the CPU time this process spent moves far less.
        "cpu_seconds": round(cpu_seconds, 3),
        "pods_per_cpu_second": round(bound / cpu_seconds, 1) if cpu_seconds > 0 else None,
        "attempts": attempts,
        "attempts_per_second": round(attempts / seconds, 1) if seconds > 0 else None,
        "peak_rss_mb": round(peak_rss_bytes() / 2**20, 1),
        "violations": plan.verify(states, claim_states(dra) if dra is not None else None),
        **plan.tally(states),
    }


def _freeze_after_sync(objects: int) -> None:
    """scheduler.freeze_after_sync, when the kubesched under test (--kubesched-rev)
    has it."""
    try:
        from kubesched.scheduler.scheduler import freeze_after_sync
    except ImportError:
        return
    freeze_after_sync(objects)


def _churner(
    workload: Workload, cluster: InMemoryCluster, namespace: str
) -> Callable[[int, int], None]:
    """A progress callback (called every 32 scheduling cycles) that recreates a
    no-pods node and an unschedulable pod every `every_decisions` decisions."""
    churn = workload.churn
    assert churn is not None
    state = {"cycle": 0, "last": 0}

    def progress(settled: int, total: int) -> None:
        cycle = state["cycle"]
        state["last"] += 32
        if state["last"] < churn.every_decisions:
            return
        state["last"] = 0
        node = msgspec.convert(churn.node("inproc", cycle), Node)
        pod = to_pod(churn.pod("inproc", namespace, PROFILE_NAME, cycle))
        cluster.add_node(node)
        cluster.add_pod(pod)
        if cycle > 0:
            cluster.delete_node(f"inproc-churn-node-{cycle - 1}")
            cluster.remove_pod(f"{namespace}/churn-{cycle - 1}")
        state["cycle"] = cycle + 1

    return progress


def measure_in_subprocess(
    workload: str,
    size: str,
    *,
    seed: int = 1,
    timeout: float = 3600,
    kubesched_src: Path | None = None,
) -> dict[str, Any]:
    """run_inprocess in a fresh interpreter (its own peak RSS); errors become a
    result. KUBESCHED_SRC: import kubesched from there instead of the installed one."""
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ)
    if kubesched_src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(kubesched_src.resolve()), str(repo)])
    command = [sys.executable, "-m", "bench.inprocess", "--workload", workload, "--size", size]
    command += ["--seed", str(seed), "--json"]
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=repo,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"status": "error", "reason": f"timed out after {timeout:.0f}s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        return {"status": "error", "reason": f"exit {proc.returncode}: {tail}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.inprocess", description=__doc__)
    parser.add_argument("--workload", default="SchedulingBasic", choices=sorted(WORKLOADS))
    parser.add_argument("--size", default="small")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the result as one JSON line")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the measured phase into FILE")
    parser.add_argument("--top", type=int, default=25, help="functions to list with --profile")
    args = parser.parse_args(argv)
    profiler = cProfile.Profile() if args.profile else None
    result = run_inprocess(WORKLOADS[args.workload], args.size, seed=args.seed, profiler=profiler)
    if profiler is not None:
        profiler.dump_stats(args.profile)
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(order).print_stats(args.top)
            print(out.getvalue(), file=sys.stderr)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{args.workload} size={args.size}: " + json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
