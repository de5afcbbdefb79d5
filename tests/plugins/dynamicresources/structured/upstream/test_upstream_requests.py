"""The allocator against upstream's shared allocator cases (allocatortesting of
k8s.io/dynamic-resource-allocation v0.36.3): first fit, selectors and their errors,
ExactCount/All, adminAccess, prioritized lists and the 32-device limit, class and
claim configuration. Case ids are upstream's case names."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.resource import (
    DeviceAllocationConfiguration,
    DeviceAttribute,
    DeviceClaimConfiguration,
    DeviceSelector,
)
from tests.plugins.dynamicresources.structured.upstream.kit import (
    ALL_NODES,
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    MAX,
    NODE_1,
    NODE_2,
    alloc,
    cel,
    claim,
    dev,
    device_class,
    field_selector,
    first,
    label_selector,
    local,
    memory_at_least,
    node,
    numbered,
    opaque,
    req,
    res,
    rslice,
    run_case,
    selector,
    sub,
)

A1 = f"{DRIVER_A}/pool-1"
CLASSES_AB = [device_class(), device_class(CLASS_B, DRIVER_B)]


def one_device(name: str, on: Any, pool: str, driver: str) -> Any:
    return rslice(name, on, pool, driver, dev("device-1"))


def _gen(generation: str, selected: bool) -> dict[str, DeviceAttribute]:
    return {
        "generation": DeviceAttribute(string_value=generation),
        "selected": DeviceAttribute(bool_value=selected),
    }


CASES: dict[str, dict[str, Any]] = {
    "empty": {},
    "simple": {
        "claims": [claim("claim-0", req())],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"))],
    },
    "other-node": {
        "claims": [claim("claim-0", req())],
        "slices": [
            one_device("slice-1", NODE_1, "pool-1", DRIVER_B),
            one_device("slice-2", NODE_2, "pool-2", DRIVER_A),
        ],
        "node": node(NODE_2, "region-2"),
        "expect": [alloc(local(NODE_2), res("req-0", f"{DRIVER_A}/pool-2/device-1"))],
    },
    "small-and-large-backtrack-requests": {
        "claims": [
            claim(
                "claim-0",
                req("req-0", CLASS_A, 1, memory_at_least("1Gi")),
                req("req-1", CLASS_A, 1, memory_at_least("2Gi")),
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-2", memory="2Gi"),
                dev("device-1", memory="1Gi"),
            )
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"), res("req-1", f"{A1}/device-2"))],
    },
    "small-and-large-backtrack-claims": {
        "claims": [
            claim("claim-0", req("req-0", CLASS_A, 1, memory_at_least("1Gi"))),
            claim("claim-1", req("req-1", CLASS_A, 1, memory_at_least("2Gi"))),
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-2", memory="2Gi"),
                dev("device-1", memory="1Gi"),
            )
        ],
        "expect": [
            alloc(local(), res("req-0", f"{A1}/device-1")),
            alloc(local(), res("req-1", f"{A1}/device-2")),
        ],
    },
    "devices-split-across-different-slices": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 2))],
        "slices": [
            one_device("slice-1", NODE_1, "pool-1", DRIVER_A),
            one_device("slice-2", NODE_1, "pool-2", DRIVER_A),
        ],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1"),
                res("req-0", f"{DRIVER_A}/pool-2/device-1"),
            )
        ],
    },
    "obsolete-slice": {
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice("slice-1-obsolete", NODE_1, "pool-1", DRIVER_A, dev("device-1"), count=2),
            rslice(
                "slice-1-obsolete",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-2"),
                count=2,
                generation=2,
            ),
        ],
        "expect": None,
    },
    "duplicate-slice": {
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), count=2),
            rslice("slice-1-2", NODE_1, "pool-1", DRIVER_A, dev("device-1"), count=2),
        ],
        "error": "invalid resource pools were encountered",
    },
    "no-slices": {"claims": [claim("claim-0", req())], "expect": None},
    "not-enough-suitable-devices": {
        "claims": [claim("claim-0", req("req-0")), claim("claim-0", req("req-1"))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": None,
    },
    "no-classes": {
        "claims": [claim("claim-0", req())],
        "classes": [],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "could not retrieve device class class-a",
    },
    "empty-class": {
        "claims": [claim("claim-0", req("req-0", ""))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "claim claim-0, request req-0: missing device class name "
        "(unsupported request type?)",
    },
    "all-devices-many": {
        "claims": [claim("claim-0", req(all_devices=True))],
        "slices": [
            one_device("slice-1", NODE_1, "pool-1", DRIVER_A),
            one_device("slice-1", NODE_1, "pool-2", DRIVER_A),
        ],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1"),
                res("req-0", f"{DRIVER_A}/pool-2/device-1"),
            )
        ],
    },
    "all-devices-of-the-incomplete-pool": {
        "claims": [claim("claim-0", req(all_devices=True))],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), count=2)],
        "error": "claim claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently being updated",
    },
    "all-devices-plus-another-reversed": {
        "claims": [
            claim("claim-1", req("req-0", CLASS_B)),
            claim("claim-0", req("req-0", all_devices=True)),
        ],
        "classes": CLASSES_AB,
        "slices": [
            one_device("slice-1", NODE_1, "pool-1", DRIVER_A),
            one_device("slice-1", NODE_1, "pool-1", DRIVER_B),
        ],
        "expect": [
            alloc(local(), res("req-0", f"{DRIVER_B}/pool-1/device-1")),
            alloc(local(), res("req-0", f"{A1}/device-1")),
        ],
    },
    "all-devices-no-solution": {
        "claims": [
            claim("claim-1", req("req-0")),
            claim("claim-0", req("req-0", all_devices=True)),
        ],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": None,
    },
    "all-devices-slice-without-devices": {
        "claims": [claim("claim-0", req(all_devices=True))],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": None,
    },
    "all-devices-some-allocated": {
        "claims": [claim("claim-0", req(all_devices=True))],
        "allocated": [f"{A1}/device-1"],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": None,
    },
    "all-devices-some-allocated-admin-access": {
        "claims": [claim("claim-0", req(all_devices=True, admin=True))],
        "allocated": [f"{A1}/device-1"],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1", admin=True),
                res("req-0", f"{A1}/device-2", admin=True),
            )
        ],
    },
    "all-devices-some-allocating-admin-access": {
        "claims": [
            claim("claim-0", req("req-0", admin=True), req("req-1", admin=True, all_devices=True))
        ],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": None,
    },
    "count-devices-some-allocated-admin-access": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 2, admin=True))],
        "allocated": [f"{A1}/device-1"],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1", admin=True),
                res("req-0", f"{A1}/device-2", admin=True),
            )
        ],
    },
    "separate-claims-share-device-admin-access": {
        "claims": [claim("claim-0", req(admin=True)), claim("claim-1", req(admin=True))],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": [
            alloc(local(), res("req-0", f"{A1}/device-1", admin=True)),
            alloc(local(), res("req-0", f"{A1}/device-1", admin=True)),
        ],
    },
    "admin-access-claims-device-allocating-for-non-admin-access": {
        "claims": [claim("claim-0", req()), claim("claim-1", req(admin=True))],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": [
            alloc(local(), res("req-0", f"{A1}/device-1")),
            alloc(local(), res("req-0", f"{A1}/device-1", admin=True)),
        ],
    },
    "admin-access-disabled": {
        "features": {"admin_access": False},
        "claims": [claim("claim-0", req(admin=True))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "claim claim-0, request req-0: admin access is requested, but the feature "
        "is disabled",
    },
    "admin-access-enabled": {
        "claims": [claim("claim-0", req(admin=True))],
        "allocated": [f"{A1}/device-1", f"{A1}/device-2"],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1", admin=True))],
    },
    "network-attached-device": {
        "claims": [claim("claim-0", req())],
        "slices": [one_device("slice-1", label_selector("region", "region-1"), "pool-1", DRIVER_A)],
        "expect": [
            alloc(selector(expressions=[("region", "region-1")]), res("req-0", f"{A1}/device-1"))
        ],
    },
    "unsuccessful-allocation-network-attached-device": {
        "claims": [claim("claim-0", req())],
        "slices": [one_device("slice-1", label_selector("region", "region-1"), "pool-1", DRIVER_A)],
        "node": node(NODE_2, "region-2"),
        "expect": None,
    },
    "many-network-attached-devices": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 4))],
        "slices": [
            one_device("slice-1", label_selector("region", "region-1"), "pool-1", DRIVER_A),
            one_device("slice-1", ALL_NODES, "pool-2", DRIVER_A),
            one_device("slice-1", label_selector("planet", "earth"), "pool-3", DRIVER_A),
            one_device("slice-1", field_selector(NODE_1), "pool-4", DRIVER_A),
        ],
        # The union of the slices' selectors.
        "expect": [
            alloc(
                selector(
                    fields=[("metadata.name", NODE_1)],
                    expressions=[("region", "region-1"), ("planet", "earth")],
                ),
                *(res("req-0", f"{DRIVER_A}/pool-{i}/device-1") for i in range(1, 5)),
            )
        ],
    },
    "local-and-network-attached-devices": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 2))],
        "slices": [
            one_device("slice-1", label_selector("region", "region-1"), "pool-1", DRIVER_A),
            one_device("slice-1", NODE_1, "pool-2", DRIVER_A),
        ],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1"),
                res("req-0", f"{DRIVER_A}/pool-2/device-1"),
            )
        ],
    },
    "already-allocated-devices": {
        "claims": [claim("claim-0", req())],
        "allocated": [f"{A1}/device-1", f"{A1}/device-2"],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": None,
    },
    "unknown-selector": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 1, DeviceSelector()))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "CEL expression empty (unsupported selector type?)",
    },
    "unknown-allocation-mode": {
        "claims": [claim("claim-0", req(mode="future-mode"))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "unsupported count mode future-mode",
    },
    "invalid-CEL-one-device": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 1, cel("noSuchVar")))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "undeclared reference",
    },
    "invalid-CEL-one-device-class": {
        "claims": [claim("claim-0", req())],
        "classes": [device_class(expr="noSuchVar")],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "undeclared reference",
    },
    "invalid-CEL-all-devices": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 1, cel("noSuchVar"), all_devices=True))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "undeclared reference",
    },
    "too-many-devices-single-request": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 500))],
        "error": "exceeds the claim limit",
    },
    "many-devices-okay": {"claims": [claim("claim-0", req("req-0", CLASS_A, MAX))]},
    "too-many-devices-total": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, MAX), req("req-1"))],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(MAX + 1))],
        "error": "exceeds the claim limit",
    },
    "max-number-devices": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, MAX))],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(MAX))],
        "expect": [alloc(local(), *(res("req-0", f"{A1}/device-{i}") for i in range(MAX)))],
    },
    # --- prioritized lists (firstAvailable) ------------------------------------------
    "prioritized-list-first-unavailable": {
        "claims": [claim("claim-0", first("req-0", sub("subReq-0", CLASS_B), sub("subReq-1")))],
        "classes": CLASSES_AB,
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": [alloc(local(), res("req-0/subReq-1", f"{A1}/device-1"))],
    },
    "prioritized-list-non-available": {
        "claims": [
            claim(
                "claim-0", first("req-0", sub("subReq-0", CLASS_B, 2), sub("subReq-1", CLASS_A, 2))
            )
        ],
        "classes": CLASSES_AB,
        "slices": [
            one_device("slice-1", NODE_1, "pool-1", DRIVER_A),
            one_device("slice-2", NODE_1, "pool-2", DRIVER_B),
        ],
        "expect": None,
    },
    "prioritized-list-subrequests-with-expressions": {
        "claims": [
            claim(
                "claim-0",
                req("req-0", CLASS_A, 1, memory_at_least("1Gi")),
                first(
                    "req-1",
                    sub("subReq-0", CLASS_A, 1, memory_at_least("4Gi")),
                    sub("subReq-1", CLASS_A, 2, memory_at_least("2Gi")),
                ),
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", memory="2Gi"),
                dev("device-2", memory="2Gi"),
                dev("device-3", memory="1Gi"),
            )
        ],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-3"),
                res("req-1/subReq-1", f"{A1}/device-1"),
                res("req-1/subReq-1", f"{A1}/device-2"),
            )
        ],
    },
    "prioritized-list-subrequests-with-allocation-mode-all": {
        "claims": [
            claim("claim-0", first("req-0", sub("subReq-0", all_devices=True), sub("subReq-1")))
        ],
        "allocated": [f"{A1}/device-1"],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": [alloc(local(), res("req-0/subReq-1", f"{A1}/device-2"))],
    },
    "prioritized-list-allocation-mode-all-multiple-requests": {
        "claims": [
            claim(
                "claim-0",
                req("req-0"),
                first("req-1", sub("subReq-0", all_devices=True), sub("subReq-1")),
            )
        ],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": [
            alloc(local(), res("req-0", f"{A1}/device-1"), res("req-1/subReq-1", f"{A1}/device-2"))
        ],
    },
    "prioritized-list-disabled": {
        "features": {"prioritized_list": False},
        "claims": [claim("claim-0", first("req-0", sub("subReq-0")))],
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "error": "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList "
        "feature is disabled",
    },
    "prioritized-list-with-backtracking": {
        "claims": [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub("subReq-0", CLASS_A, 1, memory_at_least("8Gi")),
                    sub("subReq-1", CLASS_A, 1, memory_at_least("4Gi")),
                ),
                req("req-1", CLASS_A, 1, memory_at_least("8Gi")),
            )
        ],
        "slices": [
            rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", memory="8Gi")),
            rslice("slice-2", NODE_1, "pool-2", DRIVER_A, dev("device-2", memory="4Gi")),
        ],
        "expect": [
            alloc(
                local(),
                res("req-0/subReq-1", f"{DRIVER_A}/pool-2/device-2"),
                res("req-1", f"{A1}/device-1"),
            )
        ],
    },
    "prioritized-list-too-many-in-first-subrequest": {
        "claims": [
            claim("claim-0", first("req-0", sub("subReq-0", CLASS_B, 500), sub("subReq-1")))
        ],
        "classes": CLASSES_AB,
        "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
        "expect": [alloc(local(), res("req-0/subReq-1", f"{A1}/device-1"))],
    },
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": {
        "claims": [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub(
                        "subReq-0",
                        CLASS_A,
                        0,
                        cel(f'device.attributes["{DRIVER_A}"].generation == "v6"'),
                        all_devices=True,
                    ),
                    sub(
                        "subReq-1",
                        CLASS_A,
                        0,
                        cel(f'device.attributes["{DRIVER_A}"].generation == "v5"'),
                        all_devices=True,
                    ),
                ),
            )
        ],
        "classes": [
            device_class(
                expr=f'device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected'
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes=_gen("v6", False)),
                dev("device-2", attributes=_gen("v5", False)),
                dev("device-3", attributes=_gen("v5", True)),
            )
        ],
        "expect": [alloc(local(), res("req-0/subReq-1", f"{A1}/device-3"))],
    },
    "prioritized-list-max-allocation-limit-request": {
        "claims": [
            claim(
                "claim-0",
                first("req-0", sub("subReq-0", CLASS_A, MAX), sub("subReq-1", CLASS_A, MAX // 2)),
                first("req-1", sub("subReq-0", CLASS_A, MAX), sub("subReq-1", CLASS_A, MAX // 2)),
            )
        ],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(2 * MAX))],
        "expect": [
            alloc(
                local(),
                *(res("req-0/subReq-1", f"{A1}/device-{i}") for i in range(MAX // 2)),
                *(res("req-1/subReq-1", f"{A1}/device-{i}") for i in range(MAX // 2, MAX)),
            )
        ],
    },
    "prioritized-list-max-allocation-allocation-mode-all": {
        "claims": [
            claim(
                "claim-0",
                first("req-0", sub("subReq-0", all_devices=True), sub("subReq-1", CLASS_A, 2)),
                req("req-1", CLASS_B, 2),
            )
        ],
        "classes": CLASSES_AB,
        "slices": [
            rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(MAX - 1)),
            rslice("slice-2", NODE_1, "pool-2", DRIVER_B, *numbered(2)),
        ],
        "expect": [
            alloc(
                local(),
                res("req-0/subReq-1", f"{A1}/device-0"),
                res("req-0/subReq-1", f"{A1}/device-1"),
                res("req-1", f"{DRIVER_B}/pool-2/device-0"),
                res("req-1", f"{DRIVER_B}/pool-2/device-1"),
            )
        ],
    },
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: dict[str, Any]) -> None:
    run_case(case)


# --- configuration: compared in full, as upstream does (order matters there) ---------


def _config(results: Any) -> list[DeviceAllocationConfiguration]:
    assert results is not None
    config: list[DeviceAllocationConfiguration] = results[0].devices.config
    return config


def test_with_class_device_config_with_multiple_request_and_configs() -> None:
    results = run_case(
        {
            "claims": [claim("claim-0", req("req-0"), req("req-1"), req("req-2", CLASS_B))],
            "classes": [
                device_class(config="classAttribute-A"),
                device_class(CLASS_B, DRIVER_B, config="classAttribute-B"),
            ],
            "slices": [
                rslice("slice-1", NODE_1, "pool-1", DRIVER_A, *numbered(2)),
                one_device("slice-2", NODE_1, "pool-1", DRIVER_B),
            ],
            "expect": [
                alloc(
                    local(),
                    res("req-0", f"{A1}/device-0"),
                    res("req-1", f"{A1}/device-1"),
                    res("req-2", f"{DRIVER_B}/pool-1/device-1"),
                )
            ],
        }
    )
    assert _config(results) == [
        DeviceAllocationConfiguration(
            source="FromClass",
            requests=["req-0", "req-1"],
            opaque=opaque(DRIVER_A, "classAttribute-A"),
        ),
        DeviceAllocationConfiguration(
            source="FromClass", requests=["req-2"], opaque=opaque(DRIVER_B, "classAttribute-B")
        ),
    ]


def test_claim_with_device_config() -> None:
    c = claim("claim-0", req(), config=[DeviceClaimConfiguration(opaque=opaque(DRIVER_A, "x"))])
    results = run_case(
        {
            "claims": [c],
            "slices": [one_device("slice-1", NODE_1, "pool-1", DRIVER_A)],
            "expect": [alloc(local(), res("req-0", f"{A1}/device-1"))],
        }
    )
    assert _config(results) == [
        DeviceAllocationConfiguration(source="FromClaim", opaque=opaque(DRIVER_A, "x"))
    ]


def test_prioritized_list_device_and_class_config() -> None:
    """prioritized-list-device-config and -class-config: only the chosen subrequest's
    configuration is part of the result."""
    c = claim(
        "claim-0",
        first("req-0", sub("subReq-0", CLASS_A, 1), sub("subReq-1", CLASS_B, 2)),
        config=[
            DeviceClaimConfiguration(requests=["req-0/subReq-0"], opaque=opaque(DRIVER_A, "foo")),
            DeviceClaimConfiguration(requests=["req-0/subReq-1"], opaque=opaque(DRIVER_B, "bar")),
        ],
    )
    case = {
        "claims": [c],
        "classes": [
            device_class(config="foo-class"),
            device_class(CLASS_B, DRIVER_B, config="bar-class"),
        ],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_B, dev("device-1"), dev("device-2"))],
        "expect": [
            alloc(
                local(),
                res("req-0/subReq-1", f"{DRIVER_B}/pool-1/device-1"),
                res("req-0/subReq-1", f"{DRIVER_B}/pool-1/device-2"),
            )
        ],
    }
    assert _config(run_case(case)) == [
        DeviceAllocationConfiguration(
            source="FromClass", requests=["req-0/subReq-1"], opaque=opaque(DRIVER_B, "bar-class")
        ),
        DeviceAllocationConfiguration(
            source="FromClaim", requests=["req-0/subReq-1"], opaque=opaque(DRIVER_B, "bar")
        ),
    ]
