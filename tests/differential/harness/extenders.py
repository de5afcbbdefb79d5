"""The `extenders` feature's servers: one TestExtender (tests/extender_server.py) per
spec of the scenario (generator/extenders.py), on a free loopback port, answering
by the spec's rule. Both schedulers, one after the other, and kubesched in-process
(score_step) call the same servers, so the `extenders:` list, URLs included, is one
and the same for all of them.

The rules speak of logical node names (n0, n1...); the extenders are sent the real
ones, `<prefix>-n0` (Harness.run), or the logical ones themselves (tests)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from tests.differential.generator.extenders import SLOW_SECONDS as SLOW_SECONDS
from tests.extender_server import Handler, TestExtender, filter_answer, node_names, serve_extender


def logical_name(real: str) -> str:
    """n3 for `<prefix>-n3` (the harness's prefixes have no dash) and for n3."""
    return real.rsplit("-", 1)[-1]


def _fails(spec: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    """How the spec fails for the pod of ARGS: "error", "timeout" or ""."""
    fails = spec.get("fails")
    if not fails:
        return ""
    pods = fails.get("pods")
    name = str(((args.get("Pod") or {}).get("metadata") or {}).get("name", ""))
    return str(fails["how"]) if pods is None or name in pods else ""


def _filter(spec: Mapping[str, Any]) -> Handler:
    rule = spec["filter"]
    rejected = set(rule["reject"])

    def answer(args: dict[str, Any]) -> Any:
        return filter_answer(
            args,
            lambda n: logical_name(n) not in rejected,
            rule["message"],
            unresolvable=bool(rule["unresolvable"]),
        )

    return answer


def _prioritize(spec: Mapping[str, Any]) -> Handler:
    scores = spec["prioritize"]["scores"]

    def answer(args: dict[str, Any]) -> Any:
        # A node the rule does not know (none in a generated scenario) scores 0.
        return [{"Host": n, "Score": int(scores.get(logical_name(n), 0))} for n in node_names(args)]

    return answer


def _preempt(spec: Mapping[str, Any]) -> Handler:
    keep = set(spec["preempt"]["keep"])

    def answer(args: dict[str, Any]) -> Any:
        # The candidates come as MetaVictims (UIDs) to a nodeCacheCapable extender,
        # else as whole pods; the answer is MetaVictims either way (extenderv1).
        meta = args.get("NodeNameToMetaVictims")
        full = args.get("NodeNameToVictims")
        offered: Mapping[str, Any] = meta if meta is not None else (full or {})
        out: dict[str, Any] = {}
        for node, victims in offered.items():
            if logical_name(node) not in keep:
                continue
            pods = (victims or {}).get("Pods") or []
            uids = [p["UID"] if meta is not None else p["metadata"]["uid"] for p in pods]
            out[node] = {
                "Pods": [{"UID": uid} for uid in uids],
                "NumPDBViolations": (victims or {}).get("NumPDBViolations", 0),
            }
        return {"NodeNameToMetaVictims": out}

    return answer


def _failing(spec: Mapping[str, Any], handler: Handler) -> Handler:
    """HANDLER, failing for the pods the spec's `fails` names."""

    def answer(args: dict[str, Any]) -> Any:
        how = _fails(spec, args)
        if how == "error":
            return 500
        if how == "timeout":
            # Past httpTimeout: the scheduler has given up when this answer comes.
            time.sleep(SLOW_SECONDS)
        return handler(args)

    return answer


def handlers(spec: Mapping[str, Any]) -> dict[str, Handler]:
    """Verb -> handler of the rule SPEC (the verbs extender_config names)."""
    makers = {"filter": _filter, "prioritize": _prioritize, "preempt": _preempt}
    return {verb: _failing(spec, make(spec)) for verb, make in makers.items() if verb in spec}


@contextmanager
def serving(specs: Sequence[Mapping[str, Any]]) -> Iterator[list[TestExtender]]:
    """One server per spec for the block (none without specs); their urlPrefixes are
    the TestExtenders' `url`, in the specs' order."""
    with ExitStack() as stack:
        yield [
            stack.enter_context(serve_extender(TestExtender(verbs=handlers(spec))))
            for spec in specs
        ]
