"""The allocator against upstream's shared allocator cases (allocatortesting of
k8s.io/dynamic-resource-allocation v0.36.3): consumable capacity (request policies,
shares of one device, capacity consumed already, rollback on rejection), device
taints and tolerations, binding conditions and bindsToNode, invalid and incomplete
pools. Case ids are upstream's case names."""

from __future__ import annotations

from typing import Any, cast

import pytest

from tests.plugins.dynamicresources.structured.upstream.kit import (
    CLASS_A,
    DRIVER_A,
    NODE_1,
    NODE_2,
    STRING_ATTR,
    TAINT_NO_EXECUTE,
    TAINT_NO_SCHEDULE,
    TAINT_NONE,
    TOLERATE_NO_EXECUTE,
    TOLERATE_NO_SCHEDULE,
    alloc,
    attr_is,
    attrs,
    claim,
    dev,
    device_class,
    first,
    label_selector,
    local,
    match,
    req,
    res,
    rslice,
    run_case,
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
    # --- consumable capacity ---------------------------------------------------------------
    "consumable-capacity-disabled-feature": {
        "features": {"consumable_capacity": False},
        "claims": [claim("claim-0", req(cap="1"))],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"))],
        "error": "claim claim-0, request req-0: has capacity requests, but the "
        "DRAConsumableCapacity feature is disabled",
    },
    "consumable-capacity-disabled-feature-with-prioritized-list": {
        "features": {"consumable_capacity": False},
        "claims": [
            claim("claim-0", first("req-0", sub("subReq-0", cap="1"), sub("subReq-1", cap="1")))
        ],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"))],
        "error": "claim claim-0, subrequest subReq-0: has capacity requests, but the "
        "DRAConsumableCapacity feature is disabled",
    },
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": {
        "claims": [claim("claim-0", req(cap="1"))],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", caps={"capacity-1": "1"}, multi=True),
            )
        ],
        "expect": None,
    },
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": {
        "claims": [claim("claim-0", req()), claim("claim-1", req())],
        "classes": MULTI_CLASS,
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", multi=True))],
        "expect": [
            alloc(local(), res("req-0", f"{A1}/device-1", shared=True)),
            alloc(local(), res("req-0", f"{A1}/device-1", shared=True)),
        ],
    },
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": {
        "claims": [claim("claim-0", req()), claim("claim-1", req())],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", caps={"capacity-0": "2"}, multi=True),
            )
        ],
        "expect": None,
    },
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": {
        "claims": [claim("claim-0", req(cap="1")), claim("claim-1", req(cap="1"))],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", caps={"capacity-0": "2"}, multi=True),
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "1"})
            ),
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "1"})
            ),
        ],
    },
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": {
        "claims": [claim("claim-0", req()), claim("claim-1", req())],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", multi=True, policy_range="4")
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "2"})
            ),
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "2"})
            ),
        ],
    },
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": {
        "claims": [claim("claim-0", req()), claim("claim-1", req())],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", multi=True, policy_values=("0", "1", [])),
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "0"})
            ),
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "0"})
            ),
        ],
    },
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": {
        "claims": [claim("claim-0", req(cap="1"))],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", multi=True, policy_values=("0", "1", [])),
            )
        ],
        "expect": None,
    },
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": {
        "claims": [claim("claim-0", req(cap="3"))],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", multi=True, policy_range="4")
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "4"})
            )
        ],
    },
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": {
        "claims": [claim("claim-0", req(cap="2"))],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", multi=True, policy_values=("1", "3", ["3"])),
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "3"})
            )
        ],
    },
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": {
        "claims": [claim("claim-0", req(cap="6"))],
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", multi=True, policy_range="10"),
            )
        ],
        "expect": None,
    },
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": {
        "claims": [claim("claim-0", req(cap="2"))],
        "consumed": {f"{A1}/device-1": {"capacity-0": "2"}},
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", multi=True, policy_range="4")
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "2"})
            )
        ],
    },
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": {
        "claims": [claim("claim-0", req(cap="2"))],
        "consumed": {f"{A1}/device-1": {"capacity-0": "2"}},
        "classes": MULTI_CLASS,
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", multi=True, policy_range="2"),
                dev("device-2", multi=True, policy_range="2"),
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-2", shared=True, consumed={"capacity-0": "2"})
            )
        ],
    },
    "consumable-capacity-with-multi-allocatable-device-backtrack": {
        "claims": [
            claim(
                "claim-0",
                req("req-0", cap="2"),
                req("req-1", cap="2"),
                constraints=[match(STRING_ATTR)],
            ),
            claim("claim-1", req("req-0", cap="2")),
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev(
                    "device-2", attributes=attrs(stringAttribute="v1"), multi=True, policy_range="2"
                ),
                dev(
                    "device-1", attributes=attrs(stringAttribute="v2"), multi=True, policy_range="4"
                ),
            )
        ],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "2"}),
                res("req-1", f"{A1}/device-1", shared=True, consumed={"capacity-0": "2"}),
            ),
            alloc(
                local(), res("req-0", f"{A1}/device-2", shared=True, consumed={"capacity-0": "2"})
            ),
        ],
    },
    "consumable-capacity-rejection-rolls-back-constraints": {
        "claims": [
            claim("claim-0", req("req-0", CLASS_A, 1, attr_is("stringAttribute", "cap"), cap="2")),
            claim(
                "claim-1",
                first(
                    "req-0",
                    sub(
                        "subReq-0",
                        CLASS_A,
                        1,
                        attr_is("stringAttribute", "cap"),
                        all_devices=True,
                        cap="2",
                    ),
                    sub("subReq-1", CLASS_A, 1, attr_is("stringAttribute", "fb")),
                ),
                constraints=[match(STRING_ATTR)],
            ),
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev(
                    "device-1",
                    caps={"capacity-0": "2"},
                    attributes=attrs(stringAttribute="cap"),
                    multi=True,
                ),
                dev("device-2", attributes=attrs(stringAttribute="fb")),
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0", f"{A1}/device-1", shared=True, consumed={"capacity-0": "2"})
            ),
            alloc(local(), res("req-0/subReq-1", f"{A1}/device-2")),
        ],
    },
    # --- taints ----------------------------------------------------------------------------
    "tainted-two-devices": {
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NO_SCHEDULE]),
                dev("device-2", taints=[TAINT_NO_EXECUTE]),
            )
        ],
        "expect": None,
    },
    "tainted-two-devices-tolerated": {
        "claims": [claim("claim-0", req(tolerations=[TOLERATE_NO_EXECUTE]))],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NO_SCHEDULE]),
                dev("device-2", taints=[TAINT_NO_EXECUTE]),
            )
        ],
        "expect": [
            alloc(local(), res("req-0", f"{A1}/device-2", tolerations=[TOLERATE_NO_EXECUTE]))
        ],
    },
    "tainted-two-devices-prioritized-list-tolerated": {
        "claims": [
            claim(
                "claim-0",
                first("req-0", sub("subReq-0"), sub("subReq-1", tolerations=[TOLERATE_NO_EXECUTE])),
            )
        ],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NO_SCHEDULE]),
                dev("device-2", taints=[TAINT_NO_EXECUTE]),
            )
        ],
        "expect": [
            alloc(
                local(), res("req-0/subReq-1", f"{A1}/device-2", tolerations=[TOLERATE_NO_EXECUTE])
            )
        ],
    },
    "tainted-no-effect": {
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NONE]))
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"))],
    },
    "tainted-one-device-two-taints-both-tolerated": {
        "claims": [claim("claim-0", req(tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE]))],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
            )
        ],
        "expect": [
            alloc(
                local(),
                res(
                    "req-0",
                    f"{A1}/device-1",
                    tolerations=[TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE],
                ),
            )
        ],
    },
    "tainted-disabled": {
        "features": {"device_taints": False},
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", taints=[TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE]),
            )
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"))],
    },
    "tainted-admin-access": {
        "claims": [claim("claim-0", req(admin=True))],
        "allocated": [f"{A1}/device-1", f"{A1}/device-2"],
        "slices": [
            rslice(
                "slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NO_SCHEDULE])
            )
        ],
        "expect": None,
    },
    "tainted-all-devices-single": {
        "claims": [claim("claim-0", req(all_devices=True))],
        "slices": [
            rslice(
                "slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1", taints=[TAINT_NO_SCHEDULE])
            )
        ],
        "expect": None,
    },
    # --- binding conditions ------------------------------------------------------------------
    "binding-conditions-with-and-without": {
        "claims": [claim("claim-0", req("req-0"), req("req-1"))],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1"),
                dev("device-2", binding=(["IsPrepare"], ["BindingFailed"])),
            )
        ],
        "expect": [
            alloc(
                local(),
                res("req-0", f"{A1}/device-1"),
                res("req-1", f"{A1}/device-2", binding=(["IsPrepare"], ["BindingFailed"])),
            )
        ],
    },
    "binding-conditions-without-feature-gate": {
        "features": {"binding_conditions": False},
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice(
                "slice-1",
                NODE_1,
                "pool-1",
                DRIVER_A,
                dev("device-1", binding=(["IsPrepare"], ["BindingFailed"])),
            )
        ],
        "expect": None,
    },
    "node-restriction": {
        # bindsToNode pins a network-attached device's allocation to the node.
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice(
                "slice-1",
                label_selector("planet", "earth"),
                "pool-1",
                DRIVER_A,
                dev("device-1", binds_to_node=True),
            )
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-1"))],
    },
    # --- pools ---------------------------------------------------------------------------------
    **{
        name: {
            "claims": [claim("claim-0", req())],
            # Two slices of pool-1 publish the same device name: pool-1 is invalid.
            "slices": [
                rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), count=2),
                rslice("slice-2", NODE_1, "pool-1", DRIVER_A, dev("device-1"), count=2),
                rslice("slice-3", NODE_1, "pool-2", DRIVER_A, dev("device-2")),
            ],
            **cast(dict[str, Any], extra),
        }
        for name, extra in [
            (
                "invalid-pool-is-ok-if-devices-can-be-allocated-from-other",
                {"expect": [alloc(local(), res("req-0", f"{DRIVER_A}/pool-2/device-2"))]},
            ),
            (
                "invalid-pool-is-error-if-no-other-device-can-be-allocated",
                {
                    "allocated": [f"{DRIVER_A}/pool-2/device-2"],
                    "error": "invalid resource pools were encountered",
                },
            ),
        ]
    },
    "no-allocation-from-incomplete-pools": {
        "claims": [claim("claim-0", req())],
        "slices": [rslice("slice-1", NODE_1, "pool-1", DRIVER_A, dev("device-1"), count=2)],
        "expect": None,
    },
    "different-resourceslices-in-pool-can-target-different-nodes": {
        "claims": [claim("claim-0", req())],
        "slices": [
            rslice("slice-1", NODE_2, "pool-1", DRIVER_A, dev("device-1"), count=2),
            rslice("slice-2", NODE_1, "pool-1", DRIVER_A, dev("device-2"), count=2),
        ],
        "expect": [alloc(local(), res("req-0", f"{A1}/device-2"))],
    },
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_upstream_case(case: dict[str, Any]) -> None:
    run_case(case)
