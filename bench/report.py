"""The results: ratios, a table on the terminal, the JSON file and the PNG plot."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.medians import median_run
from bench.schedulers import KUBE_SCHEDULER, KUBESCHED

Result = dict[str, Any]
# Above this share of the CPUs taken by other processes, a figure is flagged.
FOREIGN_WARN = 0.1


def _get(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def _ratio(a: Any, b: Any) -> float | None:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or b == 0:
        return None
    if math.isnan(a) or math.isnan(b):
        return None
    return round(a / b, 3)


def ratios(entry: Result) -> dict[str, float | None]:
    """kubesched / kube-scheduler for one workload (None where either is missing).

    e2e_pods_per_second: > 1 means kubesched is faster. e2e_p99_latency (of the
    /metrics attempt histograms), e2e_p99_create_to_bound (seen by the client),
    e2e_peak_rss and e2e_cpu_seconds (the scheduler's CPU time in the measured
    phase): < 1 means kubesched is better. inprocess_vs_e2e: kubesched's
    in-process rate over kube-scheduler's end-to-end rate (no API for kubesched:
    an upper bound on what a faster API path could give, not a like-for-like)."""
    e2e = entry.get("e2e") or {}
    ks, us = e2e.get(KUBE_SCHEDULER) or {}, e2e.get(KUBESCHED) or {}
    ok = ks.get("status") == "ok" and us.get("status") == "ok"
    inproc = entry.get("inprocess") or {}
    return {
        "e2e_pods_per_second": _ratio(us.get("pods_per_second"), ks.get("pods_per_second"))
        if ok
        else None,
        "e2e_p99_latency": _ratio(
            _get(us, "attempt_latency_ms", "p99"), _get(ks, "attempt_latency_ms", "p99")
        )
        if ok
        else None,
        "e2e_p99_create_to_bound": _ratio(
            _get(us, "create_to_bound_ms", "p99"), _get(ks, "create_to_bound_ms", "p99")
        )
        if ok
        else None,
        "e2e_peak_rss": _ratio(us.get("peak_rss_mb"), ks.get("peak_rss_mb")) if ok else None,
        "e2e_cpu_seconds": _ratio(us.get("scheduler_cpu_seconds"), ks.get("scheduler_cpu_seconds"))
        if ok
        else None,
        "inprocess_vs_e2e": _ratio(inproc.get("pods_per_second"), ks.get("pods_per_second"))
        if inproc.get("status") == "ok" and ks.get("status") == "ok"
        else None,
        **_backlog_ratios(entry),
    }


def _backlog_ratios(entry: Result) -> dict[str, float | None]:
    """kubesched / kube-scheduler in the backlog drain: pods/s and CPU seconds."""
    backlog = entry.get("backlog") or {}
    ks, us = backlog.get(KUBE_SCHEDULER) or {}, backlog.get(KUBESCHED) or {}
    ok = ks.get("status") == "ok" and us.get("status") == "ok"
    return {
        "backlog_pods_per_second": _ratio(us.get("pods_per_second"), ks.get("pods_per_second"))
        if ok
        else None,
        "backlog_cpu_seconds": _ratio(
            us.get("scheduler_cpu_seconds"), ks.get("scheduler_cpu_seconds")
        )
        if ok
        else None,
    }


def of_ceiling(entry: Result) -> dict[str, dict[str, float | None]]:
    """Each scheduler's pods/s in each mode (e2e: creating while scheduling;
    backlog: draining) as a percentage of the bind ceiling measured beside it."""
    ceiling = entry.get("ceiling") or {}
    limit = ceiling.get("pods_per_second") if ceiling.get("status") == "ok" else None
    out: dict[str, dict[str, float | None]] = {}
    for mode in ("e2e", "backlog"):
        for who, result in (entry.get(mode) or {}).items():
            ok = isinstance(result, dict) and result.get("status") == "ok"
            share = _ratio(result.get("pods_per_second"), limit) if ok else None
            out.setdefault(mode, {})[who] = None if share is None else round(share * 100, 1)
    return out


def _why(result: Result | None) -> str | None:
    """The table's text for a result that has no figure, or None."""
    if not result:
        return "—"
    status = result.get("status")
    if status == "n/a":
        missing = result.get("plugin") or result.get("missing")
        return f"n/a: no {missing}" if missing else "n/a"
    if status != "ok":
        return str(status)
    return None


