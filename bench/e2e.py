"""End to end: one scheduler, one workload, on the real control plane.

A run has its own namespaces and nodes (named after a fresh run id) and removes
its pods and nodes when it ends, so that kube-scheduler and kubesched, run one
after the other, see the same empty cluster:

1. create the namespaces, the nodes and the workload's other objects (DRA:
   DeviceClass, ResourceSlices, ResourceClaimTemplates; then check that a
   resourceclaim controller makes the claims of template pods, see
   bench.dra_e2e); start the scheduler; wait for /readyz;
2. create the init pods and wait until they are bound (not measured);
3. scrape /metrics and the scheduler's CPU time; start watching the measured pods;
4. create the measured pods (and the unschedulable ones among them) as fast as
   the apiserver takes them (HTTP/2, 64 streams), while the churn, if any, runs;
5. when the last measured pod is seen bound: throughput = measured pods /
   (time of that watch event - time the first create was sent);
6. scrape /metrics again: attempt latency quantiles come from the difference
   of the two scrapes of scheduler_scheduling_attempt_duration_seconds, so only
   the measured phase counts; VmHWM for peak memory; check the placements
   (and the claims' allocations).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench.cluster import (
    Api,
    BenchError,
    Bindings,
    ControlPlane,
    bodies,
    encode,
    namespace_manifest,
    pods_path,
    priority_class_path,
)
from bench.cpu_stages import describe, ms_per_pod
from bench.dra_e2e import (
    create_objects,
    delete_objects,
    needs_claim_controller,
    probe_claim_controller,
    read_claims,
)
from bench.machine import CpuMeter, thread_schedstat, wait_quiet
from bench.promtext import counters, histograms, select
from bench.schedulers import PROFILE_NAMES, PluginUnavailable, SchedulerProcess, start_scheduler
from bench.workloads import (
    PRIORITY_CLASS,
    ROLE_CHURN,
    ROLE_INIT,
    ROLE_LABEL,
    ROLE_MEASURE,
    RUN_LABEL,
    Plan,
    Workload,
)

ATTEMPT_DURATION = "scheduler_scheduling_attempt_duration_seconds"
ATTEMPTS = "scheduler_schedule_attempts_total"
QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


def timeout_for(pods: int) -> float:
    """How long a phase may take before the run is reported as a timeout."""
    return 120.0 + 0.05 * pods


def _finite(value: float, digits: int = 3) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else round(value, digits)


async def run_e2e(
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
    """Run WORKLOAD at SIZE_NAME with scheduler KIND; the result as a JSON-able dict
    (``status``: ok, timeout, n/a or error). First waits up to QUIET_WAIT seconds
    for the machine's CPUs to be quiet (see bench.machine)."""
    size = workload.size(size_name)
    run_id = f"b{secrets.token_hex(3)}"
    namespaces = [f"bench-{run_id}-{i}" for i in range(workload.namespaces)]
    profile = PROFILE_NAMES[kind]
    plan = workload.plan(size, profile, run_id, namespaces)
    result: dict[str, Any] = {"scheduler": kind, "profile": profile, "run_id": run_id}
    api = Api(cp, concurrency=concurrency, client=client)
    sched = None

    def say(text: str) -> None:
        if log is not None:
            log(f"  [{workload.name} {kind}] {text}")

    try:
        if quiet_wait > 0:
            result["quiet"] = await asyncio.to_thread(wait_quiet, max_wait=quiet_wait, log=say)
        if not await prepare(api, plan, run_id, namespaces, result, say):
            return result
        sched = start_scheduler(
            kind,
            cp,
            workdir,
            workload.required_plugins,
            kubesched_src=kubesched_src,
            feature_gates=workload.feature_gates,
        )
        result["pid"] = sched.proc.pid
        if not await wait_ready(sched, result, say):
            return result
        await _measure(api, sched, plan, run_id, namespaces, profile, result, say)
        await check_placements(api, sched, plan, run_id, namespaces, result)
    except BenchError as exc:
        result.update(status="error", reason=str(exc))
        say(f"error: {exc}")
    finally:
        await tear_down(api, [] if sched is None else [sched], plan, run_id, namespaces, result)
    return result


