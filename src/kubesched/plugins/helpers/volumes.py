"""Volume topology matched over many nodes at once.

* A PersistentVolume's `spec.nodeAffinity.required` (volume.CheckNodeAffinity):
  node selector terms matched against the node's labels only. Upstream builds a
  Node with nothing but the labels, so `matchFields` (metadata.name) are never
  compared: a term is its matchExpressions (a term with matchFields only
  matches every node), a term that does not parse matches nothing, and
  required terms that are all empty match no node.
* A StorageClass's `allowedTopologies` (MatchTopologySelectorTerms): no terms
  match every node; each term's label requirements are `In`, ANDed; terms ORed.
* A CSIStorageCapacity's `nodeTopology` label selector.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from kubesched.api import labels
from kubesched.api.node_affinity import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    LabelRequirement,
    ParsedTerm,
    is_empty_term,
    node_matches_term,
    parse_term,
)
from kubesched.api.objects import (
    LabelSelector,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PersistentVolume,
    TopologySelectorTerm,
)
from kubesched.framework.state.node_table import BoolArray, NodeTable, Rows
from kubesched.plugins.helpers.selectors import match_label_requirement

_CACHE_SIZE = 4096
# id(required NodeSelector) -> (the selector, its parsed terms): PVs are never mutated.
_affinity_cache: dict[int, tuple[object, tuple[ParsedTerm, ...]]] = {}


def pv_affinity_terms(pv: PersistentVolume) -> tuple[ParsedTerm, ...] | None:
    """The PV's required node affinity, parsed; None when it has none (every node fits)."""
    affinity = pv.spec.node_affinity
    if affinity is None or affinity.required is None:
        return None
    required = affinity.required
    cached = _affinity_cache.get(id(required))
    if cached is not None and cached[0] is required:
        return cached[1]
    terms = tuple(
        _labels_only(parse_term(term))
        for term in required.node_selector_terms
        if not is_empty_term(term)
    )
    if len(_affinity_cache) >= _CACHE_SIZE:
        del _affinity_cache[next(iter(_affinity_cache))]
    _affinity_cache[id(required)] = (required, terms)
    return terms


def _labels_only(term: ParsedTerm) -> ParsedTerm:
    if term.errors:
        return term
    return ParsedTerm(term.expressions, (), ())


def _match_labels_term(table: NodeTable, rows: Rows, term: ParsedTerm) -> BoolArray:
    if term.errors:
        return np.zeros(len(rows), dtype=np.bool_)
    mask = np.ones(len(rows), dtype=np.bool_)
    for req in term.expressions:
        mask &= match_label_requirement(table, rows, req)
    return mask


def match_terms_on_labels(table: NodeTable, rows: Rows, terms: Sequence[ParsedTerm]) -> BoolArray:
    """Terms ORed, each matched on the labels only (an expression-less term: every node)."""
    mask = np.zeros(len(rows), dtype=np.bool_)
    for term in terms:
        mask |= _match_labels_term(table, rows, term)
    return mask


def match_pv_node_affinity(table: NodeTable, rows: Rows, pv: PersistentVolume) -> BoolArray:
    """CheckNodeAffinity(pv, node.Labels) == nil, for every row."""
    terms = pv_affinity_terms(pv)
    if terms is None:
        return np.ones(len(rows), dtype=np.bool_)
    return match_terms_on_labels(table, rows, terms)


def pv_matches_labels(pv: PersistentVolume, labels: Mapping[str, str]) -> bool:
    """CheckNodeAffinity(pv, labels) == nil, for one node."""
    terms = pv_affinity_terms(pv)
    if terms is None:
        return True
    node = Node()
    node.metadata.labels = dict(labels)
    return any(
        not term.errors and (not term.expressions or node_matches_term(node, term))
        for term in terms
    )


def parse_topology_terms(terms: Sequence[TopologySelectorTerm]) -> tuple[ParsedTerm, ...] | None:
    """allowedTopologies as parsed terms; None when there are none (every node fits).
    Terms without expressions match nothing (they are left out)."""
    if not terms:
        return None
    parsed = []
    for term in terms:
        if not term.match_label_expressions:
            continue
        parsed.append(
            parse_term(
                NodeSelectorTerm(
                    match_expressions=[
                        NodeSelectorRequirement(key=e.key, operator="In", values=list(e.values))
                        for e in term.match_label_expressions
                    ]
                )
            )
        )
    return tuple(parsed)


def match_topology_terms(
    table: NodeTable, rows: Rows, terms: Sequence[TopologySelectorTerm]
) -> BoolArray:
    """MatchTopologySelectorTerms(terms, node labels) for every row."""
    parsed = parse_topology_terms(terms)
    if parsed is None:
        return np.ones(len(rows), dtype=np.bool_)
    return match_terms_on_labels(table, rows, parsed)


# labels.Selector's operator spelling -> the NodeSelectorRequirement operator matched column-wise.
_NODE_OPERATOR = {
    labels.EQUALS: IN,
    labels.IN: IN,
    labels.NOT_IN: NOT_IN,
    labels.EXISTS: EXISTS,
    labels.DOES_NOT_EXIST: DOES_NOT_EXIST,
}


def match_label_selector(table: NodeTable, rows: Rows, selector: LabelSelector) -> BoolArray:
    """metav1.LabelSelectorAsSelector(selector).Matches(node labels) for every row;
    a selector that does not parse matches no node."""
    try:
        parsed = labels.label_selector_as_selector(selector)
    except labels.SelectorError:
        return np.zeros(len(rows), dtype=np.bool_)
    mask = np.ones(len(rows), dtype=np.bool_)
    for req in parsed.requirements:
        as_node = LabelRequirement(req.key, _NODE_OPERATOR[req.operator], tuple(sorted(req.values)))
        mask &= match_label_requirement(table, rows, as_node)
    return mask
