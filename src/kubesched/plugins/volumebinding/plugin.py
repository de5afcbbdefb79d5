"""VolumeBinding: a pod's PersistentVolumeClaims must be bound, or bindable, on the node.

PreFilter sorts the pod's claims (bound; unbound waiting for a consumer;
unbound that should already be bound) and rejects pods whose Immediate claims
are not bound yet. Filter checks bound claims' PV node affinity, and finds for
each unbound claim an available PV that fits the node or a StorageClass that
can provision there (allowedTopologies, CSI storage capacity). Reserve assumes
the choice so the next pods see it; PreBind makes it real, as upstream: it
writes the PV's claimRef and the claim's selected-node annotation through the
storage's VolumeWriter (the API server in `run`, the in-memory cluster in
`simulate`) and waits for the PV controller to finish.

Score is the StorageCapacityScoring feature, alpha and off by default in 1.36:
PreScore always skips.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from kubesched.api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from kubesched.api.volumes import (
    ANN_SELECTED_NODE,
    CLAIM_LOST,
    MIGRATED_PLUGINS_ANNOTATION,
    bind_volume_to_claim,
    claim_of,
    compare_resource_versions,
    go_quote,
    is_claim_fully_bound,
    not_found,
    quantity,
    volume_is_for_pod,
)
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import (
    ClusterEventWithHint,
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.signature import VOLUMES_SIGNER, SignFragment, SignPlugin, volumes_signer
from kubesched.framework.state.node_table import BoolArray, IntArray, NodeTable, Rows
from kubesched.framework.status import Code, Status
from kubesched.framework.types import ActionType, ClusterEvent, PodInfo, Resource
from kubesched.plugins.helpers.args import raw_args
from kubesched.plugins.helpers.volumes import pv_matches_labels
from kubesched.plugins.volumebinding.args import VolumeBindingArgs, volume_binding_args
from kubesched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BinderError,
    Evaluation,
    PodVolumeClaims,
    PodVolumes,
    are_pod_volumes_bound,
    find_pod_volumes,
    get_pod_volume_claims,
    with_selected_node,
)

if TYPE_CHECKING:
    from kubesched.framework.handle import Handle
    from kubesched.framework.state.storage import StorageState, VolumeWriter

NAME = "VolumeBinding"
STATE_KEY = NAME
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
POLL_INTERVAL_SECONDS = 1.0


@dataclass(slots=True)
class _State:
    """stateData: what PreFilter found, Filter's choice per node, Reserve's assumptions."""

    claims: PodVolumeClaims | None = None
    # Filter's evaluations, each with the mask (aligned to its rows) of the nodes it passed
    evaluations: list[tuple[Evaluation, BoolArray]] = field(default_factory=list)
    # node name -> what Reserve assumed there
    reserved: dict[str, PodVolumes] = field(default_factory=dict)
    all_bound: bool = False
    has_static_bindings: bool = False


class VolumeBindingError(Exception):
    pass


class VolumeBinding(
    SignPlugin,
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
):
    """Args (VolumeBindingArgs): `bindTimeoutSeconds` (default 600), how long PreBind
    waits in `run` for the PV controller to complete the binding."""

    name = NAME
    args_decoder = staticmethod(volume_binding_args)
    uses_storage: ClassVar[bool] = True

    def __init__(
        self,
        args: Mapping[str, Any] | VolumeBindingArgs | None = None,
        handle: Handle | None = None,
    ):
        super().__init__(raw_args(args), handle)
        self.binding_args = volume_binding_args(args)
        self.bind_timeout = float(self.binding_args.bind_timeout_seconds)

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        """SignPod: the pod's volume sources."""
        return [(VOLUMES_SIGNER, volumes_signer(pod.pod))], Status.success()

    @property
    def storage(self) -> StorageState:
        return self.handle.storage

    # --- PreFilter -----------------------------------------------------------------------

    def _pod_claims_problem(self, pod: Pod) -> tuple[bool, str | None]:
        """podHasPVCs: whether the pod uses claims, and why it cannot (yet)."""
        has_claims = False
        for volume in pod.spec.volumes:
            found = claim_of(pod, volume)
            if found is None:
                continue
            name, ephemeral = found
            has_claims = True
            claim = self.storage.pvc(pod.metadata.namespace, name)
            if claim is None:
                if ephemeral:
                    return True, (
                        "waiting for ephemeral volume controller to create the "
                        f"persistentvolumeclaim {go_quote(name)}"
                    )
                return True, not_found("persistentvolumeclaim", name)
            if claim.status.phase == CLAIM_LOST:
                return True, (
                    f"persistentvolumeclaim {go_quote(claim.metadata.name)} bound to "
                    f"non-existent persistentvolume {go_quote(claim.spec.volume_name)}"
                )
            if claim.metadata.deletion_timestamp is not None:
                return True, (
                    f"persistentvolumeclaim {go_quote(claim.metadata.name)} is being deleted"
                )
            if ephemeral:
                problem = volume_is_for_pod(pod, claim)
                if problem is not None:
                    return True, problem
        return has_claims, None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.pod.spec.volumes:
            state.write(STATE_KEY, _State())
            return None, Status.skip()
        has_claims, problem = self._pod_claims_problem(pod.pod)
        if problem is not None:
            return None, Status.unresolvable(problem, plugin=self.name)
        if not has_claims:
            state.write(STATE_KEY, _State())
            return None, Status.skip()
        try:
            claims = get_pod_volume_claims(self.storage, pod.pod)
        except BinderError as exc:
            return None, Status.as_error(exc, plugin=self.name)
        if claims.unbound_immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE, plugin=self.name)
        claims.unbound_immediate = []
        state.write(STATE_KEY, _State(claims))
        return None, Status.success()

    # --- Filter --------------------------------------------------------------------------

    def _state(self, state: CycleState) -> _State:
        found = state.get(STATE_KEY)
        if not isinstance(found, _State):
            raise VolumeBindingError(f"reading {STATE_KEY!r} from cycleState: not found")
        return found

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> NodeVerdicts:
        data = self._state(state)
        if data.claims is None:
            return NodeVerdicts.passing(len(rows))
        try:
            verdicts = find_pod_volumes(self.storage, data.claims, nodes, rows)
        except BinderError as exc:
            raise VolumeBindingError(str(exc)) from exc
        result = NodeVerdicts.passing(len(rows))
        unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        result.add(ERR_REASON_NODE_CONFLICT, verdicts.node_conflict, unresolvable)
        result.add(ERR_REASON_BIND_CONFLICT, verdicts.bind_conflict, unresolvable)
        result.add(ERR_REASON_NOT_ENOUGH_SPACE, verdicts.not_enough_space, unresolvable)
        result.add(ERR_REASON_PV_NOT_EXIST, verdicts.pv_not_exist, unresolvable)
        evaluation = verdicts.evaluation
        passed = ~verdicts.failed()
        data.evaluations.append((evaluation, passed))
        if any((chosen[passed] >= 0).any() for chosen in evaluation.matched):
            data.has_static_bindings = True
        return result

    # --- Score (StorageCapacityScoring: off) ---------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> Status:
        return Status.skip()

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: Rows) -> IntArray:
        return np.zeros(len(rows), dtype=np.int64)

    # --- Reserve -------------------------------------------------------------------------

    def _pod_volumes_for(self, data: _State, node_name: str) -> PodVolumes | None:
        if node_name in data.reserved:
            return data.reserved[node_name]
        row = self.handle.nodes.row_of(node_name)
        if row is None:
            return None
        # The latest evaluation that passed the node (upstream keeps the last one written).
        for evaluation, passed in reversed(data.evaluations):
            hits = np.flatnonzero((evaluation.rows == row) & passed)
            if len(hits):
                return evaluation.pod_volumes(int(hits[0]))
        return None

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        found = state.get(STATE_KEY)
        if not isinstance(found, _State):
            return Status.as_error(f"reading {STATE_KEY!r} from cycleState: not found", self.name)
        data = found
        volumes = self._pod_volumes_for(data, node_name) if data.claims is not None else None
        if volumes is None:
            data.all_bound = True  # no claims (or nothing found for the node)
            return Status()
        error = self._assume(pod.pod, node_name, volumes)
        if error is not None:
            return Status.as_error(error, self.name)
        data.reserved[node_name] = volumes
        data.all_bound = not volumes.static_bindings and not volumes.dynamic_provisions
        return Status()

    def _assume(self, pod: Pod, node_name: str, volumes: PodVolumes) -> str | None:
        """AssumePodVolumes: rewrite `volumes` with the assumed objects."""
        storage = self.storage
        if are_pod_volumes_bound(storage, pod):
            volumes.static_bindings = []
            volumes.dynamic_provisions = []
            return None
        bindings: list[tuple[PersistentVolume, PersistentVolumeClaim]] = []
        for pv, claim in volumes.static_bindings:
            new_pv, dirty = bind_volume_to_claim(pv, claim)
            if dirty:
                error = storage.assume_pv(new_pv)
                if error is not None:
                    for assumed, _ in bindings:
                        storage.restore_pv(assumed)
                    return error
            bindings.append((new_pv, claim))
        provisions: list[PersistentVolumeClaim] = []
        for claim in volumes.dynamic_provisions:
            clone = with_selected_node(claim, node_name)
            error = storage.assume_pvc(clone)
            if error is not None:
                for assumed, _ in bindings:
                    storage.restore_pv(assumed)
                for assumed_claim in provisions:
                    storage.restore_pvc(assumed_claim)
                return error
            provisions.append(clone)
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        found = state.get(STATE_KEY)
        if not isinstance(found, _State):
            return
        volumes = found.reserved.get(node_name)
        if volumes is None:
            return
        for pv, _ in volumes.static_bindings:
            self.storage.restore_pv(pv)
        for claim in volumes.dynamic_provisions:
            self.storage.restore_pvc(claim)

    # --- PreBind -------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        found = state.get(STATE_KEY)
        if not isinstance(found, _State):
            return Status.as_error(f"reading {STATE_KEY!r} from cycleState: not found", self.name)
        if found.all_bound:
            return Status()
        volumes = found.reserved.get(node_name)
        if volumes is None:
            return Status.as_error(f"no pod volume found for node {go_quote(node_name)}", self.name)
        writer = self.storage.writer
        if writer is None:
            return Status.as_error("no volume writer to bind the pod's volumes through", self.name)
        try:
            await self._bind_pod_volumes(writer, pod.pod, node_name, volumes)
        except Exception as exc:
            return Status.as_error(exc, self.name)
        return Status()

    async def _bind_pod_volumes(
        self, writer: VolumeWriter, pod: Pod, node_name: str, volumes: PodVolumes
    ) -> None:
        """BindPodVolumes: the API updates, then wait for the PV controller."""
        storage = self.storage
        bindings = list(volumes.static_bindings)
        provisions = list(volumes.dynamic_provisions)
        done_bindings = done_provisions = 0
        try:
            for i, (pv, claim) in enumerate(bindings):
                bindings[i] = (await writer.bind_volume(pv), claim)
                done_bindings += 1
            for i, claim in enumerate(provisions):
                provisions[i] = await writer.select_node(claim, node_name)
                done_provisions += 1
        finally:
            # Only revert what was not written.
            for pv, _ in volumes.static_bindings[done_bindings:]:
                storage.restore_pv(pv)
            for claim in volumes.dynamic_provisions[done_provisions:]:
                storage.restore_pvc(claim)
        try:
            await self._wait_for_bindings(writer, pod, node_name, bindings, provisions)
        except VolumeBindingError as exc:
            raise VolumeBindingError(f"binding volumes: {exc}") from exc

    async def _wait_for_bindings(
        self,
        writer: VolumeWriter,
        pod: Pod,
        node_name: str,
        bindings: list[tuple[PersistentVolume, PersistentVolumeClaim]],
        provisions: list[PersistentVolumeClaim],
    ) -> None:
        """BindPodVolumes' wait.PollUntilContextTimeout over checkBindings.

        Upstream polls every second, the first time one second after the writes
        (immediate=false), until bindTimeout: the PV controller and the provisioner
        complete the binding asynchronously. A writer that `settles_on_write` (the
        in-memory cluster's, in `simulate`) has done their part before its writes
        returned, so the stored objects are final and one check decides. Polling
        there would only cost a real second per pod with volumes, and, were a binding
        incomplete, never end: the deadline is read on the handle's clock, which in
        `simulate` moves only when the simulator jumps to a timer, never while a
        binding cycle is busy. An incomplete binding then fails as upstream's poll
        would once bindTimeout had passed, with its error, without the wait.
        """
        if writer.settles_on_write:
            if not self._check_bindings(node_name, bindings, provisions, pod):
                raise VolumeBindingError("context deadline exceeded")
            return
        clock = self.handle.clock
        deadline = clock.now() + self.bind_timeout
        while True:
            await asyncio.sleep(POLL_INTERVAL_SECONDS)
            if self._check_bindings(node_name, bindings, provisions, pod):
                return
            if clock.now() >= deadline:
                raise VolumeBindingError("context deadline exceeded")

    def _check_bindings(
        self,
        node_name: str,
        bindings: list[tuple[Any, PersistentVolumeClaim]],
        provisions: list[PersistentVolumeClaim],
        pod: Pod | None = None,
    ) -> bool:
        """checkBindings against the stored (API) objects: True when all are bound."""
        storage = self.storage
        row = self.handle.nodes.row_of(node_name)
        if row is None:
            raise VolumeBindingError(
                f"failed to get node {go_quote(node_name)}: {not_found('node', node_name)}"
            )
        node_row = self.handle.nodes.rows[row]
        if pod is not None and node_row is not None and pod.key not in node_row.pods:
            # Deleted meanwhile: the scheduler's cache let go of the assumed pod.
            raise VolumeBindingError(
                f"pod does not exist any more: {not_found('pods', pod.metadata.name)}"
            )
        labels = self.handle.nodes.node(row).metadata.labels
        for pv, claim in bindings:
            api_pv = storage.pv(pv.metadata.name)
            if api_pv is None:
                raise VolumeBindingError(
                    f"failed to check binding: {not_found('persistentvolumes', pv.metadata.name)}"
                )
            api_claim = storage.pvcs.get(claim.key)
            if api_claim is None:
                raise VolumeBindingError(
                    f"failed to check binding: {not_found('persistentvolumeclaims', claim.key)}"
                )
            if (
                compare_resource_versions(
                    pv.metadata.resource_version, api_pv.metadata.resource_version
                )
                > 0
            ):
                return False
            if not pv_matches_labels(api_pv, labels):
                raise VolumeBindingError(
                    f"pv {go_quote(api_pv.metadata.name)} node affinity doesn't match node "
                    f"{go_quote(node_name)}: no matching NodeSelectorTerms"
                )
            ref = api_pv.spec.claim_ref
            if ref is None or not ref.uid:
                raise VolumeBindingError(
                    f"ClaimRef got reset for pv {go_quote(api_pv.metadata.name)}"
                )
            if not is_claim_fully_bound(api_claim):
                return False
        for claim in provisions:
            api_claim = storage.pvcs.get(claim.key)
            if api_claim is None:
                raise VolumeBindingError(
                    "failed to check provisioning pvc: "
                    + not_found("persistentvolumeclaims", claim.key)
                )
            if (
                compare_resource_versions(
                    claim.metadata.resource_version, api_claim.metadata.resource_version
                )
                > 0
            ):
                return False
            if not api_claim.metadata.annotations:
                raise VolumeBindingError(
                    f"selectedNode annotation reset for PVC {go_quote(api_claim.metadata.name)}"
                )
            if api_claim.metadata.annotations.get(ANN_SELECTED_NODE) != node_name:
                raise VolumeBindingError(
                    f"provisioning failed for PVC {go_quote(api_claim.metadata.name)}"
                )
            if api_claim.spec.volume_name:
                api_pv = storage.pv(api_claim.spec.volume_name)
                if api_pv is None:
                    return False
                if not pv_matches_labels(api_pv, labels):
                    raise VolumeBindingError(
                        f"pv {go_quote(api_pv.metadata.name)} node affinity doesn't match node "
                        f"{go_quote(node_name)}: no matching NodeSelectorTerms"
                    )
            if not is_claim_fully_bound(api_claim):
                return False
        return True

    # --- queueing ------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_or_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.STORAGE_CLASS, add_or_update),
                self.is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.PERSISTENT_VOLUME_CLAIM, add_or_update),
                self.is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.PERSISTENT_VOLUME, add_or_update)),
            # Queueing hints are on (GA in 1.34): no UpdateNodeTaint.
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_NODE, add_or_update),
                self.is_schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_DRIVER, ActionType.UPDATE),
                self.is_schedulable_after_csi_driver_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.CSI_STORAGE_CAPACITY, add_or_update),
                self.is_schedulable_after_capacity_change,
            ),
        ]

    def is_schedulable_after_csi_node_change(self, pod: PodInfo, old: object, new: object) -> bool:
        if old is None:
            return True
        if not isinstance(old, CSINode) or not isinstance(new, CSINode):
            return True
        key = MIGRATED_PLUGINS_ANNOTATION
        return old.metadata.annotations.get(key) != new.metadata.annotations.get(key)

    def is_schedulable_after_pvc_change(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(new, PersistentVolumeClaim):
            return True
        if pod.namespace != new.metadata.namespace:
            return False
        for volume in pod.pod.spec.volumes:
            found = claim_of(pod.pod, volume)
            if found is not None and found[0] == new.metadata.name:
                return True
        return False

    def is_schedulable_after_storage_class_change(
        self, pod: PodInfo, old: object, new: object
    ) -> bool:
        if not isinstance(new, StorageClass):
            return True
        if old is None:
            return True
        if not isinstance(old, StorageClass):
            return True
        return old.allowed_topologies != new.allowed_topologies

    def is_schedulable_after_capacity_change(self, pod: PodInfo, old: object, new: object) -> bool:
        if not isinstance(new, CSIStorageCapacity):
            return True
        if old is None:
            return True
        if not isinstance(old, CSIStorageCapacity):
            return True
        new_limit, old_limit = _volume_limit(new), _volume_limit(old)
        return new_limit is not None and (old_limit is None or new_limit > old_limit)

    def is_schedulable_after_csi_driver_change(
        self, pod: PodInfo, old: object, new: object
    ) -> bool:
        if not isinstance(old, CSIDriver) or not isinstance(new, CSIDriver):
            return True
        for volume in pod.pod.spec.volumes:
            if volume.csi is None or volume.csi.driver != new.metadata.name:
                continue
            if old.spec.storage_capacity and not new.spec.storage_capacity:
                return True
        return False


def _volume_limit(capacity: CSIStorageCapacity) -> int | None:
    raw = (
        capacity.maximum_volume_size
        if capacity.maximum_volume_size is not None
        else capacity.capacity
    )
    if raw is None:
        return None
    return int(-(-quantity(raw) // 1))
