"""The client's adaptive in-flight limit against a kube-apiserver that refuses
requests: a second kube-apiserver of the session's cluster (the same etcd, the same
command line from DIR/kube-apiserver.args) with --max-mutating-requests-inflight=1,
whose max-in-flight filter answers 429 with Retry-After: 1 (priority and fairness
are off in hack/cluster-up.sh)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
import yaml

from kubesched.api.objects import Pod
from kubesched.kube.client import KubeClient
from kubesched.kube.cluster import KubeCluster
from kubesched.kube.config import load_connection
from kubesched.kube.inflight import AdaptiveLimiter, AimdController
from kubesched.kube.writer import EventWriter, StatusWriter
from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import DEPLOY_DIR, ControlPlane, free_port
from tests.integration.kube_scheduler_proc import stop_process

pytestmark = pytest.mark.integration

PODS = 24


@pytest.fixture(scope="module")
def throttled_apiserver(control_plane: ControlPlane) -> Iterator[str]:
    """The URL of a kube-apiserver that lets one mutating request in at a time."""
    args = (control_plane.dir / "kube-apiserver.args").read_text().splitlines()
    port = free_port()
    args = [a for a in args if not a.startswith("--secure-port=")]
    args += [f"--secure-port={port}", "--max-mutating-requests-inflight=1"]
    log = (control_plane.dir / "throttled-apiserver.log").open("wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    url = f"https://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        tls = ssl.create_default_context(cafile=str(control_plane.ca_cert))
        tls.load_cert_chain(str(control_plane.admin_cert), str(control_plane.admin_key))
        with httpx.Client(verify=tls) as http:
            while True:
                assert proc.poll() is None, "the throttled kube-apiserver exited"
                try:
                    if http.get(f"{url}/readyz").text == "ok":
                        break
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, "the throttled kube-apiserver is not ready"
                time.sleep(0.5)
        yield url
    finally:
        stop_process(proc)
        log.close()


def test_binds_refused_with_429_are_retried_and_shrink_the_limit(
    control_plane: ControlPlane,
    throttled_apiserver: str,
    api: AdminApi,
    namespace: str,
    tmp_path: Path,
) -> None:
    # kubesched's ServiceAccount: the max-in-flight filter lets system:masters (the
    # admin certificate of every kubeconfig hack/ writes) through without counting.
    api.apply_file(DEPLOY_DIR / "rbac.yaml")
    token = api.create_token("kube-system", "kubesched", expiration_seconds=3600)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "throttled",
                        "cluster": {
                            "server": throttled_apiserver,
                            "certificate-authority": str(control_plane.ca_cert),
                        },
                    }
                ],
                "users": [{"name": "kubesched", "user": {"token": token}}],
                "contexts": [
                    {"name": "c", "context": {"cluster": "throttled", "user": "kubesched"}}
                ],
                "current-context": "c",
            }
        )
    )
    api.create_node("inflight-node", cpu="100", pods=200)
    pods = [
        msgspec.convert(api.create_pod(namespace, f"p{i:02d}", cpu="10m"), Pod) for i in range(PODS)
    ]

    async def bind_all() -> tuple[list[BaseException | None], AimdController, int]:
        connection = await load_connection(str(kubeconfig), None)
        controller = AimdController(initial=64, floor=1)
        client = KubeClient(connection, limiter=AdaptiveLimiter(controller))
        cluster = KubeCluster(client, EventWriter(client), StatusWriter(client))
        try:
            # Open the connections first (reads are not limited here), so that the
            # binds reach the apiserver together rather than one TLS handshake apart.
            await asyncio.gather(
                *(client.request("GET", f"/api/v1/namespaces/{namespace}/pods") for _ in pods)
            )
            results = await asyncio.gather(
                *(cluster.bind(pod, "inflight-node") for pod in pods), return_exceptions=True
            )
        finally:
            await client.aclose()
        return (
            [r if isinstance(r, BaseException) else None for r in results],
            controller,
            (client.retries),
        )

    errors, controller, retries = asyncio.run(bind_all())
    assert errors == [None] * PODS
    # All were sent at once: most met a 429, waited its Retry-After and came back.
    assert controller.overloads > 0 and retries > 0
    assert controller.limit < 64
    for pod in pods:
        bound = api.get(f"/api/v1/namespaces/{namespace}/pods/{pod.metadata.name}")
        assert bound["spec"]["nodeName"] == "inflight-node"
