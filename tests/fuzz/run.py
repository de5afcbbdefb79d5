"""Fuzz loader -> simulate -> report with mutated real manifests (`make fuzz N=10000`).

Each case runs in a worker subprocess (tests.fuzz.worker) under a 2 GiB
address-space limit; a worker that dies is a crash (a segfault, an abort), one
that does not answer within --timeout seconds is a hang (it is killed), and both
are replaced by a new worker. Printed: the cases run, and how many gave a
traceback, a crash, a hang or a MemoryError (over 2 GiB); the exit code is 1 if
any did. Each such case is saved under --save for a closer look.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from tests.fuzz.cases import ROOT, cases

KINDS = ("traceback", "crash", "hang", "memory")


@dataclass
class Tally:
    cases: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    examples: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in KINDS})
    seconds: float = 0.0

    def summary(self) -> str:
        c = self.counts
        return (
            f"{self.cases} cases in {self.seconds:.0f}s: {c['traceback']} tracebacks, "
            f"{c['crash']} crashes, {c['hang']} hangs, {c['memory']} over 2 GiB"
        )


class Worker:
    """One worker subprocess, started again after a crash or a hang."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]
            ),
            "OPENBLAS_NUM_THREADS": "1",  # its threads' stacks count against RLIMIT_AS
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env=env,
        )
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the fuzz worker did not start (exit code {process.wait()})")
        self.process = process
        return process

    def run(self, name: str, data: bytes, output: str, timeout: float) -> str:
        process = self.process or self.start()
        assert process.stdin is not None and process.stdout is not None
        case = {"name": name, "data": base64.b64encode(data).decode(), "output": output}
        try:
            process.stdin.write(json.dumps(case) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([process.stdout], [], [], timeout)
        if not ready:
            self.stop()
            return "hang"
        line = process.stdout.readline()
        if not line:
            code = process.wait()
            self.process = None
            return f"crash exit code {code}"
        return line.strip()

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


def fuzz(n: int, timeout: float, seed: int, save: Path | None = None) -> Tally:
    tally = Tally()
    worker = Worker()
    started = time.monotonic()

    @hypothesis_seed(seed)
    @settings(
        max_examples=n,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(cases(), st.sampled_from(["text", "json", "yaml"]))
    def one(case: tuple[str, bytes], output: str) -> None:
        name, data = case
        answer = worker.run(name, data, output, timeout)
        tally.cases += 1
        if tally.cases % 250 == 0:
            tally.seconds = time.monotonic() - started
            print(f"... {tally.summary()}", file=sys.stderr, flush=True)
        if answer == "ok":
            return
        kind = answer.split()[0]
        tally.counts[kind] += 1
        if len(tally.examples[kind]) < 5:
            tally.examples[kind].append(answer[:300])
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            (save / f"{kind}-{tally.counts[kind]:04d}-{output}-{name}").write_bytes(data)

    try:
        one()
    except KeyboardInterrupt:  # Ctrl-C: the figures of the cases run so far
        print("interrupted", file=sys.stderr)
    finally:
        worker.stop()
        tally.seconds = time.monotonic() - started
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1000, help="cases to run")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", type=Path, default=Path("fuzz-results"))
    args = parser.parse_args()
    tally = fuzz(args.n, args.timeout, args.seed, args.save)
    print(tally.summary())
    for kind in KINDS:
        for example in tally.examples[kind]:
            print(f"  {example}")
    sys.exit(1 if any(tally.counts.values()) else 0)


if __name__ == "__main__":
    main()
