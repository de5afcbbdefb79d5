"""Node selectors and node affinity: component-helpers' scheduling/corev1/nodeaffinity.

The one implementation of node-affinity semantics in kubesched, one node at a
time; plugins/helpers/selectors answers the same questions column-wise over
the node table, from the terms parsed here.

Semantics kept from upstream:

* terms are ORed, the requirements of a term ANDed; a term with neither
  matchExpressions nor matchFields matches nothing;
* a term that does not parse (unknown operator, wrong number of values, a Gt/Lt
  value that is not an int64, an invalid label key or value) matches nothing;
  the other terms still count ("lazy" parse errors);
* In needs the key with a listed value; NotIn and DoesNotExist match nodes
  lacking the key; Gt/Lt parse the node's value with strconv.ParseInt(v, 10, 64)
  and never match when it does not parse;
* matchFields knows the field metadata.name only (any other key reads as "");
  In and NotIn need exactly one value;
* spec.nodeSelector is an exact match of every key/value, not validated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubesched.api.labels import parse_int64
from kubesched.api.names import label_value_errors, qualified_name_errors
from kubesched.api.objects import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
)

IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
LABEL_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
FIELD_OPERATORS = (IN, NOT_IN)
OBJECT_NAME_FIELD = "metadata.name"


# --- parsed terms ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    key: str
    operator: str
    values: tuple[str, ...]
    number: int = 0  # the Gt/Lt threshold


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    key: str
    operator: str  # In or NotIn
    value: str


@dataclass(frozen=True, slots=True)
class ParsedTerm:
    """One NodeSelectorTerm, parsed once; `errors` non-empty means it matches nothing."""

    expressions: tuple[LabelRequirement, ...] = ()
    fields: tuple[FieldRequirement, ...] = ()
    errors: tuple[str, ...] = ()


def is_empty_term(term: NodeSelectorTerm) -> bool:
    return not term.match_expressions and not term.match_fields


def _parse_label_requirement(
    req: NodeSelectorRequirement, path: str, errors: list[str]
) -> LabelRequirement | None:
    if req.operator not in LABEL_OPERATORS:
        errors.append(f"{path}.operator: Unsupported value: {req.operator!r}")
        return None
    before = len(errors)
    errors.extend(
        f"{path}.key: Invalid value: {req.key!r}: {e}" for e in qualified_name_errors(req.key)
    )
    values = tuple(req.values)
    number = 0
    if req.operator in (IN, NOT_IN):
        if not values:
            errors.append(f"{path}.values: for 'in', 'notin' operators, values set can't be empty")
    elif req.operator in (EXISTS, DOES_NOT_EXIST):
        if values:
            errors.append(f"{path}.values: values set must be empty for exists and does not exist")
    else:
        if len(values) != 1:
            errors.append(f"{path}.values: for 'Gt', 'Lt' operators, exactly one value is required")
        for i, value in enumerate(values):
            parsed = parse_int64(value)
            if parsed is None:
                errors.append(f"{path}.values[{i}]: for 'Gt', 'Lt' operators, must be an integer")
            else:
                number = parsed
    for i, value in enumerate(values):
        errors.extend(f"{path}.values[{i}]: {e}" for e in label_value_errors(value))
    if len(errors) != before:
        return None
    return LabelRequirement(req.key, req.operator, values, number)


def _parse_field_requirement(
    req: NodeSelectorRequirement, path: str, errors: list[str]
) -> FieldRequirement | None:
    if req.operator not in FIELD_OPERATORS:
        errors.append(f"{path}.operator: Unsupported value: {req.operator!r}")
        return None
    if len(req.values) != 1:
        errors.append(f"{path}.values: must have one element")
        return None
    return FieldRequirement(req.key, req.operator, req.values[0])


def parse_term(term: NodeSelectorTerm, path: str = "") -> ParsedTerm:
    """newNodeSelectorTerm: parse the requirements, keeping the errors (not raising)."""
    errors: list[str] = []
    expressions = [
        _parse_label_requirement(r, f"{path}matchExpressions[{i}]", errors)
        for i, r in enumerate(term.match_expressions)
    ]
    fields = [
        _parse_field_requirement(r, f"{path}matchFields[{i}]", errors)
        for i, r in enumerate(term.match_fields)
    ]
    if errors:
        return ParsedTerm(errors=tuple(errors))
    return ParsedTerm(
        tuple(e for e in expressions if e is not None), tuple(f for f in fields if f is not None)
    )


def parse_terms(terms: Iterable[NodeSelectorTerm | ParsedTerm]) -> tuple[ParsedTerm, ...]:
    """NewLazyErrorNodeSelector: empty terms are dropped, bad terms kept (matching nothing)."""
    parsed: list[ParsedTerm] = []
    for i, term in enumerate(terms):
        if isinstance(term, ParsedTerm):
            parsed.append(term)
        elif not is_empty_term(term):
            parsed.append(parse_term(term, f"nodeSelectorTerms[{i}]."))
    return tuple(parsed)


def parse_node_selector(selector: NodeSelector) -> tuple[ParsedTerm, ...]:
    """NewNodeSelector: like parse_terms, but any parse error raises ValueError."""
    terms = parse_terms(selector.node_selector_terms)
    errors = [e for t in terms for e in t.errors]
    if errors:
        raise ValueError("; ".join(errors))
    return terms


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """NewPreferredSchedulingTerms: (weight, term) pairs; weight-0 and empty terms dropped."""

    terms: tuple[tuple[int, ParsedTerm], ...] = ()

    def score(self, node: Node) -> int:
        return sum(weight for weight, term in self.terms if node_matches_term(node, term))


def parse_preferred_terms(terms: Sequence[PreferredSchedulingTerm]) -> PreferredTerms:
    """Parse preferred terms; a term that does not parse raises ValueError (upstream errors)."""
    parsed: list[tuple[int, ParsedTerm]] = []
    errors: list[str] = []
    for i, term in enumerate(terms):
        if term.weight == 0 or is_empty_term(term.preference):
            continue
        one = parse_term(term.preference, f"[{i}].")
        if one.errors:
            errors.extend(one.errors)
        else:
            parsed.append((term.weight, one))
    if errors:
        raise ValueError("; ".join(errors))
    return PreferredTerms(tuple(parsed))


# --- one node at a time ----------------------------------------------------------------


def _label_requirement_matches(labels: Mapping[str, str], req: LabelRequirement) -> bool:
    value = labels.get(req.key)
    if req.operator == IN:
        return value is not None and value in req.values
    if req.operator == NOT_IN:
        return value is None or value not in req.values
    if req.operator == EXISTS:
        return value is not None
    if req.operator == DOES_NOT_EXIST:
        return value is None
    number = None if value is None else parse_int64(value)
    if number is None:
        return False
    return number > req.number if req.operator == GT else number < req.number


def node_matches_term(node: Node, term: ParsedTerm) -> bool:
    if term.errors or (not term.expressions and not term.fields):
        return False
    labels = node.metadata.labels
    if not all(_label_requirement_matches(labels, r) for r in term.expressions):
        return False
    if not node.metadata.name:
        return True  # upstream ignores matchFields when the node has no fields
    for req in term.fields:
        actual = node.metadata.name if req.key == OBJECT_NAME_FIELD else ""
        if (actual == req.value) != (req.operator == IN):
            return False
    return True


def node_matches_terms(node: Node, terms: Iterable[NodeSelectorTerm | ParsedTerm]) -> bool:
    return any(node_matches_term(node, t) for t in parse_terms(terms))


def node_matches_selector(node: Node, selector: Mapping[str, str]) -> bool:
    labels = node.metadata.labels
    return all(k in labels and labels[k] == v for k, v in selector.items())


# --- a pod's required node affinity ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """GetRequiredNodeAffinity: spec.nodeSelector AND required node affinity terms.

    `terms` is None when the pod has no required node affinity (anything goes);
    an empty tuple (required affinity without usable terms) matches no node.
    """

    node_selector: Mapping[str, str] | None = None
    terms: tuple[ParsedTerm, ...] | None = None

    def matches(self, node: Node) -> bool:
        return self.match(node)[0]

    def match(self, node: Node) -> tuple[bool, bool]:
        """RequiredNodeAffinity.Match: (matched, parse error reported).

        As upstream, parse errors are reported only when no term matched.
        """
        if self.node_selector and not node_matches_selector(node, self.node_selector):
            return False, False
        if self.terms is None:
            return True, False
        if node_matches_terms(node, self.terms):
            return True, False
        return False, any(t.errors for t in self.terms)


def required_node_affinity(pod: Pod) -> RequiredNodeAffinity:
    selector = pod.spec.node_selector or None
    affinity = pod.spec.affinity
    required = (
        None
        if affinity is None or affinity.node_affinity is None
        else (affinity.node_affinity.required_during_scheduling_ignored_during_execution)
    )
    terms = None if required is None else parse_terms(required.node_selector_terms)
    return RequiredNodeAffinity(selector, terms)
