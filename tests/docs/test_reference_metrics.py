"""docs/reference/metrics.md is the page tests/docs/reference_metrics.py generates from
kubesched.server.metrics, and that generator sees every metric `/metrics` can serve."""

from __future__ import annotations

from kubesched.server.metrics import SchedulerMetrics
from tests.docs.reference_metrics import PAGE, metric_docs, render


def test_metrics_page_is_generated() -> None:
    assert PAGE.read_text() == render(), f"{PAGE} is stale: run `make reference`"


def test_every_served_metric_is_documented() -> None:
    """The names the generator finds are those /metrics serves once every optional
    metric is registered (read through prometheus_client's public collect())."""
    metrics = SchedulerMetrics()
    metrics.enable_pod_group_metrics()
    metrics.set_cpu_budget(lambda: {"scheduling": 1.0})
    metrics.enable_extender_server_metrics()
    served = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in metrics.registry.collect()
    }
    documented = [doc.name for doc in metric_docs()]
    assert len(documented) == len(set(documented))
    assert set(documented) == served


def test_each_documented_metric_is_described_on_the_page() -> None:
    page = PAGE.read_text()
    for doc in metric_docs():
        assert f"\n## {doc.name}\n" in page
        assert doc.help and doc.help in page
        # A metric kubesched adds must say so, not pass for kube-scheduler's.
        origin = "kubesched's own" if doc.name.startswith("kubesched_") else "kube-scheduler's"
        section = page.split(f"\n## {doc.name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"- Origin: {origin}" in section


def test_conditional_metrics_say_when_they_exist() -> None:
    docs = {doc.name: doc for doc in metric_docs()}
    plain = SchedulerMetrics()
    always = {
        family.name + ("_total" if family.type == "counter" else "")
        for family in plain.registry.collect()
    }
    for name, doc in docs.items():
        assert bool(doc.condition) == (name not in always), name
