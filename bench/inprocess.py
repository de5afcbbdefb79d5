"""In-process scheduling speed: decisions per second with no API in the way.

    python bench/inprocess.py --nodes 5000 --pods 10000

Prints decisions per second and peak memory. (The side-by-side comparison with
kube-scheduler is the issue "Speed"; this is the in-process half.)
"""

from __future__ import annotations

import argparse
import resource
import time

from kubesched.framework.profile import ProfileConfig
from kubesched.simulator import simulate
from kubesched.testing import make_node, make_pod

ZONES = ("a", "b", "c")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    nodes = [
        make_node(
            f"node-{i}",
            cpu="32",
            memory="128Gi",
            labels={"topology.kubernetes.io/zone": ZONES[i % 3], "pool": f"p{i % 4}"},
            images=[(["registry.example.com/app:1"], 300_000_000)] if i % 2 else [],
        )
        for i in range(args.nodes)
    ]
    pods = [
        make_pod(
            f"pod-{i}",
            cpu=f"{100 + (i % 8) * 100}m",
            memory=f"{256 * (1 + i % 4)}Mi",
            image="registry.example.com/app:1",
        )
        for i in range(args.pods)
    ]
    started = time.perf_counter()
    result = simulate(nodes, pods, [ProfileConfig.default()], seed=args.seed)
    elapsed = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"nodes={args.nodes} pods={args.pods} scheduled={result.scheduled} "
        f"seconds={elapsed:.2f} decisions_per_second={args.pods / elapsed:.0f} "
        f"peak_rss_mb={peak_mb:.0f}"
    )


if __name__ == "__main__":
    main()
