"""The SPEC of `kubesched sweep`: a base cluster and the variations to run on it.

    apiVersion: kubesched.io/v1alpha1
    kind: Sweep
    cluster: [cluster.yaml]       # manifests (files or folders), relative to the SPEC
    nodePools: pools.yaml         # optional: a NodePools file (`kubesched plan`'s)
    seed: 1                       # the tie-breaks of every run (default 1)
    grid:                         # every combination of the axes given
      nodes: [{}, {cpu: 4}, {cpu: 4, gpu: 1}]   # new nodes per pool
      config: [default, most-allocated.yaml]    # KubeSchedulerConfiguration files
      scale: [1, 1.5, 2]                        # the pending pods, times this
      featureGates: ["", "OpportunisticBatching=false"]
    variations:                   # and/or single points, run after the grid's
      - {nodes: {gpu: 2}, scale: 3}

An axis left out of a point is the base: no new nodes, the default profile,
scale 1, the default feature gates. Each point is one variation, identified by
its values (`nodes=cpu:4,gpu:1 config=default scale=1.5 gates=`): a results
file records variations by that id, so a sweep can be resumed.

The SPEC is refused whole, before anything runs, with one line naming the file
and the field (`sweep.yaml: grid.scale[2]: must be > 0`). What needs more than
the file to check (the config files, the feature gates, the pool file) is
checked by the command when it resolves the variations, before any runs.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api.input_files import (
    InputFileError,
    StrictRecord,
    decode_document,
    file_refusal,
    read_yaml_file,
)

API_VERSION = "kubesched.io/v1alpha1"
KIND = "Sweep"
DEFAULT_CONFIG = "default"
# A sweep this large is a mistake in the SPEC, not a plan: refused before it runs.
MAX_VARIATIONS = 100_000


class SpecError(InputFileError):
    """A SPEC that is refused: str() is the one line to print."""


class _Point(StrictRecord):
    nodes: dict[str, int] | None = None
    config: str | None = None
    scale: float | None = None
    feature_gates: str | None = None


class _Grid(StrictRecord):
    nodes: list[dict[str, int]] | None = None
    config: list[str] | None = None
    scale: list[float] | None = None
    feature_gates: list[str] | None = None


class _SpecDoc(StrictRecord):
    api_version: str
    kind: str
    cluster: list[str]
    node_pools: str | None = None
    seed: int = 1
    grid: _Grid | None = None
    variations: list[_Point] | None = None


@dataclass(frozen=True, slots=True)
class Variation:
    """One point of the sweep: its place in the SPEC's order and its values."""

    index: int
    nodes: dict[str, int]  # new nodes per pool name (none: none added)
    config: str  # a KubeSchedulerConfiguration path as the SPEC gives it, or "default"
    scale: float
    feature_gates: str
    where: str  # the SPEC field it came from, for error messages

    @property
    def id(self) -> str:
        """Its values, stable across runs and machines: the results file's key."""
        nodes = ",".join(f"{pool}:{n}" for pool, n in sorted(self.nodes.items()) if n)
        return f"nodes={nodes} config={self.config} scale={self.scale:g} gates={self.feature_gates}"

    def params(self) -> dict[str, str]:
        """Its values for a table's columns."""
        nodes = ",".join(f"{pool}:{n}" for pool, n in sorted(self.nodes.items()) if n)
        return {
            "nodes": nodes or "-",
            "config": self.config,
            "scale": f"{self.scale:g}",
            "featureGates": self.feature_gates or "-",
        }


@dataclass(slots=True)
class SweepSpec:
    """The SPEC, decoded: paths resolved against its folder."""

    path: Path
    cluster: list[Path]
    node_pools: Path | None
    seed: int
    variations: list[Variation]
    digest: str  # of the SPEC's text: a results file is resumed only by its own SPEC
    configs: dict[str, Path] = field(default_factory=dict)  # config name -> file

    def config_path(self, name: str) -> Path | None:
        """The file a variation's config names; None for the default profile."""
        return None if name == DEFAULT_CONFIG else self.configs[name]


