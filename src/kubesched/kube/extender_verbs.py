"""The extender protocol's verbs answered by a profile's plugins (`kubesched extender`).

A stock kube-scheduler with `extenders:` POSTs ExtenderArgs (extenderv1 in
k8s.io/kube-scheduler/extender/v1/types.go: "Pod", and "Nodes" or, for a
nodeCacheCapable extender, "NodeNames") to urlPrefix/verb. This module answers
from a Scheduler whose cache the informers keep current (its queue is never
popped):

* filter: the profile's PreFilter, then Filter over the named nodes
  (findNodesThatFitPod's first steps, run as RunPreFilterPlugins and
  RunFilterPluginsWithNominatedPods), answered as ExtenderFilterResult.
  UnschedulableAndUnresolvable verdicts go to FailedAndUnresolvableNodes (the
  scheduler then does not try preemption on them), others to FailedNodes.
* prioritize: PreScore and Score (normalised and weighted, as prioritizeNodes
  sums them), mapped linearly onto 0..MaxExtenderPriority relative to the
  profile's highest possible total for the pod (the sum of the weights of the
  Score plugins PreScore did not skip, × MaxNodeScore),
  answered as HostPriorityList.

* preempt: kube-scheduler's preemption candidates (ExtenderPreemptionArgs: each
  node with the victims its dry run chose) narrowed to the nodes where the
  profile's PreFilter and Filter plugins pass once those victims are gone
  (SelectVictimsOnNode's check, run by this profile's plugins), answered as
  ExtenderPreemptionResult. The victims themselves are kept as kube-scheduler
  chose them: they are the fewest its own plugins need, and its PDB count stands.
  A node where this profile's plugins would need more victims is dropped, not
  given more (upstream's callExtenders then picks among the rest).

What an extender cannot do that a plugin can: the verbs do not share a
CycleState (prioritize runs PreFilter again for PreScore's sake), there is no
Reserve, Permit or PreBind, and every pod costs an HTTP round trip per verb.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.extender import MAX_EXTENDER_PRIORITY
from kubesched.framework.interfaces import MAX_NODE_SCORE
from kubesched.framework.runtime.errors import PluginError
from kubesched.framework.runtime.framework import Framework
from kubesched.framework.status import Code
from kubesched.framework.types import PodInfo
from kubesched.scheduler import Scheduler
from kubesched.scheduler.schedule_one import pre_filter_candidates

# What a node the informer cache does not know is rejected with (a node created
# moments ago, or one the request made up).
UNKNOWN_NODE = "node is not in kubesched extender's cache"


class BadRequest(Exception):
    """The request body is not ExtenderArgs: HTTP 400 with this one-line text."""


class _NodeList(msgspec.Struct):
    items: list[Node] = msgspec.field(default_factory=list)


class _MetaPod(msgspec.Struct, rename={"uid": "UID"}):
    uid: str = ""


class _Victims(msgspec.Struct, rename={"pods": "Pods", "num_pdb_violations": "NumPDBViolations"}):
    # extenderv1.Victims and MetaVictims in one: full Pods or MetaPods carry a UID.
    pods: list[Pod] | None = None
    num_pdb_violations: int = 0


class _MetaVictims(
    msgspec.Struct, rename={"pods": "Pods", "num_pdb_violations": "NumPDBViolations"}
):
    pods: list[_MetaPod] | None = None
    num_pdb_violations: int = 0


class _PreemptionArgs(
    msgspec.Struct,
    rename={
        "pod": "Pod",
        "victims": "NodeNameToVictims",
        "meta_victims": "NodeNameToMetaVictims",
    },
):
    # extenderv1.ExtenderPreemptionArgs: NodeNameToMetaVictims for a
    # nodeCacheCapable extender, NodeNameToVictims otherwise (HTTPExtender.ProcessPreemption).
    pod: Pod | None = None
    victims: dict[str, _Victims | None] | None = None
    meta_victims: dict[str, _MetaVictims | None] | None = None


class _Args(msgspec.Struct, rename={"pod": "Pod", "nodes": "Nodes", "node_names": "NodeNames"}):
    # extenderv1.ExtenderArgs; encoding/json's exact field names, as
    # HTTPExtender.send writes them.
    pod: Pod | None = None
    nodes: _NodeList | None = None
    node_names: list[str] | None = None


_args_decoder = msgspec.json.Decoder(_Args)
_preemption_decoder = msgspec.json.Decoder(_PreemptionArgs)


@dataclass(slots=True)
class Request:
    """Decoded ExtenderArgs: the pod, the node names in order, and the Nodes as sent
    (None for a nodeCacheCapable request, which sends names only)."""

    pod: Pod
    names: list[str]
    nodes: list[Node] | None


def decode_args(body: bytes) -> Request:
    """ExtenderArgs from a request body; BadRequest with a one-line reason."""
    try:
        args = _args_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadRequest(f"invalid ExtenderArgs: {str(exc).splitlines()[0]}") from None
    if args.pod is None:
        raise BadRequest("invalid ExtenderArgs: no Pod")
    if args.node_names is not None:
        return Request(args.pod, list(args.node_names), None)
    nodes = args.nodes.items if args.nodes is not None else []
    return Request(args.pod, [n.metadata.name for n in nodes], list(nodes))


@dataclass(slots=True)
class PreemptionRequest:
    """Decoded ExtenderPreemptionArgs: the pod, and per candidate node the victims'
    UIDs and the PDB violations kube-scheduler counted."""

    pod: Pod
    victims: dict[str, tuple[list[str], int]]


def decode_preemption_args(body: bytes) -> PreemptionRequest:
    """ExtenderPreemptionArgs from a request body; BadRequest with a one-line reason."""
    try:
        args = _preemption_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadRequest(f"invalid ExtenderPreemptionArgs: {str(exc).splitlines()[0]}") from None
    if args.pod is None:
        raise BadRequest("invalid ExtenderPreemptionArgs: no Pod")
    victims: dict[str, tuple[list[str], int]] = {}
    for name, full in (args.victims or {}).items():
        if full is None:
            victims[name] = ([], 0)
        else:
            uids = [p.metadata.uid for p in full.pods or []]
            victims[name] = (uids, full.num_pdb_violations)
    for name, meta in (args.meta_victims or {}).items():
        if meta is None:
            victims[name] = ([], 0)
        else:
            victims[name] = ([m.uid for m in meta.pods or []], meta.num_pdb_violations)
    return PreemptionRequest(args.pod, victims)


class ExtenderVerbs:
    """filter, prioritize and preempt over SCHED's cache and frameworks."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched

    def framework_for(self, pod: Pod) -> Framework:
        """The profile named by the pod's schedulerName, else the first profile: the
        pod is kube-scheduler's, whose profile names need not match ours."""
        frameworks = self.sched.frameworks
        fw = frameworks.get(pod.spec.scheduler_name)
        return fw if fw is not None else next(iter(frameworks.values()))

    def _rows(self, names: list[str]) -> tuple[list[int], list[str], list[str]]:
        """The table rows of the known names, those names, and the unknown ones."""
        table = self.sched.table
        rows: list[int] = []
        known: list[str] = []
        unknown: list[str] = []
        for name in dict.fromkeys(names):  # a name sent twice is answered once
            row = table.row_of(name)
            if row is None:
                unknown.append(name)
            else:
                rows.append(row)
                known.append(name)
        return rows, known, unknown

    def filter(self, request: Request) -> dict[str, Any]:
        """ExtenderFilterResult for the request."""
        fw = self.framework_for(request.pod)
        table = self.sched.table
        rows, known, unknown = self._rows(request.names)
        failed: dict[str, str] = dict.fromkeys(unknown, UNKNOWN_NODE)
        unresolvable: dict[str, str] = {}
        passed: set[str] = set()
        pod = PodInfo(request.pod)
        state = CycleState()
        try:
            pre_result, status = fw.run_pre_filter(state, pod, table)
            if not status.is_success():
                # Every node gets PreFilter's verdict (as the Diagnosis of a pod
                # PreFilter rejected marks all nodes).
                into = (
                    unresolvable if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
                )
                into.update(dict.fromkeys(known, status.message()))
            else:
                # Only the nodes a PreFilter result named; the others are absent,
                # unresolvable for this pod (pre_filter_candidates, as the cycle).
                candidates, absent = pre_filter_candidates(
                    table, np.array(rows, dtype=np.intp), pre_result
                )
                if absent is not None:
                    kept_rows = set(candidates.tolist())
                    for row, name in zip(rows, known, strict=True):
                        if row not in kept_rows:
                            unresolvable[name] = absent.message()
                feasible, diagnosis = fw.run_filters_with_nominated_pods(
                    state, pod, table, candidates
                )
                passed = {table.names[r] for r in feasible.tolist()}
                # Each failed node's reasons joined as Status.message() joins them
                # (Diagnosis.status_of per node would search every reason's rows).
                reasons: dict[int, list[str]] = {}
                for reason, reason_rows in diagnosis.reasons:
                    for row in reason_rows.tolist():
                        reasons.setdefault(row, []).append(reason)
                for row, code in zip(
                    diagnosis.rows.tolist(), diagnosis.codes.tolist(), strict=True
                ):
                    message = ", ".join(reasons.get(row, []))
                    name = table.names[row]
                    if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        unresolvable[name] = message
                    else:
                        failed[name] = message
        except PluginError as exc:
            return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "Error": str(exc)}
        kept = [n for n in request.names if n in passed]
        result: dict[str, Any] = {
            "FailedNodes": failed,
            "FailedAndUnresolvableNodes": unresolvable,
            "Error": "",
        }
        if request.nodes is None:
            result["NodeNames"] = kept
            result["Nodes"] = None
        else:
            keep = set(kept)
            items = [n for n in request.nodes if n.metadata.name in keep]
            result["Nodes"] = {"metadata": {}, "items": items}
            result["NodeNames"] = None
        return result

    def prioritize(self, request: Request) -> list[dict[str, Any]]:
        """HostPriorityList for the request: each named node's score, 0 to
        MAX_EXTENDER_PRIORITY. Raises PluginError."""
        fw = self.framework_for(request.pod)
        table = self.sched.table
        # Unknown nodes score 0: a node the cache lacks was already refused by
        # filter when kube-scheduler filters with this extender too.
        rows, known, _ = self._rows(request.names)
        scores = dict.fromkeys(request.names, 0)
        if rows:
            pod = PodInfo(request.pod)
            state = CycleState()
            # The verbs share no CycleState: PreScore plugins that read what their
            # PreFilter wrote need it run again (a stock scheduler's cycle would
            # have it from its own PreFilter).
            fw.run_pre_filter(state, pod, table)
            feasible = np.array(rows, dtype=np.intp)
            fw.run_pre_score(state, pod, table, feasible)
            totals, _ = fw.run_score(state, pod, table, feasible, per_plugin=False)
            maximum = max_total(fw, state.skip_score_plugins)
            for name, total in zip(known, totals.tolist(), strict=True):
                scores[name] = to_extender_priority(int(total), maximum)
        return [{"Host": name, "Score": scores[name]} for name in request.names]

    def preempt(self, request: PreemptionRequest) -> dict[str, Any]:
        """ExtenderPreemptionResult for the request: the candidates this profile's
        plugins accept the pod on once their victims are gone, with those victims.
        Raises PluginError."""
        fw = self.framework_for(request.pod)
        table = self.sched.table
        pod = PodInfo(request.pod)
        state = CycleState()
        kept: dict[str, Any] = {}
        _, status = fw.run_pre_filter(state, pod, table)
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            # No eviction changes an unresolvable PreFilter verdict: no candidate.
            return {"NodeNameToMetaVictims": kept}
        for name, (uids, violations) in request.victims.items():
            row = table.row_of(name)
            # Upstream's callExtenders refuses an answer naming a node without
            # victims; a node kube-scheduler sent with none is not kept.
            if row is None or not uids:
                continue
            if self._fits_without(fw, state.clone(), pod, row, set(uids)):
                kept[name] = {
                    "Pods": [{"UID": uid} for uid in uids],
                    "NumPDBViolations": violations,
                }
        return {"NodeNameToMetaVictims": kept}

    def _fits_without(
        self, fw: Framework, state: CycleState, pod: PodInfo, row: int, uids: set[str]
    ) -> bool:
        """Whether the pod passes the Filter plugins on ROW with the pods of UIDS
        removed (SelectVictimsOnNode's removal and check; the row is restored). A
        victim the cache does not have on the row is not kube-scheduler's view of
        the node: the node is not kept."""
        table = self.sched.table
        victims = [p for p in table.pods_on(row) if p.pod.metadata.uid in uids]
        if len(victims) != len(uids):
            return False
        saved = table.save_row(row)
        try:
            for victim in victims:
                table.remove_pod(victim, row)
                fw.run_pre_filter_extension_remove_pod(state, pod, victim, table, row)
            return fw.filter_status_with_nominated_pods(state, pod, table, row).is_success()
        finally:
            table.restore_row(saved)


def max_total(fw: Framework, skipped: Collection[str] = ()) -> int:
    """The highest weighted total the profile's Score plugins can give a node,
    leaving out those PreScore skipped for this pod (they score nothing, as
    RunScorePlugins skips them)."""
    return sum(fw.weights.get(p.name, 1) for p in fw.score if p.name not in skipped) * (
        MAX_NODE_SCORE
    )


def to_extender_priority(total: int, maximum: int) -> int:
    """TOTAL out of MAXIMUM as 0..MAX_EXTENDER_PRIORITY, rounded to the nearest
    (kube-scheduler multiplies it back by MaxNodeScore / MaxExtenderPriority and
    the extender's weight, prioritizeNodes)."""
    if maximum <= 0:
        return 0
    clamped = min(max(total, 0), maximum)
    return (clamped * MAX_EXTENDER_PRIORITY * 2 + maximum) // (2 * maximum)
