"""The control plane of hack/cluster-up.sh (bench/control_plane.py) and a fast
async admin client for it.

Creating thousands of pods must not be what limits a run on 2 cores, where the
client shares the CPUs with etcd, kube-apiserver and the scheduler: writes go
through aiohttp (64 keep-alive connections; ~0.25 ms of client CPU per pod,
~1,100 pods/s here) rather than httpx over HTTP/2 (~2 ms per pod, ~400 pods/s
here), which remains selectable (``client="httpx-h2"``). Watches have a
thread and a connection of their own (see Bindings).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import msgspec

from bench import control_plane

# Re-exported: bench.run and bench.e2e import them from here.
from bench.control_plane import REPO_ROOT as REPO_ROOT
from bench.control_plane import ControlPlane as ControlPlane
from bench.workloads import Manifest, PodState

RETRY_STATUSES = {429, 500, 502, 503, 504}


class BenchError(RuntimeError):
    pass


def run_hack(
    script: str, *args: str, timeout: float = 3600, env: Mapping[str, str] | None = None
) -> str:
    """hack/SCRIPT ARGS; the last line of its stdout. Raises BenchError with the
    tail of its stderr on failure.

    The cluster runs kube-controller-manager's controllers as the tests' does
    (workloads with ResourceClaimTemplates need the resourceclaim controller); its
    CPU counts as the control plane's (ControlPlane.pids). KUBESCHED_CONTROLLERS=none
    in the environment turns it off."""
    try:
        return control_plane.run_hack(script, *args, timeout=timeout, env=env)
    except control_plane.HackScriptError as exc:
        raise BenchError(str(exc)) from exc


def cluster_up(directory: Path, *, workload_api: bool = False) -> ControlPlane:
    """Build (cached: well under a second) and start etcd, kube-apiserver and
    kube-controller-manager in DIRECTORY; kube-apiserver serving the alpha Workload
    API (scheduling.k8s.io/v1alpha2, GenericWorkload and GangScheduling on) if
    WORKLOAD_API, else the shipped API whatever the environment says."""
    run_hack("build-k8s.sh")
    run_hack("build-etcd.sh")
    env = {"KUBESCHED_WORKLOAD_API": "1" if workload_api else "0"}
    env_file = run_hack("cluster-up.sh", str(directory), timeout=300, env=env)
    return ControlPlane.from_env_file(Path(env_file))


def cluster_down(directory: Path) -> None:
    run_hack("cluster-down.sh", str(directory), timeout=120)


# ------------------------------------------------------------------ decoding


class _Meta(msgspec.Struct):
    name: str = ""
    namespace: str = ""
    labels: dict[str, str] = {}
    resourceVersion: str = ""  # the API's spelling


class _Spec(msgspec.Struct, rename="camel"):
    node_name: str = ""


class _Pod(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    spec: _Spec = msgspec.field(default_factory=_Spec)


class _PodList(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    items: list[_Pod] = []


class _WatchEvent(msgspec.Struct):
    type: str
    object: _Pod = msgspec.field(default_factory=_Pod)


_pod_list = msgspec.json.Decoder(_PodList)
_watch_event = msgspec.json.Decoder(_WatchEvent)
encode = msgspec.json.encode


def pods_path(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods"


# ------------------------------------------------------------------ client

CLIENTS = ("aiohttp", "httpx-h2")


class _Transport:
    """One way of sending requests: ``request`` returns (status, body)."""

    async def request(
        self, method: str, path: str, body: bytes | None, params: Mapping[str, str] | None
    ) -> tuple[int, bytes]:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


class _Aiohttp(_Transport):
    """HTTP/1.1 over a pool of `concurrency` keep-alive connections: about a
    quarter of a millisecond of client CPU per pod created."""

    def __init__(self, cp: ControlPlane, concurrency: int) -> None:
        connector = aiohttp.TCPConnector(ssl=cp.ssl_context(), limit=concurrency)
        self.session = aiohttp.ClientSession(
            cp.url,
            connector=connector,
            headers=HEADERS,
            timeout=aiohttp.ClientTimeout(total=60, connect=10),
        )

    async def request(
        self, method: str, path: str, body: bytes | None, params: Mapping[str, str] | None
    ) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"} if body is not None else None
        async with self.session.request(
            method, path, data=body, params=params, headers=headers
        ) as response:
            return response.status, await response.read()

    async def aclose(self) -> None:
        await self.session.close()


class _HttpxH2(_Transport):
    """httpx over one HTTP/2 connection with `concurrency` streams: simple, but
    its pure-Python HTTP/2 costs about 2 ms of client CPU per pod created."""

    def __init__(self, cp: ControlPlane, concurrency: int) -> None:
        self.client = httpx.AsyncClient(
            base_url=cp.url,
            verify=cp.ssl_context(),
            http2=True,
            headers=HEADERS,
            timeout=httpx.Timeout(60.0, connect=10.0),
        )

    async def request(
        self, method: str, path: str, body: bytes | None, params: Mapping[str, str] | None
    ) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"} if body is not None else None
        response = await self.client.request(
            method, path, content=body, params=params, headers=headers
        )
        return response.status_code, response.content

    async def aclose(self) -> None:
        await self.client.aclose()


HEADERS = {"Accept": "application/json", "User-Agent": "kubesched-bench"}
TRANSPORT_ERRORS = (httpx.TransportError, aiohttp.ClientError, asyncio.TimeoutError)


class Api:
    """Admin (system:masters) client of the benchmark cluster. CLIENT: "aiohttp"
    (the default) or "httpx-h2" for requests; watches: see Bindings."""

    def __init__(self, cp: ControlPlane, *, concurrency: int = 64, client: str = "aiohttp") -> None:
        if client not in CLIENTS:
            raise ValueError(f"client {client!r}: one of {', '.join(CLIENTS)}")
        self.cp = cp
        self.concurrency = concurrency
        self._writes: _Transport = (
            _Aiohttp(cp, concurrency) if client == "aiohttp" else _HttpxH2(cp, concurrency)
        )

    async def aclose(self) -> None:
        await self._writes.aclose()

    async def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        params: Mapping[str, str] | None = None,
        ok: Iterable[int] = (),
        attempts: int = 6,
    ) -> bytes:
        """METHOD PATH, retrying throttling, 5xx and connection errors; the body of
        the answer. Raises BenchError unless the status is 2xx or in OK."""
        delay = 0.1
        for attempt in range(attempts):
            try:
                status, content = await self._writes.request(method, path, body, params)
            except TRANSPORT_ERRORS as exc:
                if attempt == attempts - 1:
                    raise BenchError(f"{method} {path}: {exc!r}") from exc
            else:
                if 200 <= status < 300 or status in ok:
                    return content
                if status not in RETRY_STATUSES or attempt == attempts - 1:
                    text = content[:300].decode(errors="replace")
                    raise BenchError(f"{method} {path}: {status} {text}")
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    async def create(self, path: str, manifest: Manifest, *, exist_ok: bool = False) -> None:
        await self.request("POST", path, encode(manifest), ok=(409,) if exist_ok else ())

    async def create_all(
        self, items: Sequence[Item], created: dict[str, float] | None = None
    ) -> None:
        """POST every item, `concurrency` at a time, in order of starting; with
        CREATED, note when each create was answered (time.monotonic(), by key).
        A 409 (a retried create that had gone through) is fine."""
        queue = iter(items)

        async def worker() -> None:
            for item in queue:
                await self.request("POST", item.path, item.body, ok=(409,))
                if created is not None:
                    created[item.key] = time.monotonic()

        await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(items)))))

    async def delete_pod(self, namespace: str, name: str) -> None:
        """Delete at once (gracePeriodSeconds=0): no kubelet would ever confirm."""
        body = encode({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
        await self.request("DELETE", f"{pods_path(namespace)}/{name}", body, ok=(404,))

    async def list_pods(self, label_selector: str) -> tuple[list[PodState], str]:
        """Pods of all namespaces matching the selector, and the list's resourceVersion."""
        content = await self.request(
            "GET", "/api/v1/pods", params={"labelSelector": label_selector}
        )
        data = _pod_list.decode(content)
        pods = [
            PodState(p.metadata.namespace, p.metadata.name, p.metadata.labels, p.spec.node_name)
            for p in data.items
        ]
        return pods, data.metadata.resourceVersion

    async def list_names(self, path: str, label_selector: str) -> list[str]:
        content = await self.request("GET", path, params={"labelSelector": label_selector})
        return [item.metadata.name for item in _pod_list.decode(content).items]

    @contextlib.asynccontextmanager
    async def watch_bindings(self, label_selector: str, expected: int) -> AsyncIterator[Bindings]:
        """Watch the pods matching the selector from now on (from the resourceVersion
        of a list); yields once the list is in, so no binding can be missed."""
        pods, version = await self.list_pods(label_selector)
        bindings = Bindings(self.cp, label_selector, expected)
        for pod in pods:
            bindings.seen(pod.key, pod.node_name)
        bindings.start(version)
        try:
            yield bindings
        finally:
            bindings.stop()


