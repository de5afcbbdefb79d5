"""`python -m bench` / `make bench`: run the workloads in both modes and report.

    python -m bench                                   # every workload, size "small"
    python -m bench --workload SchedulingBasic --size 5000
    python -m bench --mode e2e --cluster-env .cluster/env   # reuse a running cluster

Without --cluster-env, a control plane is started with hack/cluster-up.sh in a
temporary directory and stopped at the end. Results: a table on the terminal,
bench-results/results-<timestamp>.json and bench-results/ratios-<timestamp>.png.
"""

from __future__ import annotations

import argparse
import asyncio
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

from bench.cluster import CLIENTS, REPO_ROOT, ControlPlane, cluster_down, cluster_up
from bench.e2e import run_e2e
from bench.inprocess import measure_in_subprocess
from bench.machine import CpuMeter, wait_quiet
from bench.report import plot, print_table, ratios, write_json
from bench.schedulers import SCHEDULERS
from bench.workloads import SIZES, WORKLOADS

MODES = ("inprocess", "e2e")
SCHEMA = 1


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
    return target / "src", commit


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
    repeat: int = 1,
    log: Callable[[str], None] | None = print,
) -> tuple[dict[str, Any], Path]:
    """Run WORKLOADS (default: all) at SIZE in MODES; the results document and
    the path of the JSON file written. KUBESCHED_SRC: measure the kubesched
    package found in that directory (e.g. a `git archive` of a commit) rather
    than the installed one. QUIET_WAIT: before each measurement, wait up to that
    many seconds for the CPUs to be quiet (0: do not wait). REPEAT: measure each
    (workload, mode, scheduler) that many times, end-to-end runs alternating
    which scheduler goes first, and keep the run with the median pods/s."""
    names = list(workloads or WORKLOADS)
    for name in names:
        if name not in WORKLOADS:
            raise ValueError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})")
        WORKLOADS[name].size(size)
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
    say = log or (lambda _text: None)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
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

    if "e2e" in modes:
        own_dir = None
        if cluster_env is None:
            own_dir = Path(tempfile.mkdtemp(prefix="kubesched-bench-"))
            say(f"starting a control plane in {own_dir}")
            cp = cluster_up(own_dir)
        else:
            cp = ControlPlane.from_env_file(cluster_env)
        workdir = cp.dir / f"bench-{stamp}"
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            for name in names:
                runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in schedulers}
                for attempt in range(repeat):
                    # alternate who goes first, so that neither always meets a fresher etcd
                    order = list(schedulers) if attempt % 2 == 0 else list(reversed(schedulers))
                    for kind in order:
                        if runs[kind] and runs[kind][-1].get("status") == "n/a":
                            continue
                        say(
                            f"e2e {name} ({size}) with {kind}"
                            + (f" #{attempt + 1}" if repeat > 1 else "")
                        )
                        result = asyncio.run(
                            run_e2e(
                                cp,
                                WORKLOADS[name],
                                size,
                                kind,
                                workdir,
                                concurrency=concurrency,
                                client=client,
                                kubesched_src=kubesched_src,
                                quiet_wait=quiet_wait,
                                log=say,
                            )
                        )
                        runs[kind].append(result)
                doc["workloads"][name]["e2e"] = {k: median_run(rs) for k, rs in runs.items()}
        finally:
            if own_dir is not None:
                say(f"stopping the control plane in {own_dir}")
                cluster_down(own_dir)

    for entry in doc["workloads"].values():
        entry["ratios"] = ratios(entry)
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


def median_run(tries: list[dict[str, Any]]) -> dict[str, Any]:
    """The try with the median pods/s among the successful ones (the lower median
    for an even count; the last try if none succeeded), with every try's rate in
    ``repeats``."""
    ok = sorted((r for r in tries if r.get("status") == "ok"), key=lambda r: r["pods_per_second"])
    chosen = dict(ok[(len(ok) - 1) // 2] if ok else tries[-1])
    if len(tries) > 1:
        chosen["repeats"] = [
            {
                "status": r.get("status"),
                "pods_per_second": r.get("pods_per_second"),
                "foreign_share": (r.get("cpu") or {}).get("foreign_share"),
            }
            for r in tries
        ]
    return chosen


def _summary(result: dict[str, Any]) -> str:
    if result.get("status") != "ok":
        return f"{result.get('status')}: {result.get('reason', '')}"
    return (
        f"{result['bound']} pods in {result['seconds']:.2f}s: {result['pods_per_second']} pods/s, "
        f"peak RSS {result['peak_rss_mb']} MB"
    )


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
    parser.add_argument("--mode", default="all", choices=["all", *MODES])
    parser.add_argument(
        "--scheduler", action="append", choices=SCHEDULERS, help="e2e: only this scheduler"
    )
    parser.add_argument("--cluster-env", type=Path, help="DIR/env of a running cluster-up.sh")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench-results")
    parser.add_argument("--client", default="aiohttp", choices=CLIENTS)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--repeat", type=int, default=1, help="measure each this many times; keep the median"
    )
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="before each measurement, wait up to this long for idle CPUs (0: never)",
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
    names = [n for arg in args.workload or ["all"] for n in arg.split(",") if n]
    if "all" in names:
        names = list(WORKLOADS)
    src, commit = args.kubesched_src, None
    try:
        if args.kubesched_rev:
            src, commit = checkout_src(args.kubesched_rev)
        run_bench(
            names,
            args.size,
            modes=MODES if args.mode == "all" else (args.mode,),
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
