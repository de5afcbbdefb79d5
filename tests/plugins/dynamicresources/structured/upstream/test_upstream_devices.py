"""The allocator against upstream's shared allocator cases (allocatortesting of
k8s.io/dynamic-resource-allocation v0.36.3): matchAttribute/distinctAttribute
constraints, partitionable devices (counter sets across the slices of a pool,
counters given back on rejection, per-device node selection). Case ids are upstream's case names."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plugins.dynamicresources.structured.upstream.kit import (
    BOOL_ATTR,
    CLASS_A,
    DRIVER_A,
    INT_ATTR,
    NODE_1,
    NODE_2,
    PER_DEVICE,
    STRING_ATTR,
    TAINT_NO_SCHEDULE,
    VERSION_ATTR,
    alloc,
    attr_is,
    attrs,
    claim,
    dev,
    device_class,
    distinct,
    first,
    label_selector,
    local,
    match,
    memory_at_least,
    req,
    res,
    rslice,
    run_case,
    selector,
    sub,
)

A1 = f"{DRIVER_A}/pool-1"
ONE_C = [("counter-set-1", {"c": "1"})]
MULTI_CLASS = [device_class(multi=True)]


def counters(name: str, pool: str = "pool-1", on: Any = NODE_1, **c: str) -> Any:
    """A slice holding only counter-set-1 with the given counters (pool of two slices)."""
    return rslice(name, on, pool, DRIVER_A, count=2, counter_sets=[("counter-set-1", dict(c))])


def mem(amount: str, counter_set: str = "counter-set-1") -> dict[str, Any]:
    return {"counters": [(counter_set, {"memory": amount})], "capacity_from_counters": True}


CASES: dict[str, dict[str, Any]] = {
    # --- constraints -------------------------------------------------------------------
    "with-constraint": {
        "claims": [
            claim(
                "claim-0",
                req("req-0"),
                req("req-1"),
                constraints=[match(a) for a in (INT_ATTR, VERSION_ATTR, STRING_ATTR, BOOL_ATTR)],
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                *(
                    dev(
                        name,
                        attributes=attrs(
                            driverVersion="v1.0.0",
                            numa=1,
                            stringAttribute="stringAttributeValue",
                            boolAttribute=True,
                        ),
                    )
                    for name in ("device-1", "device-2")
                ),
            )
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"), res("req-1", f"{A1}/device-2"))],
    },
    "with-constraint-non-existent-attribute": {
        "claims": [claim("claim-0", req(), constraints=[match(f"{DRIVER_A}/NonExistent")])],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"))],
        "expect": None,
    },
    **{
        f"with-constraint-not-matching-{kind}-attribute": {
            "claims": [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(name)])],
            "slices": [
                rslice(
                    "slice-1",
                    NODE_1,
                    "pool-1",
                    DRIVER_A,
                    dev("device-1", attributes=attrs(**{name.split("/")[1]: a})),
                    dev("device-2", attributes=attrs(**{name.split("/")[1]: b})),
                )
            ],
            "expect": None,
        }
        for kind, name, a, b in [
            ("int", INT_ATTR, 1, 2),
            ("string", STRING_ATTR, "x", "y"),
            ("bool", BOOL_ATTR, True, False),
            ("version", VERSION_ATTR, "v1.0.0", "v2.0.0"),
        ]
    },
    "with-constraint-not-matching-int-attribute-all-devices": {
        "claims": [claim("claim-0", req(all_devices=True), constraints=[match(INT_ATTR)])],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes=attrs(numa=1)),
                dev("device-2", attributes=attrs(numa=2)),
            )
        ],
        "error": "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
        "because a claim constraint would not be satisfied",
    },
    "with-constraint-for-request-retry": {
        "claims": [
            claim(
                "claim-0",
                req("req-0"),
                req("req-1"),
                constraints=[match(VERSION_ATTR, "req-0"), match(STRING_ATTR)],
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes=attrs(driverVersion="v1.0.0", stringAttribute="a")),
                dev("device-2", attributes=attrs(driverVersion="v2.0.0", stringAttribute="b")),
                dev("device-3", attributes=attrs(driverVersion="v3.0.0", stringAttribute="b")),
            )
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-2"), res("req-1", f"{A1}/device-3"))],
    },
    "prioritized-list-subrequests-with-constraints-ref-parent-request": {
        "claims": [
            claim(
                "claim-0",
                req("req-0", CLASS_A, 1, memory_at_least("8Gi")),
                first(
                    "req-1",
                    sub("subReq-0", CLASS_A, 1, memory_at_least("2Gi")),
                    sub("subReq-1", CLASS_A, 1, memory_at_least("1Gi")),
                ),
                constraints=[match(VERSION_ATTR, "req-0", "req-1")],
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", memory="8Gi", attributes=attrs(driverVersion="v1.0.0")),
            ),
            rslice(
                "slice-2",
                NODE_1,
                "pool-2",
                DRIVER_A,
                dev("device-2", memory="2Gi", attributes=attrs(driverVersion="v2.0.0")),
                dev("device-3", memory="1Gi", attributes=attrs(driverVersion="v1.0.0")),
            ),
        ],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1"),
                res("req-1/subReq-1", f"{DRIVER_A}/pool-2/device-3"),
            )
        ],
    },
    "with-distinct-constraints": {
        "claims": [
            claim(
                "claim-0",
                *(req(f"req-{i}") for i in range(4)),
                constraints=[
                    distinct(BOOL_ATTR, "req-0", "req-1"),
                    distinct(VERSION_ATTR, "req-0", "req-1", "req-2"),
                    distinct(INT_ATTR, "req-0", "req-1", "req-2", "req-3"),
                ],
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                *(
                    dev(
                        f"device-{i + 1}",
                        attributes=attrs(driverVersion=v, numa=i, boolAttribute=b),
                        multi=True,
                    )
                    for i, (v, b) in enumerate(
                        [("v1.0.0", True), ("v1.0.1", False), ("v1.0.2", True), ("v1.0.0", True)]
                    )
                ),
            )
        ],
        "expect": [
            alloc(
                local(), *(res(f"req-{i}", f"{A1}/device-{i + 1}", shared=True) for i in range(4))
            )
        ],
    },
    "with-distinct-constraints-attribute-not-set": {
        "claims": [claim("claim-0", req("req-0"), req("req-1"), constraints=[distinct(INT_ATTR)])],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), dev("device-2"))],
        "expect": None,
    },
    # --- partitionable devices -----------------------------------------------------------
    "all-devices-with-consumed-counters": {
        "claims": [claim("claim-0", req(all_devices=True))],
        "slices": [
            rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", **mem("4Gi")), count=2),
            counters("slice-2", memory="8Gi"),
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"))],
    },
    "partitionable-devices-taint-releases-counter": {
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NO_SCHEDULE], counters=ONE_C),
                dev("device-2", counters=ONE_C),
                count=2,
            ),
            counters("slice-2", c="1"),
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-2"))],
    },
    "partitionable-devices-constraint-releases-counter": {
        "claims": [claim("claim-0", req("req-0", CLASS_A, 2), constraints=[match(STRING_ATTR)])],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes=attrs(stringAttribute="red"), counters=ONE_C),
                dev("device-2", attributes=attrs(stringAttribute="blue"), counters=ONE_C),
                dev("device-3", attributes=attrs(stringAttribute="blue"), counters=ONE_C),
                count=2,
            ),
            counters("slice-2", c="2"),
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-2"), res("req-0", f"{A1}/device-3"))],
    },
    "partitionable-consumable-capacity-backtrack-releases-counter": {
        "claims": [
            claim(
                "claim-0",
                req("req-0", CLASS_A, 1, attr_is("kind", "shared")),
                req("req-1", CLASS_A, 1, attr_is("kind", "counteronly")),
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", attributes=attrs(kind="shared"), multi=True, counters=ONE_C),
                dev("device-2", attributes=attrs(kind="shared")),
                dev("device-3", attributes=attrs(kind="counteronly"), counters=ONE_C),
                count=2,
            ),
            counters("slice-2", c="1"),
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-2"), res("req-1", f"{A1}/device-3"))],
    },
    "partitionable-devices-multiple-devices": {
        "claims": [claim("claim-0", req("req-0"), req("req-1"))],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", **mem("4Gi")),
                dev("device-2", **mem("6Gi")),
                dev("device-3", **mem("4Gi")),
                count=2,
            ),
            counters("slice-2", memory="8Gi"),
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"), res("req-1", f"{A1}/device-3"))],
    },
    "partitionable-devices-prioritized-list": {
        "claims": [
            claim(
                "claim-0",
                req("req-0"),
                first(
                    "req-1",
                    sub("subReq-0", CLASS_A, 1, memory_at_least("6Gi")),
                    sub("subReq-1", CLASS_A, 1, memory_at_least("4Gi")),
                ),
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", **mem("4Gi")),
                dev("device-2", **mem("6Gi")),
                dev("device-3", **mem("4Gi")),
                count=2,
            ),
            counters("slice-2", memory="8Gi"),
        ],
        "expect": [
            alloc(local(), res("req-0", f"{A1}/device-1"), res("req-1/subReq-1", f"{A1}/device-3"))
        ],
    },
    "partitionable-devices-disabled-other-device-do-not-consume-counters": {
        "features": {"partitionable_devices": False},
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", **mem("4Gi")),
                dev("device-2"),
                count=2,
            ),
            counters("slice-2", memory="18Gi"),
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-2"))],
    },
    "partitionable-devices-disabled-per-device-node-selection": {
        "features": {"partitionable_devices": False},
        "claims": [claim("claim-0", req())],
        "slices": [rslice("slice-1", PER_DEVICE, "pool-1", DRIVER_A, dev("device-2", on=NODE_1))],
        "expect": None,
    },
    "partitionable-devices-per-device-node-selection-nodename": {
        "claims": [
            claim(
                "claim-0",
                first(
                    "req-0",
                    sub("subReq-0", CLASS_A, 1, memory_at_least("6Gi")),
                    sub("subReq-1", CLASS_A, 1, memory_at_least("4Gi")),
                ),
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                PER_DEVICE,
                "pool-1",
                DRIVER_A,
                dev("device-1", on=NODE_1, **mem("4Gi")),
                dev("device-2", on=NODE_2, **mem("6Gi")),
                count=2,
            ),
            counters("slice-2", on=PER_DEVICE, memory="18Gi"),
        ],
        "expect": [alloc(local(), res("req-0/subReq-1", f"{A1}/device-1"))],
    },
    "partitionable-devices-per-device-node-selection-node-selector": {
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice(
                "slice-1",
                PER_DEVICE,
                "pool-1",
                DRIVER_A,
                dev("device-1", on=label_selector("region", "region-1"), **mem("4Gi")),
                count=2,
            ),
            counters("slice-2", on=PER_DEVICE, memory="18Gi"),
        ],
        "expect": [
            alloc(selector(expressions=[("region", "region-1")]), res("req-0", f"{A1}/device-1"))
        ],
    },
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": {
        # A device of another node took 6 of the 8 units: 4 more do not fit here.
        "claims": [claim("claim-0", req())],
        "allocated": [f"{A1}/device-2"],
        "slices": [
            rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", **mem("4Gi")), count=3),
            rslice("slice-2", NODE_2, "pool-1", DRIVER_A, dev("device-2", **mem("6Gi")), count=3),
            rslice(
                "slice-3",
                NODE_1,
                "pool-1",
                DRIVER_A,
                count=3,
                counter_sets=[("counter-set-1", {"memory": "8Gi"})],
            ),
        ],
        "expect": None,
    },
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: dict[str, Any]) -> None:
    run_case(case)
