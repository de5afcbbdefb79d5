"""What PodTopologySpread's filtering and scoring share: constraints, args, Go arithmetic."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesched.api.labels import Selector, label_selector_as_selector
from kubesched.api.node_affinity import RequiredNodeAffinity
from kubesched.api.objects import LabelSelector, Node, Pod, TopologySpreadConstraint
from kubesched.api.taints import do_not_schedule_taints, find_matching_untolerated_taint
from kubesched.api.workloads import stand_in_selector
from kubesched.framework.state.node_table import BoolArray, NodeTable, Rows
from kubesched.plugins.helpers.selectors import required_affinity_rows
from kubesched.plugins.helpers.taints import per_taint_set
from kubesched.plugins.podtopologyspread.args import SYSTEM_DEFAULTING, PodTopologySpreadArgs

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
MAX_INT32 = 2**31 - 1

SYSTEM_DEFAULT_CONSTRAINTS = (
    TopologySpreadConstraint(
        max_skew=3, topology_key=LABEL_HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
    TopologySpreadConstraint(
        max_skew=5, topology_key=LABEL_TOPOLOGY_ZONE, when_unsatisfiable=SCHEDULE_ANYWAY
    ),
)

# The controllers whose selector the default constraints use (group/version, kind).
RC_KIND = ("v1", "ReplicationController")
RS_KIND = ("apps/v1", "ReplicaSet")
SS_KIND = ("apps/v1", "StatefulSet")
SERVICE_KIND = "Service"


@dataclass(frozen=True, slots=True)
class Constraint:
    """topologySpreadConstraint: a v1.TopologySpreadConstraint with its selector parsed."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE


def filter_constraints(
    constraints: Sequence[TopologySpreadConstraint],
    pod_labels: Mapping[str, str],
    action: str,
) -> list[Constraint]:
    """filterTopologySpreadConstraints: the constraints with `action`, matchLabelKeys merged.

    Raises SelectorError for a label selector that does not parse.
    """
    result: list[Constraint] = []
    for c in constraints:
        if c.when_unsatisfiable != action:
            continue
        selector = label_selector_as_selector(c.label_selector)
        if c.match_label_keys:
            match_labels = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if match_labels:
                selector = merge_label_set_with_selector(match_labels, selector)
        result.append(
            Constraint(
                max_skew=c.max_skew,
                topology_key=c.topology_key,
                selector=selector,
                min_domains=1 if c.min_domains is None else c.min_domains,
                node_affinity_policy=c.node_affinity_policy or HONOR,
                node_taints_policy=c.node_taints_policy or IGNORE,
            )
        )
    return result


def merge_label_set_with_selector(labels: Mapping[str, str], selector: Selector) -> Selector:
    """mergeLabelSetWithSelector: Nothing stays Nothing (it has no Requirements)."""
    if selector.nothing:
        return selector
    return Selector.from_set(labels).add(*selector.requirements)


