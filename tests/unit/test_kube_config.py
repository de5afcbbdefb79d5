"""Credentials as kubeconfig gives them: tokens, exec plugins (no network needed)."""

from __future__ import annotations

import asyncio
import sys
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