def load_spec(path: Path) -> SweepSpec:
    """The SPEC at PATH; SpecError naming the file and the field."""
    text, raw = read_yaml_file(path, SpecError)
    return parse_spec(raw, path, hashlib.sha256(text.encode()).hexdigest())


def parse_spec(raw: object, path: Path, digest: str = "") -> SweepSpec:
    """The SPEC of a decoded document read from PATH; SpecError `path: field: message`."""
    source = str(path)

    def fail(where: str, message: str) -> InputFileError:
        return file_refusal(SpecError, source, where, message)

    doc = decode_document(raw, _SpecDoc, source, API_VERSION, KIND, SpecError)
    if not doc.cluster:
        raise fail("cluster", "at least one manifest file or folder is needed")
    folder = path.parent
    points = _points(doc, fail)
    if not points:
        raise fail("grid", "no variation: give grid axes or variations")
    if len(points) > MAX_VARIATIONS:
        raise fail("grid", f"{len(points)} variations; at most {MAX_VARIATIONS}")
    variations: list[Variation] = []
    configs: dict[str, Path] = {}
    seen: dict[str, str] = {}
    for index, (where, point) in enumerate(points):
        nodes = dict(point.nodes or {})
        for pool, count in nodes.items():
            if count < 0:
                raise fail(f"{where}.nodes.{pool}", "must be >= 0")
        if nodes and doc.node_pools is None:
            raise fail(f"{where}.nodes", "new nodes need nodePools (a NodePools file)")
        scale = 1.0 if point.scale is None else point.scale
        if not (math.isfinite(scale) and scale > 0):
            raise fail(f"{where}.scale", "must be > 0")
        config = point.config or DEFAULT_CONFIG
        if config != DEFAULT_CONFIG:
            configs.setdefault(config, folder / config)
        variation = Variation(index, nodes, config, scale, point.feature_gates or "", where)
        if variation.id in seen:
            raise fail(where, f"the same variation as {seen[variation.id]}")
        seen[variation.id] = where
        variations.append(variation)
    return SweepSpec(
        path=path,
        cluster=[folder / c for c in doc.cluster],
        node_pools=None if doc.node_pools is None else folder / doc.node_pools,
        seed=doc.seed,
        variations=variations,
        digest=digest,
        configs=configs,
    )


def _points(doc: _SpecDoc, fail: Any) -> list[tuple[str, _Point]]:
    """The grid's product (its axes in the order nodes, config, scale, featureGates,
    the last varying fastest), then the listed variations; each with its field."""
    points: list[tuple[str, _Point]] = []
    grid = doc.grid
    if grid is not None:
        axes: list[tuple[str, list[Any]]] = [
            (name, values)
            for name, values in (
                ("nodes", grid.nodes),
                ("config", grid.config),
                ("scale", grid.scale),
                ("featureGates", grid.feature_gates),
            )
            if values is not None
        ]
        for name, values in axes:
            if not values:
                raise fail(f"grid.{name}", "an axis needs at least one value")
        if axes:
            for combo in itertools.product(*(enumerate(values) for _, values in axes)):
                given = {name: value for (name, _), (_, value) in zip(axes, combo, strict=True)}
                where = (
                    "grid["
                    + ",".join(
                        f"{name}[{i}]" for (name, _), (i, _) in zip(axes, combo, strict=True)
                    )
                    + "]"
                )
                point = _Point(
                    nodes=given.get("nodes"),
                    config=given.get("config"),
                    scale=given.get("scale"),
                    feature_gates=given.get("featureGates"),
                )
                points.append((where, point))
                if len(points) > MAX_VARIATIONS:
                    return points
    for i, point in enumerate(doc.variations or []):
        points.append((f"variations[{i}]", point))
    return points