def has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints."""
    return all(c.topology_key in labels for c in constraints)


def rows_with_all_keys(
    nodes: NodeTable, rows: Rows, constraints: Sequence[Constraint]
) -> BoolArray:
    mask = np.ones(len(rows), dtype=np.bool_)
    for c in constraints:
        column = nodes.labels.get(c.topology_key)
        if column is None:
            return np.zeros(len(rows), dtype=np.bool_)
        mask &= column.codes[rows] >= 0
    return mask


def included_rows(
    nodes: NodeTable,
    rows: Rows,
    constraints: Sequence[Constraint],
    pod: Pod,
    required: RequiredNodeAffinity,
    *,
    require_all_keys: bool = True,
) -> list[BoolArray]:
    """Per constraint, the rows whose pods count (matchNodeInclusionPolicies), and which
    carry every topology key when `require_all_keys`."""
    base = (
        rows_with_all_keys(nodes, rows, constraints)
        if require_all_keys
        else np.ones(len(rows), dtype=np.bool_)
    )
    affinity_ok: BoolArray | None = None
    taints_ok: BoolArray | None = None
    masks: list[BoolArray] = []
    for c in constraints:
        mask = base
        if c.node_affinity_policy == HONOR:
            if affinity_ok is None:
                affinity_ok = required_affinity_rows(required, nodes, rows)
            mask = mask & affinity_ok
        if c.node_taints_policy == HONOR:
            if taints_ok is None:
                taints_ok = untolerated_rows(nodes, rows, pod) == 0
            mask = mask & taints_ok
        masks.append(mask)
    return masks


def untolerated_rows(nodes: NodeTable, rows: Rows, pod: Pod) -> npt.NDArray[np.int64]:
    """1 where the node has a NoSchedule/NoExecute taint the pod does not tolerate."""
    tolerations = pod.spec.tolerations
    return per_taint_set(
        nodes,
        rows,
        lambda taints: int(
            find_matching_untolerated_taint(taints, tolerations, do_not_schedule_taints) is not None
        ),
    ).astype(np.int64)


def node_included(
    constraint: Constraint, pod: Pod, node: Node, required: RequiredNodeAffinity
) -> bool:
    """matchNodeInclusionPolicies for one node (parse errors ignored, as upstream)."""
    if constraint.node_affinity_policy == HONOR and not required.matches(node):
        return False
    return not (
        constraint.node_taints_policy == HONOR
        and find_matching_untolerated_taint(
            node.spec.taints, pod.spec.tolerations, do_not_schedule_taints
        )
        is not None
    )


# --- the default constraints' selector ---------------------------------------------------


def controller_of(pod: Pod) -> tuple[str, str, str] | None:
    """metav1.GetControllerOfNoCopy: (apiVersion, kind, name) of the controller, if any."""
    for ref in pod.metadata.owner_references:
        if ref.controller:
            return ref.api_version, ref.kind, ref.name
    return None


def default_selector(
    pod: Pod, workload_selectors: Mapping[tuple[str, str, str], LabelSelector] | None
) -> Selector:
    """helper.DefaultSelector: the selectors of the Services selecting the pod and of its
    ReplicationController, ReplicaSet or StatefulSet, ANDed.

    With `workload_selectors` None (those objects are not known), the pod's own
    labels (api.workloads.stand_in_selector) stand in for its controller's selector, for pods
    controlled by one of those kinds; Services are then not considered.
    """
    namespace = pod.metadata.namespace
    labels = pod.metadata.labels
    owner = controller_of(pod)
    if workload_selectors is None:
        if owner is None or owner[:2] not in (RC_KIND, RS_KIND, SS_KIND):
            return Selector()
        return Selector.from_set(stand_in_selector(labels).match_labels)

    label_set: dict[str, str] = {}
    for (ns, kind, _name), selector in workload_selectors.items():
        if kind != SERVICE_KIND or ns != namespace or not selector.match_labels:
            continue  # services with nil selectors match nothing
        if Selector.from_set(selector.match_labels).matches(labels):
            label_set.update(selector.match_labels)
    result = Selector.from_set(label_set)
    if owner is None:
        return result
    api_version, kind, name = owner
    found = workload_selectors.get((namespace, kind, name))
    if found is None:
        return result
    if (api_version, kind) == RC_KIND:
        label_set.update(found.match_labels)
        return Selector.from_set(label_set)
    if (api_version, kind) in (RS_KIND, SS_KIND):
        try:
            other = label_selector_as_selector(found)
        except ValueError:
            return result
        return result.add(*other.requirements)  # Nothing has no requirements to add
    return result


# --- args --------------------------------------------------------------------------------


def default_constraints(
    args: PodTopologySpreadArgs,
) -> tuple[list[TopologySpreadConstraint], bool]:
    """The constraints for pods that set none, and whether they are the system's
    defaults (what New does with the args upstream)."""
    if args.defaulting_type == SYSTEM_DEFAULTING:
        return list(SYSTEM_DEFAULT_CONSTRAINTS), True
    return list(args.default_constraints), False


# --- Go float arithmetic -----------------------------------------------------------------

# math.Log as Go computes it on amd64 (log_amd64.s, FreeBSD's e_log.c without FMA):
# it differs from the C library's log by one ulp for about 1% of integers, which
# can move a rounded score by one.
_HALF_SQRT2 = 7.07106781186547524401e-01
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_L1 = 6.666666666666735130e-01
_L2 = 3.999999999940941908e-01
_L3 = 2.857142874366239149e-01
_L4 = 2.222219843214978396e-01
_L5 = 1.818357216161805012e-01
_L6 = 1.531383769920937332e-01
_L7 = 1.479819860511658591e-01


def go_log(x: float) -> float:
    """Go's math.Log for a positive finite x."""
    if not (0 < x < math.inf):
        raise ValueError(f"go_log: {x} is not positive and finite")
    f1, ki = math.frexp(x)
    k = float(ki)
    if f1 <= _HALF_SQRT2:  # the assembly's "not less than" compare
        k -= 1.0
        f1 *= 2.0
    f = f1 - 1.0
    s = f / (2.0 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def topology_normalizing_weight(size: int) -> float:
    """topologyNormalizingWeight: log(size + 2)."""
    return go_log(float(size + 2))


def go_round(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """math.Round (half away from zero) for non-negative values, exactly: the
    fraction x - floor(x) is exact in binary floating point."""
    floor = np.floor(values)
    rounded: npt.NDArray[np.float64] = floor + (values - floor >= 0.5)
    return rounded
