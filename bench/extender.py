"""kube-scheduler with and without `kubesched extender`: throughput, and the latency
the extender adds per pod (issue #32 item 4).

    python -m bench.extender --nodes 500,5000 --pods 1000 --repeat 3
    make bench-extender                  # the same: EXT_NODES, EXT_PODS, EXT_REPEAT

On a control plane of its own (hack/cluster-up.sh; or --cluster-env DIR/env), for
each node count NODES fake nodes (SchedulingBasic's: 4 CPU, 32Gi, 110 pods) are
created once through the API and kept; then, REPEAT times, each configuration
schedules PODS default pods (100m / 500Mi) created while it runs, measured exactly
as `python -m bench`'s end-to-end mode measures (bench.e2e: the same watch, the same
clock, the same checks of the placements; a fresh namespace, fresh pods and fresh
processes per run; the pods deleted after it). The configurations, in an order that
is reversed every other repeat so that none always meets the freshest etcd:

* ``alone``: kube-scheduler v1.36.3 with the benchmarks' KubeSchedulerConfiguration
  (bench.workloads.scheduler_config: the default profile, client QPS/burst 5000, no
  leader election);
* ``names``: the same plus ``extenders:`` pointing at a fresh `kubesched extender`
  (default profile; weight 5, filter and prioritize, HTTPS, nodeCacheCapable: true:
  each request carries the pod and node names, the extender's informers have the
  Nodes);
* ``nodes`` (at the --whole-nodes-at counts, 500 by default): nodeCacheCapable:
  false, each request carries whole Nodes and the filter answer sends them back.

kube-scheduler hands the extender the nodes its own filters passed, and it stops
looking once it has found numFeasibleNodesToFind of them (percentageOfNodesToScore
left at its default: 50 − nodes/125 %, at least 5 % and 100 nodes): about 230 nodes
per request at 500 nodes and 500 at 5,000. The extender starts before the quiet wait,
so its start-up (imports, the informers' list) is not in the measured phase.

Figures of a run (the table: the median of the repeats, [min–max]; the JSON: every run):

* ``pods/s``: measured pods ÷ (the last seen bound − the first create sent), bench's
  end-to-end throughput; ``× alone``: its ratio to the alone run of the same repeat;
* ``algorithm``: kube-scheduler's scheduler_scheduling_algorithm_duration_seconds
  (its filter and score phases, the extender's calls included, the bind not), per
  attempt: p50 and p99 interpolated from the histogram's buckets (1, 2, 4, 8 ... ms)
  as PromQL's histogram_quantile does, and the mean, exact (_sum ÷ _count). The
  extender's added latency per pod as kube-scheduler sees it (HTTP, TLS and JSON on
  both sides included) is ``+``: the run's figure minus the alone run's of the same
  repeat;
* ``attempt``: scheduler_scheduling_attempt_duration_seconds p50 / p99 (algorithm and
  bind, as bench reports it) and ``create → bound`` p50 / p99 (per pod, by the
  harness; in this create-while-scheduling mode mostly time spent queued). Neither
  is the extender's cost: alone, kube-scheduler decides faster than the apiserver,
  busy with the creates, binds, so its binds wait and its attempts are the longer
  ones (a first run: p50 270 ms alone, 26 ms with the extender);
* ``extender filter / prioritize``: p50 and p99 of the extender's own request
  durations, exact (nearest rank over every request; the server times each request
  itself and bench.timed_extender writes each duration down, see there), and
  ``per attempt``: a filter request plus the prioritize request after it (kube-
  scheduler's scheduling cycle is serial, so one attempt's requests never
  interleave with another's); the histogram-interpolated quantiles are in the JSON
  beside them (``histogram_ms``), a cross-check. The server's clock starts when its
  handler does: TLS, the HTTP parsing and any wait behind the informers' events in
  its event loop are outside it, and inside kube-scheduler's algorithm figure;
* the extender's CPU per bound pod and peak memory, and its requests and errors.

The default size, 1,000 pods at each node count, measured 3 times: it keeps the
whole of `make bench-extender` at 10–15 minutes on 2 cores (15 runs, each 15–25 s
beside the pods' scheduling: the extender's start, 6 s at 100 nodes, a quiet wait,
kube-scheduler's start, 1,000 pods to delete; the measured phase, estimated from a
run at 100 nodes, 3–20 s), while each run still has 1,000 attempts, enough for a p99
that is not a single outlier (the 10th slowest).
``nodes`` runs at 500 nodes only by default: whole Nodes are what cost most, and at
5,000 nodes each request would carry ~500 of them (--whole-nodes-at 500,5000).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bench.cluster import (
    REPO_ROOT,
    Api,
    BenchError,
    ControlPlane,
    bodies,
    namespace_manifest,
)

# _measure: bench's end-to-end measured phase, reused whole rather than copied.
from bench.e2e import (
    _measure,
    check_placements,
    cleanup,
    quantiles_ms,
    settled_metrics,
    tear_down,
    wait_ready,
)
from bench.machine import NPROC, wait_quiet
from bench.medians import _dig
from bench.promtext import histograms, select
from bench.report import write_json
from bench.run import ControlPlanes, _git, machine
from bench.schedulers import (
    KUBE_SCHEDULER,
    PROFILE_NAMES,
    VERBOSITY,
    SchedulerProcess,
    free_port,
    start_scheduler,
)
from bench.workloads import RUN_LABEL, WORKLOADS, Manifest, Size

SCHEMA = 1
ALONE, NAMES, NODES = "alone", "names", "nodes"
CONFIGS = {
    ALONE: "kube-scheduler alone",
    NAMES: "+ extender (node names)",
    NODES: "+ extender (whole Nodes)",
}
PROFILE = PROFILE_NAMES[KUBE_SCHEDULER]
BASIC = WORKLOADS["SchedulingBasic"]
EXTENDER = "kubesched-extender"
VERBS = ("filter", "prioritize")
# The secure port's paths served without a token: the verbs (kube-scheduler sends
# none), the health paths, and /metrics so that the harness can scrape it as bench
# scrapes the schedulers.
EXTENDER_ALLOW = "/healthz,/readyz,/livez,/metrics,/scheduler/*"
ALGORITHM_DURATION = "scheduler_scheduling_algorithm_duration_seconds"
EXTENDER_DURATION = "kubesched_extender_request_duration_seconds"
# The extender's informers list every node and pod of the cluster before /readyz.
EXTENDER_READY_TIMEOUT = 180.0

# The table's figures: label, path in a run's result, and how a run with the
# extender compares with the alone run of its repeat ("ratio", "difference", or none).
FIGURES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("pods/s", ("pods_per_second",), "ratio"),
    ("algorithm p50 ms", ("algorithm_ms", "p50"), "difference"),
    ("algorithm p99 ms", ("algorithm_ms", "p99"), "difference"),
    ("algorithm mean ms", ("algorithm_ms", "mean"), "difference"),
    ("attempt p50 ms", ("attempt_latency_ms", "p50"), "difference"),
    ("attempt p99 ms", ("attempt_latency_ms", "p99"), "difference"),
    ("create → bound p50 ms", ("create_to_bound_ms", "p50"), "difference"),
    ("create → bound p99 ms", ("create_to_bound_ms", "p99"), "difference"),
    ("kube-scheduler CPU s", ("scheduler_cpu_seconds",), "difference"),
    ("extender filter p50 ms", ("extender", "filter_ms", "p50"), ""),
    ("extender filter p99 ms", ("extender", "filter_ms", "p99"), ""),
    ("extender prioritize p50 ms", ("extender", "prioritize_ms", "p50"), ""),
    ("extender prioritize p99 ms", ("extender", "prioritize_ms", "p99"), ""),
    ("extender per attempt p50 ms", ("extender", "attempt_ms", "p50"), ""),
    ("extender per attempt p99 ms", ("extender", "attempt_ms", "p99"), ""),
    ("extender requests", ("extender", "requests"), ""),
    ("extender errors", ("extender", "errors"), ""),
    ("extender CPU ms per pod", ("extender", "cpu_ms_per_pod"), ""),
    ("extender peak MB", ("extender", "peak_rss_mb"), ""),
)


# ------------------------------------------------------------------ processes


def extender_entry(port: int, node_cache_capable: bool) -> dict[str, Any]:
    """kube-scheduler's Extender for `kubesched extender` on PORT (the how-to's)."""
    return {
        "urlPrefix": f"https://127.0.0.1:{port}/scheduler",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 5,
        "nodeCacheCapable": node_cache_capable,
        # No CA given: kube-scheduler does not verify the self-signed certificate.
        "enableHTTPS": True,
    }


@dataclass
class Extender:
    """A running `kubesched extender` and the file its request durations go to;
    ``begin`` and ``end`` bracket a measured phase."""

    proc: SchedulerProcess
    durations: Path
    # At ``begin``: the /metrics text, the CPU seconds, the durations file's size.
    _metrics: str = field(default="", init=False)
    _cpu: float = field(default=0.0, init=False)
    _offset: int = field(default=0, init=False)

    @property
    def port(self) -> int:
        return self.proc.port

    def begin(self) -> None:
        self._metrics = self.proc.metrics()
        self._cpu = self.proc.cpu_seconds()
        self._offset = self.durations.stat().st_size

    def end(self, bound: int) -> dict[str, Any]:
        """The phase's figures (extender_figures) with its CPU time per bound pod
        and the process's peak memory."""
        cpu = self.proc.cpu_seconds() - self._cpu
        with self.durations.open("rb") as f:
            f.seek(self._offset)
            requests = read_requests(f.read().decode())
        figures = extender_figures(requests, self._metrics, self.proc.metrics())
        figures["cpu_seconds"] = round(cpu, 2)
        figures["cpu_ms_per_pod"] = round(cpu * 1000 / bound, 2) if bound else None
        figures["peak_rss_mb"] = round(self.proc.peak_rss_bytes() / 2**20, 1)
        return figures


