"""Reading a scheduler's /metrics: histograms, counters and Prometheus' histogram_quantile."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Labels = frozenset[tuple[str, str]]

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample line of the text exposition format."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        labels = {
            k: v.replace('\\"', '"').replace("\\\\", "\\")
            for k, v in _LABEL.findall(match.group(2) or "")
        }
        yield match.group(1), labels, float(match.group(3))


@dataclass
class Histogram:
    """Cumulative bucket counts by upper bound (``le``), +Inf included."""

    buckets: dict[float, float] = field(default_factory=dict)
    count: float = 0.0
    sum: float = 0.0

    def __add__(self, other: Histogram) -> Histogram:
        out = Histogram(dict(self.buckets), self.count + other.count, self.sum + other.sum)
        for le, n in other.buckets.items():
            out.buckets[le] = out.buckets.get(le, 0.0) + n
        return out

    def __sub__(self, other: Histogram) -> Histogram:
        """The observations made between two scrapes (`other` being the earlier)."""
        return Histogram(
            {le: n - other.buckets.get(le, 0.0) for le, n in self.buckets.items()},
            self.count - other.count,
            self.sum - other.sum,
        )

    def quantile(self, q: float) -> float:
        return histogram_quantile(q, self.buckets)


def histograms(text: str, name: str) -> dict[Labels, Histogram]:
    """The series of histogram NAME, by their labels (``le`` left out)."""
    out: dict[Labels, Histogram] = {}
    for sample, labels, value in samples(text):
        if not sample.startswith(name):
            continue
        suffix = sample[len(name) :]
        if suffix not in ("_bucket", "_count", "_sum"):
            continue
        le = labels.pop("le", None)
        h = out.setdefault(frozenset(labels.items()), Histogram())
        if suffix == "_bucket" and le is not None:
            h.buckets[float(le)] = value
        elif suffix == "_count":
            h.count = value
        elif suffix == "_sum":
            h.sum = value
    return out


def counters(text: str, name: str) -> dict[Labels, float]:
    return {frozenset(labels.items()): v for s, labels, v in samples(text) if s == name}


def select(series: Mapping[Labels, Histogram], **match: str) -> Histogram:
    """The sum of the series whose labels include MATCH."""
    total = Histogram()
    for labels, h in series.items():
        if all((k, v) in labels for k, v in match.items()):
            total = total + h
    return total


def histogram_quantile(q: float, buckets: Mapping[float, float]) -> float:
    """PromQL's histogram_quantile over one series' cumulative buckets
    (promql/quantile.go bucketQuantile): linear interpolation inside the bucket
    the rank falls in, the lowest bucket starting at 0; a rank in the +Inf
    bucket gives the highest finite upper bound. NaN without observations."""
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    bounds = sorted(buckets.items())
    if len(bounds) < 2 or not math.isinf(bounds[-1][0]):
        return math.nan
    # ensureMonotonic: a count never goes down with the bound.
    counts: list[float] = []
    for _, n in bounds:
        counts.append(max(n, counts[-1]) if counts else n)
    observations = counts[-1]
    if observations == 0:
        return math.nan
    rank = q * observations
    b = next((i for i in range(len(bounds) - 1) if counts[i] >= rank), len(bounds) - 1)
    if b == len(bounds) - 1:
        return bounds[-2][0]
    if b == 0 and bounds[0][0] <= 0:
        return bounds[0][0]
    start, end, count = 0.0, bounds[b][0], counts[b]
    if b > 0:
        start = bounds[b - 1][0]
        count -= counts[b - 1]
        rank -= counts[b - 1]
    return start + (end - start) * (rank / count)