async def tear_down(
    api: Api,
    scheds: Sequence[SchedulerProcess],
    plan: Plan,
    run_id: str,
    namespaces: list[str],
    result: dict[str, Any],
) -> None:
    """After a run, whatever its end: stop the schedulers (a failed run keeps the last
    one's log tail), delete what the run created, close the API client."""
    for sched in scheds:
        if result.get("status") in ("error", "timeout"):
            result["log_tail"] = sched.log_tail(15)
        sched.stop()
    with contextlib.suppress(BenchError):
        await cleanup(api, run_id)
    with contextlib.suppress(BenchError):
        await delete_objects(api, plan, run_id, namespaces)
    await api.aclose()


async def prepare(
    api: Api,
    plan: Plan,
    run_id: str,
    namespaces: list[str],
    result: dict[str, Any],
    say: Callable[[str], None],
) -> bool:
    """Step 1 up to the scheduler: the PriorityClass, the run's namespaces, nodes
    and other objects, and (DRA) the check that a resourceclaim controller runs.
    False (with RESULT n/a) when it does not."""
    await api.create(priority_class_path(), PRIORITY_CLASS, exist_ok=True)
    for ns in namespaces:
        await api.create("/api/v1/namespaces", namespace_manifest(ns, {RUN_LABEL: run_id}))
    started = time.monotonic()
    await api.create_all(bodies(plan.nodes))
    say(f"{len(plan.nodes)} nodes created in {time.monotonic() - started:.1f}s")
    if plan.objects:
        started = time.monotonic()
        await create_objects(api, plan)
        say(f"{len(plan.objects)} objects created in {time.monotonic() - started:.1f}s")
    if needs_claim_controller(plan):
        pod = (plan.init_pods or plan.measure_pods)[0]
        try:
            await probe_claim_controller(api, plan, run_id, namespaces[0], pod)
        except BenchError as exc:
            result.update(status="n/a", reason=str(exc), missing="resourceclaim-controller")
            say(f"n/a: {exc}")
            return False
    return True


async def wait_ready(
    sched: SchedulerProcess,
    result: dict[str, Any],
    say: Callable[[str], None],
    timeout: float = 60.0,
) -> bool:
    """Until /readyz answers (at most TIMEOUT s); False (with RESULT n/a) if the
    scheduler refused the profile for want of a plugin."""
    try:
        await asyncio.to_thread(sched.wait_ready, timeout)
    except PluginUnavailable as exc:
        result.update(status="n/a", reason=str(exc), plugin=exc.plugin)
        say(f"n/a: {exc}")
        return False
    say("ready")
    return True


async def bind_init_pods(api: Api, plan: Plan, run_id: str, say: Callable[[str], None]) -> None:
    """Step 2: create the init pods and wait until a scheduler has bound them all."""
    if not plan.init_pods:
        return
    started = time.monotonic()
    selector = f"{RUN_LABEL}={run_id},{ROLE_LABEL}={ROLE_INIT}"
    async with api.watch_bindings(selector, len(plan.init_pods)) as b:
        await api.create_all(bodies(plan.init_pods))
        if not await b.wait(timeout_for(len(plan.init_pods))):
            raise BenchError(
                f"init pods: {len(b.bound)}/{len(plan.init_pods)} bound "
                f"in {time.monotonic() - started:.0f}s {b.error}"
            )
    say(f"{len(plan.init_pods)} init pods bound in {time.monotonic() - started:.1f}s")


async def check_placements(
    api: Api,
    sched: SchedulerProcess,
    plan: Plan,
    run_id: str,
    namespaces: list[str],
    result: dict[str, Any],
) -> None:
    """Step 6's end: the scheduler's peak memory, the placements (and claims)
    checked and tallied, and the pods left pending by role. A broken invariant (a
    gang bound in part) turns the run into an error: its figures measure a
    scheduler that did not do the work."""
    result["peak_rss_mb"] = round(sched.peak_rss_bytes() / 2**20, 1)
    pods, _ = await api.list_pods(f"{RUN_LABEL}={run_id}")
    pods = [p for p in pods if p.role != ROLE_CHURN]
    claims = await read_claims(api, namespaces) if plan.claim_checks else None
    result["violations"] = plan.verify(pods, claims)
    result.update(plan.tally(pods))
    broken = plan.broken(pods)
    if broken:
        result.update(status="error", reason="; ".join(broken), broken=broken)
    result["pods_left"] = {
        role: sum(1 for p in pods if p.role == role) for role in (ROLE_INIT, ROLE_MEASURE)
    }


