"""`make chaos`: `kubesched run` under a steady pod load while everything around it breaks.

    python -m tests.chaos.chaos [--pods 2000] [--rate 20] [--kill-every 10] [--seed 1]

On a control plane of its own (hack/cluster-up.sh in a temporary directory), with
fake nodes made through the API (no kubelet: a bound pod just stays bound):

* pods are created at a steady rate, of mixed sizes; some wait a while: they select
  nodes of a pool that only appears at 60 %, or need more memory than the first
  nodes have;
* two `kubesched run` replicas share one Lease; every KILL_EVERY seconds the one
  holding it is killed with SIGKILL and a new one started (a replica that exits on
  its own, e.g. when it cannot renew the lease while the apiserver is down, is
  restarted too): there are always two;
* kube-apiserver is killed (SIGKILL) and started again twice (hack/restart-apiserver.sh,
  same flags and port), the second time with etcd compacted while it is down, so that
  the scheduler's watches come back to 410 Gone and list again;
* etcd is compacted once more with the apiserver up (its JSON gateway);
* every RECREATE_EVERY-th pod, a recent pod is deleted and created again under the
  same name (a new UID).

Then it waits (SETTLE seconds at most) until no pending pod fits the final cluster,
and prints the figures (tests/chaos/checks.py): pods lost, pods bound twice, nodes
overcommitted, tracebacks in the kubesched logs, with what happened and the wall
time. Exit code 1 if any of the four is not 0, 2 if the run itself failed. The
directory with the logs is removed after a clean run unless --keep is given.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from tests.chaos.checks import (
    count_error_lines,
    count_tracebacks,
    lost_pods,
    overcommitted_nodes,
    scheduled_counts,
    scheduled_twice,
    table,
)
from tests.chaos.harness import (
    MEAN_CPU,
    SCHEDULER_NAME,
    LedgerWatch,
    NodeShape,
    PodShape,
    Replica,
    Replicas,
    compact_etcd,
    create_node,
    create_pod,
    delete_pod,
    list_all,
    ordinary_shape,
    retrying,
    run_main,
    say,
)
from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane

NAMESPACE = "chaos"
LEASE_NAMESPACE = "kube-system"
LEASE = "kubesched-chaos"
POOL = "chaos.kubesched.io/pool"
REGULAR = NodeShape("8", "32Gi")
LATE = NodeShape("16", "96Gi", labels={POOL: "late"})
TARGET_CPU_USE = 0.75  # of the regular nodes, by the ordinary pods
LATE_AT = 0.60  # of the pods created: the late nodes appear
# When (fraction of the pods created) the apiserver is killed: (at, compact etcd while down).
APISERVER_KILLS = ((0.25, False), (0.75, True))
LIVE_COMPACTION_AT = 0.45


@dataclass
class Chaos:
    """What happened, for the report."""

    started: float = field(default_factory=time.monotonic)
    timeline: list[str] = field(default_factory=list)
    apiserver_restarts: int = 0
    compactions: int = 0
    recreated: int = 0
    leaderless_ticks: int = 0

    def note(self, text: str) -> None:
        line = f"{time.monotonic() - self.started:7.1f}s  {text}"
        self.timeline.append(line)
        say(text)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.chaos", description=__doc__)
    parser.add_argument("--pods", type=int, default=int(os.environ.get("CHAOS_PODS", "2000")))
    parser.add_argument("--rate", type=float, default=20.0, help="pods created per second")
    parser.add_argument("--kill-every", type=float, default=10.0, help="seconds (0: never)")
    parser.add_argument("--recreate-every", type=int, default=20, help="pods (0: never)")
    parser.add_argument(
        "--lease-duration",
        type=float,
        default=6.0,
        help="seconds; renewDeadline is 2/3 of it and retryPeriod 1/6, as 15s/10s/2s upstream",
    )
    parser.add_argument("--settle", type=float, default=360.0, help="seconds at most")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the logs of a clean run")
    return parser.parse_args(argv)


def plan_pods(pods: int, rng: random.Random) -> list[tuple[str, PodShape]]:
    """Mostly ordinary pods; 3 % select the late pool; one in 400 needs 40Gi of memory,
    more than a regular node has (only late nodes fit it)."""
    plan = []
    for i in range(pods):
        if i % 400 == 399:
            shape = PodShape("1", "40Gi")
        elif rng.random() < 0.03:
            shape = ordinary_shape(rng, node_selector={POOL: "late"})
        else:
            shape = ordinary_shape(rng)
        plan.append((f"p-{i:05d}", shape))
    return plan


def lease_config(path: Path, lease_duration: float) -> Path:
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection:\n"
        "  leaderElect: true\n"
        f"  resourceNamespace: {LEASE_NAMESPACE}\n"
        f"  resourceName: {LEASE}\n"
        f"  leaseDuration: {lease_duration:g}s\n"
        f"  renewDeadline: {lease_duration * 2 / 3:g}s\n"
        f"  retryPeriod: {lease_duration / 6:g}s\n"
        f"profiles:\n- schedulerName: {SCHEDULER_NAME}\n"
    )
    return path


class Killer(threading.Thread):
    """Keeps two replicas running and, while `killing` is set, kills the leader every
    KILL_EVERY seconds (a tick with no live leader holding the lease kills nobody)."""

    def __init__(self, replicas: Replicas, chaos: Chaos, every: float) -> None:
        super().__init__(name="killer", daemon=True)
        self.replicas = replicas
        # A client of its own: the main thread's is replaced on each apiserver restart.
        self.api = AdminApi(replicas.cp)
        self.chaos = chaos
        self.every = every
        self.killing = threading.Event()
        self.done = threading.Event()
        self.lock = threading.Lock()

    def wait_all_ready(self, timeout: float) -> bool:
        """Wait until every live replica answers /readyz (its informers synced)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                ready = all(r.ready() for r in self.replicas.live)
            if ready:
                return True
            time.sleep(0.5)
        return False

    def run(self) -> None:
        next_kill = time.monotonic() + self.every
        while not self.done.wait(0.5):
            with self.lock:
                exits = len(self.replicas.exits)
                self.replicas.fill()
                for code in self.replicas.exits[exits:]:
                    self.chaos.note(f"a replica exited on its own (code {code}); restarted")
                if not self.killing.is_set() or self.every <= 0:
                    continue
                if time.monotonic() < next_kill:
                    continue
                next_kill = time.monotonic() + self.every
                leader: Replica | None = self.replicas.leader(self.api, LEASE_NAMESPACE, LEASE)
                if leader is None:
                    self.chaos.leaderless_ticks += 1
                    continue
                self.replicas.kill(leader)
                self.chaos.note(f"killed the leader (pid {leader.process.proc.pid}) with SIGKILL")


