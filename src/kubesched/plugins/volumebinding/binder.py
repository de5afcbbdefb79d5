"""The volume binder (volumebinding/binder.go): which claims a pod has, which volumes
can serve them on which node, and the assume / bind steps.

FindPodVolumes is answered for all candidate nodes at once: the pod's claims are
few and the nodes many, so each claim is walked once and every node's answer
is a numpy mask or an array of chosen volumes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import msgspec
import numpy as np
import numpy.typing as npt

from kubesched.api.labels import SelectorError, label_selector_as_selector
from kubesched.api.node_affinity import IN
from kubesched.api.objects import PersistentVolume, PersistentVolumeClaim, Pod
from kubesched.api.volumes import (
    ANN_SELECTED_NODE,
    FILESYSTEM,
    NOT_SUPPORTED_PROVISIONER,
    STORAGE,
    VOLUME_AVAILABLE,
    WAIT_FOR_FIRST_CONSUMER,
    access_modes_match,
    claim_class,
    claim_of,
    go_quote,
    is_claim_fully_bound,
    quantity,
    selector_matches,
    storage_request,
    volume_capacity,
    volume_class,
    volume_is_for_pod,
)
from kubesched.framework.state.node_table import BoolArray, NodeTable, Rows
from kubesched.framework.state.storage import StorageState
from kubesched.plugins.helpers.volumes import (
    match_label_selector,
    match_pv_node_affinity,
    match_topology_terms,
    pv_affinity_terms,
)

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)

IntpArray = npt.NDArray[np.intp]


class BinderError(Exception):
    """What upstream returns as an error (the plugin answers with an Error status)."""


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    # storage class -> the PVs of that class (assumed versions), for the delayed claims
    unbound_volumes: dict[str, list[PersistentVolume]] = field(default_factory=dict)


@dataclass(slots=True)
class PodVolumes:
    """What Reserve assumes and PreBind writes for one node."""

    static_bindings: list[tuple[PersistentVolume, PersistentVolumeClaim]] = field(
        default_factory=list
    )
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)


@dataclass(slots=True)
class Evaluation:
    """FindPodVolumes for the rows of one Filter call.

    `matched[j][i]` is the index (in `candidates[j]`) of the PV chosen for
    `to_match[j]` on rows[i], or -1; claims in `fixed` (selected-node set) and
    unmatched ones are to be provisioned.
    """

    rows: Rows
    fixed: list[PersistentVolumeClaim]
    to_match: list[PersistentVolumeClaim]
    candidates: list[list[PersistentVolume]]
    matched: list[IntpArray]

    def pod_volumes(self, position: int) -> PodVolumes:
        volumes = PodVolumes(dynamic_provisions=list(self.fixed))
        for claim, pvs, chosen in zip(self.to_match, self.candidates, self.matched, strict=True):
            pick = int(chosen[position])
            if pick >= 0:
                volumes.static_bindings.append((pvs[pick], claim))
            else:
                volumes.dynamic_provisions.append(claim)
        return volumes


@dataclass(slots=True)
class Verdicts:
    node_conflict: BoolArray
    bind_conflict: BoolArray
    not_enough_space: BoolArray
    pv_not_exist: BoolArray
    evaluation: Evaluation

    def failed(self) -> BoolArray:
        failed: BoolArray = (
            self.node_conflict | self.bind_conflict | self.not_enough_space | self.pv_not_exist
        )
        return failed


def _is_delay_binding_mode(storage: StorageState, claim: PersistentVolumeClaim) -> bool:
    """volume.IsDelayBindingMode; raises BinderError when the class has no binding mode."""
    class_name = claim_class(claim)
    if not class_name:
        return False
    sc = storage.storage_classes.get(class_name)
    if sc is None:
        return False
    if sc.volume_binding_mode is None:
        raise BinderError(f"VolumeBindingMode not set for StorageClass {go_quote(class_name)}")
    return sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER


def get_pod_volume_claims(storage: StorageState, pod: Pod) -> PodVolumeClaims:
    """GetPodVolumeClaims: the pod's claims by binding state (assumed versions)."""
    claims = PodVolumeClaims()
    namespace = pod.metadata.namespace
    for volume in pod.spec.volumes:
        found = claim_of(pod, volume)
        if found is None:
            continue
        name, ephemeral = found
        key = f"{namespace}/{name}"
        claim = storage.assumed_pvc(key)
        if claim is None:
            raise BinderError(
                f"error getting PVC {go_quote(key)}: persistentvolumeclaims {go_quote(key)} "
                f"not found"
            )
        if ephemeral:
            problem = volume_is_for_pod(pod, claim)
            if problem is not None:
                raise BinderError(problem)
        if is_claim_fully_bound(claim):
            claims.bound.append(claim)
        elif _is_delay_binding_mode(storage, claim) and not claim.spec.volume_name:
            claims.unbound_delay_binding.append(claim)
        else:
            # Immediate binding (or pre-bound): the PV controller should have bound it.
            claims.unbound_immediate.append(claim)
    for claim in claims.unbound_delay_binding:
        class_name = claim_class(claim)
        claims.unbound_volumes[class_name] = storage.pvs_of_class(class_name)
    return claims


