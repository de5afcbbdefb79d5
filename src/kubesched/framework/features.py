"""Feature gates that can be set, as kube-scheduler's --feature-gates sets them.

kubesched follows v1.36.3's defaults for every gate (pkg/features); the gates
listed here are those a user may turn off or on. Any other name is refused:
kubesched cannot honour it, and taking it in silence would mislead.
"""

from __future__ import annotations

from collections.abc import Mapping

# pkg/features/kube_features.go, v1.36.3: name -> default.
OPPORTUNISTIC_BATCHING = "OpportunisticBatching"  # beta since 1.35, on
SETTABLE_GATES: Mapping[str, bool] = {OPPORTUNISTIC_BATCHING: True}

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


class FeatureGateError(ValueError):
    pass


def feature_gates(overrides: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """The defaults with `overrides` applied; an unknown name is a FeatureGateError."""
    gates = dict(SETTABLE_GATES)
    for name, value in (overrides or {}).items():
        if name not in gates:
            raise FeatureGateError(_unknown(name))
        gates[name] = bool(value)
    return gates


def parse_feature_gates(text: str) -> dict[str, bool]:
    """The overrides of a --feature-gates value, "Name=true,Other=false"
    (featuregate.Set upstream), with upstream's error texts."""
    overrides: dict[str, bool] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        name, sep, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        if name not in SETTABLE_GATES:
            raise FeatureGateError(_unknown(name))
        if value in _TRUE:
            overrides[name] = True
        elif value in _FALSE:
            overrides[name] = False
        else:
            raise FeatureGateError(
                f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": '
                "invalid syntax"
            )
    return overrides


def _unknown(name: str) -> str:
    known = ", ".join(
        f"{n}=true|false (default={str(d).lower()})" for n, d in SETTABLE_GATES.items()
    )
    return f"unrecognized feature gate: {name} (kubesched can set: {known})"
