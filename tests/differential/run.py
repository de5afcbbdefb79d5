"""`make diff`: N generated scenarios through kube-scheduler and kubesched; agreement rates.

    python -m tests.differential.run -n 50 --seed 1 [--features spread,affinity|none]
    python -m tests.differential.run -n 50 --seed 60 --features gangs   (opt-in: the
        Workload API, on a control plane serving it, both schedulers with its gates)
    python -m tests.differential.run -n 100 --seed 70 --features extenders,preemption
        (opt-in: scheduler extenders, served on loopback by the harness for each run)
        [--size small|normal|large] [--profile NAME] [--shrink] [--jobs K]
        [--cluster-env DIR/env ...]

Starts a control plane (hack/cluster-up.sh in a temporary directory) unless
--cluster-env names a running one, runs scenarios 0..N-1 of series SEED, prints
one line per scenario and the agreement rates, and writes every scenario with a
disagreement to tests/differential/regressions/<name>.yaml (with --shrink, first
made as small as it can be while the same disagreement remains). Exit code 1 if
any disagreement was found, 2 if the harness itself failed.

With --jobs K, K control planes (each its own hack/cluster-up.sh directory, or K
--cluster-env files) run the scenarios side by side: each worker takes the next
scenario not yet run, and the rates of all of them are added up into one report.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import platform
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.differential import generator as gen
from tests.differential.harness import (
    Comparison,
    Harness,
    HarnessError,
    Totals,
    regression_document,
)
from tests.integration.conftest import ControlPlane, ensure_binaries, run_hack

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


@contextlib.contextmanager
def control_plane(
    env_file: Path | None = None, workload_api: bool = False
) -> Iterator[ControlPlane]:
    """A running cluster: the one of ENV_FILE, or a new one torn down afterwards
    (serving the alpha Workload API if WORKLOAD_API: the gangs feature)."""
    if env_file is not None:
        yield ControlPlane.from_env_file(env_file)
        return
    ensure_binaries()
    with tempfile.TemporaryDirectory(prefix="kubesched-diff-") as tmp:
        cluster_dir = Path(tmp) / "cluster"
        try:
            extra = {"KUBESCHED_WORKLOAD_API": "1"} if workload_api else None
            env = Path(run_hack("cluster-up.sh", str(cluster_dir), timeout=180, env=extra))
        except BaseException:
            with contextlib.suppress(Exception):
                run_hack("cluster-down.sh", str(cluster_dir), timeout=60)
            raise
        try:
            yield ControlPlane.from_env_file(env)
        finally:
            run_hack("cluster-down.sh", str(cluster_dir), timeout=120)


def describe_kubesched() -> str:
    """Where the kubesched under test comes from: its path, and for the repository's
    own src/ the commit and whether src/ has uncommitted changes."""
    import kubesched

    path = Path(kubesched.__file__).resolve().parent
    repo = Path(__file__).resolve().parents[2]
    if not path.is_relative_to(repo / "src"):
        return str(path)

    def git(*args: str) -> str:
        proc = subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=False, timeout=30
        )
        return proc.stdout.strip()

    dirty = " with uncommitted changes in src/" if git("status", "--porcelain", "src") else ""
    return f"{path} at commit {git('rev-parse', '--short', 'HEAD')}{dirty}"


def kube_version() -> str:
    version_file = Path(__file__).resolve().parents[2] / "hack" / "k8s-version"
    return os.environ.get("K8S_VERSION") or version_file.read_text().strip()


def signature(c: Comparison) -> tuple[str, str] | None:
    """The first disagreement as (kind, pod): what shrinking must keep."""
    if not c.disagreements:
        return None
    first = c.disagreements[0]
    return first.kind, first.pod


def shrink(
    harness: Harness,
    scenario: Mapping[str, Any],
    found: Comparison,
    say: Callable[[str], None] = print,
) -> tuple[dict[str, Any], Comparison]:
    """Greedy minimisation: drop the pods after the first disagreement, then each
    other pod, then each node, as long as the same (kind, pod) disagreement stays."""
    target = signature(found)
    assert target is not None
    best = copy.deepcopy(dict(scenario))
    best_cmp = found
    cut = found.disagreements[0].step
    if target[1] != "*":
        keep = [p for p in best["pods"][: cut + 1]]
        candidate = {**best, "pods": keep}
        result = harness.run(candidate)
        if signature(result) == target:
            best, best_cmp = candidate, result

    def attempt(candidate: dict[str, Any]) -> bool:
        nonlocal best, best_cmp
        try:
            result = harness.run(candidate)
        except HarnessError:
            return False
        if signature(result) == target:
            best, best_cmp = candidate, result
            return True
        return False

    i = 0
    while i < len(best["pods"]):
        pod = best["pods"][i]
        if pod["name"] == target[1]:
            i += 1
            continue
        rest = [p for p in best["pods"] if p is not pod]
        if not attempt({**best, "pods": rest}):
            i += 1
        else:
            say(f"    shrink: dropped pod {pod['name']}")
    i = 0
    while i < len(best["nodes"]) and len(best["nodes"]) > 1:
        node = best["nodes"][i]
        rest_nodes = [n for n in best["nodes"] if n is not node]
        if not attempt({**best, "nodes": rest_nodes}):
            i += 1
        else:
            say(f"    shrink: dropped node {node['name']}")
    best["name"] = f"{scenario['name']}-min"
    best["shrunk_from"] = scenario["name"]
    return best, best_cmp


def write_regression(scenario: Mapping[str, Any], comparison: Comparison, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{scenario['name']}.yaml"
    doc = regression_document(scenario, comparison)
    header = (
        "# A kube-scheduler/kubesched disagreement found by `make diff`; "
        "tests/differential/test_regressions.py re-runs it.\n"
        "# Add `known_issue: <why>` at the top level to mark it as an open kubesched bug.\n"
    )
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=100))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make diff", description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50, help="number of scenarios")
    parser.add_argument("--seed", type=int, default=1, help="scenario series")
    parser.add_argument("--start", type=int, default=0, help="first scenario index")
    parser.add_argument(
        "--features",
        default="",
        help=f"comma list of {','.join(gen.FEATURES)} (default: all of them; "
        f"'{gen.NO_FEATURES}': none, their plugins disabled), and of the opt-in "
        f"{','.join(gen.OPT_IN_FEATURES)} (gangs: Workload API gangs; batching: runs of "
        "identical pods for OpportunisticBatching; extenders: scheduler extenders the "
        "harness serves on loopback)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="run features whose plugins kubesched's default profile lacks (to see what "
        "kube-scheduler does; kubesched's runs will disagree)",
    )
    parser.add_argument("--size", default="normal", choices=sorted(gen.SIZES))
    parser.add_argument("--profile", default=None, choices=sorted(gen.PROFILES))
    parser.add_argument("--shrink", action="store_true", help="minimise each disagreement")
    parser.add_argument("--out", type=Path, default=REGRESSIONS, help="regressions directory")
    parser.add_argument("--no-write", action="store_true", help="write no regression files")
    parser.add_argument(
        "--cluster-env",
        type=Path,
        action="append",
        default=[],
        help="use this running cluster (once per job with --jobs)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=0,
        help="control planes to run scenarios on side by side (default: 1, or one per "
        "--cluster-env)",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep configs and logs here")
    parser.add_argument(
        "--kube-verbosity", type=int, default=2, help="kube-scheduler -v (10: every score)"
    )
    parser.add_argument(
        "--kubesched-verbosity",
        type=int,
        default=None,
        help="kubesched run -v (at least 3, which logs each attempt)",
    )
    parser.add_argument(
        "--kubesched-content-type",
        default="",
        choices=["", "application/json", "application/vnd.kubernetes.protobuf"],
        help="kubesched's clientConnection.contentType (kube-scheduler keeps its default, "
        "protobuf); default: the same file for both",
    )
    args = parser.parse_args(argv)
    # SIGTERM (timeout, make being stopped) unwinds like Ctrl-C: schedulers are stopped,
    # nodes deleted and the control planes this run started are torn down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    try:
        features = gen.parse_features(args.features)
    except ValueError as exc:
        parser.error(str(exc))
    missing = gen.unsupported_features(features)
    if missing and not args.force:
        parser.error(
            "kubesched's default profile lacks the plugins of feature(s) "
            + "; ".join(f"{f}: {', '.join(p)}" for f, p in missing.items())
        )
    jobs = args.jobs or max(1, len(args.cluster_env))
    if args.cluster_env and len(args.cluster_env) != jobs:
        parser.error(f"--jobs {jobs} needs {jobs} --cluster-env files (or none)")
    if jobs < 1:
        parser.error("--jobs must be at least 1")

    started = time.monotonic()
    print(
        f"differential: {args.n} scenarios, seed {args.seed}, size {args.size}, "
        f"features [{','.join(features)}] on {platform.node()} ({platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}), {jobs} job(s)",
        flush=True,
    )
    print(f"kubesched: {describe_kubesched()}; kube-scheduler {kube_version()}", flush=True)
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="kubesched-diff-work-"))
        )
        cps: list[ControlPlane] = []
        try:
            for j in range(jobs):
                env = args.cluster_env[j] if args.cluster_env else None
                cps.append(stack.enter_context(control_plane(env, "gangs" in features)))
        except Exception as exc:
            print(f"cannot start the control plane: {exc}", file=sys.stderr)
            return 2
        if jobs > 1:
            print(f"control planes: {', '.join(cp.url for cp in cps)}", flush=True)
        batch = Batch(args, features, workdir)
        batch.run(cps)
    totals, written, errors = batch.totals, sorted(batch.written), batch.errors
    print()
    print(f"== agreement over {totals.scenarios} scenarios ({time.monotonic() - started:.0f} s)")
    for line in totals.lines():
        print(line)
    if errors:
        print(f"harness errors (scenarios not run to the end): {errors}")
    for path in written:
        print(f"wrote {path}")
    if errors:
        return 2
    return 1 if totals.scenarios_ok < totals.scenarios else 0


class Batch:
    """Scenarios start..start+n-1 run by one worker per control plane; each takes the
    next scenario from a shared queue, and the results are added up under a lock.
    A scenario's lines are printed together once it is done."""

    def __init__(self, args: argparse.Namespace, features: list[str], workdir: Path) -> None:
        self.args = args
        self.features = features
        self.workdir = workdir
        self.totals = Totals()
        self.written: list[Path] = []
        self.errors = 0
        self.consecutive = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for index in range(args.start, args.start + args.n):
            self.todo.put(index)

    def run(self, cps: list[ControlPlane]) -> None:
        if len(cps) == 1:
            self.work(cps[0], 0)  # in the main thread: Ctrl-C/SIGTERM unwind it directly
            return
        threads = [
            threading.Thread(target=self.work, args=(cp, j), name=f"diff-{j}", daemon=True)
            for j, cp in enumerate(cps)
        ]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.5)
        except BaseException:
            # Let each worker finish its scenario (its schedulers stopped, its nodes
            # deleted) before the control planes go.
            self.stop.set()
            for t in threads:
                t.join(120)
            raise

    def work(self, cp: ControlPlane, job: int) -> None:
        lines: list[str] = []
        harness = Harness(
            cp,
            self.workdir / f"job{job}",
            log=lines.append,
            kube_verbosity=self.args.kube_verbosity,
            kubesched_verbosity=self.args.kubesched_verbosity,
            kubesched_content_type=self.args.kubesched_content_type,
        )
        try:
            while not self.stop.is_set():
                try:
                    index = self.todo.get_nowait()
                except queue.Empty:
                    return
                lines.clear()
                try:
                    self.one(harness, index, lines)
                except Exception as exc:
                    # Not a scheduler disagreement but the harness or its cluster
                    # failing: counted and shown, and the run goes on with the next
                    # scenario, unless it keeps happening.
                    with self.lock:
                        self.errors += 1
                        self.consecutive += 1
                        lines.append(
                            f"  harness failure (not counted): {type(exc).__name__}: {exc}"
                        )
                        print("\n".join(lines), flush=True)
                        traceback.print_exc()
                        if self.consecutive >= 3:
                            print("three harness errors in a row: giving up", file=sys.stderr)
                            self.stop.set()
        finally:
            harness.close()

    def one(self, harness: Harness, index: int, lines: list[str]) -> None:
        args = self.args
        scenario = gen.generate(
            args.seed, index, features=self.features, size=args.size, profile=args.profile
        )
        lines.append(
            f"[{index}] {scenario['name']}: {len(scenario['nodes'])} nodes, "
            f"{len(scenario['pods'])} pods"
        )
        began = time.monotonic()
        try:
            comparison = harness.run(scenario)
        except HarnessError as exc:
            lines.append(f"  harness error (not counted): {exc}")
            with self.lock:
                self.errors += 1
                self.consecutive += 1
                print("\n".join(lines), flush=True)
                if self.consecutive >= 3:
                    print("three harness errors in a row: giving up", file=sys.stderr)
                    self.stop.set()
            return
        lines.append(
            "  "
            + comparison.summary().replace("\n", "\n  ")
            + f" [{time.monotonic() - began:.1f} s]"
        )
        found = comparison  # the rates count the scenario as generated
        if not comparison.ok and args.shrink:
            scenario, comparison = shrink(harness, scenario, comparison, lines.append)
            lines.append("  shrunk: " + comparison.summary().replace("\n", "\n  "))
        with self.lock:
            self.consecutive = 0
            self.totals.add(found)
            if not comparison.ok and not args.no_write:
                self.written.append(write_regression(scenario, comparison, args.out))
            print("\n".join(lines), flush=True)


if __name__ == "__main__":
    sys.exit(main())