def are_pod_volumes_bound(storage: StorageState, pod: Pod) -> bool:
    """arePodVolumesBound: every claim of the pod is fully bound (assumed versions)."""
    for volume in pod.spec.volumes:
        found = claim_of(pod, volume)
        if found is None:
            continue
        name, ephemeral = found
        claim = storage.assumed_pvc(f"{pod.metadata.namespace}/{name}")
        if claim is None or not is_claim_fully_bound(claim):
            return False
        if ephemeral and volume_is_for_pod(pod, claim) is not None:
            return False
    return True


class _AffinityMasks:
    """PV node affinity per row, computed once per Filter call."""

    def __init__(self, table: NodeTable, rows: Rows) -> None:
        self.table = table
        self.rows = rows
        self.masks: dict[int, BoolArray] = {}

    def __call__(self, pv: PersistentVolume) -> BoolArray:
        found = self.masks.get(id(pv))
        if found is None:
            found = self.masks[id(pv)] = match_pv_node_affinity(self.table, self.rows, pv)
        return found


def find_pod_volumes(
    storage: StorageState,
    claims: PodVolumeClaims,
    table: NodeTable,
    rows: Rows,
) -> Verdicts:
    """FindPodVolumes for every row at once; raises BinderError where upstream errors."""
    n = len(rows)
    node_conflict = np.zeros(n, dtype=np.bool_)
    bind_conflict = np.zeros(n, dtype=np.bool_)
    not_enough_space = np.zeros(n, dtype=np.bool_)
    pv_not_exist = np.zeros(n, dtype=np.bool_)
    affinity = _AffinityMasks(table, rows)

    # checkBoundClaims: the first claim whose PV is missing stops the check.
    if claims.bound:
        active = np.ones(n, dtype=np.bool_)
        for claim in claims.bound:
            pv = storage.assumed_pv(claim.spec.volume_name)
            if pv is None:
                pv_not_exist |= active
                break
            fits = affinity(pv)
            node_conflict |= active & ~fits
            active &= fits

    fixed: list[PersistentVolumeClaim] = []
    to_match: list[PersistentVolumeClaim] = []
    candidates: list[list[PersistentVolume]] = []
    matched: list[IntpArray] = []
    if claims.unbound_delay_binding:
        # Claims with a selected node may only go there (the fast path rejects the rest).
        go = np.ones(n, dtype=np.bool_)
        for claim in claims.unbound_delay_binding:
            selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is None:
                to_match.append(claim)
                continue
            fixed.append(claim)
            row = table.row_of(selected)
            go &= np.zeros(n, dtype=np.bool_) if row is None else rows == row
        bind_conflict |= ~go
        if to_match:
            # Smallest requests first (sort.Sort: stable for the few claims a pod has).
            to_match.sort(key=storage_request)
            candidates, matched = _find_matching_volumes(claims, to_match, n, affinity)
        satisfied, sufficient = _check_volume_provisions(
            storage, table, rows, go, fixed, to_match, matched
        )
        bind_conflict |= go & ~satisfied
        not_enough_space |= go & ~sufficient
    evaluation = Evaluation(rows, fixed, to_match, candidates, matched)
    return Verdicts(node_conflict, bind_conflict, not_enough_space, pv_not_exist, evaluation)


