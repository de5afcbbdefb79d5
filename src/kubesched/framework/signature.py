"""Pod signatures for opportunistic batching (KEP-5598, v1.36.3).

A SignPlugin contributes fragments, (key, value) pairs, to a pod's signature;
two pods with equal signatures get the same feasibility and the same scores on
every node in the same cluster state, so the second may reuse the first one's
ranking (framework/runtime/batch.py). A plugin may refuse to sign a pod (its SignPod
returns Unschedulable upstream): the pod then has no signature and is never
batched. A profile with a PreFilter, Filter, PreScore or Score plugin that is
not a SignPlugin signs no pod at all (computeBatchablePlugins upstream).

The fragment keys and the shared signers follow k8s.io/kube-scheduler@v0.36.3
framework/signers.go; the signature itself is the fragments as one JSON object
with sorted keys (frameworkImpl.SignPod marshals a map, which Go sorts).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import msgspec

from kubesched.api.objects import NodeSelectorRequirement, NodeSelectorTerm, Pod
from kubesched.framework.status import Code, Status
from kubesched.framework.types import PodInfo

log = logging.getLogger("kubesched.signature")

# signers.go: the fragment keys.
DYNAMIC_RESOURCES_SIGNER = "v1.Pod.Spec.DynamicResources"
IMAGE_NAMES_SIGNER = "v1.Pod.Spec.CanonicalImageNames()"
LABELS_SIGNER = "v1.Pod.Labels"
NODE_NAME_SIGNER = "v1.Pod.Spec.NodeName"
NODE_AFFINITY_SIGNER = "v1.Pod.Spec.Affinity.NodeAffinity"
NODE_SELECTOR_SIGNER = "v1.Pod.Spec.Affinity.NodeSelector"
HOST_PORTS_SIGNER = "v1.Pod.Spec.HostPorts()"
RESOURCES_SIGNER = "v1.Pod.Spec.ContainerRequestsAndOverheads()"
SCHEDULER_NAME_SIGNER = "v1.Pod.Spec.SchedulerName"
TOLERATIONS_SIGNER = "v1.Pod.Spec.Tolerations"
VOLUMES_SIGNER = "v1.Pod.Spec.Volumes.NonSyntheticSources()"
FEATURES_SIGNER = "v1.Pod.Spec.RequiredFeatures()"

SignFragment = tuple[str, Any]
PodSignature = bytes


class SignPlugin:
    """A plugin that can sign pods (fwk.SignPlugin). Mix it into a plugin class
    and implement sign_pod: Status.success() with the fragments that capture
    everything of the pod the plugin's PreFilter, Filter, PreScore and Score
    read; or a non-success status (Unschedulable: "this pod is not signable")
    with no fragments. Values must be JSON-encodable (msgspec structs are) and
    canonical: sort lists whose order does not matter."""

    def sign_pod(self, pod: PodInfo) -> tuple[Sequence[SignFragment], Status]:
        raise NotImplementedError


def not_signable(reason: str) -> tuple[Sequence[SignFragment], Status]:
    """A plugin's refusal to sign (fwk.NewStatus(fwk.Unschedulable, reason))."""
    return (), Status.unschedulable(reason)


def encode_signature(fragments: dict[str, Any]) -> PodSignature:
    """The signature bytes: the fragments as one JSON object, keys sorted (also
    those of the maps inside, as Go's encoding/json sorts them)."""
    return msgspec.json.encode(fragments, order="sorted")


# --- common signers (signers.go) -------------------------------------------------------


def host_ports_signer(pod: Pod) -> list[int]:
    """HostPortsSigner: the sorted set of host ports of all containers, init ones too."""
    spec = pod.spec
    return sorted(
        {
            p.host_port
            for c in (*spec.containers, *spec.init_containers)
            for p in c.ports
            if p.host_port
        }
    )


def tolerations_signer(pod: Pod) -> list[Any]:
    """TolerationsSigner: the tolerations sorted by key, then value."""
    return sorted(pod.spec.tolerations, key=lambda t: (t.key, t.value))


def volumes_signer(pod: Pod) -> list[str]:
    """VolumesSigner: the sorted sources of the volumes, names left out. Upstream
    also leaves out configMap and secret sources; kubesched's Volume keeps only
    the sources the volume plugins read, so those are never there."""
    found = []
    for volume in pod.spec.volumes:
        source = msgspec.to_builtins(volume)
        source.pop("name", None)
        found.append(json.dumps(source, sort_keys=True, separators=(",", ":")))
    return sorted(found)


