"""The SPEC: its grid expands in a fixed order with stable ids, and a bad one is one
line naming the file and the field, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.sweep.spec import SpecError, load_spec
from tests.sweep.cluster import write_sweep


def test_the_grid_is_the_product_of_its_axes_then_the_listed_points(tmp_path: Path) -> None:
    path = write_sweep(
        tmp_path,
        {
            "grid": {"nodes": [{}, {"small": 2}], "scale": [1, 1.5], "config": ["default"]},
            "variations": [{"nodes": {"big": 1}, "featureGates": "OpportunisticBatching=false"}],
        },
    )
    spec = load_spec(path)
    assert [v.id for v in spec.variations] == [
        "nodes= config=default scale=1 gates=",
        "nodes= config=default scale=1.5 gates=",
        "nodes=small:2 config=default scale=1 gates=",
        "nodes=small:2 config=default scale=1.5 gates=",
        "nodes=big:1 config=default scale=1 gates=OpportunisticBatching=false",
    ]
    assert [v.index for v in spec.variations] == [0, 1, 2, 3, 4]
    assert spec.variations[3].where == "grid[nodes[1],config[0],scale[1]]"
    assert spec.variations[4].where == "variations[0]"
    assert spec.cluster == [tmp_path / "cluster.yaml"]
    assert spec.node_pools == tmp_path / "pools.yaml"
    # The id is what a results file keys on: the same values, the same id, whatever
    # the order of the pools in the SPEC.
    again = write_sweep(tmp_path, {"variations": [{"nodes": {"small": 2, "big": 0}}]})
    assert load_spec(again).variations[0].id == "nodes=small:2 config=default scale=1 gates="


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"grid": {"scale": [1, 0]}}, "grid[scale[1]].scale: must be > 0"),
        ({"grid": {"nodes": [{"small": -1}]}}, "grid[nodes[0]].nodes.small: must be >= 0"),
        ({"grid": {"sizes": [1]}}, "grid.sizes: unknown field"),
        ({"grid": {"scale": []}}, "grid.scale: an axis needs at least one value"),
        ({"grid": {"scale": ["big"]}}, "grid.scale[0]: expected float, got str"),
        ({"variations": [{}, {"scale": 1}]}, "variations[1]: the same variation as variations[0]"),
        ({}, "grid: no variation: give grid axes or variations"),
        ({"seed": "x", "variations": [{}]}, "seed: expected int, got str"),
    ],
)
def test_a_bad_spec_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, spec: dict[str, object], message: str
) -> None:
    path = write_sweep(tmp_path, spec)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert str(caught.value) == f"{path}: {message}"
    assert "\n" not in str(caught.value)


def test_new_nodes_need_a_pools_file(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubesched.io/v1alpha1",
                "kind": "Sweep",
                "cluster": ["c.yaml"],
                "variations": [{"nodes": {"small": 1}}],
            }
        )
    )
    with pytest.raises(SpecError, match=r"variations\[0\].nodes: new nodes need nodePools"):
        load_spec(path)


def test_not_a_sweep(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\ncluster: [c.yaml]\n")
    with pytest.raises(SpecError, match=r"sweep.yaml: apiVersion: must be kubesched.io/v1alpha1"):
        load_spec(path)
    path.write_text("[1, 2\n")
    with pytest.raises(SpecError, match="not YAML"):
        load_spec(path)
