"""`make soak`: one `kubesched run` under steady pod churn; does its memory keep growing?

    python -m tests.chaos.soak [--minutes 30] [--rate 20] [--lifetime 30] [--warmup 8]
        [--max-slope 5]

On a control plane of its own (hack/cluster-up.sh in a temporary directory) with
fake nodes made through the API, pods are created at RATE per second and each is
deleted again LIFETIME seconds (20-40 s at random) later, so about RATE x LIFETIME
pods live at a time, a little more than the nodes hold: some wait, and the 10 % of
high priority preempt low ones (kubesched deletes the victims); 5 % select nodes
that do not exist and stay pending until deleted.

Every 10 s it reads kubesched's resident memory (VmRSS of /proc/PID/status; not
its /metrics). After the run it prints, for the samples after WARMUP minutes, the
first (start), the last (end), the largest (max) and the least-squares slope in MiB
per 10 minutes, and writes every sample to rss.csv in the run's directory. Exit
code 1 if the slope exceeds MAX_SLOPE MiB per 10 minutes, kubesched died, or its
log has a traceback; 2 if the run itself failed.
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from tests.chaos.checks import count_tracebacks, slope, table
from tests.chaos.harness import (
    NodeShape,
    Replicas,
    create_node,
    create_pod,
    delete_pod,
    list_all,
    ordinary_shape,
    retrying,
    run_main,
    say,
    vm_rss_kib,
)
from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane
from tests.integration.kubesched_proc import BOUND

NAMESPACE = "soak"
NODES = 9
NODE = NodeShape("8", "32Gi")
HIGH_PRIORITY = "soak-high"
SAMPLE_EVERY = 10.0
MIB = 1024.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.soak", description=__doc__)
    parser.add_argument(
        "--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "30"))
    )
    parser.add_argument("--rate", type=float, default=20.0, help="pods created per second")
    parser.add_argument("--lifetime", type=float, default=30.0, help="mean seconds a pod lives")
    parser.add_argument(
        "--warmup",
        type=float,
        default=8.0,
        help="minutes of samples the figures leave out: the event writer keeps each "
        "event's series for 6 minutes (client-go's window), so memory rises until then",
    )
    parser.add_argument(
        "--max-slope",
        type=float,
        default=float(os.environ.get("SOAK_MAX_SLOPE", "5")),
        help="MiB per 10 minutes: more is a failure",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the directory of a clean run")
    return parser.parse_args(argv)


class Sampler(threading.Thread):
    """VmRSS of PID every SAMPLE_EVERY seconds: (seconds since start, MiB)."""

    def __init__(self, pid: int) -> None:
        super().__init__(name="rss-sampler", daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.gone = False
        self.done = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while True:
            kib = vm_rss_kib(self.pid)
            if kib is None:
                self.gone = True
                return
            self.samples.append((time.monotonic() - started, kib / MIB))
            if self.done.wait(SAMPLE_EVERY):
                return


class Deleter(threading.Thread):
    """Deletes each pod when its time comes, beside the creating loop (a client of its
    own, so that creates and deletes each get the full rate)."""

    def __init__(self, cp: ControlPlane) -> None:
        super().__init__(name="deleter", daemon=True)
        self.api = AdminApi(cp)
        self.expiring: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.deleted = 0
        self.gone_before = 0  # preemption victims kubesched had deleted

    def expire(self, at: float, name: str) -> None:
        with self.lock:
            heapq.heappush(self.expiring, (at, name))

    def run(self) -> None:
        while not self.done.is_set():
            with self.lock:
                due = self.expiring and self.expiring[0][0] <= time.monotonic()
                name = heapq.heappop(self.expiring)[1] if due else ""
            if not name:
                time.sleep(0.05)
                continue
            if delete_pod(self.api, NAMESPACE, name):
                self.deleted += 1
            else:
                self.gone_before += 1


def run(
    cp: ControlPlane, api: AdminApi, workdir: Path, args: argparse.Namespace, cleanup: ExitStack
) -> int:
    """The run; CLEANUP stops what it starts even if it fails half-way."""
    rng = random.Random(args.seed)
    retrying(lambda: api.create_namespace(NAMESPACE), "create namespace")
    retrying(
        lambda: api.post(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": HIGH_PRIORITY},
                "value": 1000,
            },
        ),
        "create priority class",
    )
    for i in range(NODES):
        create_node(api, f"node-{i:03d}", NODE)
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    replicas = Replicas(cp, logs, 1, "--no-leader-elect")
    cleanup.callback(replicas.stop)
    replicas.fill()
    kubesched = replicas.live[0].process
    kubesched.wait_ready(60)
    sampler = Sampler(kubesched.proc.pid)
    sampler.start()
    cleanup.callback(sampler.done.set)
    say(f"kubesched pid {kubesched.proc.pid}; churning for {args.minutes:g} minutes")

    started = time.monotonic()
    end = started + args.minutes * 60
    deleter = Deleter(cp)
    deleter.start()
    cleanup.callback(deleter.done.set)
    created = 0
    next_report = started + 60
    t0 = started
    while time.monotonic() < end and kubesched.proc.poll() is None:
        behind = time.monotonic() - (t0 + created / args.rate)
        if behind < 0:
            time.sleep(-behind)
        elif behind > 2:  # the apiserver was slow: go on at the rate, no burst
            t0 += behind
        roll = rng.random()
        if roll < 0.05:
            shape = ordinary_shape(rng, node_selector={"soak.kubesched.io/pool": "nowhere"})
        elif roll < 0.15:
            shape = ordinary_shape(rng, priority_class=HIGH_PRIORITY)
        else:
            shape = ordinary_shape(rng)
        name = f"s-{created:07d}"
        create_pod(api, NAMESPACE, name, shape)
        created += 1
        deleter.expire(time.monotonic() + rng.uniform(0.67, 1.33) * args.lifetime, name)
        if time.monotonic() >= next_report:
            next_report += 60
            rss = sampler.samples[-1][1] if sampler.samples else 0.0
            minute = (time.monotonic() - started) / 60
            say(f"{minute:5.1f} min: {created} pods created, kubesched RSS {rss:.1f} MiB")
    churned = time.monotonic() - started
    deleter.done.set()
    deleter.join(30)
    deleter.api.close()
    died = kubesched.proc.poll() is not None
    sampler.done.set()
    sampler.join(15)
    pods = list_all(api, f"/api/v1/namespaces/{NAMESPACE}/pods")
    replicas.stop()
    log = kubesched.log()

    (workdir / "rss.csv").write_text(
        "seconds,rss_mib\n" + "".join(f"{t:.1f},{v:.2f}\n" for t, v in sampler.samples)
    )
    measured = [(t, v) for t, v in sampler.samples if t >= args.warmup * 60]
    growth = slope(measured) * 600  # MiB per second -> per 10 minutes
    tracebacks = count_tracebacks([log])
    bound_lines = sum(1 for _ in BOUND.finditer(log))
    rows: list[tuple[str, object]] = [
        ("minutes churned", f"{churned / 60:.1f}"),
        ("pods created", created),
        ("  per second", f"{created / churned:.1f}"),
        ("pods deleted by the churn", deleter.deleted),
        ("pods gone before (preempted)", deleter.gone_before),
        ("binds logged by kubesched", bound_lines),
        ("pods left at the end", len(pods)),
        ("  pending", sum(1 for p in pods if not p["spec"].get("nodeName"))),
        ("RSS samples (every 10 s)", len(sampler.samples)),
        ("  after the warm-up", len(measured)),
        ("RSS first sample (MiB)", _mib(sampler.samples[:1])),
        ("RSS start, after warm-up (MiB)", _mib(measured[:1])),
        ("RSS end (MiB)", _mib(measured[-1:])),
        (
            "RSS max after warm-up (MiB)",
            _mib([max(measured, key=lambda s: s[1])] if measured else []),
        ),
        ("slope (MiB per 10 min)", f"{growth:+.2f}"),
        ("threshold (MiB per 10 min)", f"{args.max_slope:g}"),
        ("tracebacks in the log", tracebacks),
        ("kubesched died", "yes" if died or sampler.gone else "no"),
    ]
    print("\nsoak figures:")
    print(table(rows))
    failed = growth > args.max_slope or died or sampler.gone or tracebacks > 0 or not measured
    print(f"\nsoak: {'FAILED' if failed else 'ok'}  (samples in {workdir / 'rss.csv'})")
    return 1 if failed else 0


def _mib(samples: list[tuple[float, float]]) -> str:
    return f"{samples[0][1]:.1f}" if samples else "-"


def main(argv: list[str] | None = None) -> int:
    return run_main("soak", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