def scheduler_runs(entry: Result) -> list[tuple[str, str, Result | None]]:
    """(mode, scheduler, result) of a workload's in-process, e2e and backlog runs."""
    results = [("in-process", "kubesched", entry.get("inprocess"))]
    for mode in ("e2e", "backlog"):
        results += [(mode, who, r) for who, r in (entry.get(mode) or {}).items()]
    return results


def missing(entry: Result) -> list[str]:
    """Why figures of a workload are missing or suspect, one line each."""
    lines = []
    results = scheduler_runs(entry)
    results.append(("ceiling", "bind probe", entry.get("ceiling")))
    for mode, who, result in results:
        if not isinstance(result, dict):
            continue
        if result.get("status") != "ok":
            reason = str(result.get("reason", "")).strip().splitlines()
            lines.append(f"{mode} {who}: {result.get('status')} — {reason[0] if reason else ''}")
        if result.get("violations"):
            lines.append(f"{mode} {who}: placements wrong: {'; '.join(result['violations'])}")
        if _get(result, "probe", "errors"):
            first = "; ".join(result["probe"].get("first_errors", []))
            lines.append(f"{mode} {who}: {result['probe']['errors']} binds failed: {first}")
        share = _get(result, "cpu", "foreign_share")
        if result.get("status") == "ok" and isinstance(share, float) and share > FOREIGN_WARN:
            lines.append(
                f"{mode} {who}: other processes took {share:.0%} of the CPUs while measured"
            )
    return lines


def _rate(result: Result | None) -> str:
    """pods/s, and the lowest and highest of the repeats when there were several."""
    why = _why(result)
    if why is not None or result is None:
        return why or "—"
    text = f"{result['pods_per_second']:,.0f}"
    spread = _get(result, "spread", "pods_per_second")
    if isinstance(spread, dict) and spread["min"] != spread["max"]:
        text += f" ({spread['min']:,.0f}–{spread['max']:,.0f})"
    if result.get("violations"):
        text += " (!)"
    return text


def _lat(result: Result | None, key: str = "attempt_latency_ms") -> str:
    lat = _get(result, key)
    if _why(result) is not None or not isinstance(lat, dict):
        return "—"
    return "/".join("—" if lat.get(k) is None else f"{lat[k]:.1f}" for k in ("p50", "p90", "p99"))


def _mb(result: Result | None) -> str:
    if _why(result) is not None or result is None or result.get("peak_rss_mb") is None:
        return "—"
    return f"{result['peak_rss_mb']:.0f}"


def _p50_p99(result: Result | None, key: str) -> str:
    lat = _get(result, key)
    if _why(result) is not None or not isinstance(lat, dict) or lat.get("p99") is None:
        return "—"
    return f"{lat['p50']:,.0f}/{lat['p99']:,.0f}"


def _cpu(result: Result | None) -> str:
    if _why(result) is not None or result is None:
        return "—"
    return f"{result.get('scheduler_cpu_seconds', 0):.1f}"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _pct(shares: dict[str, float | None] | None) -> str:
    if not shares:
        return "—"
    return " / ".join(
        "—" if shares.get(who) is None else f"{shares[who]:.0f}%"
        for who in (KUBE_SCHEDULER, KUBESCHED)
    )


def _sizes(entry: Result) -> str:
    params = entry["params"]
    text = f"{params['nodes']}/{params['init_pods']}/{params['measure_pods']}"
    return text + (f"+{params['unschedulable_pods']}" if params.get("unschedulable_pods") else "")


