"""Backlog drains: the measured pods all exist, pending, before anything binds them.

Two measurements share the method, so that their figures compare:

* **the bind ceiling** (``run_ceiling``): bench.bind_probe, a process of its
  own using kubesched's client stack as `kubesched run` does, binds the pending
  pods round-robin to the nodes with no scheduling at all. Its pods/s is the most
  any scheduler could bind on this control plane, this machine, at that moment.
* **the backlog drain** (``run_backlog``): a scheduler is started when the
  measured pods already exist (the init pods were bound by an earlier process of
  the same scheduler, stopped before the measured pods were created), so pod
  creation cannot limit it, unlike bench.e2e's create-while-scheduling mode
  (scheduler_perf's).

In both, a watch notes when each measured pod is first seen bound, and
**pods/s = (bound − 1) ÷ (last bound − first bound)**: the intervals between
binds, without the start-up (process start, import, informers' list; recorded
apart as ``startup_seconds``, from the spawn to the first pod bound).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cluster import (
    REPO_ROOT,
    Api,
    BenchError,
    Bindings,
    ControlPlane,
    bodies,
    namespace_manifest,
)
from bench.cpu_stages import describe, ms_per_pod
from bench.dra_e2e import collection_path, needs_claim_controller
from bench.e2e import (
    bind_init_pods,
    check_placements,
    churn,
    cleanup,
    latency,
    prepare,
    quantiles_ms,
    settled_metrics,
    tear_down,
    timeline,
    timeout_for,
    wait_ready,
)
from bench.machine import CpuMeter, process_cpu_seconds, thread_schedstat, wait_quiet
from bench.schedulers import PROFILE_NAMES, SchedulerProcess, start_scheduler
from bench.workloads import (
    ROLE_LABEL,
    ROLE_MEASURE,
    RUN_LABEL,
    WORKLOADS,
    Plan,
    Size,
    Workload,
)

# The schedulerName of the probe's pods: no scheduler serves it.
PROBE_SCHEDULER = "bench-bind-probe"


def drain_figures(bindings: Bindings, spawned: float) -> dict[str, Any]:
    """pods/s over the intervals between the first and the last bind, and when
    the pods were bound after SPAWNED (the binder's process start)."""
    times = sorted(bindings.bound.values())
    bound = len(times)
    span = times[-1] - times[0] if bound > 1 else 0.0
    return {
        "bound": bound,
        "seconds": round(span, 3),
        "pods_per_second": round((bound - 1) / span, 1) if span > 0 else None,
        "startup_seconds": round(times[0] - spawned, 3) if times else None,
        "total_seconds": round(times[-1] - spawned, 3) if times else None,
        "start_to_bound_ms": quantiles_ms([t - spawned for t in times]),
        "bound_per_second": timeline(bindings, spawned),
        "watch_restarts": bindings.restarts,
    }


def _probe_env(kubesched_src: Path | None) -> dict[str, str]:
    """PYTHONPATH: the kubesched under test (if given), then bench's repository."""
    env = dict(os.environ)
    paths = [str(kubesched_src.resolve())] if kubesched_src is not None else []
    paths += [str(REPO_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


async def run_ceiling(
    cp: ControlPlane,
    nodes: int,
    pods: int,
    *,
    concurrency: int = 64,
    client: str = "aiohttp",
    kubesched_src: Path | None = None,
    quiet_wait: float = 60.0,
    log: Callable[[str], None] | None = None,
    scheduler_api_work: bool = False,
) -> dict[str, Any]:
    """The bind ceiling on NODES nodes for PODS default pods (as SchedulingBasic's),
    all pending before bench.bind_probe starts. SCHEDULER_API_WORK: the probe also
    watches every live pod and writes a Scheduled event per bind (its --watch
    --events), the API work a scheduler does besides binding."""
    run_id = f"c{secrets.token_hex(3)}"
    namespace = f"bench-{run_id}-0"
    size = Size(nodes, 0, pods)
    plan = WORKLOADS["SchedulingBasic"].plan(size, PROBE_SCHEDULER, run_id, [namespace])
    result: dict[str, Any] = {
        "run_id": run_id,
        "nodes": nodes,
        "measured_pods": pods,
        "scheduler_api_work": scheduler_api_work,
    }
    api = Api(cp, concurrency=concurrency, client=client)
    proc: subprocess.Popen[bytes] | None = None
    stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in the finally below)

    def say(text: str) -> None:
        if log is not None:
            tag = "ceiling with events and a pod watch" if scheduler_api_work else "ceiling"
            log(f"  [{tag} {nodes}/{pods}] {text}")

    try:
        await api.create("/api/v1/namespaces", namespace_manifest(namespace, {RUN_LABEL: run_id}))
        started = time.monotonic()
        await api.create_all(bodies(plan.nodes))
        await api.create_all(bodies(plan.measure_pods))
        say(f"{nodes} nodes and {pods} pending pods created in {time.monotonic() - started:.1f}s")
        if quiet_wait > 0:
            result["quiet"] = await asyncio.to_thread(wait_quiet, max_wait=quiet_wait, log=say)
        selector = f"{RUN_LABEL}={run_id},{ROLE_LABEL}={ROLE_MEASURE}"
        async with api.watch_bindings(selector, pods) as b:
            meter = CpuMeter(cp.pids()).start()
            spawned = time.monotonic()
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.bind_probe",
                    f"--kubeconfig={cp.scheduler_kubeconfig}",
                    f"--pods={selector}",
                    f"--nodes={RUN_LABEL}={run_id}",
                    *(["--watch", "--events"] if scheduler_api_work else []),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                # a file, not a pipe: a chatty probe must not block on a full pipe
                stderr=stderr,
                cwd=REPO_ROOT,
                env=_probe_env(kubesched_src),
            )
            complete = await _wait_while_running(b, proc, timeout_for(pods))
            out, _ = await asyncio.to_thread(proc.communicate, timeout=120)
            result["cpu"] = meter.stop()
        if proc.returncode != 0:
            stderr.seek(0)
            tail = stderr.read()[-600:].decode(errors="replace")
            raise BenchError(f"bind probe exited {proc.returncode}: {tail}")
        result["probe"] = json.loads(out.decode().strip().splitlines()[-1])
        result.update(drain_figures(b, spawned))
        result["status"] = "ok" if complete else "timeout"
        if not complete:
            result["reason"] = f"{len(b.bound)}/{pods} bound {b.error}".strip()
        say(
            f"{result['bound']}/{pods} bound in {result['seconds']:.2f}s: "
            f"{result['pods_per_second']} pods/s (probe: {result['probe']['binds_per_second']} "
            f"binds/s, {result['probe']['errors']} errors)"
        )
    except (BenchError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        result.update(status="error", reason=str(exc))
        say(f"error: {exc}")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(10)
        stderr.close()
        with contextlib.suppress(BenchError):
            await cleanup(api, run_id)
        await api.aclose()
    return result


async def _wait_while_running(
    bindings: Bindings, proc: subprocess.Popen[bytes], timeout: float
) -> bool:
    """Whether every pod was seen bound within TIMEOUT; a probe that exits early
    (a crash, a bad kubeconfig) ends the wait a few seconds later, not at TIMEOUT."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await bindings.wait(min(1.0, max(0.0, deadline - time.monotonic()))):
            return True
        if proc.poll() is not None:
            return await bindings.wait(5.0)  # the watch may lag the last binds
    return False


async def run_backlog(
    cp: ControlPlane,
    workload: Workload,
    size_name: str,
    kind: str,
    workdir: Path,
    *,
    concurrency: int = 64,
    client: str = "aiohttp",
    kubesched_src: Path | None = None,
    quiet_wait: float = 60.0,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """WORKLOAD at SIZE_NAME drained by scheduler KIND: the measured pods (and the
    unschedulable ones among them) are created while no scheduler runs, then KIND
    starts and binds them. Result keys as bench.e2e.run_e2e's, with
    drain_figures' and without create→bound (no pod is created meanwhile)."""
    size = workload.size(size_name)
    run_id = f"d{secrets.token_hex(3)}"
    namespaces = [f"bench-{run_id}-{i}" for i in range(workload.namespaces)]
    profile = PROFILE_NAMES[kind]
    plan = workload.plan(size, profile, run_id, namespaces)
    result: dict[str, Any] = {
        "scheduler": kind,
        "profile": profile,
        "run_id": run_id,
        "mode": "backlog",
        "measured_pods": plan.measured,
    }
    api = Api(cp, concurrency=concurrency, client=client)
    # Every scheduler process started, for the end to stop (the init one is
    # stopped before the measured pods are created).
    started_procs: list[SchedulerProcess] = []

    def say(text: str) -> None:
        if log is not None:
            log(f"  [{workload.name} {kind} backlog] {text}")

    def start() -> SchedulerProcess:
        sched = start_scheduler(
            kind,
            cp,
            workdir,
            workload.required_plugins,
            kubesched_src=kubesched_src,
            feature_gates=workload.feature_gates,
        )
        started_procs.append(sched)
        return sched

    try:
        if not await prepare(api, plan, run_id, namespaces, result, say):
            return result
        if plan.init_pods:
            init_sched = start()
            if not await wait_ready(init_sched, result, say):
                return result
            await bind_init_pods(api, plan, run_id, say)
            init_sched.stop()
        started = time.monotonic()
        await api.create_all(bodies(plan.measure_pods))
        result["create_seconds"] = round(time.monotonic() - started, 3)
        say(f"{len(plan.measure_pods)} pending pods created in {result['create_seconds']:.1f}s")
        if needs_claim_controller(plan):
            await _wait_for_claims(api, namespaces, len(plan.init_pods) + len(plan.measure_pods))
        if quiet_wait > 0:
            result["quiet"] = await asyncio.to_thread(wait_quiet, max_wait=quiet_wait, log=say)
        sched = await _drain(api, plan, run_id, namespaces, profile, start, result, say)
        await check_placements(api, sched, plan, run_id, namespaces, result)
    except BenchError as exc:
        result.setdefault("status", "error")
        result.setdefault("reason", str(exc))
        say(f"error: {exc}")
    finally:
        await tear_down(api, started_procs, plan, run_id, namespaces, result)
    return result


async def _drain(
    api: Api,
    plan: Plan,
    run_id: str,
    namespaces: list[str],
    profile: str,
    start: Callable[[], SchedulerProcess],
    result: dict[str, Any],
    say: Callable[[str], None],
) -> SchedulerProcess:
    """Start the scheduler on the backlog and wait until every measured pod is
    bound (the churn, if any, running meanwhile); the scheduler's process."""
    selector = f"{RUN_LABEL}={run_id},{ROLE_LABEL}={ROLE_MEASURE}"
    timeout = timeout_for(len(plan.measure_pods))
    stop_churn = asyncio.Event()
    churn_task = None
    async with api.watch_bindings(selector, plan.measured) as b:
        spawned = time.monotonic()
        apiserver_before = process_cpu_seconds(api.cp.pid())
        sched = start()
        meter = CpuMeter([sched.proc.pid, *api.cp.pids()]).start()
        result["pid"] = sched.proc.pid
        if plan.churn is not None:
            churn_task = asyncio.create_task(
                churn(api, plan, run_id, namespaces[0], profile, stop_churn)
            )
        try:
            # Started on the backlog, a scheduler lists it before /readyz (kube-scheduler
            # waits for its handlers to take in every pending pod): that is part of the
            # drain, so it gets the drain's time, not the 60 s of a start on no pods.
            # kube-scheduler took over 60 s for GangScheduling's 10,000 gang pods.
            if not await wait_ready(sched, result, say, timeout):
                raise BenchError(str(result.get("reason", "not ready")))
            # What start-up (import, informers' initial list) cost, to /readyz.
            result["startup_cpu_seconds"] = round(sched.cpu_seconds(), 2)
            complete = await b.wait(timeout)
        finally:
            stop_churn.set()
            if churn_task is not None:
                result["churn_cycles"] = await churn_task
        result["cpu"] = meter.stop()
        # The API server's share: the wire format moves cost between it and the scheduler.
        result["apiserver_cpu_seconds"] = round(
            process_cpu_seconds(api.cp.pid()) - apiserver_before, 2
        )
    after = await asyncio.to_thread(settled_metrics, sched, profile)
    result.update(drain_figures(b, spawned))
    # Since the start: the informers' initial list is part of a drain.
    on_cpu, waited = thread_schedstat(sched.proc.pid)
    result["main_thread"] = {
        "on_cpu_seconds": round(on_cpu, 2),
        "runqueue_wait_seconds": round(waited, 2),
    }
    say(f"  main thread since the start: {on_cpu:.2f}s on a CPU, {waited:.2f}s waiting for one")
    budget = ms_per_pod(None, after, len(b.bound))
    if budget:
        result["cpu_ms_per_pod_by_stage"] = budget
        say("  " + describe(budget))
    # The whole process: start-up and the informers' initial list included.
    result["scheduler_cpu_seconds"] = round(sched.cpu_seconds(), 2)
    result["status"] = "ok" if complete else "timeout"
    if not complete:
        result["reason"] = f"{len(b.bound)}/{plan.measured} bound after {timeout:.0f}s {b.error}"
    say(
        f"{result['bound']}/{plan.measured} drained in {result['seconds']:.2f}s "
        f"({result['pods_per_second']} pods/s; first bound {result['startup_seconds']}s "
        f"after the start); kube-apiserver {result.get('apiserver_cpu_seconds')} CPU s"
    )
    result.update(latency("", after, profile))
    return sched


async def _wait_for_claims(api: Api, namespaces: list[str], expected: int) -> None:
    """Until the resourceclaim controller has made a claim for every pod, so that
    the drain does not wait for it."""
    deadline = time.monotonic() + timeout_for(expected)
    count = 0
    while time.monotonic() < deadline:
        count = 0
        for namespace in namespaces:
            count += len(await api.list_names(collection_path("ResourceClaim", namespace), ""))
        if count >= expected:
            return
        await asyncio.sleep(1.0)
    raise BenchError(f"only {count}/{expected} ResourceClaims made by the controller")
