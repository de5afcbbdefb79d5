"""The fuzz worker: a subprocess that runs cases through loader -> simulate ->
report (the `simulate` command, in-process through click's CliRunner) under a
2 GiB address-space limit (RLIMIT_AS), one case per line of stdin (JSON:
name, base64 content, output format), one verdict per line of stdout:
"ok", "memory" (a MemoryError) or "traceback <one line>". A crash kills the
process and a hang stalls it: the parent (tests.fuzz.run) tells those apart."""

from __future__ import annotations

import base64
import json
import resource
import sys
import tempfile
import traceback
from pathlib import Path

ADDRESS_SPACE_LIMIT = 2 << 30


def verdict(name: str, data: bytes, output: str, folder: Path) -> str:
    from click.testing import CliRunner

    from kubesched.cli.main import main

    path = folder / name
    path.write_bytes(data)
    # A low --max-pods: mutated counts would otherwise build up to 150,000 real pods
    # per case (1.7 s each); past the limit is a problem like any other, so that path
    # is still exercised, and the default limit has its own unit tests.
    args = ["simulate", "-f", str(path), "-o", output, "--seed", "1", "--max-pods", "2000"]
    result = CliRunner().invoke(main, args)
    exc = result.exception
    if exc is None or isinstance(exc, SystemExit):
        return "ok"
    if isinstance(exc, MemoryError):
        return "memory"
    assert result.exc_info is not None
    last = traceback.format_exception(*result.exc_info)[-3:]
    return "traceback " + " | ".join(" ".join(line.split()) for line in last)


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))
    import kubesched.cli.main  # noqa: F401 - imported before the first case's clock

    print("ready", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for line in sys.stdin:
            case = json.loads(line)
            try:
                answer = verdict(
                    case["name"], base64.b64decode(case["data"]), case["output"], Path(folder)
                )
            except MemoryError:
                answer = "memory"
            print(answer, flush=True)


if __name__ == "__main__":
    main()