def _pair(results: dict[str, Result] | None, cell: Any) -> str:
    """One cell for both schedulers: kube-scheduler's / kubesched's."""
    if results is None:
        return "—"
    return f"{cell(results.get(KUBE_SCHEDULER))} / {cell(results.get(KUBESCHED))}"


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        if column == "workload":
            table.add_column(column, no_wrap=True)
        else:
            table.add_column(column, justify="right")
    return table


def print_table(doc: Result, console: Console | None = None) -> None:
    """Three tables (throughput; CPU and memory; latency), then why figures are
    missing. Cells with two figures are kube-scheduler's / kubesched's."""
    console = console or Console(width=max(150, shutil.get_terminal_size().columns))
    title = (
        f"kubesched vs kube-scheduler {doc['kubernetes_version']} — size {doc['size']}, "
        f"{doc['machine']['nproc']} CPUs, kubesched {doc.get('kubesched_commit', '')}"
        + (f", median of {doc['repeat']}" if doc.get("repeat", 1) > 1 else "")
    )
    speed = _table(
        f"{title}: pods/s; two figures: kube-scheduler / kubesched",
        [
            "workload",
            "nodes/init/\nmeasured",
            "in-process\nkubesched",
            "bind\nceiling",
            "create+schedule\nk-s / ks",
            "ratio\nks ÷ k-s",
            "% of ceiling\nk-s / ks",
            "backlog drain\nk-s / ks",
            "ratio\nks ÷ k-s",
            "% of ceiling\nk-s / ks",
        ],
    )
    cost = _table(
        f"{title}: scheduler CPU seconds and peak memory (VmHWM), k-s / ks",
        [
            "workload",
            "CPU s\ncreate+schedule",
            "CPU s backlog\n(whole process)",
            "peak MB\ncreate+schedule",
            "peak MB\nbacklog",
            "in-process\npeak MB",
        ],
    )
    latency = _table(
        f"{title}: latency (ms), k-s / ks",
        [
            "workload",
            "attempt p50/p90/p99\nkube-scheduler",
            "attempt p50/p90/p99\nkubesched",
            "create→bound p50/p99\ncreate+schedule",
            "start→bound p50/p99\nbacklog",
        ],
    )
    for name, entry in doc["workloads"].items():
        e2e, backlog = entry.get("e2e"), entry.get("backlog")
        inproc = entry.get("inprocess")
        shares = of_ceiling(entry)
        speed.add_row(
            name,
            _sizes(entry),
            _rate(inproc) if "inprocess" in entry else "—",
            _rate(entry["ceiling"]) if "ceiling" in entry else "—",
            _pair(e2e, _rate),
            _x(entry["ratios"]["e2e_pods_per_second"]),
            _pct(shares.get("e2e")),
            _pair(backlog, _rate),
            _x(entry["ratios"].get("backlog_pods_per_second")),
            _pct(shares.get("backlog")),
        )
        cost.add_row(
            name,
            _pair(e2e, _cpu),
            _pair(backlog, _cpu),
            _pair(e2e, _mb),
            _pair(backlog, _mb),
            _mb(inproc) if "inprocess" in entry else "—",
        )
        latency.add_row(
            name,
            _lat(e2e.get(KUBE_SCHEDULER)) if e2e else "—",
            _lat(e2e.get(KUBESCHED)) if e2e else "—",
            _pair(e2e, lambda r: _p50_p99(r, "create_to_bound_ms")),
            _pair(backlog, lambda r: _p50_p99(r, "start_to_bound_ms")),
        )
    console.print(speed)
    console.print(cost)
    console.print(latency)
    stages = stage_table(doc, title)
    if stages is not None:
        console.print(stages)
    for name, entry in doc["workloads"].items():
        for line in [*ceiling_events_lines(entry), *gang_lines(entry), *missing(entry)]:
            console.print(f"  {name} — {line}", markup=False, highlight=False)


