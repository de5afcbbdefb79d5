"""Credentials as kubeconfig gives them: tokens, exec plugins (no network needed)."""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from kubesched.kube.config import KubeConfigError, load_connection


def kubeconfig(tmp_path: Path, user: dict[str, object]) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": "https://127.0.0.1:6443/",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


def test_static_token(tmp_path: Path) -> None:
    conn = asyncio.run(load_connection(str(kubeconfig(tmp_path, {"token": "abc123"}))))
    assert conn.host == "https://127.0.0.1:6443"
    assert conn.authorization() == "Bearer abc123"
    assert conn.ssl_context is False  # insecure-skip-tls-verify


def test_exec_credential_plugin(tmp_path: Path) -> None:
    script = tmp_path / "cred.py"
    script.write_text(
        "import json\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', "
        "'kind': 'ExecCredential', 'status': {'token': 'from-exec'}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }
    conn = asyncio.run(load_connection(str(kubeconfig(tmp_path, user))))
    assert conn.authorization() == "Bearer from-exec"


def test_missing_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="cannot load"):
        asyncio.run(load_connection(str(tmp_path / "nope"), in_cluster=False))


def inline_credentials_kubeconfig(tmp_path: Path, key_data: str | None = None) -> Path:
    from kubesched.server.tls import self_signed_serving_certificate

    cert, key = self_signed_serving_certificate("admin")
    path = tmp_path / "kubeconfig"
    b64 = lambda data: base64.standard_b64encode(data).decode()  # noqa: E731
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": "https://127.0.0.1:6443",
                            "certificate-authority-data": b64(cert),
                        },
                    }
                ],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "client-certificate-data": b64(cert),
                            "client-key-data": key_data or b64(key),
                        },
                    }
                ],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


def test_inline_client_certificate_never_touches_the_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kube-scheduler keeps a kubeconfig's certificates and key in memory; the
    loader's temporary files would outlive a kill -9 in $TMPDIR."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    kubeconfig_path = inline_credentials_kubeconfig(tmp_path)

    conn = asyncio.run(load_connection(str(kubeconfig_path)))
    assert isinstance(conn.ssl_context, ssl.SSLContext)
    # The CA data made it in.
    (ca,) = conn.ssl_context.get_ca_certs()
    assert str(ca["subject"]).startswith("((('commonName', 'admin-ca@")
    assert list(tmpdir.iterdir()) == []
    # Reloading (a 401 re-reads the kubeconfig) works the same.
    asyncio.run(conn.reload())
    assert list(tmpdir.iterdir()) == []
    # No memory file is left open either.
    assert not [fd for fd in os.listdir("/proc/self/fd") if "memfd:" in _link(fd)]


def _link(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def test_bad_inline_key_names_the_field(tmp_path: Path) -> None:
    path = inline_credentials_kubeconfig(tmp_path, key_data="not base64!")
    with pytest.raises(KubeConfigError, match=r"user 'u': client-key-data is not valid base64"):
        asyncio.run(load_connection(str(path)))


def test_an_unreadable_kubeconfig_is_one_line(tmp_path: Path) -> None:
    """Issue #31: start-up failures are one clear line."""
    path = tmp_path / "kubeconfig"
    path.write_text("garbage: [\n")
    with pytest.raises(KubeConfigError) as caught:
        asyncio.run(load_connection(str(path), in_cluster=False))
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"cannot load {path}: while parsing a flow node")


def test_the_loaders_come_without_the_generated_client(tmp_path: Path) -> None:
    """kubernetes_asyncio's loaders are imported without its generated API client
    (about 1.5 s of `kubesched run`'s start-up and its API worker's); a later import
    of the package (an out-of-tree plugin's) still gets the whole of it."""
    path = kubeconfig(tmp_path, {"token": "abc123"})
    code = (
        "import asyncio, sys\n"
        "import kubesched.kube.config as ours\n"
        "assert 'kubernetes_asyncio.client.api' not in sys.modules\n"
        "assert 'kubernetes_asyncio.client.models' not in sys.modules\n"
        "import kubernetes_asyncio\n"
        "from kubernetes_asyncio import client, config\n"
        "from kubernetes_asyncio.config import kube_config\n"
        "assert client.Configuration is ours.Configuration\n"
        "assert kube_config is ours.kube_config and config is ours.kconfig\n"
        "assert kubernetes_asyncio.client.CoreV1Api and kubernetes_asyncio.watch\n"
        "async def new_client():\n"
        f"    api = await kube_config.new_client_from_config({str(path)!r})\n"
        "    assert isinstance(api, client.ApiClient)\n"
        "    await api.close()\n"
        "asyncio.run(new_client())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