def start_extender(cp: ControlPlane, workdir: Path) -> Extender:
    """`kubesched extender` (default profile, the scheduler's kubeconfig as bench's
    schedulers use) through bench.timed_extender, on a free port. The pid file in
    the cluster dir lets hack/cluster-down.sh stop it should the harness die."""
    port = free_port()
    workdir = workdir / f"{EXTENDER}-{port}"
    workdir.mkdir(parents=True)
    durations = workdir / "durations.txt"
    durations.touch()
    log_path = workdir / f"{EXTENDER}.log"
    command = [
        sys.executable,
        "-m",
        "bench.timed_extender",
        str(durations),
        f"--kubeconfig={cp.scheduler_kubeconfig}",
        f"--secure-port={port}",
        f"--authorization-always-allow-paths={EXTENDER_ALLOW}",
        f"--v={VERBOSITY}",
    ]
    with log_path.open("wb") as log:
        # cwd: `python -m bench.timed_extender` finds bench/ there.
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT
        )
    pid_file = cp.dir / f"bench-{EXTENDER}-{port}.pid"
    pid_file.write_text(f"{proc.pid}\n")
    return Extender(SchedulerProcess(EXTENDER, proc, port, log_path, pid_file), durations)


# ------------------------------------------------------------------ figures


def _ms(seconds: float) -> float | None:
    return round(seconds * 1000, 2) if math.isfinite(seconds) else None


