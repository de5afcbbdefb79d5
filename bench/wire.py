"""What each wire format costs kubesched to decode: a pod and a node, in JSON and
in protobuf, as the informers decode them (docs/develop/benchmarks-log.md, "The wire format").

    python -m bench.wire [--repeat 7] [--number 2000]

The objects are tests/unit/protobuf_fixtures: a Deployment's pod (two
containers, affinity, tolerations, managedFields) and a node with 30 images,
encoded by Kubernetes' own codecs. Printed: the median over REPEAT rounds of
NUMBER decodes, in microseconds per object, process CPU time.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.kube.protobuf.wire import KindCodec

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "unit" / "protobuf_fixtures"


def per_call_us(call: Callable[[], object], number: int, repeat: int) -> float:
    rounds = []
    for _ in range(repeat):
        started = time.process_time()
        for _ in range(number):
            call()
        rounds.append((time.process_time() - started) / number * 1e6)
    return statistics.median(rounds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.wire", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args(argv)
    print(f"{'object':<6} {'JSON µs':>8} {'protobuf µs':>12} {'ratio':>6}  bytes (JSON / protobuf)")
    for kind, name in ((Pod, "pod"), (Node, "node")):
        as_json = (FIXTURES / f"{name}.go.json").read_bytes()
        as_protobuf = (FIXTURES / f"{name}.pb").read_bytes()
        decoder = msgspec.json.Decoder(kind)
        codec = KindCodec(kind)
        assert decoder.decode(as_json) == codec.decode(as_protobuf)
        json_us = per_call_us(functools.partial(decoder.decode, as_json), args.number, args.repeat)
        pb_us = per_call_us(functools.partial(codec.decode, as_protobuf), args.number, args.repeat)
        print(
            f"{name:<6} {json_us:>8.1f} {pb_us:>12.1f} {pb_us / json_us:>6.2f}  "
            f"{len(as_json)} / {len(as_protobuf)}"
        )


if __name__ == "__main__":
    main()