_NO_PV = np.iinfo(np.intp).max
# How a PV's node affinity reads (see _affinity_shape); no label key looks like these.
_ALL, _NONE, _GENERAL = "<all>", "<none>", "<general>"


def _affinity_shape(pv: PersistentVolume) -> tuple[str, ...]:
    """(_ALL,): every node; (_NONE,): no node; (key, value...): the node's label `key` is
    one of the values (a local volume's hostname, a zone); (_GENERAL,): anything else."""
    terms = pv_affinity_terms(pv)
    if terms is None:
        return (_ALL,)
    if not terms:
        return (_NONE,)
    if len(terms) == 1:
        term = terms[0]
        if term.errors:
            return (_NONE,)
        if not term.expressions:
            return (_ALL,)
        if len(term.expressions) == 1 and term.expressions[0].operator == IN:
            req = term.expressions[0]
            return (req.key, *req.values)
    return (_GENERAL,)


Size = int | Fraction
# id(PV) -> (the PV, its capacity, its affinity shape): PVs are replaced, never changed.
_facts: dict[int, tuple[object, Size, tuple[str, ...]]] = {}


def _exact(size: Fraction) -> Size:
    """An integral size as an int: comparisons are exact either way, ints are faster."""
    return size.numerator if size.denominator == 1 else size


def _pv_facts(pv: PersistentVolume) -> tuple[Size, tuple[str, ...]]:
    found = _facts.get(id(pv))
    if found is not None and found[0] is pv:
        return found[1], found[2]
    if len(_facts) >= 65536:
        _facts.clear()
    size, shape = _exact(volume_capacity(pv)), _affinity_shape(pv)
    _facts[id(pv)] = (pv, size, shape)
    return size, shape


def _ranked_volumes(
    claim: PersistentVolumeClaim, pvs: list[PersistentVolume]
) -> tuple[list[PersistentVolume], list[PersistentVolume]]:
    """FindMatchingVolume's node-independent checks: the PVs pre-bound to the claim
    (in list order) and the other candidates, smallest first (then in list order).
    The checks are those of volume_can_serve and the rest, cheapest first."""
    requested = _exact(storage_request(claim))
    requested_class = claim_class(claim)
    selector = claim.spec.selector
    meta = claim.metadata
    name, namespace, uid = meta.name, meta.namespace, meta.uid
    mode = claim.spec.volume_mode or FILESYSTEM
    attributes_class = claim.spec.volume_attributes_class_name or ""
    prebound: list[PersistentVolume] = []
    ranked: list[tuple[Size, int, PersistentVolume]] = []
    for i, pv in enumerate(pvs):
        spec = pv.spec
        ref = spec.claim_ref
        if ref is not None:
            if ref.name != name or ref.namespace != namespace or (ref.uid and ref.uid != uid):
                continue  # claimed by another claim
        elif pv.status.phase != VOLUME_AVAILABLE:
            continue
        size = _pv_facts(pv)[0]
        if (
            size < requested
            or (spec.volume_mode or FILESYSTEM) != mode
            or (spec.volume_attributes_class_name or "") != attributes_class
            or pv.metadata.deletion_timestamp is not None
        ):
            continue
        if ref is not None:
            prebound.append(pv)
        elif (
            volume_class(pv) == requested_class
            and access_modes_match(claim, pv)
            and (selector is None or selector_matches(selector, pv.metadata.labels))
        ):
            ranked.append((size, i, pv))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return prebound, [pv for _, _, pv in ranked]


