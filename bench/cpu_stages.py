"""CPU per bound pod by stage, from kubesched's kubesched_cpu_seconds_total{stage}
(src/kubesched/kube/cpu_budget.py): where a run's CPU went, in milliseconds per
pod bound, so that a change shows which stage it moved."""

from __future__ import annotations

from bench.promtext import samples

METRIC = "kubesched_cpu_seconds_total"


def stage_seconds(text: str) -> dict[str, float]:
    """The stages' CPU seconds in one /metrics text ({} for kube-scheduler)."""
    return {labels["stage"]: value for name, labels, value in samples(text) if name == METRIC}


def ms_per_pod(before: str | None, after: str, bound: int) -> dict[str, float]:
    """Each stage's CPU between two scrapes (BEFORE None: since the start) per pod
    bound, in milliseconds, and their sum as "total"."""
    if bound <= 0:
        return {}
    start = stage_seconds(before) if before is not None else {}
    end = stage_seconds(after)
    out = {
        # max(0): "other threads" is a difference of two clocks, which can dip.
        stage: round(max(0.0, 1000 * (seconds - start.get(stage, 0.0)) / bound), 3)
        for stage, seconds in end.items()
    }
    if out:
        out["total"] = round(sum(out.values()), 3)
    return out


def describe(budget: dict[str, float]) -> str:
    """One line: 'total 1.95 ms/pod: scheduling cycle 0.41, ...' (largest first)."""
    if not budget:
        return ""
    parts = sorted(((v, k) for k, v in budget.items() if k != "total"), reverse=True)
    return f"CPU {budget['total']:.3f} ms per bound pod: " + ", ".join(
        f"{k} {v:.3f}" for v, k in parts
    )
