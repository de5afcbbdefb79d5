"""VolumeBinding's column-wise search for static volumes against upstream's
node-by-node loop (volume.FindMatchingVolume, line by line), on random PVs and claims.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kubesched.api.objects import PersistentVolume, PersistentVolumeClaim
from kubesched.api.volumes import (
    access_modes_match,
    claim_class,
    is_volume_bound_to_claim,
    storage_request,
    volume_capacity,
    volume_class,
    volume_mode_mismatch,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.plugins.helpers.volumes import pv_matches_labels
from kubesched.plugins.volumebinding import plugin as vb
from kubesched.testing import make_pv, make_pvc
from tests.plugins.volumebinding.test_volumebinding import PASS, WFFC, ZONES, pod, run, setup

# --- the column-wise search against upstream's node-by-node loop ---------------------------


def _reference_find(
    claim: PersistentVolumeClaim,
    volumes: list[PersistentVolume],
    labels: dict[str, str],
    excluded: set[str],
) -> PersistentVolume | None:
    """volume.FindMatchingVolume for one node, line by line."""
    requested = storage_request(claim)
    smallest = None
    for volume in volumes:
        if volume.metadata.name in excluded:
            continue
        if volume.spec.claim_ref is not None and not is_volume_bound_to_claim(volume, claim):
            continue
        if volume_capacity(volume) < requested or volume_mode_mismatch(claim, volume):
            continue
        fits = pv_matches_labels(volume, labels)
        if is_volume_bound_to_claim(volume, claim):
            return volume if fits else None
        if volume.status.phase != "Available" or volume_class(volume) != claim_class(claim):
            continue
        if not fits or not access_modes_match(claim, volume):
            continue
        if smallest is None or volume_capacity(smallest) > volume_capacity(volume):
            smallest = volume
    return smallest


def _random_pv(rng: Any, i: int) -> PersistentVolume:
    kind = rng.choice(["host", "zone", "none", "two-terms", "bad", "fields"])
    spec: dict[str, Any] = {}
    expr = {"key": "kubernetes.io/hostname", "operator": "In", "values": [rng.choice(list(ZONES))]}
    zone_expr = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}
    terms: list[dict[str, Any]] | None = {
        "host": [{"matchExpressions": [expr]}],
        "zone": [{"matchExpressions": [zone_expr]}],
        "none": None,
        "two-terms": [{"matchExpressions": [expr]}, {"matchExpressions": [zone_expr]}],
        "bad": [{"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["x"]}]}],
        "fields": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]}],
    }[kind]
    if terms is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    claim = ("default", f"c{rng.randrange(3)}") if rng.random() < 0.15 else None
    return make_pv(
        f"pv{i}",
        storage=f"{rng.choice([1, 5, 5, 10, 20])}Gi",
        storage_class="local",
        claim=claim,
        phase=rng.choice(["Available"] * 5 + ["Bound"]),
        access_modes=rng.choice([["ReadWriteOnce"], ["ReadWriteOnce", "ReadOnlyMany"]]),
        spec=spec,
    )


@pytest.mark.parametrize("seed", range(60))
def test_column_wise_search_matches_the_node_loop(seed: int) -> None:
    rng = random.Random(seed)
    pvs = [_random_pv(rng, i) for i in range(rng.randrange(1, 12))]
    claims = [
        make_pvc(
            f"c{j}",
            storage=f"{rng.choice([1, 4, 5, 8])}Gi",
            storage_class="local",
            access_modes=rng.choice([["ReadWriteOnce"], ["ReadOnlyMany"]]),
        )
        for j in range(rng.randrange(1, 4))
    ]
    plugin, nodes, _ = setup(WFFC, *pvs, *claims)
    state = CycleState()
    p = pod(*(c.metadata.name for c in claims))
    verdicts = run(plugin, nodes, p, state)
    data = state.get(vb.STATE_KEY)
    ordered = sorted(claims, key=storage_request)
    for name in ZONES:
        labels = nodes.node(nodes.index[name]).metadata.labels
        taken: set[str] = set()
        expected: list[str | None] = []
        for claim in ordered:
            found = _reference_find(claim, pvs, labels, taken)
            expected.append(None if found is None else found.metadata.name)
            if found is not None:
                taken.add(found.metadata.name)
        fits = all(e is not None for e in expected)
        assert (verdicts[name] == PASS) == fits, (name, expected, verdicts[name])
        if fits:
            ((evaluation, _),) = data.evaluations
            position = int(np.flatnonzero(evaluation.rows == nodes.index[name])[0])
            got = [
                pvs_[int(chosen[position])].metadata.name
                for pvs_, chosen in zip(evaluation.candidates, evaluation.matched, strict=True)
            ]
            assert got == expected
