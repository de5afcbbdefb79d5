"""What the loader reports: a LoadProblem for each object it could not load (and
skipped), and the _Origin of every document (file, document, item)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LoadProblem:
    """One object that could not be loaded, and why. The object was skipped."""

    source: str
    document: int  # 1-based index of the document in the file; 0 for the file itself
    kind: str
    name: str  # "namespace/name" for namespaced objects, "name" otherwise; "" if unknown
    field: str | None  # e.g. "spec.containers[0].resources.requests.cpu"
    message: str
    item: int | None = None  # 1-based index in the items of a `kind: List`

    @property
    def location(self) -> str:
        """Where the object is: "file: document 3, item 5"."""
        if self.document <= 0:
            return self.source
        where = f"{self.source}: document {self.document}"
        return where if self.item is None else f"{where}, item {self.item}"

    def __str__(self) -> str:
        text = self.location
        if self.kind or self.name:
            text += f" ({' '.join(p for p in (self.kind, self.name) if p)})"
        if self.field:
            text += f": field {self.field}"
        return f"{text}: {self.message}".replace("\r", " ").replace("\n", " ")


@dataclass(frozen=True, slots=True)
class _Origin:
    source: str
    document: int
    item: int | None = None

    def __str__(self) -> str:
        where = f"{self.source} document {self.document}"
        return where if self.item is None else f"{where}, item {self.item}"


def duplicate_problem(kind: str, key: str, first: object) -> tuple[str, str]:
    """(field, message) of an object whose name was taken by one loaded before, from
    `first` (where that one came from)."""
    return "metadata.name", f"duplicate: a {kind} named {key} was already loaded from {first}"