def run(
    cp: ControlPlane, api: AdminApi, workdir: Path, args: argparse.Namespace, cleanup: ExitStack
) -> int:
    """The run; CLEANUP stops what it starts even if it fails half-way."""
    rng = random.Random(args.seed)
    chaos = Chaos()
    retrying(lambda: api.create_namespace(NAMESPACE), "create namespace")
    regular = max(2, math.ceil(args.pods * MEAN_CPU / (8 * TARGET_CPU_USE)))
    late = max(2, args.pods // 200)
    for i in range(regular):
        create_node(api, f"node-{i:03d}", REGULAR)
    plan = plan_pods(args.pods, rng)
    say(f"{regular} nodes of {REGULAR.cpu} CPU, {late} late ones to come; {args.pods} pods")

    ledger = LedgerWatch(api, NAMESPACE)
    ledger.start()
    cleanup.callback(ledger.stop)
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    config = lease_config(workdir / "config.yaml", args.lease_duration)
    # -v 4: the text log carries the traceback of every exception kubesched logs.
    replicas = Replicas(cp, logs, 2, "--config", str(config), "-v", "4")
    cleanup.callback(replicas.stop)
    replicas.fill()
    for replica in replicas.live:
        replica.process.wait_ready(60)
    api.wait_for(
        lambda: replicas.leader(api, LEASE_NAMESPACE, LEASE), timeout=60, message="a leader"
    )
    killer = Killer(replicas, chaos, args.kill_every)
    killer.start()
    cleanup.callback(killer.done.set)
    killer.killing.set()

    chaos.started = time.monotonic()
    chaos.note("creating pods")
    uids: dict[str, str] = {}
    shapes: dict[str, PodShape] = {}
    apiserver_kills = list(APISERVER_KILLS)
    live_compacted = False
    t0 = time.monotonic()
    for i, (name, shape) in enumerate(plan):
        behind = time.monotonic() - (t0 + i / args.rate)
        if behind < 0:
            time.sleep(-behind)
        elif behind > 2:  # after a pause (an apiserver restart): go on at the rate, no burst
            t0 += behind
        uids[name] = create_pod(api, NAMESPACE, name, shape)
        shapes[name] = shape
        done = (i + 1) / args.pods
        if args.recreate_every and (i + 1) % args.recreate_every == 0:
            victim = rng.choice(list(uids)[-100:])
            delete_pod(api, NAMESPACE, victim)
            uids[victim] = create_pod(api, NAMESPACE, victim, shapes[victim], replaces=uids[victim])
            chaos.recreated += 1
        if apiserver_kills and done >= apiserver_kills[0][0]:
            _, compact = apiserver_kills.pop(0)
            # Both replicas watching first (a replica still starting has no watch to
            # resume): otherwise the 410 after the compaction would meet nobody.
            killer.killing.clear()
            ready = killer.wait_all_ready(timeout=90)
            chaos.note(
                "killing kube-apiserver"
                + (", compacting etcd while down" * compact)
                + ("" if ready else " (not every replica was ready)")
            )
            api.restart_apiserver(hard=True, compact=compact)
            chaos.apiserver_restarts += 1
            chaos.compactions += compact
            chaos.note("kube-apiserver is back")
            killer.killing.set()
        if not live_compacted and done >= LIVE_COMPACTION_AT:
            live_compacted = True
            revision = retrying(lambda: compact_etcd(cp), "compact etcd")
            chaos.compactions += 1
            chaos.note(f"compacted etcd at revision {revision} (apiserver up)")
        if late and done >= LATE_AT:
            for j in range(late):
                create_node(api, f"late-{j:03d}", LATE)
            chaos.note(f"{late} late nodes created")
            late = 0
    created_for = time.monotonic() - chaos.started
    killer.killing.clear()
    chaos.note(f"all {args.pods} pods created ({created_for:.0f}s); no more kills, settling")

    deadline = time.monotonic() + args.settle
    while True:
        pods = list_all(api, f"/api/v1/namespaces/{NAMESPACE}/pods")
        nodes = list_all(api, "/api/v1/nodes")
        lost = lost_pods(pods, nodes, SCHEDULER_NAME)
        if not lost or time.monotonic() > deadline:
            break
        time.sleep(3)
    chaos.note(f"settled: {len(lost)} pending pods fit somewhere")
    wall = time.monotonic() - chaos.started

    # The leader writes its events at its own pace (a rate limit, behind the binds):
    # wait until no more come before counting them.
    events_path = f"/apis/events.k8s.io/v1/namespaces/{NAMESPACE}/events"
    events = list_all(api, events_path)
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 10 and time.monotonic() < deadline + 120:
        time.sleep(2)
        more = list_all(api, events_path)
        if len(more) != len(events):
            quiet_since = time.monotonic()
        events = more
    killer.done.set()
    killer.join(30)
    killer.api.close()
    with killer.lock:
        replicas.stop()
    ledger.stop()
    twice = scheduled_twice(events, ledger.ledger)
    over = overcommitted_nodes(pods, nodes)
    tracebacks = count_tracebacks(replicas.logs())
    errors = count_error_lines(replicas.logs())
    bound = sum(1 for p in pods if p["spec"].get("nodeName"))
    relists = sum(text.count("is gone, listing again") for text in replicas.logs())

    print("\nwhat happened:")
    print("\n".join(f"  {line}" for line in chaos.timeline))
    print("\nchaos figures:")
    rows: list[tuple[str, object]] = [
        ("pods lost (pending, but fit)", len(lost)),
        ("pods bound twice", len(twice)),
        ("nodes overcommitted", len({o.node for o in over})),
        ("tracebacks in kubesched logs", tracebacks),
        ("error lines (E...) in the logs", errors),
        ("pods at the end", len(pods)),
        ("  bound", bound),
        ("  pending (no room)", len(pods) - bound - len(lost)),
        ("pods deleted and re-created", chaos.recreated),
        ("Scheduled events", sum(scheduled_counts(events).values())),
        ("leader kills (SIGKILL)", replicas.kills),
        ("replica exits on their own", len(replicas.exits)),
        ("kill ticks with no live leader", chaos.leaderless_ticks),
        ("kubesched replicas started", len(replicas.all)),
        ("kube-apiserver kills + restarts", chaos.apiserver_restarts),
        ("etcd compactions", chaos.compactions),
        ("'listing again' (410) in logs", relists),
        ("pod creation (s)", f"{created_for:.0f}"),
        ("wall time (s)", f"{wall:.0f}"),
    ]
    print(table(rows))
    for key in lost[:20]:
        print(f"  lost: {key}")
    for uid in sorted(twice)[:20]:
        print(f"  bound twice: uid {uid} {ledger.ledger.changed.get(uid, '')}")
    for o in over[:20]:
        print(f"  overcommitted: {o.node} {o.resource} {o.requested} > {o.allocatable}")
    failed = bool(lost or twice or over or tracebacks)
    print(f"\nchaos: {'FAILED' if failed else 'ok'}  (logs in {logs})")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    return run_main("chaos", parse_args(argv), run)


if __name__ == "__main__":
    sys.exit(main())