def algorithm_latency(before: str, after: str) -> dict[str, float | None]:
    """kube-scheduler's scheduling algorithm duration between two scrapes (ms):
    p50 and p99 interpolated from the buckets, the mean exact, and the attempts."""
    delta = select(histograms(after, ALGORITHM_DURATION)) - select(
        histograms(before, ALGORITHM_DURATION)
    )
    return {
        "p50": _ms(delta.quantile(0.5)),
        "p99": _ms(delta.quantile(0.99)),
        "mean": _ms(delta.sum / delta.count) if delta.count else None,
        "attempts": int(delta.count),
    }


def read_requests(text: str) -> list[tuple[str, int, float]]:
    """(verb, HTTP code, seconds) of each line bench.timed_extender wrote."""
    requests = []
    # A line is written whole, but a read may meet one being written: left out.
    lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    for line in lines:
        verb, code, seconds = line.split()
        requests.append((verb, int(code), float(seconds)))
    return requests


def per_attempt(requests: Sequence[tuple[str, int, float]]) -> list[float]:
    """Each scheduling attempt's seconds in the extender: a filter request and the
    prioritize request after it, if any (kube-scheduler skips scoring when one node
    is left). Its scheduling cycle is serial, one pod at a time, filter before
    prioritize: the requests of two attempts never interleave."""
    attempts: list[float] = []
    for verb, _, seconds in requests:
        if verb == "filter" or not attempts:
            attempts.append(seconds)
        else:
            attempts[-1] += seconds
    return attempts


