"""Comparing the two runs of a scenario step by step (compare): directly while both
are in the same state up to interchangeable nodes (isomorphic), then each against
kubesched in-process on its own state; and whether two runs' FailedScheduling
events agree (events_agree, events_before)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tests.differential import generator as gen
from tests.differential.harness.dra import allocations, claims_before
from tests.differential.harness.inprocess import score_step
from tests.differential.harness.records import (
    KUBE,
    KUBESCHED,
    MODE_DIRECT,
    MODE_KS,
    MODE_KUBE,
    Comparison,
    Disagreement,
    PodAttempts,
    Prediction,
    Run,
    Step,
    start_times,
)
from tests.differential.harness.stepped import compare_simulated_attempts


def events_agree(
    seen_a: Sequence[str], seen_b: Sequence[str], condition_a: str, condition_b: str
) -> bool:
    """Whether two runs' FailedScheduling notes for one pod agree. The first note
    (the pod's own attempt) must be the same. A retry's note starts a new Event
    only if the pod's resourceVersion changed since the last one (client-go's
    isomorphic-event key), i.e. only if the scheduler's informer had already seen its
    own status write of the previous attempt: a race in kube-scheduler itself. So a
    later note of one run must be a note of the other, or the other's latest message
    (its PodScheduled condition), which a retry folded into an earlier series."""
    if list(seen_a) == list(seen_b):
        return True
    if not seen_a or not seen_b or seen_a[0] != seen_b[0]:
        return False
    return set(seen_a) <= {*seen_b, condition_b} and set(seen_b) <= {*seen_a, condition_a}


def events_before(run: Run, pod: str, cutoff: float | None) -> list[str]:
    """POD's FailedScheduling messages in RUN first recorded before CUTOFF (all
    without a cutoff, or without their times)."""
    messages = run.events.get(pod, [])
    times = run.event_times.get(pod)
    if cutoff is None or times is None:
        return list(messages)
    return [m for m, t in zip(messages, times, strict=True) if t < cutoff]


# --------------------------------------------------------------------- comparison
def _pod_signature(scenario: Mapping[str, Any]) -> dict[str, str]:
    return {
        p["name"]: json.dumps({"labels": p["labels"], "spec": p["spec"]}, sort_keys=True)
        for p in scenario["pods"]
    }


def _node_signatures(
    scenario: Mapping[str, Any], placements: Mapping[str, str | None], pods: Mapping[str, str]
) -> dict[str, str]:
    """Per logical node: everything a scheduler can tell it by but its name (unless
    some pod names it): the label keys some pod looks at, taints, capacity, the
    images some pod uses, and the pods on it (by content)."""
    referenced = gen.referenced_nodes(scenario)
    keys = gen.referenced_label_keys(scenario)
    images = gen.referenced_images(scenario)
    on: dict[str, list[str]] = {}
    for pod, node in placements.items():
        if node is not None:
            on.setdefault(node, []).append(pods.get(pod, pod))
    out = {}
    for node in scenario["nodes"]:
        body = {k: v for k, v in node.items() if k not in ("name", "labels", "images")}
        body["labels"] = {k: v for k, v in node["labels"].items() if k in keys}
        body["images"] = [i for i in node.get("images", []) if any(n in images for n in i["names"])]
        if node["name"] in referenced:
            body["name"] = node["name"]
        if scenario.get("dra"):
            # Nodes with other devices are not interchangeable.
            body["slices"] = gen.slices_of(scenario["dra"], node["name"])
        body["pods"] = sorted(on.get(node["name"], []))
        out[node["name"]] = json.dumps(body, sort_keys=True)
    return out


def isomorphic(
    scenario: Mapping[str, Any],
    a: Mapping[str, str | None],
    b: Mapping[str, str | None],
    perm: Mapping[str, str],
) -> bool:
    """Whether placements A (kube-scheduler) and B (kubesched) are the same state
    once A's node n is read as B's perm[n]: the same pods exist and are bound, and
    each node carries the same (by content) pods."""
    if set(a) != set(b) or any((a[p] is None) != (b[p] is None) for p in a):
        return False
    pods = _pod_signature(scenario)
    sig_a = _node_signatures(scenario, a, pods)
    sig_b = _node_signatures(scenario, b, pods)
    return all(sig_a[n] == sig_b[perm.get(n, n)] for n in sig_a)


def _swap(perm: Mapping[str, str], x: str, y: str) -> dict[str, str]:
    return {k: (y if v == x else x if v == y else v) for k, v in perm.items()}


def _predict(
    scenario: Mapping[str, Any],
    run: Run,
    before: Mapping[str, str | None],
    step: Step,
    names: Mapping[str, str],
) -> Prediction | None:
    """score_step on the state RUN was in before STEP (none for a gang's pods: the
    pod group cycle places them together, not one by one on that state)."""
    if not step.created or step.group:
        return None
    created = {s.pod: s.created for s in run.steps if s.created}
    # The harness gave every pod bound before this step its status.startTime.
    started = start_times(scenario)
    bound = []
    for pod, node in before.items():
        if node is not None and pod in created:
            obj = copy.deepcopy(created[pod])
            obj["spec"]["nodeName"] = names.get(node, node)
            obj.setdefault("status", {})["startTime"] = started[pod]
            _with_claim_statuses(obj, step)
            bound.append(obj)
    logical = {v: k for k, v in names.items()}
    pod = _with_claim_statuses(copy.deepcopy(step.created), step)
    return score_step(
        scenario,
        run.nodes,
        bound,
        pod,
        logical,
        run.objects,
        dra_objects=_dra_objects(scenario, run, step, names),
        extender_urls=run.extender_urls,
    )


def _with_claim_statuses(pod: dict[str, Any], step: Step) -> dict[str, Any]:
    """POD with the status.resourceClaimStatuses it had when STEP ended (the claims
    made from its templates, which the step's scheduling waited for)."""
    statuses = step.claim_statuses.get(pod["metadata"]["name"])
    if statuses:
        pod.setdefault("status", {})["resourceClaimStatuses"] = copy.deepcopy(statuses)
    return pod


def _dra_objects(
    scenario: Mapping[str, Any], run: Run, step: Step, names: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The DRA objects of RUN before STEP: classes and slices (shared by both runs),
    the run's templates, and its claims as they were then (claims_before)."""
    dra = scenario.get("dra")
    if not dra:
        return []
    prefix = run.namespace.rsplit("-", 1)[0]  # <prefix>-kube or <prefix>-ks
    i = next(n for n, s in enumerate(run.steps) if s is step)  # not ==: deep comparisons
    previous = run.steps[i - 1].claims if i > 0 else {}
    templates = [
        m
        for m in gen.dra_namespace_manifests(dra, run.namespace, prefix)
        if m["kind"] == "ResourceClaimTemplate"
    ]
    return [
        *gen.dra_cluster_manifests(dra, prefix, names),
        *templates,
        *claims_before(previous, step.claims),
    ]


def _claims_problem(
    scenario: Mapping[str, Any],
    a: Step,
    b: Step,
    perm: Mapping[str, str],
    names: Mapping[str, str],
) -> tuple[str, Any, Any] | None:
    """For a pod bound in both runs: the first of its claims not allocated alike, as
    (claim, kube-scheduler's, kubesched's); None if all are. Each claim must be
    allocated in both, on the nodes where the pod is (A's read through PERM), with as
    many devices per request; which devices may differ (ties)."""
    pod = next(p for p in scenario["pods"] if p["name"] == a.pod)
    manifest = {"spec": pod["spec"]}
    logical = {v: k for k, v in names.items()}
    alloc_a = allocations(manifest, a.claims, a.claim_statuses.get(a.pod, []), logical)
    alloc_b = allocations(manifest, b.claims, b.claim_statuses.get(b.pod, []), logical)
    # The pod's own node stands for itself in each run: when the runs broke a tie
    # apart (nodes not interchangeable), "allocated on the node the pod went to" is
    # still alike; the node choice itself is judged by the node comparison.
    own = "<pod's node>"
    # On different nodes, what a node offers decides an `All` request's count and a
    # prioritized list's subrequest; only requests of an exact count must match.
    node_bound = _node_bound_requests(scenario, pod) if perm.get(a.node or "") != b.node else {}
    for claim, got in alloc_a.items():
        other = alloc_b.get(claim)
        if isinstance(got, dict):
            got = {
                **got,
                "nodes": sorted(own if n == a.node else perm.get(n, n) for n in got["nodes"]),
                "requests": _across_nodes(got["requests"], node_bound.get(claim, set())),
            }
        if isinstance(other, dict):
            other = {
                **other,
                "nodes": sorted(own if n == b.node else n for n in other["nodes"]),
                "requests": _across_nodes(other["requests"], node_bound.get(claim, set())),
            }
        if not isinstance(got, dict) or got != other:
            return claim, alloc_a[claim], alloc_b.get(claim)
    return None


def _node_bound_requests(
    scenario: Mapping[str, Any], pod: Mapping[str, Any]
) -> dict[str, set[str]]:
    """Per entry of POD's spec.resourceClaims: its requests whose devices depend on
    the node (allocationMode All, or a prioritized list), from the scenario's claims
    and templates."""
    dra = scenario.get("dra") or {}
    specs = {("claim", c["name"]): c["spec"] for c in dra.get("claims", [])}
    specs.update({("template", t["name"]): t["spec"] for t in dra.get("templates", [])})
    out: dict[str, set[str]] = {}
    for entry in pod["spec"].get("resourceClaims", []):
        if "resourceClaimName" in entry:
            spec = specs.get(("claim", entry["resourceClaimName"]), {})
        else:
            spec = specs.get(("template", entry.get("resourceClaimTemplateName")), {})
        out[entry["name"]] = {
            r["name"]
            for r in spec.get("devices", {}).get("requests", [])
            if "firstAvailable" in r or (r.get("exactly") or {}).get("allocationMode") == "All"
        }
    return out


def _across_nodes(requests: Mapping[str, int], node_bound: set[str]) -> dict[str, Any]:
    """REQUESTS' device counts, with those in NODE_BOUND (and their subrequests)
    reduced to "some" when the runs' pods are on different nodes."""
    out: dict[str, Any] = {}
    for name, count in requests.items():
        top = name.split("/", 1)[0]
        if top in node_bound:
            out[top] = "some"
        else:
            out[name] = count
    return out


def _against(
    side: str, step: Step, prediction: Prediction, events: Sequence[str]
) -> tuple[list[tuple[str, Any, Any, str]], bool | None, bool | None]:
    """STEP of SIDE checked against kubesched's in-process PREDICTION on the same
    state: (problems as (kind, predicted, seen, detail), message ok or None if not
    applicable, unique node ok or None)."""
    detail = f"{side} vs kubesched in-process on {side}'s own state; " + _prediction_text(
        prediction
    )
    problems: list[tuple[str, Any, Any, str]] = []
    if step.outcome == "error" and prediction.error:
        # An extender failed: the attempt's error text is its message.
        if step.message != prediction.message:
            problems.append(("message", prediction.message, step.message, detail))
        return problems, not problems, None
    if step.outcome in ("rejected", "timeout", "error") or prediction.error:
        return (
            [("error", prediction.message or "-", step.outcome, detail + " " + step.message)],
            None,
            None,
        )
    bound = step.outcome == "bound"
    if bound != bool(prediction.choices):
        seen = step.node if bound else step.message
        want = prediction.choices or prediction.message
        return [("bound", want, seen, detail)], None, None
    if not bound:
        if step.message != prediction.message:
            problems.append(("message", prediction.message, step.message, detail))
        elif list(events) != [prediction.message]:
            problems.append(("event", [prediction.message], list(events), detail))
        return problems, not problems, None
    if step.node not in prediction.choices:
        problems.append(("node", prediction.choices, step.node, detail))
    return problems, None, (not problems) if prediction.unique else None


def compare(
    scenario: Mapping[str, Any], kube: Run, ks: Run, names: Mapping[str, str]
) -> Comparison:
    """Step by step. While both runs are in the same state (up to interchangeable
    nodes) the two schedulers are compared directly; from the first step where the
    states differ (a tie broken differently between nodes that are not
    interchangeable, or a disagreement that changed what is bound) each run is
    checked against kubesched's framework re-run in-process on that run's own
    state, so kube-scheduler is still compared with kubesched on equal terms."""
    result = Comparison(scenario["name"], runs={KUBE: kube, KUBESCHED: ks})
    perm = {n["name"]: n["name"] for n in scenario["nodes"]}
    result.steps = len(scenario["pods"])
    before_a: dict[str, str | None] = {}
    before_b: dict[str, str | None] = {}
    in_sync = True

    def disagree(
        kind: str, i: int, pod: str, a: Any, b: Any, detail: str = "", mode: str = MODE_DIRECT
    ) -> None:
        result.disagreements.append(Disagreement(kind, i, pod, a, b, detail, mode))

    # Direct comparisons of FailedScheduling events wait for the end: only events
    # recorded while both runs were in the same state count (a retry after the
    # states diverged may legitimately fail differently, or succeed in one run).
    event_checks: list[tuple[int, Step, Step]] = []
    diverged_step: int | None = None

    def until_next(run: Run, i: int) -> float | None:
        return run.steps[i + 1].began if i + 1 < len(run.steps) else None

    for i, (a, b) in enumerate(zip(kube.steps, ks.steps, strict=True)):
        result.compared += 1
        pred_b = _predict(scenario, ks, before_b, b, names)
        if pred_b is not None:
            result.predictions[b.pod] = pred_b
        if not in_sync and (a.group or b.group):
            # No single-pod prediction judges a gang's pods (see _predict); with the
            # states apart, nothing compares them: counted, not judged.
            result.unjudged += 1
            before_a, before_b = a.placements, b.placements
            continue
        if not in_sync:
            result.indirect += 1
            pred_a = _predict(scenario, kube, before_a, a, names)
            problems: list[tuple[str, Any, Any, str]] = []
            messages: list[bool] = []
            uniques: list[bool] = []
            # Against the state before the step: the events of the pod's attempts
            # until the next pod is created.
            for side, step, pred, events in (
                (KUBE, a, pred_a, events_before(kube, a.pod, until_next(kube, i))),
                (KUBESCHED, b, pred_b, events_before(ks, b.pod, until_next(ks, i))),
            ):
                if pred is None:
                    if step.outcome != "rejected":
                        problems.append(("error", "-", step.outcome, f"{side}: no prediction"))
                    continue
                found, message_ok, unique_ok = _against(side, step, pred, events)
                problems.extend(found)
                if message_ok is not None:
                    messages.append(message_ok)
                if unique_ok is not None:
                    uniques.append(unique_ok)
            bound_problem = any(k in ("bound", "error") for k, *_ in problems)
            result.bound_agree += not bound_problem
            if messages:
                result.unbound_both += 1
                result.message_agree += all(messages)
            if uniques:
                result.unique += 1
                result.unique_agree += all(uniques)
            for kind, want, seen, detail in problems:
                if detail.startswith(KUBE):
                    # kube=what kube-scheduler did, kubesched=what kubesched's framework says
                    disagree(kind, i, a.pod, seen, want, detail, MODE_KUBE)
                else:
                    # kube=what kubesched's framework says, kubesched=what the process did
                    disagree("predict", i, b.pod, want, seen, f"{kind}: {detail}", MODE_KS)
            before_a, before_b = a.placements, b.placements
            continue

        bound_a, bound_b = a.outcome == "bound", b.outcome == "bound"
        diverges = False
        if "rejected" in (a.outcome, b.outcome) or "timeout" in (a.outcome, b.outcome):
            if (a.outcome, a.message) != (b.outcome, b.message):
                disagree("error", i, a.pod, a.outcome, b.outcome, a.message or b.message)
                diverges = True
            else:
                result.bound_agree += 1
        elif bound_a != bound_b:
            disagree(
                "bound",
                i,
                a.pod,
                a.node if bound_a else a.message,
                b.node if bound_b else b.message,
                _prediction_text(pred_b),
            )
            diverges = True
        elif not bound_a:
            result.bound_agree += 1
            result.unbound_both += 1
            if a.message != b.message or a.reason != b.reason:
                disagree("message", i, a.pod, a.message, b.message, "PodScheduled condition")
            else:
                event_checks.append((i, a, b))
        else:
            result.bound_agree += 1
            result.bound_both += 1
            assert a.node is not None and b.node is not None
            expected = perm[a.node]
            if pred_b is not None and pred_b.unique:
                result.unique += 1
                if b.node == expected:
                    result.unique_agree += 1
                else:
                    disagree("node", i, a.pod, expected, b.node, _prediction_text(pred_b))
                    diverges = True
            elif pred_b is not None:
                result.ties += 1
                if expected not in pred_b.choices:
                    disagree(
                        "node",
                        i,
                        a.pod,
                        expected,
                        b.node,
                        "kube-scheduler chose a node kubesched does not rank best; "
                        + _prediction_text(pred_b),
                    )
                    diverges = True
            if pred_b is not None and b.node not in pred_b.choices and not diverges:
                disagree(
                    "predict",
                    i,
                    a.pod,
                    expected,
                    b.node,
                    "kubesched run chose a node its framework in-process does not rank best; "
                    + _prediction_text(pred_b),
                )
                diverges = True
        if (
            bound_a
            and bound_b
            and any(
                p["name"] == a.pod and p["spec"].get("resourceClaims") for p in scenario["pods"]
            )
        ):
            result.claims += 1
            problem = _claims_problem(scenario, a, b, perm, names)
            if problem is not None:
                claim, got_a, got_b = problem
                disagree("claims", i, a.pod, got_a, got_b, f"claim {claim}'s allocation")
            else:
                result.claims_agree += 1
        after_a, after_b = a.placements, b.placements
        if not diverges and not isomorphic(scenario, after_a, after_b, perm):
            swapped = None
            if bound_a and bound_b and a.node is not None and b.node is not None:
                swapped = _swap(perm, perm[a.node], b.node)
            if swapped is not None and isomorphic(scenario, after_a, after_b, swapped):
                perm = swapped
                result.swaps += 1
            elif bound_a and bound_b and a.node is not None and perm[a.node] != b.node:
                result.diverged_at = i  # a tie, broken differently
                diverges = True
            else:
                disagree("state", i, a.pod, after_a, after_b, "placements after the step")
                diverges = True
        if diverges and diverged_step is None:
            diverged_step = i
        in_sync = not diverges
        before_a, before_b = after_a, after_b
    if in_sync and not isomorphic(scenario, kube.final, ks.final, perm):
        # Pods bound later (retries after events) must agree too.
        disagree("state", result.steps, "*", kube.final, ks.final, "final placements")
    cut_a = kube.steps[diverged_step].began if diverged_step is not None else None
    cut_b = ks.steps[diverged_step].began if diverged_step is not None else None
    seen = {
        a.pod: (events_before(kube, a.pod, cut_a), events_before(ks, b.pod, cut_b))
        for _, a, b in event_checks
    }
    signatures = _pod_signature(scenario)
    for i, a, b in event_checks:
        seen_a, seen_b = seen[a.pod]
        if events_agree(
            seen_a, seen_b, kube.conditions.get(a.pod, ""), ks.conditions.get(b.pod, "")
        ):
            result.message_agree += 1
        elif (
            a.group
            and a.group == b.group
            and _alike_members_swapped(
                a, event_checks, seen, signatures, (kube.conditions, ks.conditions)
            )
        ):
            result.message_agree += 1
            result.member_orders += 1
        else:
            detail = "FailedScheduling events"
            if diverged_step is not None:
                detail += f" recorded before step {diverged_step} (the states differ from there)"
            disagree("event", i, a.pod, seen_a, seen_b, detail)
    compare_attempts(scenario, kube, ks, result, diverged_step)
    result.disagreements.sort(key=lambda d: d.step)
    return result


# --------------------------------------------------------------------- attempts
def pod_attempts(run: Run, pod: str) -> PodAttempts:
    """POD's attempts in RUN, per step window (see PodAttempts), with its first
    and last FailedScheduling messages."""
    events = run.events.get(pod, [])
    first = events[0] if events else ""
    last = run.conditions.get(pod, "")
    if run.attempts is None:
        return PodAttempts(None, first=first, last=last)
    times = run.attempts.get(pod, [])
    starts = [(s.began, i) for i, s in enumerate(run.steps) if s.began is not None]
    windows: dict[int, int] = {}
    for t in times:
        # The last step whose pod was created before the attempt began.
        i = max((i for began, i in starts if began <= t), default=0)
        windows[i] = windows.get(i, 0) + 1
    return PodAttempts(len(times), windows, first, last)


def busy_steps(scenario: Mapping[str, Any], run: Run) -> set[int]:
    """The steps of RUN after which a pending pod's retries are not deterministic:
    the step raised more than one event that may wake a pod, and how many retries
    they cause depends on whether they reach the scheduler while the woken pod still
    waits (one retry) or while it is being retried or already back (one each; the
    queue's in-flight events). Such a step evicted pods (preemption: one deletion
    each, then the binding), nominated a node, bound more pods than its own (a
    retry's binding is an event of its own), or bound a pod with claims or volumes
    (PreBind writes them before the binding)."""
    pods = {p["name"]: p for p in scenario["pods"]}
    busy: set[int] = set()
    before: Mapping[str, str | None] = {}
    for i, step in enumerate(run.steps):
        after = step.placements
        newly = {p for p, n in after.items() if n is not None and before.get(p) is None}
        spec = pods.get(step.pod, {}).get("spec", {})
        writes = any("persistentVolumeClaim" in v for v in spec.get("volumes", [])) or bool(
            spec.get("resourceClaims")
        )
        if (
            set(before) - set(after)
            or step.nominated
            or newly - {step.pod}
            or (step.outcome == "bound" and writes)
            or step.group
        ):
            busy.add(i)
        before = after
    return busy


def compare_attempts(
    scenario: Mapping[str, Any],
    kube: Run,
    ks: Run,
    result: Comparison,
    diverged_step: int | None,
) -> None:
    """Per pod, the number of attempts each scheduler made, step window by step
    window (PodAttempts.windows), where both are deterministic: from the pod's own
    step on, until the states diverged (windows before the diverging step), leaving
    out the windows of busy steps (busy_steps, in either run), gang pods (a member
    that fails is retried on its backoff alone) and pods whose step ended in an
    error (SchedulerError), was rejected by the API or timed out. A pod counts as
    compared if one of its windows is. When the runs never diverged and every window
    of an unbound pod was compared, its last message (the PodScheduled condition at
    the end) must be the same too. kube-scheduler's run is also compared with
    kubesched's simulator given the pods one at a time (compare_simulated_attempts)."""
    for a, b in zip(kube.steps, ks.steps, strict=True):
        result.pod_attempts[a.pod] = {
            KUBE: pod_attempts(kube, a.pod),
            KUBESCHED: pod_attempts(ks, b.pod),
        }
    if kube.attempts is None:
        return
    busy = busy_steps(scenario, kube)
    if ks.attempts is None:
        compare_simulated_attempts(scenario, kube, result, busy)
        return
    busy |= busy_steps(scenario, ks)
    # The simulator, given the pods as the harness gives them, against kube-scheduler.
    compare_simulated_attempts(scenario, kube, result, busy)
    end = len(kube.steps) if diverged_step is None else diverged_step
    for j, (a, b) in enumerate(zip(kube.steps, ks.steps, strict=True)):
        if j >= end or a.group or b.group:
            continue
        if {a.outcome, b.outcome} - {"bound", "unschedulable"}:
            # An error's retries come on a timer (the error backoff, never popped
            # early), so their number is the run's length; rejected or timed out: no.
            continue
        got_a, got_b = result.pod_attempts[a.pod][KUBE], result.pod_attempts[a.pod][KUBESCHED]
        windows = [k for k in range(j, end) if k not in busy]
        if not windows:
            continue
        result.attempts += 1
        differ = {
            k: (got_a.windows.get(k, 0), got_b.windows.get(k, 0))
            for k in windows
            if got_a.windows.get(k, 0) != got_b.windows.get(k, 0)
        }
        if differ:
            detail = "attempts per step window (step: kube-scheduler, kubesched): " + ", ".join(
                f"{k}: {x}, {y}" for k, (x, y) in sorted(differ.items())
            )
            if busy & set(range(j, end)):
                detail += f"; not compared after busy steps {sorted(busy & set(range(j, end)))}"
            result.disagreements.append(
                Disagreement("attempts", min(differ), a.pod, got_a.count, got_b.count, detail)
            )
            continue
        whole = diverged_step is None and len(windows) == end - j
        unbound = kube.final.get(a.pod) is None and ks.final.get(b.pod) is None
        if whole and unbound and a.pod in kube.final and got_a.last != got_b.last:
            result.disagreements.append(
                Disagreement(
                    "attempts",
                    j,
                    a.pod,
                    got_a.last,
                    got_b.last,
                    f"last FailedScheduling message ({got_a.count} attempts in each run)",
                )
            )
            continue
        result.attempts_agree += 1


def _alike_members_swapped(
    step: Step,
    checks: Sequence[tuple[int, Step, Step]],
    seen: Mapping[str, tuple[list[str], list[str]]],
    signatures: Mapping[str, str],
    conditions: tuple[Mapping[str, str], Mapping[str, str]],
) -> bool:
    """Whether the gang members alike to STEP's pod (same labels and spec) got notes
    that agree (events_agree) once handed out among them in some other order. When
    some of a gang's members fit and the rest do not, which member kube-scheduler tries
    first, and so which gets the FitError and which "waiting for minCount pods", is
    the order its UnscheduledPodAdd event moves them out of the unschedulable pool: Go
    map order, random between identical pods (podGroupInfoForPod orders them by
    InitialAttemptTimestamp, which each gets on entering activeQ)."""
    alike = [
        a.pod
        for _, a, b in checks
        if a.group == step.group and b.group == step.group
        and signatures.get(a.pod) == signatures.get(step.pod)
    ]  # fmt: skip
    if len(alike) < 2:
        return False
    cond_a, cond_b = conditions

    def fits(x: str, y: str) -> bool:  # x's notes in kube-scheduler, y's in kubesched
        return events_agree(seen[x][0], seen[y][1], cond_a.get(x, ""), cond_b.get(y, ""))

    # A perfect matching of kube-scheduler's members to kubesched's (Kuhn's
    # augmenting paths: gangs are small).
    partner: dict[str, str] = {}  # kubesched's member -> kube-scheduler's

    def assign(x: str, tried: set[str]) -> bool:
        for y in alike:
            if y not in tried and fits(x, y):
                tried.add(y)
                if y not in partner or assign(partner[y], tried):
                    partner[y] = x
                    return True
        return False

    return all(assign(x, set()) for x in alike)


def _prediction_text(p: Prediction | None) -> str:
    if p is None:
        return ""
    if not p.feasible and p.preemption:
        return (
            f"in-process: no feasible node ({p.message}); preemption may nominate "
            f"{p.preemption}, victims {p.victims}"
        )
    if not p.feasible:
        return f"in-process: no feasible node ({p.message})"
    return f"in-process totals {p.totals}, best {p.best}"
