"""NodeResourcesFitArgs and NodeResourcesBalancedAllocationArgs: types, v1 defaults, validation.

Upstream: the types of pkg/scheduler/apis/config (types_pluginargs.go), the
defaults of apis/config/v1 (SetDefaults_NodeResourcesFitArgs,
SetDefaults_NodeResourcesBalancedAllocationArgs) and the checks of
apis/config/validation (ValidateNodeResourcesFitArgs,
ValidateNodeResourcesBalancedAllocationArgs). Decoding is lax (strict=False):
the plugins used to take int() and str() of these values, so "2" is still a
weight of 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from kubesched.api.names import qualified_name_errors
from kubesched.plugins.helpers.args import (
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    load_args,
    not_supported,
    required,
)

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
# supportedScoringStrategyTypes, sorted as sets.List gives them
SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# config.MaxCustomPriorityScore: shape scores run 0..10.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
RESOURCE_WEIGHT_MAX = 100


class _Args(msgspec.Struct, frozen=True, rename="camel", kw_only=True, forbid_unknown_fields=True):
    pass


class ResourceSpec(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """config.ResourceSpec: a resource a strategy looks at, and its weight (0 when
    not given; the defaults make it 1)."""

    name: str = ""
    weight: int = 0


class UtilizationShapePoint(
    msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=True
):
    """config.UtilizationShapePoint: the score (0..10) at a utilization (0..100)."""

    utilization: int = 0
    score: int = 0


class RequestedToCapacityRatioParam(_Args, frozen=True):
    """config.RequestedToCapacityRatioParam: the shape of the score over utilization."""

    shape: tuple[UtilizationShapePoint, ...] = ()


class ScoringStrategy(_Args, frozen=True):
    """config.ScoringStrategy; `type` is empty when the file gives a strategy without
    one (validation refuses that)."""

    type: str = ""
    resources: tuple[ResourceSpec, ...] = ()
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def _least_allocated() -> ScoringStrategy:
    return ScoringStrategy(type=LEAST_ALLOCATED, resources=DEFAULT_RESOURCES)


class NodeResourcesFitArgs(_Args, frozen=True):
    """Extended resources Filter does not check (by name, or by the domain before the
    "/"), and how Score weighs what the pod leaves free."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    # No scoringStrategy at all is LeastAllocated over cpu and memory.
    scoring_strategy: ScoringStrategy = msgspec.field(default_factory=_least_allocated)


class NodeResourcesBalancedAllocationArgs(_Args, frozen=True):
    """The resources whose requested fractions should stay even (each weight 1)."""

    resources: tuple[ResourceSpec, ...] = ()


# --- defaults (apis/config/v1/defaults.go) ------------------------------------------------


def _default_resources(resources: Sequence[ResourceSpec]) -> tuple[ResourceSpec, ...]:
    """None given means cpu and memory; a weight not given (or 0) means 1."""
    if not resources:
        return DEFAULT_RESOURCES
    return tuple(r if r.weight else msgspec.structs.replace(r, weight=1) for r in resources)


def default_node_resources_fit_args(args: NodeResourcesFitArgs) -> NodeResourcesFitArgs:
    """SetDefaults_NodeResourcesFitArgs."""
    strategy = args.scoring_strategy
    resources = _default_resources(strategy.resources)
    if resources == strategy.resources:
        return args
    return msgspec.structs.replace(
        args, scoring_strategy=msgspec.structs.replace(strategy, resources=resources)
    )


def default_balanced_allocation_args(
    args: NodeResourcesBalancedAllocationArgs,
) -> NodeResourcesBalancedAllocationArgs:
    """SetDefaults_NodeResourcesBalancedAllocationArgs."""
    resources = _default_resources(args.resources)
    return (
        args if resources == args.resources else msgspec.structs.replace(args, resources=resources)
    )


# --- validation (validation_pluginargs.go) ------------------------------------------------