class Bindings:
    """When each watched pod was first seen bound (time.monotonic(), by key).

    The watch runs in a thread of its own: the event loop that creates pods as
    fast as it can would not read it often enough, and kube-apiserver closes a
    watcher that does not keep up ("Forcing pods watcher close due to
    unresponsiveness"). A closed or timed-out watch resumes from the last
    resourceVersion seen (``restarts`` counts them); after 410 Gone, from a new list.
    """

    def __init__(self, cp: ControlPlane, label_selector: str, expected: int) -> None:
        self.cp = cp
        self.selector = label_selector
        self.expected = expected
        self.bound: dict[str, float] = {}
        self.deleted: set[str] = set()
        self.done = threading.Event()
        self.error = ""
        self.restarts = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if expected <= 0:
            self.done.set()

    def seen(self, key: str, node_name: str) -> None:
        if node_name and key not in self.bound:
            self.bound[key] = time.monotonic()
            if len(self.bound) >= self.expected:
                self.done.set()

    def start(self, version: str) -> None:
        self._thread = threading.Thread(
            target=self._watch, args=(version,), name="bench-watch", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end; it does within a read timeout (it is a daemon)."""
        self._stop.set()

    def _watch(self, version: str) -> None:
        timeout = httpx.Timeout(10.0, read=5.0)
        with httpx.Client(
            base_url=self.cp.url, verify=self.cp.ssl_context(), headers=HEADERS, timeout=timeout
        ) as client:
            while not self._stop.is_set():
                params = {
                    "watch": "true",
                    "labelSelector": self.selector,
                    "resourceVersion": version,
                    "allowWatchBookmarks": "true",
                    "timeoutSeconds": "300",
                }
                try:
                    with client.stream("GET", "/api/v1/pods", params=params) as response:
                        if response.status_code != 200:
                            response.read()
                            self.error = f"watch: {response.status_code} {response.text[:200]}"
                            break
                        for line in response.iter_lines():
                            if self._stop.is_set():
                                return
                            if line:
                                version = self._event(line, version)
                                if not version:
                                    version = self._relist(client)
                                    break
                except httpx.TransportError:  # read timeout, closed connection
                    time.sleep(0.05)
                self.restarts += 1

    def _event(self, line: str, version: str) -> str:
        """Note one watch event; the resourceVersion to resume from ("" after 410 Gone)."""
        event = _watch_event.decode(line)
        meta = event.object.metadata
        if event.type == "ERROR":
            if '"code":410' in line:
                return ""
            self.error = line[:300]
            return version
        if event.type != "BOOKMARK":
            key = f"{meta.namespace}/{meta.name}"
            if event.type == "DELETED":
                self.deleted.add(key)
            else:
                self.seen(key, event.object.spec.node_name)
        return meta.resourceVersion or version

    def _relist(self, client: httpx.Client) -> str:
        response = client.get("/api/v1/pods", params={"labelSelector": self.selector})
        data = _pod_list.decode(response.content)
        for pod in data.items:
            self.seen(f"{pod.metadata.namespace}/{pod.metadata.name}", pod.spec.node_name)
        return data.metadata.resourceVersion

    async def wait(self, timeout: float) -> bool:
        """Whether every expected pod was bound within TIMEOUT seconds. Waits a
        second at a time: a cancelled run (Ctrl-C) must not leave a thread blocked for
        the whole TIMEOUT, which asyncio.run waits for when it shuts its executor."""
        deadline = time.monotonic() + timeout
        while not self.done.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.to_thread(self.done.wait, min(left, 1.0))
        return len(self.bound) >= self.expected

    @property
    def last(self) -> float:
        return max(self.bound.values(), default=math.nan)


@dataclass(frozen=True)
class Item:
    """An object to create: collection path, JSON body (encoded up front), key."""

    path: str
    body: bytes
    key: str


def bodies(manifests: Iterable[Manifest]) -> list[Item]:
    """Each Pod or Node manifest as an Item (key: namespace/name, or the node's name)."""
    out = []
    for m in manifests:
        meta = m["metadata"]
        if m["kind"] == "Pod":
            out.append(
                Item(pods_path(meta["namespace"]), encode(m), f"{meta['namespace']}/{meta['name']}")
            )
        else:
            out.append(Item("/api/v1/nodes", encode(m), meta["name"]))
    return out


def priority_class_path() -> str:
    return "/apis/scheduling.k8s.io/v1/priorityclasses"


def namespace_manifest(name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": dict(labels)},
    }