def _find_matching_volumes(
    claims: PodVolumeClaims,
    to_match: list[PersistentVolumeClaim],
    n: int,
    affinity: _AffinityMasks,
) -> tuple[list[list[PersistentVolume]], list[IntpArray]]:
    """findMatchingVolumes: per claim (in order) and row, the PV volume.FindMatchingVolume
    picks; PVs picked for earlier claims on a row are not picked again there.

    Per row the answer is the first candidate (pre-bound PVs first, then by size)
    whose node affinity the node matches and that no earlier claim took there. PVs
    whose affinity is one `key In (values)` expression (local volumes, zones) are
    looked up by the node's label instead of matched one by one."""
    table, rows = affinity.table, affinity.rows
    global_ids: dict[str, int] = {}
    all_candidates: list[list[PersistentVolume]] = []
    all_matched: list[IntpArray] = []
    earlier_ids: list[IntpArray] = []  # per earlier claim: the global id chosen per row
    for claim in to_match:
        selector = claim.spec.selector
        if selector is not None:
            try:
                label_selector_as_selector(selector)
            except SelectorError as exc:
                raise BinderError(
                    f"error creating internal label selector for claim: {claim.key}: {exc}"
                ) from exc
        prebound, ranked = _ranked_volumes(
            claim, claims.unbound_volumes.get(claim_class(claim), [])
        )
        candidates = prebound + ranked
        ids = np.array(
            [global_ids.setdefault(pv.metadata.name, len(global_ids)) for pv in candidates]
            + [-2],  # for _NO_PV
            dtype=np.intp,
        )

        def excluded(picks: IntpArray, ids: IntpArray = ids) -> BoolArray:
            chosen = ids[np.where(picks == _NO_PV, len(ids) - 1, picks)]
            out = np.zeros(n, dtype=np.bool_)
            for taken in earlier_ids:
                out |= taken == chosen
            return out

        result = np.full(n, -1, dtype=np.intp)
        # A PV pre-bound to the claim decides where it is reached (not taken): there it
        # is the match if the node fits, and nothing else is considered.
        decided = np.zeros(n, dtype=np.bool_)
        for index, pv in enumerate(prebound):
            free = ~decided & ~excluded(np.full(n, index, dtype=np.intp))
            result[free & affinity(pv)] = index
            decided |= free

        best = np.full(n, _NO_PV, dtype=np.intp)
        by_key: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        general: list[int] = []
        for index in range(len(prebound), len(candidates)):
            shape = _pv_facts(candidates[index])[1]
            if shape[0] == _NONE:
                continue
            if shape[0] == _GENERAL:
                general.append(index)
            elif shape[0] == _ALL:
                by_key.setdefault("", []).append((index, ()))
            else:
                by_key.setdefault(shape[0], []).append((index, shape[1:]))
        depth = len(earlier_ids) + 1  # each earlier claim takes at most one PV per row
        for key, members in by_key.items():
            best = np.minimum(
                best, _first_free_by_label(table, rows, key, members, depth, excluded)
            )
        if general:
            picked = np.full(n, _NO_PV, dtype=np.intp)
            open_rows = ~decided
            for index in general:
                if not open_rows.any():
                    break
                fits = (
                    open_rows
                    & affinity(candidates[index])
                    & ~excluded(np.full(n, index, dtype=np.intp))
                )
                picked[fits] = index
                open_rows &= ~fits
            best = np.minimum(best, picked)
        take = ~decided & (best != _NO_PV)
        result[take] = best[take]
        all_candidates.append(candidates)
        all_matched.append(result)
        earlier_ids.append(np.where(result >= 0, ids[result], -1))
    return all_candidates, all_matched


def _first_free_by_label(
    table: NodeTable,
    rows: Rows,
    key: str,
    members: list[tuple[int, tuple[str, ...]]],
    depth: int,
    excluded: Callable[[IntpArray], BoolArray],
) -> IntpArray:
    """Per row, the first member (members are in rank order) whose values hold the
    row's label `key` ("" : members that fit every node) and that is not excluded."""
    n = len(rows)
    if key:
        column = table.label(key)
        if column is None:
            return np.full(n, _NO_PV, dtype=np.intp)
        size = len(column.values) + 1  # the last slot: rows without the label
        codes = column.codes[rows].astype(np.intp)
        codes[codes < 0] = size - 1
        vocab = column.vocab
        pairs = [(vocab.get(value, -1), index) for index, values in members for value in values]
        lists: dict[int, list[int]] = {}
        if depth == 1 and pairs:
            # The first member per label value (members come in rank order).
            found_codes = np.fromiter((c for c, _ in pairs), dtype=np.intp, count=len(pairs))
            found_index = np.fromiter((i for _, i in pairs), dtype=np.intp, count=len(pairs))
            known = found_codes >= 0
            unique, first = np.unique(found_codes[known], return_index=True)
            firsts = np.full((size, 1), _NO_PV, dtype=np.intp)
            firsts[unique, 0] = found_index[known][first]
            first_pick: IntpArray = firsts[codes, 0]
            return first_pick
        for code, index in pairs:
            if code < 0:
                continue
            found = lists.setdefault(code, [])
            if len(found) < depth and (not found or found[-1] != index):
                found.append(index)
    else:
        size = 1
        codes = np.zeros(n, dtype=np.intp)
        lists = {0: [index for index, _ in members[:depth]]}
    firsts = np.full((size, depth), _NO_PV, dtype=np.intp)
    for code, found in lists.items():
        firsts[code, : len(found)] = found
    picked = np.full(n, _NO_PV, dtype=np.intp)
    for level in range(depth):
        candidate = firsts[codes, level]
        fits = (picked == _NO_PV) & (candidate != _NO_PV)
        if depth > 1:
            fits &= ~excluded(candidate)
        picked[fits] = candidate[fits]
    return picked