def _validate_resources(resources: Sequence[ResourceSpec], path: str) -> list[str]:
    """validateResources."""
    return [
        invalid(
            child(index(path, i), "weight"),
            r.weight,
            f"resource weight of {r.name} not in valid range (0, {RESOURCE_WEIGHT_MAX}]",
        )
        for i, r in enumerate(resources)
        if not 0 < r.weight <= RESOURCE_WEIGHT_MAX
    ]


def validate_function_shape(shape: Sequence[UtilizationShapePoint], path: str) -> list[str]:
    """validateFunctionShape: at least one point, utilizations increasing, each
    utilization in [0, 100] and score in [0, 10]."""
    if not shape:
        return [required(path, "at least one point must be specified")]
    errors: list[str] = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errors.append(
                invalid(
                    child(index(path, i), "utilization"),
                    shape[i].utilization,
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errors.append(
                invalid(
                    child(index(path, i), "utilization"),
                    point.utilization,
                    f"not in valid range [0, {MAX_UTILIZATION}]",
                )
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                invalid(
                    child(index(path, i), "score"),
                    point.score,
                    f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                )
            )
    return errors


def validate_node_resources_fit_args(args: NodeResourcesFitArgs, path: str = "") -> list[str]:
    """ValidateNodeResourcesFitArgs."""
    errors: list[str] = []
    for i, name in enumerate(args.ignored_resources):
        where = index(child(path, "ignoredResources"), i)
        errors.extend(invalid(where, name, e) for e in qualified_name_errors(name))
    for i, group in enumerate(args.ignored_resource_groups):
        where = index(child(path, "ignoredResourceGroups"), i)
        if "/" in group:
            errors.append(invalid(where, group, "resource group name can't contain '/'"))
        errors.extend(invalid(where, group, e) for e in qualified_name_errors(group))
    strategy = args.scoring_strategy
    strategy_path = child(path, "scoringStrategy")
    if strategy.type not in SCORING_STRATEGIES:
        errors.append(
            not_supported(child(strategy_path, "type"), strategy.type, SCORING_STRATEGIES)
        )
    errors.extend(_validate_resources(strategy.resources, child(strategy_path, "resources")))
    ratio_path = child(strategy_path, "requestedToCapacityRatio")
    ratio = strategy.requested_to_capacity_ratio
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        if ratio is None:
            errors.append(
                required(ratio_path, "must be specified when type is RequestedToCapacityRatio")
            )
        else:
            errors.extend(validate_function_shape(ratio.shape, child(ratio_path, "shape")))
    elif ratio is not None:
        errors.append(
            forbidden(ratio_path, "must be nil when type is not RequestedToCapacityRatio")
        )
    return errors


def validate_balanced_allocation_args(
    args: NodeResourcesBalancedAllocationArgs, path: str = ""
) -> list[str]:
    """ValidateNodeResourcesBalancedAllocationArgs: each resource named once, weight 1."""
    errors: list[str] = []
    seen: set[str] = set()
    for i, resource in enumerate(args.resources):
        where = index(child(path, "resources"), i)
        if resource.name in seen:
            errors.append(duplicate(child(where, "name"), resource.name))
        seen.add(resource.name)
        if resource.weight != 1:
            errors.append(invalid(child(where, "weight"), resource.weight, "must be 1"))
    return errors


# --- decode, default, validate --------------------------------------------------------------


def node_resources_fit_args(
    args: NodeResourcesFitArgs | Mapping[str, Any] | None, path: str = ""
) -> NodeResourcesFitArgs:
    """The args NodeResourcesFit runs with; raises ArgsError naming the field under `path`."""
    return load_args(
        args,
        NodeResourcesFitArgs,
        validate_node_resources_fit_args,
        strict=False,
        path=path,
        default=default_node_resources_fit_args,
    )


def balanced_allocation_args(
    args: NodeResourcesBalancedAllocationArgs | Mapping[str, Any] | None, path: str = ""
) -> NodeResourcesBalancedAllocationArgs:
    """The args NodeResourcesBalancedAllocation runs with; raises ArgsError."""
    return load_args(
        args,
        NodeResourcesBalancedAllocationArgs,
        validate_balanced_allocation_args,
        strict=False,
        path=path,
        default=default_balanced_allocation_args,
    )