async def _measure(
    api: Api,
    sched: SchedulerProcess,
    plan: Plan,
    run_id: str,
    namespaces: list[str],
    profile: str,
    result: dict[str, Any],
    say: Callable[[str], None],
) -> None:
    run = f"{RUN_LABEL}={run_id}"
    await bind_init_pods(api, plan, run_id, say)

    measure = bodies(plan.measure_pods)  # encoded before the clock starts
    created_at: dict[str, float] = {}
    before = await asyncio.to_thread(settled_metrics, sched, profile)
    cpu_before = sched.cpu_seconds()
    # The scheduler's main thread (kubesched's scheduling thread): how long it ran,
    # and how long it was runnable but waited for a CPU.
    thread_before = thread_schedstat(sched.proc.pid)
    stop_churn = asyncio.Event()
    churn_task = None
    timeout = timeout_for(len(plan.measure_pods))
    meter = CpuMeter([sched.proc.pid, *api.cp.pids()])
    async with api.watch_bindings(f"{run},{ROLE_LABEL}={ROLE_MEASURE}", plan.measured) as b:
        meter.start()
        if plan.churn is not None:
            churn_task = asyncio.create_task(
                churn(api, plan, run_id, namespaces[0], profile, stop_churn)
            )
        t0 = time.monotonic()
        await api.create_all(measure, created_at)
        created = time.monotonic() - t0
        complete = await b.wait(timeout)
        end = b.last if b.bound else time.monotonic()
        cpu_use = meter.stop()
        stop_churn.set()
        if churn_task is not None:
            result["churn_cycles"] = await churn_task
    after = await asyncio.to_thread(settled_metrics, sched, profile)
    cpu = sched.cpu_seconds() - cpu_before
    thread_after = thread_schedstat(sched.proc.pid)
    seconds = end - t0
    bound = len(b.bound)
    result.update(
        status="ok" if complete else "timeout",
        measured_pods=plan.measured,
        bound=bound,
        seconds=round(seconds, 3),
        create_seconds=round(created, 3),
        pods_per_second=round(bound / seconds, 1) if seconds > 0 else None,
        scheduler_cpu_seconds=round(cpu, 2),
        bound_per_second=timeline(b, t0),
        create_to_bound_ms=create_to_bound(b, created_at),
        watch_restarts=b.restarts,
        cpu=cpu_use,
    )
    if not complete:
        result["reason"] = f"{bound}/{plan.measured} bound after {timeout:.0f}s {b.error}".strip()
    say(
        f"{bound}/{plan.measured} measured pods bound in {seconds:.2f}s "
        f"({result['pods_per_second']} pods/s; created in {created:.2f}s)"
    )
    budget = ms_per_pod(before, after, bound)
    if budget:
        result["cpu_ms_per_pod_by_stage"] = budget
        say("  " + describe(budget))
    on_cpu, waited = (round(a - b, 2) for a, b in zip(thread_after, thread_before, strict=True))
    result["main_thread"] = {"on_cpu_seconds": on_cpu, "runqueue_wait_seconds": waited}
    say(f"  main thread: {on_cpu:.2f}s on a CPU, {waited:.2f}s waiting for one, in {seconds:.2f}s")
    result.update(latency(before, after, profile))


def settled_metrics(sched: SchedulerProcess, profile: str, timeout: float = 10.0) -> str:
    """/metrics once the count of scheduled attempts has stopped moving.

    kube-scheduler records a scheduled attempt after the bind call returns, so
    the watch can show a pod bound a moment before its attempt is counted:
    scraping at once would move the last few observations of one phase into the
    next (or out of the measurement)."""
    deadline = time.monotonic() + timeout
    text = sched.metrics()
    while time.monotonic() < deadline:
        time.sleep(0.3)
        again = sched.metrics()
        if _scheduled(again, profile) == _scheduled(text, profile):
            return again
        text = again
    return text


