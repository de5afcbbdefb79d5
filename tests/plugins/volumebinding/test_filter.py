"""VolumeBinding's Filter: bound claims (the PV's node affinity), static binding with
WaitForFirstConsumer (which PV serves a claim, the smallest chosen and assumed), and
dynamic provisioning (allowed topologies, selected node, storage capacity).
"""

from __future__ import annotations

import msgspec
import pytest

from kubesched.api.objects import CSIDriver, PersistentVolume
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.types import PodInfo
from kubesched.testing import claim_volume, make_pod, make_pv, make_pvc, make_storage_class
from tests.plugins.volumebinding.test_volumebinding import (
    BIND_CONFLICT,
    NODE_CONFLICT,
    NOT_ENOUGH_SPACE,
    PASS,
    PV_NOT_EXIST,
    WFFC,
    ZONES,
    capacity,
    fails,
    pod,
    run,
    setup,
)

# --- Filter: bound claims ----------------------------------------------------------------


def test_bound_claim_follows_pv_node_affinity() -> None:
    plugin, nodes, _ = setup(
        make_pv("pv1", hostname="n2", phase="Bound", claim=("default", "data")),
        make_pvc("data", volume_name="pv1", bound=True),
    )
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([NODE_CONFLICT]),
        "n2": PASS,
        "n3": fails([NODE_CONFLICT]),
    }


def test_pv_affinity_ignores_match_fields() -> None:
    # CheckNodeAffinity builds a node with labels only: metadata.name is never compared.
    pv = make_pv(
        "pv1",
        phase="Bound",
        spec={
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n1"]}
                            ]
                        }
                    ]
                }
            }
        },
    )
    plugin, nodes, _ = setup(pv, make_pvc("data", volume_name="pv1", bound=True))
    assert run(plugin, nodes, pod("data")) == {"n1": PASS, "n2": PASS, "n3": PASS}


def test_bound_claim_whose_pv_is_gone() -> None:
    plugin, nodes, _ = setup(
        make_pvc("data", volume_name="gone", bound=True),
        make_pv("pv2", hostname="n1", phase="Bound"),
        make_pvc("more", volume_name="pv2", bound=True),
    )
    # The first claim's PV is missing: the check stops there (pv2's affinity not checked).
    assert run(plugin, nodes, pod("data", "more")) == {
        "n1": fails([PV_NOT_EXIST]),
        "n2": fails([PV_NOT_EXIST]),
        "n3": fails([PV_NOT_EXIST]),
    }
    # In the other order pv2's affinity fails n2 and n3 first.
    assert run(plugin, nodes, pod("more", "data")) == {
        "n1": fails([PV_NOT_EXIST]),
        "n2": fails([NODE_CONFLICT]),
        "n3": fails([NODE_CONFLICT]),
    }


# --- Filter: static binding (WaitForFirstConsumer) ---------------------------------------


def test_finds_a_local_pv_per_node() -> None:
    plugin, nodes, _ = setup(
        WFFC,
        make_pv("pv-n1", storage="10Gi", storage_class="local", hostname="n1"),
        make_pv("pv-n2", storage="4Gi", storage_class="local", hostname="n2"),
        make_pvc("data", storage="5Gi", storage_class="local"),
    )
    # n2's PV is too small, n3 has none; no provisioner to fall back on.
    assert run(plugin, nodes, pod("data")) == {
        "n1": PASS,
        "n2": fails([BIND_CONFLICT]),
        "n3": fails([BIND_CONFLICT]),
    }


@pytest.mark.parametrize(
    "pv",
    [
        make_pv("pv", storage_class="local", access_modes=["ReadOnlyMany"]),
        make_pv("pv", storage_class="other"),
        make_pv("pv", storage_class="local", phase="Released"),
        make_pv("pv", storage_class="local", claim=("default", "someone-else")),
        make_pv("pv", storage_class="local", spec={"volumeMode": "Block"}),
        make_pv("pv", storage_class="local", spec={"volumeAttributesClassName": "gold"}),
        make_pv("pv", storage_class="local", labels={"tier": "cold"}),
    ],
    ids=["access-mode", "class", "phase", "claimed", "mode", "vac", "selector"],
)
def test_volumes_that_cannot_serve_the_claim(pv: PersistentVolume) -> None:
    claim = make_pvc(
        "data", storage_class="local", spec={"selector": {"matchLabels": {"tier": "hot"}}}
    )
    if pv.metadata.labels.get("tier") != "cold":
        claim.spec.selector = None
    plugin, nodes, _ = setup(WFFC, pv, claim)
    assert run(plugin, nodes, pod("data")) == {n: fails([BIND_CONFLICT]) for n in ZONES}


