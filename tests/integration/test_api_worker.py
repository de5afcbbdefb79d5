"""The API worker of `kubesched run` on a real kube-apiserver: a worker killed in
the middle of a drain loses no pod and binds none twice, and a replica that loses
its lease while binds are in flight binds nothing after the loss."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kubesched.framework.client import BindConflict
from kubesched.kube.api_worker.frames import Start
from kubesched.kube.api_worker.supervisor import ApiWorker
from kubesched.kube.fence import Fenced
from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane
from tests.integration.kubesched_proc import KubeschedProcess, start_kubesched
from tests.integration.test_run import unique_prefix

pytestmark = pytest.mark.integration


def _worker_pids(parent: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"kubesched.kube.api_worker" in cmdline:
            pids.append(int(entry.name))
    return pids


def _bound(api: AdminApi, namespace: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in api.list_pods(namespace)
        if p["spec"].get("nodeName")
    }


def _make_nodes(api: AdminApi, prefix: str, count: int) -> list[str]:
    names = [f"{prefix}-{i:02d}" for i in range(count)]
    for name in names:
        api.create_node(name, cpu="32", memory="64Gi")
    return names


def test_a_worker_killed_mid_drain_loses_no_pod_and_binds_none_twice(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    tmp_path: Path,
) -> None:
    _make_nodes(api, unique_prefix("wk"), 12)
    names = [f"p-{i:04d}" for i in range(1000)]
    for name in names:  # a backlog: the drain starts with the scheduler
        api.create_pod(namespace, name, cpu="10m")
    proc = start_kubesched(control_plane, tmp_path, "--no-leader-elect", name="kubesched-wk")
    kubesched.append(proc)
    proc.wait_ready(timeout=60)
    [worker] = _worker_pids(proc.proc.pid)
    # Kill it once some pods are bound and many are not: binds are in flight. The
    # count is read from kubesched's log, not listed from the API server: a list of
    # the whole backlog takes longer than the drain of the rest may.
    api.wait_for(lambda: sum(proc.bound().values()) >= 30, timeout=60, interval=0.005)
    os.kill(worker, signal.SIGKILL)
    killed_with = len(_bound(api, namespace))
    assert killed_with < len(names), "the drain ended before the worker was killed"

    api.wait_for(lambda: len(_bound(api, namespace)) == len(names), timeout=120)
    assert proc.proc.poll() is None  # it rode the worker's death out
    log = proc.log()
    assert "the API worker died (signal 9)" in log
    assert "API worker started" in log.split("the API worker died", 1)[1]  # a new one
    # No pod bound twice: each logged as bound at most once; those whose bind was
    # in flight in the dead worker are retried, and a retry of a bind that had
    # landed meets 409 and is not repeated.
    counts = proc.bound()
    assert all(counts[f"{namespace}/{n}"] <= 1 for n in names)
    new_workers = _worker_pids(proc.proc.pid)
    assert len(new_workers) == 1 and new_workers[0] != worker


def test_a_fenced_worker_sends_no_bind_after_the_fence(
    control_plane: ControlPlane, api: AdminApi, namespace: str
) -> None:
    """Binds queued in the worker when the lease is lost (the fence closes) are
    not sent: exactly the binds answered "bound" are bound, the rest stay pending."""
    node = _make_nodes(api, unique_prefix("fw"), 1)[0]
    pods = [api.create_pod(namespace, f"f-{i:03d}", cpu="10m") for i in range(400)]

    async def bind_all() -> dict[str, BaseException | None]:
        start = Start(str(control_plane.kubeconfig), None, 50.0, 50, 50.0, 50, "text", 0, math.inf)
        worker = ApiWorker(start, lambda message: None)
        await worker.start()
        outcomes: dict[str, BaseException | None] = {}

        async def bind(pod: dict[str, Any]) -> None:
            meta = pod["metadata"]
            try:
                await worker.bind(namespace, meta["name"], meta["uid"], node)
                outcomes[meta["name"]] = None
            except Exception as exc:
                outcomes[meta["name"]] = exc

        try:
            tasks = [asyncio.ensure_future(bind(pod)) for pod in pods]
            await asyncio.sleep(0)  # every Bind frame is on its way
            worker.fence(-math.inf)  # the lease is lost: the frame after them
            await asyncio.gather(*tasks)
        finally:
            await worker.stop()
        return outcomes

    outcomes = asyncio.run(bind_all())
    answered_bound = {name for name, exc in outcomes.items() if exc is None}
    fenced = {name for name, exc in outcomes.items() if isinstance(exc, Fenced)}
    others = {n: e for n, e in outcomes.items() if n not in answered_bound | fenced}
    assert not others, others
    # The worker's in-flight limit (64 at first) held most binds back: those
    # were never sent.
    assert fenced, "no bind was waiting when the fence closed"
    time.sleep(1.0)
    assert set(_bound(api, namespace)) == answered_bound
    assert not any(isinstance(e, BindConflict) for e in outcomes.values())


def test_a_replica_that_loses_its_lease_binds_nothing_after_the_loss(
    control_plane: ControlPlane,
    api: AdminApi,
    namespace: str,
    kubesched: list[KubeschedProcess],
    tmp_path: Path,
) -> None:
    """Pods keep coming while another holder takes the lease: once the replica
    says it lost the lease, no more of its binds land, and it exits at once
    (kube-scheduler exits on OnStoppedLeading) rather than draining its binds."""
    _make_nodes(api, unique_prefix("ll"), 8)
    lease = f"kubesched-ll-{namespace}"[:60]
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: true\n  resourceNamespace: default\n"
        f"  resourceName: {lease}\n  leaseDuration: 4s\n  renewDeadline: 3s\n"
        "  retryPeriod: 1s\nprofiles:\n- schedulerName: kubesched\n"
    )
    proc = start_kubesched(control_plane, tmp_path, "--config", str(config), name="kubesched-ll")
    kubesched.append(proc)
    api.wait_for(lambda: "became leader" in proc.log(), timeout=30)

    stop = threading.Event()
    bound_seen: dict[str, float] = {}

    def create_pods() -> None:
        i = 0
        while not stop.is_set():
            api_thread.create_pod(namespace, f"s-{i:05d}", cpu="1m")
            i += 1

    def watch_bound() -> None:
        while not stop.is_set():
            now = time.monotonic()
            for name in _bound(api_watch, namespace):
                bound_seen.setdefault(name, now)
            time.sleep(0.02)

    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{lease}"

    def steal() -> None:
        # Another holder, renewing every half second: the replica cannot renew.
        while not stop.is_set():
            current = api_steal.get(lease_path)
            now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
            current["spec"].update(holderIdentity="thief", renewTime=now)
            api_steal.request("PUT", lease_path, current, ok=(409,))
            time.sleep(0.5)

    with (
        AdminApi(control_plane) as api_thread,
        AdminApi(control_plane) as api_watch,
        AdminApi(control_plane) as api_steal,
    ):
        threads = [threading.Thread(target=f) for f in (create_pods, watch_bound)]
        for thread in threads:
            thread.start()
        try:
            api.wait_for(lambda: len(bound_seen) >= 20, timeout=30)
            stealer = threading.Thread(target=steal)
            stealer.start()
            threads.append(stealer)
            lost_at = api.wait_for(
                lambda: time.monotonic() if "leader election lost" in proc.log() else None,
                timeout=30,
                interval=0.01,
            )
            # It exits promptly: no 30 s drain of binds on a lost lease.
            code = proc.proc.wait(10)
            time.sleep(2.0)  # anything still to land would have landed
        finally:
            stop.set()
            for thread in threads:
                thread.join(10)
            # The pods left pending are deleted: a later test's scheduler must not
            # find them (the `api` fixture cleans up only what it created itself).
            api_thread.cleanup()
    assert code == 1
    late = {name: t - lost_at for name, t in bound_seen.items() if t > lost_at + 1.0}
    assert not late, f"bound after the loss: {sorted(late.items())[:5]}"
    assert len(bound_seen) >= 20