def extender_figures(
    requests: Sequence[tuple[str, int, float]], before: str, after: str
) -> dict[str, Any]:
    """The extender's request durations in the measured phase: per verb and per
    attempt, exact (nearest rank, as bench's create → bound), and per verb as the
    /metrics histogram gives them (interpolated, a cross-check)."""
    out: dict[str, Any] = {
        "requests": len(requests),
        "by_verb": {verb: sum(1 for v, _, _ in requests if v == verb) for verb in VERBS},
        "errors": sum(1 for _, code, _ in requests if code != 200),
    }
    for verb in VERBS:
        out[f"{verb}_ms"] = quantiles_ms([s for v, _, s in requests if v == verb])
    out["attempt_ms"] = quantiles_ms(per_attempt(requests))
    h_after, h_before = histograms(after, EXTENDER_DURATION), histograms(before, EXTENDER_DURATION)
    histogram_ms: dict[str, dict[str, float | None]] = {}
    for verb in VERBS:
        delta = select(h_after, verb=verb) - select(h_before, verb=verb)
        histogram_ms[verb] = {
            "p50": _ms(delta.quantile(0.5)),
            "p99": _ms(delta.quantile(0.99)),
            "count": delta.count,
        }
    out["histogram_ms"] = histogram_ms
    return out


def count_extender_cpu(cpu: dict[str, float], seconds: float) -> None:
    """bench.e2e's CpuMeter counts the scheduler, the control plane and the harness
    as the benchmark's and the rest as other work's: move the extender's SECONDS
    (same interval, give or take a scrape) from the latter to the former, so that a
    run is not flagged as disturbed by its own extender."""
    moved = min(seconds, cpu.get("foreign_cpu_seconds", 0.0))
    cpu["benchmark_cpu_seconds"] = round(cpu.get("benchmark_cpu_seconds", 0.0) + moved, 2)
    cpu["foreign_cpu_seconds"] = round(cpu.get("foreign_cpu_seconds", 0.0) - moved, 2)
    wall = cpu.get("wall_seconds", 0.0)
    cpu["foreign_share"] = round(cpu["foreign_cpu_seconds"] / (wall * NPROC), 3) if wall else 0.0


# ------------------------------------------------------------------ one run