def _scheduled(text: str, profile: str) -> float:
    return sum(
        v
        for labels, v in counters(text, ATTEMPTS).items()
        if ("profile", profile) in labels and ("result", "scheduled") in labels
    )


def timeline(bindings: Bindings, t0: float) -> list[int]:
    """How many measured pods were bound in each second after the first create."""
    counts: list[int] = []
    for t in bindings.bound.values():
        second = max(0, int(t - t0))
        counts.extend([0] * (second + 1 - len(counts)))
        counts[second] += 1
    return counts


def create_to_bound(bindings: Bindings, created_at: dict[str, float]) -> dict[str, float | None]:
    """Quantiles (ms) of the time from a pod's create being answered to the watch
    showing it bound: what a user waits for, measured the same way for both
    schedulers (unlike the attempt duration, see docs/develop/benchmark-method.md)."""
    return quantiles_ms(
        [bindings.bound[k] - created_at[k] for k in bindings.bound.keys() & created_at.keys()]
    )


def quantiles_ms(waits: list[float]) -> dict[str, float | None]:
    """p50/p90/p99 (nearest rank) of WAITS in seconds, as milliseconds."""
    waits = sorted(waits)
    out: dict[str, float | None] = {}
    for name, q in QUANTILES.items():
        if not waits:
            out[name] = None
            continue
        out[name] = round(
            max(0.0, waits[min(len(waits) - 1, math.ceil(q * len(waits)) - 1)]) * 1000, 1
        )
    return out


def latency(before: str, after: str, profile: str) -> dict[str, Any]:
    """Attempt latency quantiles (ms) and attempts by result in the measured phase."""
    h_after, h_before = histograms(after, ATTEMPT_DURATION), histograms(before, ATTEMPT_DURATION)
    delta = select(h_after, profile=profile) - select(h_before, profile=profile)
    out: dict[str, Any] = {
        "attempt_latency_ms": {k: _finite(delta.quantile(q) * 1000) for k, q in QUANTILES.items()},
        "attempt_latency_mean_ms": _finite(delta.sum / delta.count * 1000) if delta.count else None,
    }
    attempts: dict[str, int] = {}
    c_after, c_before = counters(after, ATTEMPTS), counters(before, ATTEMPTS)
    for labels, value in c_after.items():
        if ("profile", profile) in labels:
            result = dict(labels).get("result", "")
            attempts[result] = attempts.get(result, 0) + round(value - c_before.get(labels, 0.0))
    out["attempts"] = attempts
    return out


async def churn(
    api: Api, plan: Plan, run_id: str, namespace: str, scheduler: str, stop: asyncio.Event
) -> int:
    """scheduler_perf's churn, mode recreate, number 1: returns the cycles done."""
    churn = plan.churn
    assert churn is not None
    previous: tuple[str, str] | None = None
    cycle = 0
    while not stop.is_set():
        node = churn.node(run_id, cycle)
        pod = churn.pod(run_id, namespace, scheduler, cycle)
        await api.request("POST", "/api/v1/nodes", encode(node), ok=(409,))
        await api.request("POST", pods_path(namespace), encode(pod), ok=(409,))
        if previous is not None:
            await api.request("DELETE", f"/api/v1/nodes/{previous[0]}", ok=(404,))
            await api.delete_pod(namespace, previous[1])
        previous = (node["metadata"]["name"], pod["metadata"]["name"])
        cycle += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), churn.interval_seconds)
    return cycle


async def cleanup(api: Api, run_id: str) -> None:
    """Delete the run's pods (gracePeriodSeconds=0), then its nodes."""
    pods, _ = await api.list_pods(f"{RUN_LABEL}={run_id}")
    await _all(api, [api.delete_pod(p.namespace, p.name) for p in pods])
    names = await api.list_names("/api/v1/nodes", f"{RUN_LABEL}={run_id}")
    await _all(api, [api.request("DELETE", f"/api/v1/nodes/{n}", ok=(404,)) for n in names])


async def _all(api: Api, calls: list[Awaitable[Any]]) -> None:
    semaphore = asyncio.Semaphore(api.concurrency)

    async def one(call: Awaitable[Any]) -> None:
        async with semaphore:
            await call

    await asyncio.gather(*(one(c) for c in calls))
