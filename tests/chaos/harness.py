"""What `make chaos` and `make soak` share: a control plane of their own (hack/cluster-up.sh
in a temporary directory), calls that ride out an apiserver restart, the pods and
nodes of the runs, a watch that keeps a BindingLedger, etcd compaction, a process's
resident memory, and `kubesched run` replicas kept running (restarted when they die).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import random
import re
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.chaos.checks import BindingLedger
from tests.integration.admin_api import AdminApi, ApiError
from tests.integration.control_plane import (
    CLUSTER_UP_TIMEOUT,
    ControlPlane,
    ensure_binaries,
    run_hack,
)
from tests.integration.kubesched_proc import KubeschedProcess, start_kubesched

T = TypeVar("T")

SCHEDULER_NAME = "kubesched"
# How long a call keeps trying through an apiserver that is restarting.
RETRY_FOR = 120.0


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


@contextlib.contextmanager
def fresh_control_plane(workdir: Path) -> Iterator[ControlPlane]:
    """etcd and kube-apiserver (no kube-controller-manager: nothing here needs one) in
    WORKDIR/cluster; their logs are copied to WORKDIR/logs before cluster-down."""
    ensure_binaries()
    cluster_dir = workdir / "cluster"
    cluster_dir.mkdir(parents=True)
    env_file = Path(
        run_hack(
            "cluster-up.sh",
            str(cluster_dir),
            timeout=CLUSTER_UP_TIMEOUT,
            env={"KUBESCHED_CONTROLLERS": "none"},
        )
    )
    try:
        yield ControlPlane.from_env_file(env_file)
    finally:
        logs = workdir / "logs"
        logs.mkdir(exist_ok=True)
        for log in cluster_dir.glob("*.log"):
            with contextlib.suppress(OSError):
                shutil.copy2(log, logs / log.name)
        run_hack("cluster-down.sh", str(cluster_dir), timeout=120)


def run_main(
    name: str,
    args: argparse.Namespace,
    run: Callable[[ControlPlane, AdminApi, Path, argparse.Namespace, ExitStack], int],
) -> int:
    """The whole of a chaos or soak run: a fresh control plane in a work dir of its own,
    RUN's exit code; a failure of the run itself (not a finding) exits 2, and the work
    dir stays unless the run passed and ARGS.keep is off."""
    workdir = Path(tempfile.mkdtemp(prefix=f"kubesched-{name}-"))
    say(f"working in {workdir}")
    try:
        with (
            fresh_control_plane(workdir) as cp,
            AdminApi(cp) as api,
            ExitStack() as cleanup,
        ):
            code = run(cp, api, workdir, args, cleanup)
    except Exception:
        traceback.print_exc()
        print(f"{name}: the run itself failed (logs in {workdir})", file=sys.stderr)
        return 2
    if code == 0 and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return code


def transient(exc: BaseException) -> bool:
    """An answer that says "the apiserver is not there right now": try again."""
    if isinstance(exc, httpx.TransportError):
        return True
    return isinstance(exc, ApiError) and (exc.code >= 500 or exc.code == 429)


def retrying(call: Callable[[], T], what: str, timeout: float = RETRY_FOR) -> T:
    """CALL until it does not fail transiently (connection refused or reset, 5xx, 429)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except (httpx.TransportError, ApiError) as exc:
            if not transient(exc) or time.monotonic() > deadline:
                raise RuntimeError(f"{what}: {exc}") from exc
            time.sleep(0.3)


# --------------------------------------------------------------------- objects
@dataclass(frozen=True)
class NodeShape:
    cpu: str
    memory: str
    pods: int = 110
    labels: Mapping[str, str] = field(default_factory=dict)


def create_node(api: AdminApi, name: str, shape: NodeShape) -> None:
    def call() -> None:
        try:
            api.create_node(
                name, cpu=shape.cpu, memory=shape.memory, pods=shape.pods, labels=shape.labels
            )
        except ApiError as exc:
            if exc.code != 409:  # an earlier attempt went through
                raise

    retrying(call, f"create node {name}")


