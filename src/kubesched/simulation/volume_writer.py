"""The in-memory cluster's VolumeWriter: VolumeBinding's PreBind writes, and what follows.

In `kubesched run` PreBind writes a PV's claimRef or a claim's selected-node
annotation through the API server (kube.storage.KubeVolumeWriter), then waits
for kube-controller-manager's PV controller and the external provisioner to
complete the binding. `simulate` has neither: this writer stores each write as
the API server would (a new resourceVersion, an event for the queue) and then
does the controllers' part (volume_controller.bind / provision) before it
returns. PreBind goes through the same writes and the same check either way;
`settles_on_write` tells it that there is nothing to wait for here.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from kubesched.api.objects import Node, PersistentVolume, PersistentVolumeClaim
from kubesched.api.volumes import ANN_SELECTED_NODE, claim_class
from kubesched.cluster import volume_controller
from kubesched.framework.state.storage import StorageState


class InMemoryVolumeWriter:
    """A VolumeWriter on `storage`; `nodes` (by name, e.g. InMemoryCluster.nodes) are
    what the provisioner reads the selected node's topology from."""

    # The controllers' part is done within each write.
    settles_on_write = True

    def __init__(self, storage: StorageState, nodes: Mapping[str, Node]) -> None:
        self.storage = storage
        self.nodes = nodes

    async def bind_volume(self, volume: PersistentVolume) -> PersistentVolume:
        """The PV update, then the PV controller's syncVolume: both sides Bound."""
        storage = self.storage
        ref = volume.spec.claim_ref
        claim = None if ref is None else storage.pvc(ref.namespace, ref.name)
        written = storage.write_pv(volume)
        if claim is not None:
            # A claim that is gone leaves the PV as written; PreBind's check reports it.
            volume_controller.bind(storage, written, claim)
        return written

    async def select_node(
        self, claim: PersistentVolumeClaim, node_name: str
    ) -> PersistentVolumeClaim:
        """The claim update (selected-node annotation), then the provisioner's PV and the
        PV controller's binding."""
        storage = self.storage
        annotations = {**claim.metadata.annotations, ANN_SELECTED_NODE: node_name}
        written = storage.write_pvc(
            msgspec.structs.replace(
                claim, metadata=msgspec.structs.replace(claim.metadata, annotations=annotations)
            )
        )
        sc = storage.storage_classes.get(claim_class(written))
        if sc is not None:
            volume_controller.provision(storage, written, sc, self.nodes.get(node_name))
        return written
