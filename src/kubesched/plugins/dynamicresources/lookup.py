"""The pod's claims as the DRA manager has them (foreachPodResourceClaim upstream)."""

from __future__ import annotations

from kubesched.api.objects import Pod
from kubesched.api.resource import ClaimNameError, ResourceClaim, claim_name, is_for_pod
from kubesched.framework.state.dra import DraState
from kubesched.plugins.helpers.args import go_quote


class ClaimProblem(Exception):
    """Why the pod cannot be scheduled now; the text is upstream's error text."""


def pod_claims(dra: DraState, pod: Pod) -> list[tuple[str, ResourceClaim]]:
    """(spec.resourceClaims name, claim) for each claim the pod uses, in spec order.
    Raises ClaimProblem for a claim that is missing, being deleted, or generated from
    a template but not for this pod. An entry whose template produced no claim (its
    status names none) is skipped, as upstream does."""
    found: list[tuple[str, ResourceClaim]] = []
    for entry in pod.spec.resource_claims:
        try:
            name, must_check_owner = claim_name(pod, entry)
        except ClaimNameError as exc:
            raise ClaimProblem(str(exc)) from None
        if name is None:
            continue
        key = f"{pod.metadata.namespace}/{name}"
        claim = dra.claim(key)
        if claim is None:
            # The assume cache's NotFoundError ("could not find %v %q").
            raise ClaimProblem(f"could not find ResourceClaim {go_quote(key)}")
        if claim.metadata.deletion_timestamp is not None:
            raise ClaimProblem(f"resourceclaim {go_quote(claim.metadata.name)} is being deleted")
        if must_check_owner:
            problem = is_for_pod(pod, claim)
            if problem is not None:
                raise ClaimProblem(problem)
        found.append((entry.name, claim))
    return found