# kubesched's stages (kube/cpu_budget.py), in the table's order.
STAGES = (
    "scheduling cycle",
    "informer handlers",
    "list and watch decode",
    "housekeeping",
    "scheduling thread, rest",
    "other threads",
    "api worker",
)


STAGE_HEADERS = (
    "cycle",
    "handlers",
    "decode",
    "house-\nkeeping",
    "thread\nrest",
    "other\nthreads",
    "api\nworker",
)


def _per_pod_ms(result: Result | None) -> float | None:
    """A scheduler's CPU (every process it ran) per pod bound, in ms."""
    if not result or not result.get("bound") or result.get("scheduler_cpu_seconds") is None:
        return None
    return 1000 * float(result["scheduler_cpu_seconds"]) / float(result["bound"])


def stage_table(doc: Result, title: str) -> Table | None:
    """kubesched's CPU per bound pod by stage, per workload and end-to-end mode,
    beside kube-scheduler's whole CPU per bound pod and kubesched's in process;
    None if no run has the stages."""
    table = _table(
        f"{title}: CPU ms per bound pod; kubesched by stage (kube/cpu_budget.py), its "
        "scheduling thread's sum, in process, and kube-scheduler's whole",
        ["workload", "mode", *STAGE_HEADERS, "total", "thread", "in proc", "k-s"],
    )
    rows = 0
    for name, entry in doc["workloads"].items():
        inproc = entry.get("inprocess") or {}
        in_process = (
            1000 * inproc["cpu_seconds"] / inproc["bound"]
            if inproc.get("cpu_seconds") and inproc.get("bound")
            else None
        )
        for mode, label in (("e2e", "create"), ("backlog", "backlog")):
            runs = entry.get(mode) or {}
            budget = (runs.get(KUBESCHED) or {}).get("cpu_ms_per_pod_by_stage")
            if not budget:
                continue
            thread = sum(budget.get(s, 0.0) for s in STAGES[:5])
            ks = _per_pod_ms(runs.get(KUBE_SCHEDULER))
            table.add_row(
                name,
                label,
                *(f"{budget[s]:.3f}" if s in budget else "—" for s in STAGES),
                f"{budget.get('total', 0.0):.3f}",
                f"{thread:.3f}",
                f"{in_process:.3f}" if in_process is not None else "—",
                f"{ks:.3f}" if ks is not None else "—",
            )
            rows += 1
    return table if rows else None


def ceiling_events_lines(entry: Result) -> list[str]:
    """The bind ceiling with a scheduler's other API work (a pod watch and a
    Scheduled event per bind), and each scheduler's pods/s as a share of it."""
    full = entry.get("ceiling_events")
    if not isinstance(full, dict):
        return []
    if full.get("status") != "ok":
        return [f"bind ceiling with events and a pod watch: {_why(full)}"]
    limit = full["pods_per_second"]
    probe = full.get("probe") or {}
    line = (
        f"bind ceiling with events and a pod watch: {_rate(full)} pods/s "
        f"({probe.get('events_written')} events written, {probe.get('events_dropped')} dropped; "
        f"bound with their events written: {probe.get('with_events_per_second')} pods/s)"
    )
    shares = []
    for mode in ("e2e", "backlog"):
        for who, result in (entry.get(mode) or {}).items():
            share = _ratio(_get(result, "pods_per_second"), limit)
            if share is not None and _get(result, "status") == "ok":
                shares.append(f"{mode} {who} {share:.0%}")
    return [line + (f"; of it: {', '.join(shares)}" if shares else "")]


def gang_lines(entry: Result) -> list[str]:
    """A workload's gangs (bench.gang_workload's tally) per run: bound whole, in
    part (must be 0) and refused, and the measured pods bound."""
    lines = []
    for mode, who, result in scheduler_runs(entry):
        gangs = _get(result, "gangs")
        if isinstance(gangs, dict):
            lines.append(
                f"{mode} {who}: gangs whole {gangs['whole']}/{gangs['gangs']}, "
                f"in part {gangs['in_part']}, refused {gangs['refused']}; "
                f"pods bound {gangs['pods_bound']}"
            )
    return lines


