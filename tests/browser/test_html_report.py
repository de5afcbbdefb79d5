"""The HTML report in a real headless Chromium (Debian's), network off: it loads
without console errors and fetches nothing, and its sections show what the known
scenario (tests/browser/scenario.py) gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from selenium import webdriver
from selenium.webdriver.common.by import By

from kubesched.cli.main import main
from tests.browser.scenario import write_scenario


def _run(*args: str) -> str:
    outcome = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    return outcome.output


def _open(browser: webdriver.Chrome, page: Path) -> None:
    browser.get_log("browser")  # drop what earlier pages said
    browser.get(page.as_uri())


def _console_errors(browser: webdriver.Chrome) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _texts(browser: webdriver.Chrome, selector: str) -> list[str]:
    return [
        e.get_attribute("textContent") or ""
        for e in browser.find_elements(By.CSS_SELECTOR, selector)
    ]


@pytest.fixture(scope="module")
def simulate_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    cluster = write_scenario(folder)
    page = folder / "report.html"
    _run("simulate", "-f", str(cluster), "--seed", "1", "--html", str(page))
    return page


def test_page_loads_offline_without_errors(browser: webdriver.Chrome, simulate_page: Path) -> None:
    _open(browser, simulate_page)
    assert browser.title == "kubesched simulate"
    assert _console_errors(browser) == []
    # Everything is inline: the page asked for nothing (scripts, styles, images, fonts).
    fetched = browser.execute_script("return performance.getEntriesByType('resource').length")
    assert fetched == 0


def test_summary_counts_new_pods_apart_from_running(
    browser: webdriver.Chrome, simulate_page: Path
) -> None:
    _open(browser, simulate_page)
    counts = {
        e.get_attribute("data-count"): e.text
        for e in browser.find_elements(By.CSS_SELECTOR, "#summary [data-count]")
    }
    # web×3 and trainer placed, huge pending, base was running before.
    assert counts == {"nodes": "4", "placed": "4", "pending": "1", "running": "1"}


def test_heat_map_has_a_cell_per_node_by_zone_and_resource(
    browser: webdriver.Chrome, simulate_page: Path
) -> None:
    _open(browser, simulate_page)
    tabs = _texts(browser, "#heat-resources button")
    assert tabs[:3] == ["cpu", "memory", "pods"]
    assert "example.com/gpu" in tabs
    zones = browser.find_elements(By.CSS_SELECTOR, "#heat-zones details.zone")
    assert [z.get_attribute("data-zone") for z in zones] == ["zone-a", "zone-b"]
    assert len(browser.find_elements(By.CSS_SELECTOR, "#heat-zones .cell")) == 4
    # The GPU map: node-b1 has 1 of its 2 GPUs taken; the other nodes offer none.
    browser.find_element(
        By.CSS_SELECTOR, '#heat-resources button[data-resource="example.com/gpu"]'
    ).click()
    cells = browser.find_elements(By.CSS_SELECTOR, "#heat-zones .cell")
    classes = sorted(c.get_attribute("class") or "" for c in cells)
    assert classes == ["cell h5", "cell na", "cell na", "cell na"]
    gpu = next(c for c in cells if "h5" in (c.get_attribute("class") or ""))
    assert gpu.get_attribute("title") == "node-b1: 1/2 (50%)"
    # A cell opens the node's figures.
    gpu.click()
    detail = browser.find_element(By.ID, "node-detail")
    assert detail.is_displayed()
    assert "node-b1 (zone-b" in detail.text
    assert _console_errors(browser) == []


def test_placements_by_workload_and_zone(browser: webdriver.Chrome, simulate_page: Path) -> None:
    _open(browser, simulate_page)
    rows = browser.find_elements(By.CSS_SELECTOR, "table.workloads tr.workload")
    by_name = {r.find_element(By.CSS_SELECTOR, "td b").text: r for r in rows}
    assert set(by_name) == {"default/web", "default/trainer", "default/huge", "default/base"}
    web = by_name["default/web"].find_elements(By.TAG_NAME, "td")
    assert web[0].text.startswith("Deployment ")
    assert [c.text for c in web[1:4]] == ["3", "0", "0"]  # placed, pending, running before
    zones = sum(int(chip.text.split()[-1]) for chip in web[4].find_elements(By.CLASS_NAME, "chip"))
    assert zones == 3
    trainer = by_name["default/trainer"].find_elements(By.TAG_NAME, "td")
    assert trainer[4].text == "zone-b 1"
    assert [c.text for c in by_name["default/base"].find_elements(By.TAG_NAME, "td")[1:4]] == [
        "0",
        "0",
        "1",
    ]


def test_pending_pod_drill_down_shows_its_verdicts(
    browser: webdriver.Chrome, simulate_page: Path
) -> None:
    _open(browser, simulate_page)
    groups = browser.find_elements(By.CSS_SELECTOR, "#pending details.pending-group")
    assert len(groups) == 1
    assert groups[0].find_element(By.CLASS_NAME, "count").text == "1"
    reason = groups[0].find_element(By.CLASS_NAME, "reason").text
    assert reason.startswith("0/4 nodes are available: 4 Insufficient cpu.")
    drill = browser.find_element(By.ID, "explain-default--huge")
    assert drill.get_attribute("open") is None
    groups[0].find_element(By.TAG_NAME, "summary").click()
    groups[0].find_element(By.CSS_SELECTOR, "a.why").click()
    assert drill.get_attribute("open") == "true"
    assert drill.is_displayed()
    verdicts = drill.find_elements(By.CSS_SELECTOR, "tr.verdict")
    assert len(verdicts) == 1
    cells = [c.text for c in verdicts[0].find_elements(By.TAG_NAME, "td")]
    assert cells[0] == "4"
    # More cpu than any node's allocatable: preemption cannot help (upstream's code).
    assert cells[1] == "NodeResourcesFit (unresolvable)"
    # The reason, then what the pod requests against what is free (issue #31).
    assert cells[2].startswith("Insufficient cpu")
    assert "cpu: requested" in cells[2] and "free" in cells[2]
    assert "Unschedulable" in drill.find_element(By.TAG_NAME, "summary").text
    assert _console_errors(browser) == []


def test_scheduled_pod_drill_down_shows_scores(
    browser: webdriver.Chrome, simulate_page: Path
) -> None:
    _open(browser, simulate_page)
    link = browser.find_element(By.CSS_SELECTOR, 'a.why[data-target="explain-default--trainer"]')
    link.click()
    drill = browser.find_element(By.ID, "explain-default--trainer")
    assert drill.get_attribute("open") == "true"
    assert "scheduled on node-b1" in drill.find_element(By.TAG_NAME, "summary").text
    # The three nodes without the GPU are rejected by NodeResourcesFit.
    verdict = drill.find_element(By.CSS_SELECTOR, "tr.verdict")
    assert verdict.find_elements(By.TAG_NAME, "td")[0].text == "3"
    assert "Insufficient example.com/gpu" in verdict.text
    # One feasible node: schedulePod takes it without scoring.
    assert "One feasible node (node-b1)" in drill.text


def test_explain_page_opens_on_the_asked_pod(browser: webdriver.Chrome, tmp_path: Path) -> None:
    cluster = write_scenario(tmp_path)
    page = tmp_path / "explain.html"
    _run("explain", "default/huge", "-f", str(cluster), "--seed", "1", "--html", str(page))
    browser.get_log("browser")
    browser.get(page.as_uri() + "#explain-default--huge")
    drill = browser.find_element(By.ID, "explain-default--huge")
    assert drill.get_attribute("open") == "true"
    assert len(browser.find_elements(By.CSS_SELECTOR, "details.explain")) == 1
    assert _console_errors(browser) == []


def test_capacity_page_shows_the_counts(browser: webdriver.Chrome, tmp_path: Path) -> None:
    cluster = write_scenario(tmp_path)
    spec = tmp_path / "probe.yaml"
    spec.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: default}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}\n"
    )
    page = tmp_path / "capacity.html"
    args = ["capacity", "--podspec", str(spec), "-f", str(cluster), "--seed", "1"]
    document = json.loads(_run(*args, "-o", "json", "--html", str(page)))
    # 16 cpus, 1 running + 3 web + 1 trainer: 11 more copies of 1 cpu fit.
    assert document["specs"][0]["count"] == 11
    _open(browser, page)
    spec_box = browser.find_element(By.CSS_SELECTOR, '.capacity-spec[data-spec="default/probe"]')
    assert spec_box.find_element(By.CLASS_NAME, "count").text == "11"
    assert "Insufficient cpu" in spec_box.find_element(By.CLASS_NAME, "reason").text
    zones = {
        c.text.split()[0]: int(c.text.split()[1])
        for c in spec_box.find_elements(By.CLASS_NAME, "chip")
    }
    assert sum(zones.values()) == 11
    assert set(zones) == {"zone-a", "zone-b"}
    assert _console_errors(browser) == []
