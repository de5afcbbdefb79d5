"""Statements of the README and the docs tied to the code they describe (issue #31 found three
that contradicted it)."""

from __future__ import annotations

import inspect
from pathlib import Path

from kubesched.kube import runner

RUN_DOC = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "run.md").read_text()


def test_explain_is_served_on_the_secure_port() -> None:
    paragraph = RUN_DOC[RUN_DOC.index("`kubesched run --explain` explains") :][:600]
    assert "the secure port" in paragraph and "health port" not in paragraph
    source = inspect.getsource(runner.Runner.start_servers)
    # The routes are added to the secure server only; without it they are not served.
    assert "self.explained.routes()" in source
    assert "--explain needs the secure port" in source


def test_differential_features_disable_the_plugins_of_the_others() -> None:
    """docs/explanation/differential.md: `FEATURES=spread,affinity` runs only those features,
    the plugins of the others disabled in both schedulers."""
    from tests.differential import generator as gen

    doc = (
        Path(__file__).resolve().parents[2] / "docs" / "explanation" / "differential.md"
    ).read_text()
    assert "make diff FEATURES=spread,affinity             # only these generator features" in doc
    disabled = set(gen.disabled_plugins(["spread", "affinity"]))
    assert disabled and not {"PodTopologySpread", "InterPodAffinity"} & disabled
    assert "DefaultPreemption" in disabled


def test_benchmarks_md_keeps_the_method_and_current_figures_only() -> None:
    """Dated runs go to docs/develop/benchmarks-log.md; docs/develop/benchmarks.md stays short."""
    docs = Path(__file__).resolve().parents[2] / "docs"
    assert len((docs / "develop" / "benchmarks.md").read_text().splitlines()) <= 300
