"""InterPodAffinityArgs: decoding (lax, older spellings kept), v1 defaults, validation."""

from __future__ import annotations

import pytest

from kubesched.plugins.helpers.args import ArgsError
from kubesched.plugins.interpodaffinity import InterPodAffinity
from kubesched.plugins.interpodaffinity.args import InterPodAffinityArgs, inter_pod_affinity_args

ARGS = "profiles[0].pluginConfig[3].args"


def test_defaults() -> None:
    assert inter_pod_affinity_args(None) == InterPodAffinityArgs(
        hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False
    )
    assert inter_pod_affinity_args({"hardPodAffinityWeight": None}).hard_pod_affinity_weight == 1


def test_decoding() -> None:
    args = inter_pod_affinity_args(
        {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": True}
    )
    assert args == InterPodAffinityArgs(
        hard_pod_affinity_weight=0, ignore_preferred_terms_of_existing_pods=True
    )
    # lax, as int() of the weight was
    assert inter_pod_affinity_args({"hardPodAffinityWeight": "7"}).hard_pod_affinity_weight == 7
    # the spellings the plugin also read; the API's wins
    args = inter_pod_affinity_args(
        {"hard_pod_affinity_weight": 5, "ignore_preferred_terms_of_existing_pods": True}
    )
    assert (args.hard_pod_affinity_weight, args.ignore_preferred_terms_of_existing_pods) == (
        5,
        True,
    )
    args = inter_pod_affinity_args({"hardPodAffinityWeight": 3, "hard_pod_affinity_weight": 5})
    assert args.hard_pod_affinity_weight == 3


def test_errors_name_the_field() -> None:
    with pytest.raises(ArgsError) as err:
        inter_pod_affinity_args({"hardPodAffinityWeight": 101}, ARGS)
    assert err.value.errors == (
        f"{ARGS}.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
    )
    with pytest.raises(ArgsError) as err:
        inter_pod_affinity_args({"hardPodAffinityWeight": -1})
    assert str(err.value) == "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"
    with pytest.raises(ArgsError) as err:
        inter_pod_affinity_args({"ignorePreferredTermsOfExistingPods": "maybe"}, ARGS)
    assert str(err.value) == (
        f"{ARGS}.ignorePreferredTermsOfExistingPods: Expected `bool`, got `str`"
    )


def test_plugin_takes_typed_args() -> None:
    plugin = InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=9))
    assert plugin.hard_pod_affinity_weight == 9
    assert not plugin.ignore_preferred_terms_of_existing_pods
    assert plugin.args["hardPodAffinityWeight"] == 9