@dataclass(frozen=True)
class PodShape:
    cpu: str
    memory: str
    node_selector: Mapping[str, str] = field(default_factory=dict)
    priority_class: str = ""


# Sizes of ordinary pods and how often each comes (small ones most).
CPU_SIZES = (("50m", 4), ("100m", 3), ("200m", 2), ("500m", 1))
MEMORY_SIZES = (("128Mi", 4), ("256Mi", 3), ("512Mi", 2), ("1Gi", 1))
MEAN_CPU = 0.14  # cores: the mean of CPU_SIZES


def ordinary_shape(rng: random.Random, **kwargs: Any) -> PodShape:
    def pick(sizes: tuple[tuple[str, int], ...]) -> str:
        return rng.choices([s for s, _ in sizes], [w for _, w in sizes])[0]

    return PodShape(pick(CPU_SIZES), pick(MEMORY_SIZES), **kwargs)


def pod_spec(shape: PodShape) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if shape.node_selector:
        spec["nodeSelector"] = dict(shape.node_selector)
    if shape.priority_class:
        spec["priorityClassName"] = shape.priority_class
    return spec


def create_pod(
    api: AdminApi, namespace: str, name: str, shape: PodShape, replaces: str = ""
) -> str:
    """Create the pod (riding out a restarting apiserver) and return its UID. REPLACES:
    the UID of a deleted pod of the same name, which may still be there for a moment;
    a 409 then means "not gone yet" if the pod found has that UID, and "an earlier
    attempt of ours went through" if it has another."""
    deadline = time.monotonic() + RETRY_FOR
    while True:
        try:
            created = api.create_pod(
                namespace, name, shape.cpu, shape.memory, SCHEDULER_NAME, **pod_spec(shape)
            )
            return str(created["metadata"]["uid"])
        except (httpx.TransportError, ApiError) as exc:
            if isinstance(exc, ApiError) and exc.code == 409:
                uid = _uid_of(api, namespace, name)
                if uid not in ("", replaces):
                    return uid
            elif not transient(exc):
                raise
            if time.monotonic() > deadline:
                raise RuntimeError(f"create pod {namespace}/{name}: {exc}") from exc
            time.sleep(0.2)


def _uid_of(api: AdminApi, namespace: str, name: str) -> str:
    """The UID of the pod NAME ("" if there is none, or the apiserver is not there)."""
    try:
        return str(api.get_pod(namespace, name)["metadata"]["uid"])
    except (httpx.TransportError, ApiError) as exc:
        if transient(exc) or (isinstance(exc, ApiError) and exc.code == 404):
            return ""
        raise


