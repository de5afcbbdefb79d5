"""Feature gates (k8s.io/component-base/featuregate with pkg/features/kube_features.go
v1.36.3): the ones kubesched follows, their defaults and their dependencies.

Only the gates whose behaviour kubesched implements can be changed; the rest of
upstream's gates keep v1.36.3's defaults, and setting one is an error rather than
a silent no-op (kubesched cannot honour it, and taking it in silence would mislead).
`--feature-gates` takes upstream's "Name=bool,Name=bool" form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"

# Name -> (default, pre-release), as kube_features.go's defaultVersionedKubernetesFeatureGates
# has them at 1.36.
KNOWN: dict[str, tuple[bool, str]] = {
    GENERIC_WORKLOAD: (False, "ALPHA"),
    GANG_SCHEDULING: (False, "ALPHA"),
    OPPORTUNISTIC_BATCHING: (True, "BETA"),  # beta since 1.35
}

# featureDependencies in kube_features.go: a gate on needs these on too.
DEPENDENCIES: dict[str, tuple[str, ...]] = {
    GANG_SCHEDULING: (GENERIC_WORKLOAD,),
    GENERIC_WORKLOAD: (),
    OPPORTUNISTIC_BATCHING: (),
}

# Gates of v1.36.3 kubesched knows but does not implement: refused when turned on.
UNSUPPORTED_WHEN_ON = ("TopologyAwareWorkloadScheduling", "WorkloadAwarePreemption")


class FeatureGateError(ValueError):
    pass


@dataclass(frozen=True)
class FeatureGates:
    """The effective gates; every known gate has a value."""

    enabled: Mapping[str, bool] = field(
        default_factory=lambda: {n: d for n, (d, _) in KNOWN.items()}
    )

    def on(self, name: str) -> bool:
        return self.enabled.get(name, False)

    @property
    def generic_workload(self) -> bool:
        return self.on(GENERIC_WORKLOAD)

    @property
    def gang_scheduling(self) -> bool:
        return self.on(GANG_SCHEDULING)

    @property
    def opportunistic_batching(self) -> bool:
        return self.on(OPPORTUNISTIC_BATCHING)

    def describe(self) -> str:
        return ",".join(f"{n}={str(v).lower()}" for n, v in sorted(self.enabled.items()))


DEFAULT_GATES = FeatureGates()


def parse_feature_gates(text: str | Mapping[str, bool]) -> FeatureGates:
    """featureGate.Set / SetFromMap then Validate: "A=true,B=false" (or a map, as
    KubeSchedulerConfiguration's featureGates is not, but --feature-gates is), with
    upstream's messages for a bad pair, an unknown gate, a bad value, and a gate on
    whose dependency is off."""
    values: dict[str, bool] = {}
    if isinstance(text, str):
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, raw = part.partition("=")
            name, raw = name.strip(), raw.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {name}")
            # strconv.ParseBool's spellings.
            if raw in ("1", "t", "T", "TRUE", "true", "True"):
                values[name] = True
            elif raw in ("0", "f", "F", "FALSE", "false", "False"):
                values[name] = False
            else:
                raise FeatureGateError(
                    f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": '
                    "invalid syntax"
                )
    else:
        values = dict(text)
    enabled = {n: d for n, (d, _) in KNOWN.items()}
    for name, value in values.items():
        if name in UNSUPPORTED_WHEN_ON:
            if value:
                raise FeatureGateError(
                    f"feature gate {name} is not supported by kubesched; leave it off"
                )
            continue
        if name not in KNOWN:
            raise FeatureGateError(_unknown(name))
        enabled[name] = value
    for name, needs in DEPENDENCIES.items():
        if not enabled[name]:
            continue
        missing = [n for n in needs if not enabled[n]]
        if missing:
            # featuregate.Validate: "feature GangScheduling depends on [GenericWorkload]..."
            raise FeatureGateError(
                f"{name} is enabled, but depends on features that are disabled: "
                f"[{' '.join(missing)}]"
            )
    return FeatureGates(enabled)


def _unknown(name: str) -> str:
    known = ", ".join(f"{n}=true|false (default={str(d).lower()})" for n, (d, _) in KNOWN.items())
    return f"unrecognized feature gate: {name} (kubesched can set: {known})"
