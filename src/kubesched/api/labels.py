"""Labels and label selectors: apimachinery's labels.Selector and its validation.

The one implementation of label-selector matching in kubesched: the plugins,
the pod index, the disruption budgets and the manifest loader all use it.
`label_selector_as_selector` is metav1.LabelSelectorAsSelector (nil selects
nothing, {} selects everything, a requirement that does not parse raises
SelectorError with upstream's text); label keys and values are checked by api/names.py
(validation.IsQualifiedName and validation.IsValidLabelValue).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kubesched.api.names import label_value_errors, qualified_name_errors
from kubesched.api.objects import LabelSelector

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_GO_DECIMAL = re.compile(r"[+-]?[0-9]+")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64): an optional sign and ASCII digits, in int64 range."""
    if _GO_DECIMAL.fullmatch(text) is None:
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


# labels.Requirement operators (selection.Operator spelling).
EQUALS, IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "=", "in", "notin", "exists", "!"
_LABEL_SELECTOR_OPERATORS = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}


class SelectorError(ValueError):
    """A label selector that does not parse (metav1.LabelSelectorAsSelector's error)."""


# --- labels.Selector ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (IN, EQUALS):
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        return self.key not in labels  # DOES_NOT_EXIST


@dataclass(frozen=True, slots=True)
class Selector:
    """labels.Selector: requirements ANDed; `nothing` is labels.Nothing().

    No requirements (and not `nothing`) is labels.Everything(), which is also
    what upstream calls an Empty() selector.
    """

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def empty(self) -> bool:
        return not self.nothing and not self.requirements

    def add(self, *requirements: Requirement) -> Selector:
        """Selector.Add: Nothing stays Nothing; requirements are kept sorted by key."""
        if self.nothing:
            return self
        merged = sorted((*self.requirements, *requirements), key=lambda r: r.key)
        return Selector(tuple(merged))

    @classmethod
    def from_set(cls, labels: Mapping[str, str]) -> Selector:
        """labels.SelectorFromSet: key = value for each entry (none: Everything)."""
        return cls(
            tuple(Requirement(k, EQUALS, frozenset((v,))) for k, v in sorted(labels.items()))
        )


EVERYTHING = Selector()
NOTHING = Selector(nothing=True)


def _requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """labels.NewRequirement with its validation (the errors joined as upstream)."""
    errors: list[str] = []
    key_errors = qualified_name_errors(key)
    if key_errors:
        errors.append(f'key: Invalid value: "{key}": {"; ".join(key_errors)}')
    if operator in (IN, NOT_IN) and not values:
        errors.append(
            "values: Invalid value: []string{}: for 'in', 'notin' operators, "
            "values set can't be empty"
        )
    elif operator == EQUALS and len(values) != 1:
        errors.append("values: Invalid value: exact-match compatibility requires one single value")
    elif operator in (EXISTS, DOES_NOT_EXIST) and values:
        errors.append(
            "values: Invalid value: values set must be empty for exists and does not exist"
        )
    for i, value in enumerate(values):
        value_errors = label_value_errors(value)
        if value_errors:
            errors.append(
                f'values[{i}][{key}]: Invalid value: "{value}": {"; ".join(value_errors)}'
            )
    if errors:
        raise SelectorError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return Requirement(key, operator, frozenset(values))


def label_selector_as_selector(selector: LabelSelector | None) -> Selector:
    """metav1.LabelSelectorAsSelector: nil is Nothing, {} is Everything; raises SelectorError."""
    if selector is None:
        return NOTHING
    if not selector.match_labels and not selector.match_expressions:
        return EVERYTHING
    requirements = [_requirement(k, EQUALS, [v]) for k, v in selector.match_labels.items()]
    for expr in selector.match_expressions:
        operator = _LABEL_SELECTOR_OPERATORS.get(expr.operator)
        if operator is None:
            raise SelectorError(f'"{expr.operator}" is not a valid label selector operator')
        requirements.append(_requirement(expr.key, operator, list(expr.values)))
    return Selector().add(*requirements)


def selects(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """LabelSelectorAsSelector(selector).Matches(labels), where a selector that does
    not parse selects nothing (as a controller's lister reads it)."""
    try:
        return label_selector_as_selector(selector).matches(labels)
    except SelectorError:
        return False
