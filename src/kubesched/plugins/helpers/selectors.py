"""Node selectors and node affinity terms, matched over many nodes at once.

This is component-helpers' `scheduling/corev1/nodeaffinity` with the label
semantics of apimachinery's `labels.Requirement`, answered column-wise on the
NodeTable. Every matcher also has a one-node form (`node_matches_*`), used by
queueing hints and as the reference the column-wise form is tested against.

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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import (
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PreferredSchedulingTerm,
)
from kubesched.cache.node_table import BoolArray, IntArray, LabelColumn, NodeTable, Rows

IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
LABEL_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
FIELD_OPERATORS = (IN, NOT_IN)
OBJECT_NAME_FIELD = "metadata.name"

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


def label_key_errors(key: str) -> list[str]:
    """Why `key` is not a valid label key (validation.IsQualifiedName); empty if it is."""
    parts = key.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        elif len(prefix) > 253 or _DNS1123_SUBDOMAIN.fullmatch(prefix) is None:
            errors.append("prefix part must be a lowercase RFC 1123 subdomain")
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.'"]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if _QUALIFIED_NAME.fullmatch(name) is None:
        errors.append("name part must consist of alphanumeric characters, '-', '_' or '.'")
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why `value` is not a valid label value (validation.IsValidLabelValue)."""
    errors: list[str] = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if _LABEL_VALUE.fullmatch(value) is None:
        errors.append("a valid label must be an empty string or consist of alphanumerics")
    return errors


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
    errors.extend(f"{path}.key: Invalid value: {req.key!r}: {e}" for e in label_key_errors(req.key))
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

    def score_rows(self, table: NodeTable, rows: Rows) -> IntArray:
        """The sum of the weights of the terms each node matches."""
        total = np.zeros(len(rows), dtype=np.int64)
        for weight, term in self.terms:
            total += np.where(match_term(table, rows, term), np.int64(weight), np.int64(0))
        return total

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


# --- column-wise matching --------------------------------------------------------------

_INT_CACHE_SIZE = 4096


class _ColumnInts:
    """A label column's vocabulary parsed as int64 (for Gt/Lt), grown as the vocabulary grows."""

    __slots__ = ("column", "valid", "values")

    def __init__(self, column: LabelColumn) -> None:
        self.column = column
        self.values: IntArray = np.zeros(0, dtype=np.int64)
        self.valid: BoolArray = np.zeros(0, dtype=np.bool_)


_int_cache: dict[int, _ColumnInts] = {}


def _column_ints(column: LabelColumn) -> tuple[IntArray, BoolArray]:
    entry = _int_cache.get(id(column))
    if entry is None or entry.column is not column:
        if len(_int_cache) >= _INT_CACHE_SIZE:
            del _int_cache[next(iter(_int_cache))]
        entry = _int_cache[id(column)] = _ColumnInts(column)
    seen = len(entry.values)
    if seen < len(column.values):
        parsed = [parse_int64(v) for v in column.values[seen:]]
        entry.values = np.concatenate(
            [entry.values, np.array([0 if p is None else p for p in parsed], dtype=np.int64)]
        )
        entry.valid = np.concatenate(
            [entry.valid, np.array([p is not None for p in parsed], dtype=np.bool_)]
        )
    return entry.values, entry.valid


def match_label_requirement(table: NodeTable, rows: Rows, req: LabelRequirement) -> BoolArray:
    """labels.Requirement.Matches for every row."""
    column = table.labels.get(req.key)
    if column is None:
        # No node carries the key: only the negative operators match.
        return np.full(len(rows), req.operator in (NOT_IN, DOES_NOT_EXIST), dtype=np.bool_)
    codes = column.codes[rows]
    if req.operator in (IN, NOT_IN):
        wanted = column.codes_for(req.values)
        if len(wanted) == 0:
            found = np.zeros(len(rows), dtype=np.bool_)
        elif len(wanted) == 1:
            found = codes == wanted[0]
        else:
            found = np.isin(codes, wanted)
        return found if req.operator == IN else ~found
    if req.operator == EXISTS:
        return codes >= 0
    if req.operator == DOES_NOT_EXIST:
        return codes < 0
    values, valid = _column_ints(column)
    ok = valid & ((values > req.number) if req.operator == GT else (values < req.number))
    # A trailing False answers code -1 (the node lacks the key).
    ok_or_absent: BoolArray = np.append(ok, False)
    return ok_or_absent[codes]


def match_field_requirement(table: NodeTable, rows: Rows, req: FieldRequirement) -> BoolArray:
    """fields.OneTerm(Not)EqualSelector over the node's fields (only metadata.name is set)."""
    if req.key == OBJECT_NAME_FIELD:
        row = table.row_of(req.value)
        equal = np.zeros(len(rows), dtype=np.bool_) if row is None else rows == row
    else:
        equal = np.full(len(rows), req.value == "", dtype=np.bool_)
    return equal if req.operator == IN else ~equal


def match_term(table: NodeTable, rows: Rows, term: ParsedTerm) -> BoolArray:
    """One parsed term (requirements ANDed) for every row."""
    if term.errors or (not term.expressions and not term.fields):
        return np.zeros(len(rows), dtype=np.bool_)
    mask = np.ones(len(rows), dtype=np.bool_)
    for req in term.expressions:
        mask &= match_label_requirement(table, rows, req)
    for field_req in term.fields:
        mask &= match_field_requirement(table, rows, field_req)
    return mask


def match_node_selector_terms(
    table: NodeTable, rows: Rows, terms: Iterable[NodeSelectorTerm | ParsedTerm]
) -> BoolArray:
    """Whether each row matches any of `terms` (NodeSelectorTerms ORed; empty: nothing)."""
    mask = np.zeros(len(rows), dtype=np.bool_)
    for term in parse_terms(terms):
        mask |= match_term(table, rows, term)
    return mask


def match_node_selector(table: NodeTable, rows: Rows, selector: Mapping[str, str]) -> BoolArray:
    """spec.nodeSelector: every key present with exactly that value (empty: every node)."""
    mask = np.ones(len(rows), dtype=np.bool_)
    for key, value in selector.items():
        column = table.labels.get(key)
        code = None if column is None else column.vocab.get(value)
        if column is None or code is None:
            return np.zeros(len(rows), dtype=np.bool_)
        mask &= column.codes[rows] == code
    return mask


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

    def match_rows(self, table: NodeTable, rows: Rows) -> BoolArray:
        mask = np.ones(len(rows), dtype=np.bool_)
        if self.node_selector:
            mask &= match_node_selector(table, rows, self.node_selector)
        if self.terms is not None:
            mask &= match_node_selector_terms(table, rows, self.terms)
        return mask

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
