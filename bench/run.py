"""`python -m bench` / `make bench`: run the workloads in every mode and report.

    python -m bench                                   # every workload, size "small"
    python -m bench --size 5000                       # upstream's sizes, median of 3
    python -m bench --workload SchedulingBasic --size 15000
    python -m bench --mode e2e,ceiling --cluster-env .cluster/env   # reuse a running cluster

Modes (MODES): in process; end to end creating the measured pods while the
scheduler runs (e2e); end to end draining them created beforehand (backlog); and
the bind ceiling (bench.drain). Asked for by name only (OPTIONAL_MODES):
ceiling-events, the bind ceiling with a pod watch and a Scheduled event per bind.

Without --cluster-env, a control plane is started with hack/cluster-up.sh in a
temporary directory and stopped at the end. Results: a table on the terminal,
bench-results/results-<timestamp>.json and bench-results/ratios-<timestamp>.png.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import io
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.cluster import CLIENTS, REPO_ROOT, BenchError, ControlPlane, cluster_down, cluster_up
from bench.drain import run_backlog, run_ceiling
from bench.e2e import run_e2e
from bench.inprocess import measure_in_subprocess
from bench.machine import CpuMeter, wait_quiet
from bench.medians import median_run
from bench.report import of_ceiling, plot, print_table, ratios, scheduler_runs, write_json
from bench.schedulers import PIN_ENV, SCHEDULERS
from bench.workloads import SIZES, WORKLOADS, Workload

# inprocess: kubesched alone, no API. e2e: both schedulers while the harness creates
# the measured pods (scheduler_perf's way). backlog: both schedulers draining
# measured pods created beforehand. ceiling: bench.bind_probe binding such a
# backlog with no scheduling (bench.drain).
MODES = ("inprocess", "e2e", "backlog", "ceiling")
# ceiling-events: the bind ceiling again with a pod watch and a Scheduled event per
# bind (bench.bind_probe --watch --events), what binding costs a scheduler that does
# the API work kube-scheduler does; asked for by name, not part of "all".
OPTIONAL_MODES = ("ceiling-events",)
CLUSTER_MODES = ("e2e", "backlog", "ceiling", "ceiling-events")
SCHEMA = 2
# Sizes at upstream's scale: measured 3 times (the median kept) unless --repeat says.
REPEATED_SIZES = {"5000": 3, "15000": 3}


def default_repeat(size: str) -> int:
    return REPEATED_SIZES.get(size, 1)


def workloads_of_size(names: Sequence[str], size: str) -> tuple[list[str], list[str]]:
    """The workloads of NAMES that have SIZE, and those that do not (e.g. 15000 is
    SchedulingBasic's alone)."""
    having = [n for n in names if size in WORKLOADS[n].sizes]
    return having, [n for n in names if n not in having]


def ceiling_shape(workload: Workload, size: str) -> tuple[int, int]:
    """(nodes, pods) of the bind ceiling beside WORKLOAD at SIZE: its nodes, and
    as many pods as it measures (the unschedulable ones never bind)."""
    s = workload.size(size)
    return s.nodes + s.plain_nodes, s.measure_pods


def machine() -> dict[str, Any]:
    def first(path: str, key: str) -> str:
        try:
            for line in Path(path).read_text().splitlines():
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return ""

    mem_kib = first("/proc/meminfo", "MemTotal").split()
    return {
        "nproc": os.cpu_count(),
        "memory_gib": round(int(mem_kib[0]) / 2**20, 1) if mem_kib else None,
        "cpu_model": first("/proc/cpuinfo", "model name"),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        # --pin: the control plane and harness on CPU 0, the scheduler on CPU 1.
        "pinned": os.environ.get(PIN_ENV) == "1",
        # BENCH_KUBESCHED_ARGS: what `kubesched run` was given beyond the defaults.
        "kubesched_args": os.environ.get("BENCH_KUBESCHED_ARGS", ""),
        # BENCH_KUBESCHED_CONTENT_TYPE: kubesched's clientConnection.contentType, if set.
        "kubesched_content_type": os.environ.get("BENCH_KUBESCHED_CONTENT_TYPE", ""),
    }


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return ""


def checkout_src(rev: str) -> tuple[Path, str]:
    """src/ of commit REV extracted into a temporary directory (`git archive`): the
    directory to import kubesched from, and the commit's short hash."""
    commit = _git("rev-parse", "--short", f"{rev}^{{commit}}")
    if not commit:
        raise ValueError(f"--kubesched-rev {rev!r}: not a commit")
    archive = subprocess.run(
        ["git", "archive", commit, "src"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout
    target = Path(tempfile.mkdtemp(prefix=f"kubesched-{commit}-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    # Bytecode compiled once, as `pip install` (and so the image) leaves it: without
    # it, and with PYTHONDONTWRITEBYTECODE set as on these machines, every scheduler
    # start would compile the whole package again (about 1.6 s here).
    compileall.compile_dir(target / "src", quiet=1, workers=0)
    return target / "src", commit


NO_WORKLOAD_API: dict[str, Any] = {
    "status": "n/a",
    "missing": "Workload API",
    "reason": "the control plane does not serve scheduling.k8s.io/v1alpha2: start it "
    "with KUBESCHED_WORKLOAD_API=1 (hack/cluster-up.sh), or leave out --cluster-env",
}


class ControlPlanes:
    """The control planes a run measures on: the running cluster of CLUSTER_ENV
    (DIR/env) for every workload, or, without it, control planes of the run's own
    started on first use in temporary directories: one serving the shipped API,
    and one serving the alpha Workload API for the workloads that need it (the
    others keep measuring the API as shipped)."""

    def __init__(self, cluster_env: Path | None, say: Callable[[str], None]) -> None:
        self.given = None if cluster_env is None else ControlPlane.from_env_file(cluster_env)
        self.say = say
        self.own: dict[bool, ControlPlane] = {}
        self.dirs: list[Path] = []  # recorded before start: stop() stops a half-started one

    def get(self, workload_api: bool) -> ControlPlane:
        """The control plane for a workload that needs (or not) the Workload API;
        the given one may lack it (ControlPlane.workload_api says)."""
        if self.given is not None:
            return self.given
        if workload_api not in self.own:
            directory = Path(tempfile.mkdtemp(prefix="kubesched-bench-"))
            what = " serving the alpha Workload API" if workload_api else ""
            self.say(f"starting a control plane{what} in {directory}")
            self.dirs.append(directory)
            self.own[workload_api] = cluster_up(directory, workload_api=workload_api)
        return self.own[workload_api]

    def stop(self) -> None:
        """Stop every control plane started, even when stopping one fails (the
        first failure is raised after)."""
        failures = []
        for directory in self.dirs:
            self.say(f"stopping the control plane in {directory}")
            try:
                cluster_down(directory)
            except BenchError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]


def run_bench(
    workloads: Sequence[str] | None = None,
    size: str = "small",
    *,
    modes: Sequence[str] = MODES,
    schedulers: Sequence[str] = SCHEDULERS,
    cluster_env: Path | None = None,
    out_dir: Path = REPO_ROOT / "bench-results",
    client: str = "aiohttp",
    concurrency: int = 64,
    make_plot: bool = True,
    show_table: bool = True,
    kubesched_src: Path | None = None,
    kubesched_commit: str | None = None,
    quiet_wait: float = 60.0,
    repeat: int | None = None,
    log: Callable[[str], None] | None = print,
) -> tuple[dict[str, Any], Path]:
    """Run WORKLOADS (default: all) at SIZE in MODES; the results document and
    the path of the JSON file written. KUBESCHED_SRC: measure the kubesched
    package found in that directory (e.g. a `git archive` of a commit) rather
    than the installed one. QUIET_WAIT: before each measurement, wait up to that
    many seconds for the CPUs to be quiet (0: do not wait). REPEAT: measure each
    (workload, mode, scheduler) that many times, end-to-end runs alternating
    which scheduler goes first, and keep the run with the median pods/s (default:
    3 at sizes 5000 and 15000, else 1). MODES: of MODES and OPTIONAL_MODES;
    "ceiling" measures the bind ceiling with each workload's nodes and measured
    pods, once per repeat, before its schedulers ("ceiling-events" after it)."""
    names = list(workloads or WORKLOADS)
    for name in names:
        if name not in WORKLOADS:
            raise ValueError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
        WORKLOADS[name].size(size)
    repeat = default_repeat(size) if repeat is None else repeat
    if repeat < 1:
        raise ValueError(f"--repeat {repeat}: at least 1")
    for mode in modes:
        if mode not in MODES + OPTIONAL_MODES:
            raise ValueError(f"unknown mode {mode!r}")
    say = log or (lambda _text: None)
    stamp = _unused_stamp(out_dir, datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
    version = (REPO_ROOT / "hack" / "k8s-version").read_text().strip()
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "timestamp": stamp,
        "command": " ".join(["python -m bench", *sys.argv[1:]])
        if Path(sys.argv[0]).parent.name == "bench"
        else None,
        "size": size,
        "modes": list(modes),
        "kubernetes_version": version,
        "kubesched_commit": kubesched_commit
        or (
            _git("rev-parse", "--short", "HEAD")
            + ("-dirty" if _git("status", "--porcelain", "--", "src") else "")
        ),
        "kubesched_src": str(kubesched_src) if kubesched_src else "installed (src/)",
        "machine": machine(),
        "client": client,
        "concurrency": concurrency,
        "repeat": repeat,
        "workloads": {},
    }
    for name in names:
        w = WORKLOADS[name]
        doc["workloads"][name] = {
            "summary": w.summary,
            "upstream": w.upstream,
            "params": w.size(size).as_dict(),
            "required_plugins": list(w.required_plugins),
        }

    if "inprocess" in modes:
        for name in names:
            tries = []
            for attempt in range(repeat):
                say(f"in-process {name} ({size})" + (f" #{attempt + 1}" if repeat > 1 else ""))
                quiet = wait_quiet(max_wait=quiet_wait, log=say) if quiet_wait > 0 else None
                started = time.monotonic()
                meter = CpuMeter().start()
                result = measure_in_subprocess(name, size, kubesched_src=kubesched_src)
                result["cpu"] = meter.stop()
                if quiet is not None:
                    result["quiet"] = quiet
                say(f"  {_summary(result)} [{time.monotonic() - started:.0f}s]")
                tries.append(result)
                if result.get("status") == "n/a":
                    break
            doc["workloads"][name]["inprocess"] = median_run(tries)
            _checkpoint(doc, out_dir / f"results-{stamp}.json")

    if any(mode in modes for mode in CLUSTER_MODES):
        planes = ControlPlanes(cluster_env, say)
        options: dict[str, Any] = {
            "concurrency": concurrency,
            "client": client,
            "kubesched_src": kubesched_src,
            "quiet_wait": quiet_wait,
            "log": say,
        }
        try:
            for name in names:
                workload = WORKLOADS[name]
                cp = planes.get(workload.workload_api)
                workdir = cp.dir / f"bench-{stamp}"
                workdir.mkdir(parents=True, exist_ok=True)
                shape = ceiling_shape(workload, size)
                runs: dict[str, dict[str, list[dict[str, Any]]]] = {
                    m: {k: [] for k in schedulers} for m in ("e2e", "backlog") if m in modes
                }
                # Measured per workload and repeat, right before its schedulers: on a
                # shared machine a ceiling measured half an hour earlier says little.
                ceilings: list[dict[str, Any]] = []
                full_ceilings: list[dict[str, Any]] = []
                for attempt in range(repeat):
                    tag = f" #{attempt + 1}" if repeat > 1 else ""
                    if "ceiling" in modes:
                        say(f"bind ceiling {shape[0]} nodes / {shape[1]} pods ({name}){tag}")
                        ceilings.append(asyncio.run(run_ceiling(cp, *shape, **options)))
                    if "ceiling-events" in modes:
                        say(
                            f"bind ceiling with events and a pod watch {shape[0]} nodes / "
                            f"{shape[1]} pods ({name}){tag}"
                        )
                        full_ceilings.append(
                            asyncio.run(run_ceiling(cp, *shape, scheduler_api_work=True, **options))
                        )
                    # alternate who goes first, so that neither always meets a fresher etcd
                    order = list(schedulers) if attempt % 2 == 0 else list(reversed(schedulers))
                    for mode, by_kind in runs.items():
                        measure = run_e2e if mode == "e2e" else run_backlog
                        for kind in order:
                            if by_kind[kind] and by_kind[kind][-1].get("status") == "n/a":
                                continue
                            say(f"{mode} {name} ({size}) with {kind}{tag}")
                            if workload.workload_api and not cp.workload_api:
                                result = dict(NO_WORKLOAD_API, scheduler=kind)
                                say(f"  n/a: {result['reason']}")
                            else:
                                result = asyncio.run(
                                    measure(cp, workload, size, kind, workdir, **options)
                                )
                            by_kind[kind].append(result)
                for mode, by_kind in runs.items():
                    doc["workloads"][name][mode] = {k: median_run(rs) for k, rs in by_kind.items()}
                if ceilings:
                    doc["workloads"][name]["ceiling"] = median_run(ceilings)
                if full_ceilings:
                    doc["workloads"][name]["ceiling_events"] = median_run(full_ceilings)
                _checkpoint(doc, out_dir / f"results-{stamp}.json")
        finally:
            planes.stop()

    for entry in doc["workloads"].values():
        entry["ratios"] = ratios(entry)
        entry["of_ceiling"] = of_ceiling(entry)
    doc["complete"] = True
    path = out_dir / f"results-{stamp}.json"
    if make_plot:
        png = out_dir / f"ratios-{stamp}.png"
        plot(doc, png)
        doc["plot"] = str(png)
    write_json(doc, path)
    if show_table:
        print_table(doc)
        say(f"results: {path}" + (f"\nplot: {doc['plot']}" if make_plot else ""))
    return doc, path


def _checkpoint(doc: dict[str, Any], path: Path) -> None:
    """The results so far, written after each workload: a run at 5,000 nodes takes
    hours, longer than a working session, so a stopped run keeps what it measured
    (`"complete": false`), and `python -m bench.report --merge` puts the files of
    several runs into one table."""
    partial = dict(doc, complete=False)
    partial["workloads"] = {
        name: dict(entry, ratios=ratios(entry), of_ceiling=of_ceiling(entry))
        for name, entry in doc["workloads"].items()
    }
    write_json(partial, path)


def broken_runs(doc: dict[str, Any]) -> list[str]:
    """One line per run whose placements broke a workload's invariant (a gang bound
    in part), repeats included: `python -m bench` exits 1 when there are any."""
    lines = []
    for name, entry in doc["workloads"].items():
        for mode, who, result in scheduler_runs(entry):
            for run in [result, *(result or {}).get("repeats", [])]:
                if isinstance(run, dict) and run.get("broken"):
                    lines.append(f"{name} {mode} {who}: {'; '.join(run['broken'])}")
    return lines


def _summary(result: dict[str, Any]) -> str:
    if result.get("status") != "ok":
        return f"{result.get('status')}: {result.get('reason', '')}"
    cpu = result.get("pods_per_cpu_second")
    return (
        f"{result['bound']} pods in {result['seconds']:.2f}s: {result['pods_per_second']} pods/s, "
        + (f"{cpu} per CPU second, " if cpu is not None else "")
        + f"peak RSS {result['peak_rss_mb']} MB"
    )


def _unused_stamp(out_dir: Path, stamp: str) -> str:
    """STAMP, or STAMP-2, -3, ... when an earlier run in OUT_DIR has written that
    results file: two runs started within one second must not share one file."""
    taken, n = stamp, 1
    while (out_dir / f"results-{taken}.json").exists():
        n += 1
        taken = f"{stamp}-{n}"
    return taken


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="kubesched vs kube-scheduler benchmarks"
    )
    parser.add_argument(
        "--workload",
        action="append",
        help=f"workload(s), comma-separated or repeated; 'all' (default): {', '.join(WORKLOADS)}",
    )
    parser.add_argument("--size", default="small", help=f"one of {', '.join(SIZES)}")
    parser.add_argument(
        "--mode",
        default="all",
        help=f"all (default: {', '.join(MODES)}) or some of {', '.join(MODES + OPTIONAL_MODES)}, "
        "comma-separated",
    )
    parser.add_argument(
        "--scheduler", action="append", choices=SCHEDULERS, help="e2e: only this scheduler"
    )
    parser.add_argument("--cluster-env", type=Path, help="DIR/env of a running cluster-up.sh")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results")
    parser.add_argument("--client", default="aiohttp", choices=CLIENTS)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--repeat",
        type=int,
        help="measure each this many times; keep the median (default: 3 at sizes 5000 "
        "and 15000, else 1)",
    )
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="before each measurement, wait up to this long for idle CPUs (0: never)",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the control plane and the harness on CPU 0, the scheduler under test "
        "(with its threads and child processes) on CPU 1",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--kubesched-src",
        type=Path,
        help="measure the kubesched package in this directory (default: the installed one)",
    )
    source.add_argument(
        "--kubesched-rev",
        metavar="REV",
        help="measure kubesched as committed in REV (e.g. HEAD: without uncommitted work)",
    )
    args = parser.parse_args(argv)
    if args.pin:
        if (os.cpu_count() or 1) < 2:
            parser.error("--pin needs two CPUs")
        os.environ[PIN_ENV] = "1"
    names = [n for arg in args.workload or ["all"] for n in arg.split(",") if n]
    if "all" in names:
        names, skipped = workloads_of_size(list(WORKLOADS), args.size)
        if skipped:
            print(f"size {args.size}: only {', '.join(names)} (not {', '.join(skipped)})")
    modes = [m for m in args.mode.split(",") if m]
    if "all" in modes:
        modes = list(MODES)
    src, commit = args.kubesched_src, None
    try:
        if args.kubesched_rev:
            src, commit = checkout_src(args.kubesched_rev)
        doc, _ = run_bench(
            names,
            args.size,
            modes=modes,
            schedulers=args.scheduler or SCHEDULERS,
            cluster_env=args.cluster_env,
            out_dir=args.out,
            client=args.client,
            concurrency=args.concurrency,
            make_plot=not args.no_plot,
            kubesched_src=src,
            kubesched_commit=commit,
            quiet_wait=args.quiet_wait,
            repeat=args.repeat,
        )
    except ValueError as exc:
        parser.error(str(exc))
    finally:
        if args.kubesched_rev and src is not None:
            shutil.rmtree(src.parent, ignore_errors=True)
    broken = broken_runs(doc)
    if broken:
        print("INVARIANT BROKEN, figures void:\n  " + "\n  ".join(broken), file=sys.stderr)
        sys.exit(1)
