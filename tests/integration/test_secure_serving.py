"""`kubesched run` serves as kube-scheduler does: HTTPS on its secure port, bearer
tokens checked by TokenReview and /metrics by SubjectAccessReview against the
real API server; /readyz says whether the informers are synced; the admin
kubeconfig's client key never lands in $TMPDIR, even after a kill -9."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tests.integration.admin_api import AdminApi
from tests.integration.control_plane import ControlPlane
from tests.integration.kubesched_proc import metrics_reader_token, start_kubesched

pytestmark = pytest.mark.integration


def service_account_token(api: AdminApi, namespace: str, name: str) -> str:
    api.apply(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}},
        namespace=namespace,
    )
    return api.create_token(namespace, name, expiration_seconds=3600)


def test_metrics_need_a_token_allowed_to_get_them(
    control_plane: ControlPlane, api: AdminApi, namespace: str, tmp_path: Path
) -> None:
    reader = metrics_reader_token(control_plane)
    nobody = service_account_token(api, namespace, "nobody")
    proc = start_kubesched(control_plane, tmp_path, "--no-leader-elect")
    try:
        proc.wait_ready()
        # Anonymous: system:anonymous may not get /metrics (403, as kube-scheduler).
        anonymous = proc.get("/metrics")
        assert anonymous.status_code == 403, anonymous.text
        assert anonymous.json()["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/metrics"'
        )
        # A token the API server does not know: 401.
        forged = proc.get("/metrics", "not-a-token")
        assert forged.status_code == 401, forged.text
        assert forged.json()["reason"] == "Unauthorized"
        # A real ServiceAccount without the permission: 403 naming it.
        denied = proc.get("/metrics", nobody)
        assert denied.status_code == 403, denied.text
        user = f"system:serviceaccount:{namespace}:nobody"
        assert denied.json()["message"] == f'forbidden: User "{user}" cannot get path "/metrics"'
        # One bound to a role with `get` on the non-resource URL /metrics.
        allowed = proc.get("/metrics", reader)
        assert allowed.status_code == 200, allowed.text
        assert "# TYPE scheduler_pending_pods gauge" in allowed.text
        # The health paths answer anyone, with kube-scheduler's checks.
        assert proc.get("/healthz?verbose").text == "[+]ping ok\nhealthz check passed\n"
        assert proc.get("/readyz?verbose").text == (
            "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n"
        )
        # No plain HTTP on the port.
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{proc.port}/healthz", timeout=5)
    finally:
        assert proc.stop() == 0


def test_readyz_fails_while_the_informers_cannot_sync(
    control_plane: ControlPlane, api: AdminApi, namespace: str, tmp_path: Path
) -> None:
    """A ServiceAccount that may list nothing: the informers never sync, so
    /readyz keeps failing "sched-handler-sync" while /healthz is fine."""
    token = service_account_token(api, namespace, "no-rights")
    kubeconfig = tmp_path / "no-rights-kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": control_plane.url,
                            "certificate-authority": str(control_plane.ca_cert),
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    cp = dataclasses.replace(control_plane, kubeconfig=kubeconfig)
    proc = start_kubesched(cp, tmp_path, "--no-leader-elect")
    try:
        deadline = time.monotonic() + 30
        answer: httpx.Response | None = None
        while time.monotonic() < deadline:
            assert proc.proc.poll() is None, proc.log()[-3000:]
            try:
                answer = proc.get("/readyz?verbose")
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert answer is not None, proc.log()[-3000:]
        time.sleep(3)  # a few failed lists later: still not ready
        answer = proc.get("/readyz?verbose")
        assert answer.status_code == 500
        assert answer.text == (
            "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"
        )
        assert proc.get("/healthz").text == "ok"
    finally:
        proc.stop()


def test_kill_9_leaves_no_key_material_behind(control_plane: ControlPlane, tmp_path: Path) -> None:
    kubeconfig = yaml.safe_load(control_plane.kubeconfig.read_text())
    (user,) = kubeconfig["users"]
    assert user["user"].get("client-key-data"), "the admin kubeconfig should carry its key inline"
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    proc = start_kubesched(control_plane, tmp_path, "--no-leader-elect", TMPDIR=str(tmpdir))
    try:
        proc.wait_ready()
        assert proc.get("/healthz").text == "ok"
    finally:
        proc.kill()  # SIGKILL: no atexit, no finally
    left = sorted(str(p.relative_to(tmpdir)) for p in tmpdir.rglob("*"))
    assert left == [], left
    # Nor anywhere else in the process's reach of the test's directory.
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".log":
            assert b"PRIVATE KEY" not in path.read_bytes(), path


def test_always_allow_paths_flag(control_plane: ControlPlane, tmp_path: Path) -> None:
    """--authorization-always-allow-paths takes kube-scheduler's syntax (a trailing
    '*' for a prefix); a path left out of it goes to the SubjectAccessReview."""
    proc = start_kubesched(
        control_plane,
        tmp_path,
        "--no-leader-elect",
        "--authorization-always-allow-paths=/metric*",
    )
    try:
        proc.wait_ready(path="/metrics")
        assert proc.get("/metrics").status_code == 200
        # Out of the list, a path is up to the SubjectAccessReview: /healthz is
        # granted to system:unauthenticated by system:public-info-viewer, a single
        # check's path is not.
        assert proc.get("/healthz").status_code == 200
        refused = proc.get("/livez/ping")
        assert refused.status_code == 403
        assert json.loads(refused.text)["message"] == (
            'forbidden: User "system:anonymous" cannot get path "/livez/ping"'
        )
    finally:
        assert proc.stop() == 0
