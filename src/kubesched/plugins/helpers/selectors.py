"""Node selectors and node affinity terms, matched over many nodes at once.

The column-wise form of api/node_affinity (component-helpers'
`scheduling/corev1/nodeaffinity`), answered on the NodeTable from the terms
parsed there; api/node_affinity's one-node matchers are the reference this
form is tested against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from kubesched.api.labels import parse_int64
from kubesched.api.node_affinity import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    IN,
    NOT_IN,
    OBJECT_NAME_FIELD,
    FieldRequirement,
    LabelRequirement,
    ParsedTerm,
    PreferredTerms,
    RequiredNodeAffinity,
    parse_terms,
)
from kubesched.api.objects import NodeSelectorTerm
from kubesched.framework.state.node_table import BoolArray, IntArray, LabelColumn, NodeTable, Rows

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


def required_affinity_rows(
    required: RequiredNodeAffinity, table: NodeTable, rows: Rows
) -> BoolArray:
    """RequiredNodeAffinity.Match for every row."""
    mask = np.ones(len(rows), dtype=np.bool_)
    if required.node_selector:
        mask &= match_node_selector(table, rows, required.node_selector)
    if required.terms is not None:
        mask &= match_node_selector_terms(table, rows, required.terms)
    return mask


def preferred_score_rows(preferred: PreferredTerms, table: NodeTable, rows: Rows) -> IntArray:
    """The sum of the weights of the preferred terms each row matches."""
    total = np.zeros(len(rows), dtype=np.int64)
    for weight, term in preferred.terms:
        total += np.where(match_term(table, rows, term), np.int64(weight), np.int64(0))
    return total