def test_smallest_fitting_pv_is_chosen_and_assumed() -> None:
    plugin, nodes, storage = setup(
        WFFC,
        make_pv("big", storage="20Gi", storage_class="local", hostname="n1"),
        make_pv("small", storage="6Gi", storage_class="local", hostname="n1"),
        make_pv("tiny", storage="1Gi", storage_class="local", hostname="n1"),
        make_pvc("data", storage="5Gi", storage_class="local"),
    )
    state = CycleState()
    p = pod("data")
    assert run(plugin, nodes, p, state)["n1"] == PASS
    assert plugin.reserve(state, p, "n1").is_success()
    assumed = storage.assumed_pv("small")
    assert assumed is not None and assumed.spec.claim_ref is not None
    assert (assumed.spec.claim_ref.name, assumed.spec.claim_ref.uid) == ("data", "uid-default-data")
    assert assumed.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    # The next pod's claim no longer sees "small" as free (its claimRef names "data").
    storage.upsert_pvc(make_pvc("more", storage="5Gi", storage_class="local"))
    other = PodInfo(make_pod("q", spec={"volumes": [claim_volume("more")]}))
    state2 = CycleState()
    assert run(plugin, nodes, other, state2)["n1"] == PASS
    assert plugin.reserve(state2, other, "n1").is_success()
    chosen = storage.assumed_pv("big")
    assert chosen is not None and chosen.spec.claim_ref is not None
    assert chosen.spec.claim_ref.name == "more"
    # Unreserve gives "small" back.
    plugin.unreserve(state, p, "n1")
    small = storage.assumed_pv("small")
    assert small is not None and small.spec.claim_ref is None


def test_a_pv_is_not_chosen_twice_for_one_pod() -> None:
    plugin, nodes, _ = setup(
        WFFC,
        make_pv("pv-a", storage_class="local", hostname="n1"),
        make_pv("pv-b", storage_class="local", hostname="n1"),
        make_pv("pv-c", storage_class="local", hostname="n2"),
        make_pvc("one", storage_class="local"),
        make_pvc("two", storage_class="local"),
    )
    assert run(plugin, nodes, pod("one", "two")) == {
        "n1": PASS,
        "n2": fails([BIND_CONFLICT]),  # one PV there for two claims
        "n3": fails([BIND_CONFLICT]),
    }


def test_a_pv_pre_bound_to_the_claim_wins() -> None:
    plugin, nodes, storage = setup(
        WFFC,
        make_pv("smaller", storage="5Gi", storage_class="local"),
        make_pv(
            "mine", storage="50Gi", storage_class="local", hostname="n3", claim=("default", "data")
        ),
        make_pvc("data", storage="5Gi", storage_class="local"),
    )
    state = CycleState()
    p = pod("data")
    # Where the pre-bound PV does not fit, no other PV is considered.
    assert run(plugin, nodes, p, state) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": fails([BIND_CONFLICT]),
        "n3": PASS,
    }
    assert plugin.reserve(state, p, "n3").is_success()
    mine = storage.assumed_pv("mine")
    assert mine is not None and mine.spec.claim_ref is not None
    assert mine.spec.claim_ref.uid == "uid-default-data"


# --- Filter: dynamic provisioning ----------------------------------------------------------


def test_provisioning_within_allowed_topologies() -> None:
    zonal = make_storage_class("zonal", allowed_zones=["b"])
    plugin, nodes, _ = setup(zonal, make_pvc("data", storage_class="zonal"))
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": PASS,
        "n3": PASS,
    }


def test_selected_node_pins_the_claim() -> None:
    zonal = make_storage_class("zonal")
    claim = make_pvc(
        "data",
        storage_class="zonal",
        annotations={"volume.kubernetes.io/selected-node": "n3"},
    )
    plugin, nodes, _ = setup(zonal, claim)
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": fails([BIND_CONFLICT]),
        "n3": PASS,
    }


def test_storage_capacity_tracking() -> None:
    driver = msgspec.convert(
        {"metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}, CSIDriver
    )
    zonal = make_storage_class("zonal")
    objects = (
        zonal,
        driver,
        capacity("cap-a", "a", "100Gi", max_size="8Gi"),  # maximumVolumeSize wins
        capacity("cap-b", "b", "20Gi"),
        make_pvc("data", storage="10Gi", storage_class="zonal"),
    )
    plugin, nodes, _ = setup(*objects)
    assert run(plugin, nodes, pod("data")) == {
        "n1": fails([NOT_ENOUGH_SPACE]),
        "n2": PASS,
        "n3": PASS,
    }
    # Without storageCapacity on the driver nothing is checked.
    driver.spec.storage_capacity = False
    plugin, nodes, _ = setup(*objects)
    assert run(plugin, nodes, pod("data")) == {"n1": PASS, "n2": PASS, "n3": PASS}


def test_static_and_provisioned_claims_together() -> None:
    zonal = make_storage_class("zonal", allowed_zones=["b"])
    plugin, nodes, _ = setup(
        WFFC,
        zonal,
        make_pv("pv-n1", storage_class="local", hostname="n1"),
        make_pv("pv-n2", storage_class="local", hostname="n2"),
        make_pvc("local-data", storage_class="local"),
        make_pvc("zonal-data", storage_class="zonal"),
    )
    assert run(plugin, nodes, pod("local-data", "zonal-data")) == {
        "n1": fails([BIND_CONFLICT]),  # zone a: cannot provision
        "n2": PASS,
        "n3": fails([BIND_CONFLICT]),  # no local PV
    }


def test_bound_and_unbound_reasons_together() -> None:
    plugin, nodes, _ = setup(
        WFFC,
        make_pv("bound", hostname="n1", phase="Bound"),
        make_pvc("old", volume_name="bound", bound=True),
        make_pv("pv-n2", storage_class="local", hostname="n2"),
        make_pvc("new", storage_class="local"),
    )
    assert run(plugin, nodes, pod("old", "new")) == {
        "n1": fails([BIND_CONFLICT]),
        "n2": fails([NODE_CONFLICT]),
        "n3": fails([NODE_CONFLICT, BIND_CONFLICT]),
    }