def delete_pod(api: AdminApi, namespace: str, name: str) -> bool:
    """Delete at once (gracePeriodSeconds=0); False if it was gone already (404)."""

    def call() -> bool:
        answer = api.request(
            "DELETE",
            f"/api/v1/namespaces/{namespace}/pods/{name}",
            {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            ok=(404,),
        )
        return answer.get("kind") != "Status" or answer.get("code") != 404

    return retrying(call, f"delete pod {namespace}/{name}")


def list_all(api: AdminApi, path: str) -> list[dict[str, Any]]:
    """Every item of PATH, page by page (limit/continue)."""
    items: list[dict[str, Any]] = []
    token = ""
    while True:
        params: dict[str, Any] = {"limit": 500}
        if token:
            params["continue"] = token
        page = retrying(functools.partial(api.get, path, **params), f"list {path}")
        items.extend(page.get("items", []))
        token = page.get("metadata", {}).get("continue", "")
        if not token:
            return items


# --------------------------------------------------------------------- watching
class LedgerWatch:
    """Watches the pods of a namespace for the whole run and feeds every version it sees
    (the lists after a reconnect too) to a BindingLedger. A thread of its own, with a
    client of its own; reconnects (and lists again) whenever the watch breaks."""

    def __init__(self, api: AdminApi, namespace: str) -> None:
        self.ledger = BindingLedger()
        self._path = f"/api/v1/namespaces/{namespace}/pods"
        self._cp = api.cp
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ledger-watch", daemon=True)
        self.relists = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(15)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with httpx.Client(
                    base_url=self._cp.url,
                    verify=self._cp.ssl_context(),
                    timeout=httpx.Timeout(90, connect=5),
                ) as client:
                    self._list_and_watch(client)
            except (httpx.HTTPError, ValueError, KeyError):
                time.sleep(0.5)

    def _list_and_watch(self, client: httpx.Client) -> None:
        listed = client.get(self._path)
        listed.raise_for_status()
        body = listed.json()
        self.relists += 1
        for pod in body.get("items", []):
            self.ledger.observe(pod)
        params = {
            "watch": "1",
            "resourceVersion": body["metadata"]["resourceVersion"],
            "timeoutSeconds": "60",
        }
        with client.stream("GET", self._path, params=params) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if self._stop.is_set():
                    return
                if not line:
                    continue
                event = json.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    self.ledger.observe(event["object"])
                elif event.get("type") == "ERROR":  # e.g. 410 Gone: list again
                    return


# --------------------------------------------------------------------- etcd
def compact_etcd(cp: ControlPlane) -> int:
    """Compact etcd at its current revision through its JSON gateway (what
    hack/restart-apiserver.sh --compact does, but with the apiserver up): the revision."""
    etcd = cp.env["ETCD_URL"]
    with httpx.Client(timeout=30) as client:
        header = client.post(f"{etcd}/v3/kv/range", json={"key": "AA=="}).json()["header"]
        revision = int(header["revision"])
        client.post(
            f"{etcd}/v3/kv/compaction", json={"revision": str(revision), "physical": True}
        ).raise_for_status()
    return revision


# --------------------------------------------------------------------- kubesched
def vm_rss_kib(pid: int) -> int | None:
    """VmRSS of /proc/PID/status in KiB (None once the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


LEADER = re.compile(r"became leader: lease \S+ as ([^\s\"]+)")


@dataclass
class Replica:
    process: KubeschedProcess
    identity: str = ""  # its lease identity, once it has led

    def ready(self) -> bool:
        try:
            return self.process.get("/readyz").status_code == 200
        except httpx.HTTPError:
            return False

    def lease_identity(self) -> str:
        if not self.identity:
            match = LEADER.search(self.process.log())
            if match:
                self.identity = match.group(1)
        return self.identity


class Replicas:
    """COUNT `kubesched run` processes with the same arguments, kept at COUNT: one that
    exits is restarted (and its exit recorded), one that is killed is replaced."""

    def __init__(self, cp: ControlPlane, workdir: Path, count: int, *args: str) -> None:
        self.cp = cp
        self.workdir = workdir
        self.args = args
        self.count = count
        self.live: list[Replica] = []
        self.all: list[Replica] = []
        self.kills = 0
        self.exits: list[int | None] = []  # exit codes of replicas that stopped on their own
        self._started = 0

    def _start(self) -> Replica:
        self._started += 1
        process = start_kubesched(
            self.cp, self.workdir, *self.args, name=f"kubesched-{self._started:03d}"
        )
        replica = Replica(process)
        self.live.append(replica)
        self.all.append(replica)
        return replica

    def fill(self) -> None:
        """Note the replicas that exited and start new ones up to COUNT."""
        for replica in list(self.live):
            code = replica.process.proc.poll()
            if code is not None:
                self.exits.append(code)
                self.live.remove(replica)
        while len(self.live) < self.count:
            self._start()

    def kill(self, replica: Replica) -> None:
        """kill -9, then a new replica in its place."""
        replica.process.kill()
        self.live.remove(replica)
        self.kills += 1
        self.fill()

    def leader(self, api: AdminApi, namespace: str, lease: str) -> Replica | None:
        """The live replica holding the lease (None if the holder is dead, or unknown)."""
        try:
            holder = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{lease}")
        except (httpx.HTTPError, ApiError):
            return None
        identity = holder.get("spec", {}).get("holderIdentity", "")
        for replica in self.live:
            if identity and replica.lease_identity() == identity:
                return replica
        return None

    def stop(self) -> None:
        for replica in self.live:
            replica.process.stop()

    def logs(self) -> list[str]:
        return [replica.process.log() for replica in self.all]
