"""A sweep's results file: what makes a sweep resumable and every variation counted once.

JSON lines: a header naming the SPEC (its digest), then one line per finished
variation, appended and flushed as each finishes, by the driver alone (workers
return rows, they never write). On resume, the variations already in the file
are not run again; a line cut short by a crash mid-write is dropped (its
variation runs again), and a variation found twice counts once.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

import msgspec

from kubesched.sweep.task import VariationResult


class StoreError(ValueError):
    """A results file that cannot be used: str() is the one line to print."""


class _Header(msgspec.Struct, rename="camel"):
    kind: str
    spec: str  # the SPEC's path, for the reader
    digest: str


_HEADER_KIND = "kubesched-sweep-results"
_decode_header = msgspec.json.Decoder(_Header)
_decode_row = msgspec.json.Decoder(VariationResult)


class ResultsStore:
    """The rows of one sweep, on disk as they arrive."""

    def __init__(self, path: Path, spec: str, digest: str, *, resume: bool) -> None:
        self.path = path
        self.rows: dict[str, VariationResult] = {}
        self._append_newline = False
        exists = path.exists() and path.stat().st_size > 0
        if exists and not resume:
            raise StoreError(
                f"{path}: a results file is there already: --resume to go on with it, or remove it"
            )
        if exists:
            self._read(digest)
            self._out: IO[bytes] = path.open("ab")
        else:
            self._out = path.open("wb")
            self._write(msgspec.json.encode(_Header(_HEADER_KIND, spec, digest)))

    def _read(self, digest: str) -> None:
        lines = self.path.read_bytes().split(b"\n")
        try:
            header = _decode_header.decode(lines[0])
        except msgspec.DecodeError:
            raise StoreError(f"{self.path}: not a kubesched sweep results file") from None
        if header.kind != _HEADER_KIND:
            raise StoreError(f"{self.path}: not a kubesched sweep results file")
        if header.digest != digest:
            raise StoreError(
                f"{self.path}: written for another SPEC ({header.spec}, or it changed since): "
                "a sweep resumes only with the SPEC it started with"
            )
        for line in lines[1:]:
            if not line.strip():
                continue
            try:
                row = _decode_row.decode(line)
            except msgspec.DecodeError:
                continue  # cut short by a crash mid-write: that variation runs again
            self.rows.setdefault(row.id, row)
        if lines[-1] != b"":
            # A last line cut short: the next row starts on a line of its own.
            self._append_newline = True

    def _write(self, data: bytes) -> None:
        if self._append_newline:
            self._out.write(b"\n")
            self._append_newline = False
        self._out.write(data + b"\n")
        self._out.flush()

    def done(self) -> set[str]:
        """The ids of the variations with a row."""
        return set(self.rows)

    def add(self, row: VariationResult) -> bool:
        """Record ROW; False (and nothing written) when its variation has one already."""
        if row.id in self.rows:
            return False
        self.rows[row.id] = row
        self._write(msgspec.json.encode(row))
        return True

    def close(self) -> None:
        self._out.close()

    def ordered(self) -> list[VariationResult]:
        """The rows in the SPEC's order."""
        return sorted(self.rows.values(), key=lambda r: r.index)
