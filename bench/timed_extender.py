"""`kubesched extender` that also writes each verb request's duration to a file.

    python -m bench.timed_extender DURATIONS_FILE [kubesched extender options]

bench.extender runs the extender this way to get its request durations unbinned.
kubesched_extender_request_duration_seconds has buckets at 1, 2, 5, 10, 20 ms...:
a p50 interpolated inside 2–5 ms may be off by a millisecond or more, the size of
the effect measured, and a p99 in the top bucket is only its upper bound. The
server already times every request (ExtenderServer's handler: time.perf_counter()
from the handler's start, the body's read included, to the answer built) and hands
that duration to SchedulerMetrics.observe_extender_request; wrapped here, the same
call also appends one line "VERB CODE SECONDS" to DURATIONS_FILE. The interval is
the histogram's, so the two agree within a bucket.

Line-buffered: one write(2) of ~25 bytes per request (microseconds, against requests
of milliseconds), and the harness can read the file while the process runs. Nothing
else changes: the command line after DURATIONS_FILE is `kubesched extender`'s.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from kubesched.cli.main import main as kubesched_main
from kubesched.server.metrics import SchedulerMetrics


def main(argv: Sequence[str]) -> None:
    if not argv:
        sys.exit("usage: python -m bench.timed_extender DURATIONS_FILE [extender options]")
    path, *args = argv
    observe = SchedulerMetrics.observe_extender_request
    with Path(path).open("a", buffering=1) as out:

        def timed(self: SchedulerMetrics, verb: str, code: int, seconds: float, error: str) -> None:
            observe(self, verb, code, seconds, error)
            out.write(f"{verb} {code} {seconds:.7f}\n")

        # The only place the server exposes a request's duration; the class, not an
        # instance: the Runner builds its SchedulerMetrics where nothing can reach it.
        SchedulerMetrics.observe_extender_request = timed  # type: ignore[method-assign]
        # click exits (SystemExit) when the extender stops: the file is closed on the way out.
        kubesched_main(["extender", *args], prog_name="kubesched")


if __name__ == "__main__":
    main(sys.argv[1:])
