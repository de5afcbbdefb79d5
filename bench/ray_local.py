"""A one-node Ray cluster on loopback, for `make bench-plan` and the sweep's tests:
`ray start --head` with the venv's ray, stopped again on exit."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RAY = Path(sys.executable).parent / "ray"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def local_ray(cpus: int = 2) -> Iterator[str]:
    """A head node with CPUS worker slots; yields its address (`127.0.0.1:PORT`)."""
    # Ray's sockets live under its temp dir: the path must stay short.
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    started = subprocess.run(
        [
            str(RAY),
            "start",
            "--head",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            f"--num-cpus={cpus}",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
            "--object-store-memory=200000000",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if started.returncode != 0:
        shutil.rmtree(temp, ignore_errors=True)
        raise RuntimeError(f"ray start failed: {started.stdout}{started.stderr}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(RAY), "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)