async def run_config(
    cp: ControlPlane,
    nodes: list[Manifest],
    pods: int,
    config: str,
    workdir: Path,
    *,
    quiet_wait: float = 30.0,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """PODS default pods scheduled by kube-scheduler in CONFIG on the NODES already
    created; the result as bench.e2e's (``status`` ok, timeout or error) with
    ``algorithm_ms`` and, with the extender, ``extender``."""
    run_id = f"x{secrets.token_hex(3)}"
    namespaces = [f"bench-{run_id}-0"]
    # The run's pods, on the shared nodes (which the placement checks read).
    plan = replace(BASIC.plan(Size(len(nodes), 0, pods), PROFILE, run_id, namespaces), nodes=nodes)
    result: dict[str, Any] = {"config": config, "run_id": run_id, "nodes": len(nodes)}
    api = Api(cp)
    # Stopped in this order by tear_down: kube-scheduler first, then what it calls.
    procs: list[SchedulerProcess] = []
    extender: Extender | None = None

    def say(text: str) -> None:
        if log is not None:
            log(f"  [{len(nodes)} nodes, {config}] {text}")

    try:
        await api.create(
            "/api/v1/namespaces", namespace_manifest(namespaces[0], {RUN_LABEL: run_id})
        )
        entries: list[dict[str, Any]] = []
        if config != ALONE:
            extender = start_extender(cp, workdir)
            procs.append(extender.proc)
            started = time.monotonic()
            await asyncio.to_thread(extender.proc.wait_ready, EXTENDER_READY_TIMEOUT)
            say(f"extender ready in {time.monotonic() - started:.1f}s")
            entries.append(extender_entry(extender.port, node_cache_capable=config == NAMES))
        # After the extender's start-up, which is not what a run measures.
        if quiet_wait > 0:
            result["quiet"] = await asyncio.to_thread(wait_quiet, max_wait=quiet_wait, log=say)
        sched = start_scheduler(KUBE_SCHEDULER, cp, workdir, (), extenders=entries)
        procs.insert(0, sched)
        result["pid"] = sched.proc.pid
        if not await wait_ready(sched, result, say):
            return result
        before = await asyncio.to_thread(sched.metrics)
        if extender is not None:
            await asyncio.to_thread(extender.begin)
        await _measure(api, sched, plan, run_id, namespaces, PROFILE, result, say)
        after = await asyncio.to_thread(settled_metrics, sched, PROFILE)
        result["algorithm_ms"] = alg = algorithm_latency(before, after)
        say(f"  scheduling algorithm p50 {alg['p50']} p99 {alg['p99']} mean {alg['mean']} ms")
        if extender is not None:
            figures = await asyncio.to_thread(extender.end, result.get("bound") or 0)
            result["extender"] = figures
            if isinstance(result.get("cpu"), dict):
                count_extender_cpu(result["cpu"], figures["cpu_seconds"])
            say(
                f"  extender: {figures['requests']} requests ({figures['errors']} errors), "
                f"per attempt p50 {figures['attempt_ms']['p50']} ms "
                f"p99 {figures['attempt_ms']['p99']} ms, {figures['cpu_ms_per_pod']} CPU ms/pod"
            )
        await check_placements(api, sched, plan, run_id, namespaces, result)
    except BenchError as exc:
        result.update(status="error", reason=str(exc))
        say(f"error: {exc}")
    finally:
        if extender is not None and result.get("status") in ("error", "timeout"):
            result["extender_log_tail"] = extender.proc.log_tail(15)
        await tear_down(api, procs, plan, run_id, namespaces, result)
    return result


# ------------------------------------------------------------------ the bench


def spread(values: Sequence[float]) -> dict[str, float]:
    """Minimum, median (the lower one for an even count, a measured value, as
    bench.medians) and maximum."""
    ordered = sorted(values)
    return {"min": ordered[0], "median": ordered[(len(ordered) - 1) // 2], "max": ordered[-1]}


def _figure(run: dict[str, Any], path: Sequence[str]) -> float | None:
    """The figure at PATH of a successful run (None if it failed or lacks it)."""
    value = _dig(run, path) if run.get("status") == "ok" else None
    return float(value) if isinstance(value, int | float) else None


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per configuration and figure, the spread over the successful runs; and per
    configuration with the extender, the spread of its ratio (pods/s) or difference
    (latencies, CPU) with the alone run of the same repeat: runs of one repeat are
    minutes apart, runs of different repeats may meet a different machine."""
    summary: dict[str, dict[str, dict[str, float]]] = {}
    versus: dict[str, dict[str, dict[str, float]]] = {}
    alone = runs.get(ALONE, [])
    for config, results in runs.items():
        summary[config] = {}
        for label, path, compare in FIGURES:
            values = [v for r in results if (v := _figure(r, path)) is not None]
            if values:
                summary[config][label] = spread(values)
            if config == ALONE or not compare:
                continue
            paired = []
            for mine, theirs in zip(results, alone, strict=False):
                a, b = _figure(mine, path), _figure(theirs, path)
                if a is None or b is None or (compare == "ratio" and not b):
                    continue
                paired.append(round(a / b, 3) if compare == "ratio" else round(a - b, 2))
            if paired:
                versus.setdefault(config, {})[label] = spread(paired)
    return {"summary": summary, "vs_alone": versus}


async def run_node_count(
    cp: ControlPlane,
    count: int,
    pods: int,
    configs: Sequence[str],
    repeat: int,
    workdir: Path,
    *,
    quiet_wait: float,
    log: Callable[[str], None] | None,
) -> dict[str, list[dict[str, Any]]]:
    """COUNT nodes created, every configuration run REPEAT times on them, the nodes
    deleted; each configuration's runs in repeat order."""
    say = log or (lambda _text: None)
    node_run = f"n{secrets.token_hex(3)}"
    nodes = BASIC.plan(Size(count, 0, 0), PROFILE, node_run, [f"bench-{node_run}-0"]).nodes
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
    api = Api(cp)
    try:
        started = time.monotonic()
        await api.create_all(bodies(nodes))
        say(f"{count} nodes created in {time.monotonic() - started:.1f}s")
        for attempt in range(repeat):
            order = list(configs) if attempt % 2 == 0 else list(reversed(configs))
            for config in order:
                tag = f" #{attempt + 1}" if repeat > 1 else ""
                say(f"{count} nodes, {pods} pods: {CONFIGS[config]}{tag}")
                runs[config].append(
                    await run_config(
                        cp, nodes, pods, config, workdir, quiet_wait=quiet_wait, log=log
                    )
                )
    finally:
        with contextlib.suppress(BenchError):
            await cleanup(api, node_run)
        await api.aclose()
    return runs


def run_extender_bench(
    node_counts: Sequence[int],
    pods: int,
    repeat: int,
    *,
    whole_nodes_at: Sequence[int] = (500,),
    cluster_env: Path | None = None,
    out_dir: Path = REPO_ROOT / "bench-results",
    quiet_wait: float = 30.0,
    show_table: bool = True,
    log: Callable[[str], None] | None = print,
) -> tuple[dict[str, Any], Path]:
    """Every node count of NODE_COUNTS with PODS pods per run, REPEAT times; the
    results document and the JSON file written (OUT_DIR/extender-<timestamp>.json,
    rewritten after each node count with ``complete`` false until the end)."""
    if repeat < 1 or pods < 1 or not node_counts or min(node_counts) < 1:
        raise ValueError("--nodes, --pods and --repeat: at least 1")
    say = log or (lambda _text: None)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = out_dir / f"extender-{stamp}.json"
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "timestamp": stamp,
        "command": " ".join(["python -m bench.extender", *sys.argv[1:]])
        if Path(sys.argv[0]).name == "extender.py"
        else None,
        "kubernetes_version": (REPO_ROOT / "hack" / "k8s-version").read_text().strip(),
        "kubesched_commit": _git("rev-parse", "--short", "HEAD")
        + ("-dirty" if _git("status", "--porcelain", "--", "src") else ""),
        "machine": machine(),
        "pods": pods,
        "repeat": repeat,
        "node_counts": list(node_counts),
        "whole_nodes_at": list(whole_nodes_at),
        # kube-scheduler's extenders entry (urlPrefix: the run's port); nodeCacheCapable
        # false in the "nodes" runs.
        "extender_config": extender_entry(0, node_cache_capable=True),
        "results": {},
        "complete": False,
    }
    planes = ControlPlanes(cluster_env, say)
    try:
        cp = planes.get(False)
        workdir = cp.dir / f"bench-extender-{stamp}"
        workdir.mkdir(parents=True, exist_ok=True)
        for count in node_counts:
            configs = [ALONE, NAMES] + ([NODES] if count in whole_nodes_at else [])
            runs = asyncio.run(
                run_node_count(
                    cp, count, pods, configs, repeat, workdir, quiet_wait=quiet_wait, log=log
                )
            )
            doc["results"][str(count)] = {"runs": runs, **summarize(runs)}
            write_json(doc, path)
    finally:
        planes.stop()
    doc["complete"] = True
    write_json(doc, path)
    if show_table:
        print_tables(doc)
        say(f"results: {path}")
    return doc, path


# ------------------------------------------------------------------ the table


def _num(value: float) -> str:
    # Counts (requests, errors) and large figures without decimals.
    if abs(value) >= 100 or value.is_integer():
        return f"{value:.0f}"
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _cell(s: dict[str, float] | None, sign: str = "") -> str:
    if s is None:
        return "—"
    text = f"{sign if s['median'] >= 0 else ''}{_num(s['median'])}"
    if s["min"] != s["max"]:
        text += f" [{_num(s['min'])}–{_num(s['max'])}]"
    return text


def print_tables(doc: dict[str, Any], console: Console | None = None) -> None:
    """One table per node count: a row per figure, a column per configuration; under
    an extender's figure, its ratio (×) or difference (+) with the alone runs."""
    console = console or Console(width=160)
    for count, entry in doc["results"].items():
        summary, versus = entry["summary"], entry["vs_alone"]
        configs = list(entry["runs"])
        # Above the table rather than its title, which wraps at the table's width;
        # Text, not markup: "[min–max]" would read as a style.
        console.print(
            Text(
                f"kube-scheduler {doc['kubernetes_version']} with and without kubesched "
                f"extender ({doc['kubesched_commit']}): {count} nodes, {doc['pods']} pods, "
                + (f"median [min–max] of {doc['repeat']}" if doc["repeat"] > 1 else "one run")
            )
        )
        table = Table()
        table.add_column("figure", no_wrap=True)
        for config in configs:
            table.add_column(CONFIGS[config], justify="right")
        for label, _, compare in FIGURES:
            cells = []
            for config in configs:
                text = _cell(summary.get(config, {}).get(label))
                vs = versus.get(config, {}).get(label)
                if vs is not None:
                    text += f"\n×{_cell(vs)}" if compare == "ratio" else f"\n{_cell(vs, '+')}"
                cells.append(text)
            if any(c != "—" for c in cells):
                table.add_row(label, *(Text(c) for c in cells))
        console.print(table)
        for config, results in entry["runs"].items():
            for r in results:
                if r.get("status") != "ok":
                    console.print(
                        f"{count} nodes, {config}: {r.get('status')}: {r.get('reason', '')}",
                        markup=False,
                    )


def _counts(text: str) -> list[int]:
    return [int(n) for n in text.split(",") if n.strip() and n.strip() != "none"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.extender", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--nodes", default="500,5000", help="node counts, comma-separated")
    parser.add_argument("--pods", type=int, default=1000, help="pods scheduled per run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--whole-nodes-at",
        default="500",
        metavar="COUNTS",
        help="node counts at which to run nodeCacheCapable: false too ('none': never)",
    )
    parser.add_argument("--cluster-env", type=Path, help="DIR/env of a running cluster-up.sh")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="before each run, wait up to this long for idle CPUs (0: never)",
    )
    args = parser.parse_args(argv)
    try:
        doc, _ = run_extender_bench(
            _counts(args.nodes),
            args.pods,
            args.repeat,
            whole_nodes_at=_counts(args.whole_nodes_at),
            cluster_env=args.cluster_env,
            out_dir=args.out,
            quiet_wait=args.quiet_wait,
        )
    except ValueError as exc:
        parser.error(str(exc))
    failed = [
        f"{count} {r.get('config')}"
        for count, entry in doc["results"].items()
        for results in entry["runs"].values()
        for r in results
        if r.get("status") != "ok"
    ]
    if failed:
        print(f"runs that failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