def _check_volume_provisions(
    storage: StorageState,
    table: NodeTable,
    rows: Rows,
    go: BoolArray,
    fixed: list[PersistentVolumeClaim],
    to_match: list[PersistentVolumeClaim],
    matched: list[IntpArray],
) -> tuple[BoolArray, BoolArray]:
    """checkVolumeProvisions over the claims each row has to provision (fixed ones
    first, then the unmatched in request order): (satisfied, sufficient storage)."""
    n = len(rows)
    satisfied = np.ones(n, dtype=np.bool_)
    sufficient = np.ones(n, dtype=np.bool_)
    active = go.copy()
    work = [(claim, go) for claim in fixed]
    work += [(claim, go & (chosen < 0)) for claim, chosen in zip(to_match, matched, strict=True)]
    for claim, wanted in work:
        here = active & wanted
        if not here.any():
            continue
        class_name = claim_class(claim)
        if not class_name:
            raise BinderError(f"no class for claim {go_quote(claim.key)}")
        sc = storage.storage_classes.get(class_name)
        if sc is None:
            raise BinderError(f"failed to find storage class {go_quote(class_name)}")
        if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
            satisfied &= ~here
            active &= ~here
            continue
        outside = here & ~match_topology_terms(table, rows, sc.allowed_topologies)
        satisfied &= ~outside
        active &= ~outside
        here &= ~outside
        short = here & ~_has_enough_capacity(
            storage, table, rows, claim, sc.provisioner, class_name
        )
        sufficient &= ~short
        active &= ~short
    return satisfied, sufficient


def _has_enough_capacity(
    storage: StorageState,
    table: NodeTable,
    rows: Rows,
    claim: PersistentVolumeClaim,
    provisioner: str,
    class_name: str,
) -> BoolArray:
    """hasEnoughCapacity for every row: CSI drivers that opt into storage capacity
    tracking need a CSIStorageCapacity of the class, large enough, covering the node."""
    n = len(rows)
    requested = claim.spec.resources.requests.get(STORAGE)
    if requested is None:
        return np.ones(n, dtype=np.bool_)
    driver = storage.csi_drivers.get(provisioner)
    if driver is None or not driver.spec.storage_capacity:
        return np.ones(n, dtype=np.bool_)
    size = quantity(requested)
    size_bytes = int(-(-size // 1))  # Quantity.Value() rounds up
    enough = np.zeros(n, dtype=np.bool_)
    for capacity in storage.capacities.values():
        if capacity.storage_class_name != class_name or capacity.node_topology is None:
            continue
        limit = (
            capacity.maximum_volume_size
            if capacity.maximum_volume_size is not None
            else capacity.capacity
        )
        if limit is None or int(-(-quantity(limit) // 1)) < size_bytes:
            continue
        enough |= match_label_selector(table, rows, capacity.node_topology)
    return enough


def with_selected_node(claim: PersistentVolumeClaim, node_name: str) -> PersistentVolumeClaim:
    annotations = {**claim.metadata.annotations, ANN_SELECTED_NODE: node_name}
    return msgspec.structs.replace(
        claim, metadata=msgspec.structs.replace(claim.metadata, annotations=annotations)
    )
