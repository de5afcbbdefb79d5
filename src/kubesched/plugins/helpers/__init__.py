"""Shared helpers for the built-in plugins: column-wise selectors, taints, score normalization.

The one-node rules they apply column-wise live in kubesched.api (labels,
node_affinity, taints); they are re-exported here so that plugins find them
in one place.
"""

from kubesched.api.labels import parse_int64
from kubesched.api.node_affinity import (
    FieldRequirement,
    LabelRequirement,
    ParsedTerm,
    PreferredTerms,
    RequiredNodeAffinity,
    node_matches_selector,
    node_matches_term,
    node_matches_terms,
    parse_node_selector,
    parse_preferred_terms,
    parse_term,
    parse_terms,
    required_node_affinity,
)
from kubesched.api.taints import (
    do_not_schedule_taints,
    find_matching_untolerated_taint,
    tolerates,
    tolerations_tolerate_taint,
)
from kubesched.plugins.helpers.normalize import default_normalize_score
from kubesched.plugins.helpers.selectors import (
    match_node_selector,
    match_node_selector_terms,
    match_term,
    preferred_score_rows,
    required_affinity_rows,
)
from kubesched.plugins.helpers.taints import per_taint_set

__all__ = [
    "FieldRequirement",
    "LabelRequirement",
    "ParsedTerm",
    "PreferredTerms",
    "RequiredNodeAffinity",
    "default_normalize_score",
    "do_not_schedule_taints",
    "find_matching_untolerated_taint",
    "match_node_selector",
    "match_node_selector_terms",
    "match_term",
    "node_matches_selector",
    "node_matches_term",
    "node_matches_terms",
    "parse_int64",
    "parse_node_selector",
    "parse_preferred_terms",
    "parse_term",
    "parse_terms",
    "per_taint_set",
    "preferred_score_rows",
    "required_affinity_rows",
    "required_node_affinity",
    "tolerates",
    "tolerations_tolerate_taint",
]