# docs/develop/benchmarks.md's table at upstream's sizes; cells with two figures are
# kube-scheduler's / kubesched's.
MARKDOWN_COLUMNS = (
    "workload",
    "nodes / init / measured",
    "bind ceiling pods/s",
    "create+schedule pods/s",
    "ratio",
    "% of ceiling",
    "backlog drain pods/s",
    "ratio",
    "% of ceiling",
    "create→bound p50 / p99 ms",
    "scheduler CPU s (create+schedule / backlog)",
    "peak MB",
)


def markdown_table(doc: Result) -> str:
    """The results as docs/develop/benchmarks.md's table (median of the repeats, their
    min–max in brackets), one row per workload."""
    lines = [
        "| " + " | ".join(MARKDOWN_COLUMNS) + " |",
        "|---|---|" + "---:|" * (len(MARKDOWN_COLUMNS) - 2),
    ]
    for name, entry in doc["workloads"].items():
        e2e, backlog = entry.get("e2e"), entry.get("backlog")
        shares = of_ceiling(entry)
        ratio = entry.get("ratios") or {}
        cells = [
            name,
            _sizes(entry).replace("/", " / "),
            _rate(entry.get("ceiling")) if "ceiling" in entry else "—",
            _pair(e2e, _rate),
            _x(ratio.get("e2e_pods_per_second")),
            _pct(shares.get("e2e")),
            _pair(backlog, _rate),
            _x(ratio.get("backlog_pods_per_second")),
            _pct(shares.get("backlog")),
            _pair(e2e, lambda r: _p50_p99(r, "create_to_bound_ms")),
            f"{_pair(e2e, _cpu)} ; {_pair(backlog, _cpu)}",
            _pair(e2e, _mb),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_json(doc: Result, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def _gap(entry: Result) -> str:
    """Why a workload has no end-to-end ratio, in a few words."""
    e2e = entry.get("e2e") or {}
    for who in (KUBESCHED, KUBE_SCHEDULER):
        result = e2e.get(who)
        if isinstance(result, dict) and result.get("status") != "ok":
            missing = result.get("plugin") or result.get("missing")
            if result.get("status") == "n/a" and missing:
                return f"{who}: n/a — no {missing}"
            return f"{who}: {result.get('status')}"
    inproc = entry.get("inprocess")
    if isinstance(inproc, dict) and inproc.get("status") == "n/a":
        return f"kubesched: n/a — no {inproc.get('plugin', 'plugin')}"
    return "not run"


def plot(doc: Result, path: Path) -> None:
    """Bars of kubesched / kube-scheduler per workload, on a log scale around 1.

    Left, throughput (higher is better for kubesched): end-to-end pods/s
    (creating while scheduling, and draining a backlog), and kubesched
    in-process over kube-scheduler end-to-end. Right, costs (lower is
    better): p99 scheduling-attempt latency and peak memory, end to end. A
    workload without a ratio says why where its bars would be."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(doc["workloads"])
    panels = [
        (
            "throughput: kubesched / kube-scheduler (higher is better)",
            [
                ("e2e_pods_per_second", "end-to-end pods/s", "#1f77b4", ""),
                ("backlog_pods_per_second", "backlog drain pods/s", "#2ca02c", "xx"),
                ("inprocess_vs_e2e", "kubesched in-process ÷ kube-scheduler e2e", "#aec7e8", "//"),
            ],
        ),
        (
            "cost: kubesched / kube-scheduler (lower is better)",
            [
                (
                    "e2e_p99_latency",
                    "p99 attempt latency, /metrics (k-s: incl. bind)",
                    "#d62728",
                    "..",
                ),
                ("e2e_p99_create_to_bound", "p99 create→bound (client)", "#ff7f0e", ""),
                ("e2e_peak_rss", "peak memory (VmHWM)", "#ff9896", ""),
                ("e2e_cpu_seconds", "scheduler CPU time", "#9467bd", ""),
            ],
        ),
    ]
    fig, axes = plt.subplots(1, 2, figsize=(16, 7))
    for ax, (title, series) in zip(axes, panels, strict=True):
        width = 0.8 / len(series)
        seen: list[float] = []
        for i, (key, label, color, hatch) in enumerate(series):
            xs, ys = [], []
            for j, name in enumerate(names):
                value = doc["workloads"][name]["ratios"].get(key)
                if value is None:
                    continue
                x = j - 0.4 + width * (i + 0.5)
                xs.append(x)
                ys.append(value)
                seen.append(value)
                ax.annotate(
                    f"{value:.2f}",
                    (x, value),
                    ha="center",
                    va="bottom",
                    fontsize=6.5,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
            ax.bar(xs, ys, width, label=label, color=color, hatch=hatch, edgecolor="black")
        low = min([*seen, 0.5]) / 2
        high = max([*seen, 2.0]) * 2
        ax.set_yscale("log")
        ax.set_ylim(low, high)
        for j, name in enumerate(names):
            ratios_ = doc["workloads"][name]["ratios"]
            gaps = [i for i, (key, *_) in enumerate(series) if ratios_.get(key) is None]
            if gaps:  # say why in the first empty slot
                x = j - 0.4 + width * (gaps[0] + 0.5) if len(gaps) < len(series) else j
                ax.text(
                    x,
                    1.0,
                    _gap(doc["workloads"][name]),
                    ha="center",
                    va="center",
                    rotation=90,
                    fontsize=8,
                    color="#555555",
                )
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_xlim(-0.6, len(names) - 0.4)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([_tick(doc, n) for n in names], rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10, pad=40)
        ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
        ax.grid(axis="y", which="both", alpha=0.3)
    machine = doc["machine"]
    fig.suptitle(
        f"kubesched vs kube-scheduler {doc['kubernetes_version']}, size {doc['size']} — "
        f"{machine['nproc']} CPUs ({machine['cpu_model']}), {doc['timestamp']}",
        fontsize=11,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tick(doc: Result, name: str) -> str:
    """The workload's name and its end-to-end rates (kube-scheduler / kubesched)."""
    e2e = doc["workloads"][name].get("e2e") or {}
    rates = []
    for who, short in ((KUBE_SCHEDULER, "k-s"), (KUBESCHED, "ks")):
        result = e2e.get(who)
        if isinstance(result, dict) and result.get("status") == "ok":
            rates.append(f"{short} {result['pods_per_second']:,.0f}")
    return name + (f"\n{' / '.join(rates)} pods/s" if rates else "")


def merge(docs: Sequence[Result], names: Sequence[str]) -> Result:
    """One results document from several runs at the same size and Kubernetes
    version (e.g. the workloads of a 5,000-node run done over several sessions).

    A workload measured in one file is taken as it is, every mode the run measured
    for it. A workload measured again is the later file's, except that single runs
    (`--repeat 1`) of one kubesched commit are pooled: each mode's median over them,
    as `python -m bench --repeat N` takes it (bench.medians.median_run), so a run
    longer than a session can be made one repeat at a time. Its "source" says which
    files, commit and times it came from. A workload with no measurement (a run
    stopped before it) is left out."""
    if not docs:
        raise ValueError("no results to merge")
    first = docs[0]
    merged: Result = {
        key: first.get(key) for key in ("schema", "size", "kubernetes_version", "machine")
    }
    merged["merged_from"] = list(names)
    merged["kubesched_commit"] = ", ".join(sorted({str(d.get("kubesched_commit")) for d in docs}))
    measured: dict[str, list[tuple[Result, Result]]] = {}
    for doc, name in zip(docs, names, strict=True):
        for key in ("size", "kubernetes_version"):
            if doc.get(key) != first.get(key):
                raise ValueError(
                    f"{name}: {key} {doc.get(key)!r}, not {first.get(key)!r} as in {names[0]}"
                )
        for workload, entry in doc["workloads"].items():
            if not any(mode in entry for mode in MEASURED_MODES):
                continue
            source = {
                "file": name,
                "kubesched_commit": doc.get("kubesched_commit"),
                "timestamp": doc.get("timestamp"),
                "complete": doc.get("complete", True),
                "repeat": doc.get("repeat", 1),
            }
            kept = measured.setdefault(workload, [])
            if kept and not _poolable(kept[-1], (entry, source)):
                kept.clear()
            kept.append((entry, source))
    merged["workloads"] = {name: _pooled(runs) for name, runs in measured.items()}
    # how many runs each workload's medians come from; the fewest of them
    merged["repeat"] = min(
        (len(runs) if len(runs) > 1 else int(runs[0][1]["repeat"]) for runs in measured.values()),
        default=1,
    )
    return merged


MEASURED_MODES = ("inprocess", "e2e", "backlog", "ceiling", "ceiling_events")


def _single(entry: Result) -> bool:
    """A workload entry from a `--repeat 1` run: no result carries repeats."""
    results = [r for _, _, r in scheduler_runs(entry)]
    results += [entry.get("ceiling"), entry.get("ceiling_events")]
    return all(not (isinstance(r, dict) and "repeats" in r) for r in results)


def _poolable(before: tuple[Result, Result], after: tuple[Result, Result]) -> bool:
    (old, old_source), (new, new_source) = before, after
    return (
        old_source["kubesched_commit"] == new_source["kubesched_commit"]
        and _single(old)
        and _single(new)
        and [m for m in MEASURED_MODES if m in old] == [m for m in MEASURED_MODES if m in new]
    )


def _pooled(runs: list[tuple[Result, Result]]) -> Result:
    entry, source = runs[-1]
    if len(runs) == 1:
        return dict(entry, source=source)
    pooled = dict(entry)
    entries = [e for e, _ in runs]
    if "inprocess" in entry:
        pooled["inprocess"] = median_run([e["inprocess"] for e in entries])
    for ceiling in ("ceiling", "ceiling_events"):
        if ceiling in entry:
            pooled[ceiling] = median_run([e[ceiling] for e in entries])
    for mode in ("e2e", "backlog"):
        if mode in entry:
            pooled[mode] = {
                who: median_run([e[mode][who] for e in entries if who in e[mode]])
                for who in entry[mode]
            }
    pooled["ratios"] = ratios(pooled)
    pooled["of_ceiling"] = of_ceiling(pooled)
    pooled["source"] = dict(
        source,
        file=", ".join(s["file"] for _, s in runs),
        timestamp=", ".join(str(s["timestamp"]) for _, s in runs),
        complete=all(s["complete"] for _, s in runs),
        pooled=len(runs),
    )
    return pooled


def main(argv: Sequence[str] | None = None) -> None:
    """python -m bench.report RESULTS.json...: each file's tables again, and its
    markdown table; with --merge, one table of the files' workloads together."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.report")
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument(
        "--merge",
        action="store_true",
        help="one table of all the files' workloads (same size), each from the last "
        "file that measured it, or the median of --repeat 1 runs of one commit",
    )
    args = parser.parse_args(argv)
    docs = [json.loads(path.read_text()) for path in args.results]
    if args.merge:
        try:
            doc = merge(docs, [str(p) for p in args.results])
        except ValueError as exc:
            parser.error(str(exc))
        docs = [doc]
    for doc in docs:
        print_table(doc)
        print(markdown_table(doc))
        for name, entry in doc["workloads"].items():
            source = entry.get("source")
            if source:
                print(
                    f"{name}: {source['file']} (kubesched {source['kubesched_commit']}, "
                    f"{source['timestamp']}"
                    + ("" if source["complete"] else ", a run stopped before its end")
                    + (f"; the median of {source['pooled']} runs" if source.get("pooled") else "")
                    + ")"
                )


if __name__ == "__main__":
    main()
