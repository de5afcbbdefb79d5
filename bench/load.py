"""What reading a cluster dump costs, by `--validate` mode.

A `kubectl get nodes,pods -A -o json`-like List of NODES nodes and PODS pods (every
pod with a few labels, requests, tolerations and an owner) is written once to a
temporary file, then loaded by `load_paths` as `simulate -f` loads it, REPEAT times
per mode, in turn; the medians are printed (seconds of wall time, GC paused as the
loader runs).

    .venv/bin/python -m bench.load --nodes 5000 --pods 30000 --repeat 3

With a kubesched older than `--validate` on PYTHONPATH (e.g. a `git archive` of an
earlier commit), the one mode there is runs, as "none".
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec

from kubesched.cluster.manifests import load_paths

MODES = ("ignore", "warn", "strict")


def dump(nodes: int, pods: int) -> dict[str, object]:
    items: list[dict[str, object]] = []
    for i in range(nodes):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": f"node-{i}",
                    "labels": {"kubernetes.io/hostname": f"node-{i}", "zone": f"z{i % 3}"},
                },
                "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
            }
        )
    for i in range(pods):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"web-{i}",
                    "namespace": f"team-{i % 20}",
                    "labels": {"app": f"web-{i % 200}", "tier": "frontend"},
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": f"web-{i % 200}-abc",
                            "uid": f"uid-{i % 200}",
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "nodeName": f"node-{i % nodes}" if i % 4 else "",
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.example/web:1",
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                        }
                    ],
                    "tolerations": [
                        {
                            "key": "node.kubernetes.io/not-ready",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 300,
                        }
                    ],
                },
                "status": {"phase": "Running" if i % 4 else "Pending"},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    modes = MODES if "validate" in inspect.signature(load_paths).parameters else ("none",)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "dump.json")
        path.write_bytes(msgspec.json.encode(dump(args.nodes, args.pods)))
        size = path.stat().st_size
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(args.repeat):
            for mode in modes:
                started = time.perf_counter()
                extra: dict[str, Any] = {} if mode == "none" else {"validate": mode}
                state = load_paths([path], **extra)
                times[mode].append(time.perf_counter() - started)
                assert not state.problems, state.problems[:3]
        result = {
            "nodes": args.nodes,
            "pods": args.pods,
            "bytes": size,
            "repeat": args.repeat,
            "median_seconds": {m: round(statistics.median(t), 3) for m, t in times.items()},
        }
        for mode in modes:
            print(f"--validate={mode:<6} {statistics.median(times[mode]):6.2f} s")
        print(json.dumps(result))


if __name__ == "__main__":
    main()
