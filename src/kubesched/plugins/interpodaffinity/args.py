"""InterPodAffinityArgs: type, v1 defaults, validation.

Upstream: config.InterPodAffinityArgs, SetDefaults_InterPodAffinityArgs and
ValidateInterPodAffinityArgs. Decoding is lax (strict=False), as the plugin
took int() of the weight; the snake_case spellings it also read still work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from kubesched.plugins.helpers.args import child, invalid, load_args

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

# Spellings the plugin accepted besides the API's; the API's wins.
_ALIASES = {
    "hard_pod_affinity_weight": "hardPodAffinityWeight",
    "ignore_preferred_terms_of_existing_pods": "ignorePreferredTermsOfExistingPods",
}


class InterPodAffinityArgs(
    msgspec.Struct, frozen=True, rename="camel", kw_only=True, forbid_unknown_fields=True
):
    """`hard_pod_affinity_weight`: the score weight of an existing pod's required
    affinity term the incoming pod matches; `ignore_preferred_terms_of_existing_pods`:
    skip scoring for pods without preferred terms of their own."""

    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    ignore_preferred_terms_of_existing_pods: bool = False


def validate_inter_pod_affinity_args(args: InterPodAffinityArgs, path: str = "") -> list[str]:
    """ValidateInterPodAffinityArgs (validateHardPodAffinityWeight)."""
    weight = args.hard_pod_affinity_weight
    if MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        return []
    return [
        invalid(
            child(path, "hardPodAffinityWeight"),
            weight,
            f"not in valid range [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
        )
    ]


def inter_pod_affinity_args(
    args: InterPodAffinityArgs | Mapping[str, Any] | None, path: str = ""
) -> InterPodAffinityArgs:
    """The args InterPodAffinity runs with; raises ArgsError naming the field under `path`."""
    return load_args(
        args,
        InterPodAffinityArgs,
        validate_inter_pod_affinity_args,
        strict=False,
        path=path,
        aliases=_ALIASES,
    )