def _requirements_signer(requirements: Sequence[NodeSelectorRequirement]) -> list[str]:
    """NodeSelectorRequirementsSigner: each requirement with its values sorted, sorted."""
    out = []
    for req in requirements:
        data = msgspec.to_builtins(req)
        if "values" in data:
            data["values"] = sorted(data["values"])
        out.append(json.dumps(data, sort_keys=True, separators=(",", ":")))
    return sorted(out)


def _term_signer(term: NodeSelectorTerm) -> dict[str, list[str]]:
    return {
        "MatchExpressions": _requirements_signer(term.match_expressions),
        "MatchFields": _requirements_signer(term.match_fields),
    }


def node_affinity_signer(pod: Pod) -> dict[str, list[str]] | None:
    """NodeAffinitySigner: the required and preferred terms, each canonical and
    sorted; None without a node affinity."""
    affinity = pod.spec.affinity
    if affinity is None or affinity.node_affinity is None:
        return None
    node_affinity = affinity.node_affinity
    preferred = sorted(
        json.dumps(
            {"Weight": t.weight, "Preference": _term_signer(t.preference)},
            sort_keys=True,
            separators=(",", ":"),
        )
        for t in node_affinity.preferred_during_scheduling_ignored_during_execution
    )
    required: list[str] = []
    selector = node_affinity.required_during_scheduling_ignored_during_execution
    if selector is not None:
        required = sorted(
            json.dumps(_term_signer(t), sort_keys=True, separators=(",", ":"))
            for t in selector.node_selector_terms
        )
    return {"Required": required, "Preferred": preferred}


class PodSigner:
    """A profile's signer (frameworkImpl's batchablePlugins and SignPod): built
    from the profile's PreFilter, Filter, PreScore and Score plugins, each once.
    If any of them is not a SignPlugin, the profile signs no pod."""

    def __init__(
        self, profile: str, candidates: Sequence[object], *, has_extenders: bool = False
    ) -> None:
        self.profile = profile
        self.plugins: list[SignPlugin] = []
        unsupported: list[str] = []
        seen: set[str] = set()
        for plugin in candidates:
            name = str(getattr(plugin, "name", type(plugin).__name__))
            if name in seen:
                continue
            seen.add(name)
            if isinstance(plugin, SignPlugin):
                self.plugins.append(plugin)
            else:
                unsupported.append(name)
        self.unsupported = sorted(unsupported)
        self.enabled = not unsupported and not has_extenders
        if has_extenders:
            # computeBatchablePlugins: an extender's verdicts and scores are not part
            # of any signature, so no ranking may be reused across pods.
            log.info(
                "Disabling signatures for profile %r because it has extenders configured",
                profile,
            )
        if unsupported:
            log.info(
                "Disabling signatures for profile %r because plugins do not support it: %s",
                profile,
                ", ".join(self.unsupported),
            )

    def sign(self, pod: PodInfo) -> PodSignature | None:
        """The pod's signature, or None when a plugin refuses to sign it (or
        fails: logged, as upstream logs it) or the profile cannot sign."""
        if not self.enabled:
            return None
        fragments: dict[str, Any] = {SCHEDULER_NAME_SIGNER: pod.pod.spec.scheduler_name}
        plugins = self.plugins
        for index, plugin in enumerate(plugins):
            try:
                found, status = plugin.sign_pod(pod)
            except Exception as exc:  # a plugin's bug must not fail the cycle
                log.error("SignPod failed for plugin %s: %s", _name(plugin), exc)
                return None
            if not status.is_success():
                if status.code == Code.ERROR:
                    log.error("SignPod failed for plugin %s: %s", _name(plugin), status.message())
                if index:
                    # The first to refuse is asked first next time: one refusal is
                    # enough, and the answer does not depend on the order.
                    plugins.insert(0, plugins.pop(index))
                return None
            for key, value in found:
                fragments[key] = value
        try:
            return encode_signature(fragments)
        except (TypeError, ValueError) as exc:
            log.error("SignPod failed to marshal signature object: %s", exc)
            return None


def _name(plugin: SignPlugin) -> str:
    return str(getattr(plugin, "name", type(plugin).__name__))
