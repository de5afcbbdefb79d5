"""How `kubesched explain` shows an Explanation: tables that stay readable for
5,000 nodes (nodes that share a verdict are one row, with a few of their names),
laid out for the terminal's width."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kubesched.api.quantity import format_amount
from kubesched.framework.explain import (
    Explanation,
    PluginScore,
    RejectedNodes,
    ScoredNodes,
    Shortfall,
)

# A column per score plugin needs about this many characters; narrower terminals
# get each group's scores stacked in one column instead.
_SCORE_COLUMN_WIDTH = 16
_FIXED_SCORE_COLUMNS_WIDTH = 44


def node_list(nodes: list[str], shown: int) -> str:
    """A few of the nodes' names, and how many more there are."""
    if shown <= 0 or len(nodes) <= shown:
        return ", ".join(nodes)
    return ", ".join(nodes[:shown]) + f" … +{len(nodes) - shown}"


def shortfall_line(shortfall: Shortfall) -> str:
    """The pod's request against what the nodes have free, in the resource's units
    (fitsRequest's InsufficientResource: Requested, Capacity, Used): one figure when
    the group's nodes agree, else the range."""

    def span(values: list[int]) -> str:
        low, high = min(values), max(values)
        text = format_amount(shortfall.resource, low)
        return text if low == high else f"{text}–{format_amount(shortfall.resource, high)}"

    nodes = shortfall.nodes
    requested = format_amount(shortfall.resource, shortfall.requested)
    free = span([n.free for n in nodes])
    allocatable = span([n.allocatable for n in nodes])
    used = span([n.used for n in nodes])
    return (
        f"{shortfall.resource}: requested {requested}, free {free} "
        f"({allocatable} allocatable, {used} already requested)"
    )


def verdict_cells(group: RejectedNodes) -> tuple[str, str]:
    """The group's reason and other-filters cells, each shortfall under the reason it
    explains."""
    reason_lines = ["; ".join(group.reasons)]
    other_lines = [f"{p}: {'; '.join(r) or '-'}" for p, r in group.also_rejected_by.items()]
    for shortfall in group.insufficient:
        line = "  " + shortfall_line(shortfall)
        (reason_lines if shortfall.reason in group.reasons else other_lines).append(line)
    return "\n".join(reason_lines), "\n".join(other_lines)


def score_cell(score: PluginScore) -> str:
    """raw → normalized × weight = weighted (the arrow only where NormalizeScore
    changed the score)."""
    normalized = f"→{score.normalized}" if score.normalized != score.raw else ""
    return f"{score.raw}{normalized} ×{score.weight} = {score.weighted}"


def print_explanation(
    console: Console,
    explanation: Explanation,
    *,
    final_node: str | None,
    total_attempts: int,
    examples: int = 3,
    top: int = 10,
) -> None:
    e = explanation
    console.print(
        f"[bold]Pod {e.pod}[/bold] — attempt {e.attempt} of {total_attempts}, "
        f"profile {e.plugins.profile}",
        highlight=False,
    )
    if e.result == "Scheduled":
        bound = " (bound there)" if final_node == e.node else f" (now: {final_node or 'pending'})"
        console.print(f"Result: scheduled on [bold]{e.node}[/bold]{bound}", highlight=False)
    else:
        console.print(f"Result: {e.result}: {e.message}", highlight=False, markup=False)
    rejected = sum(len(g.nodes) for g in e.rejected)
    summary = f"Nodes: {e.num_nodes}; {e.feasible} feasible, {rejected} rejected"
    if e.not_evaluated:
        summary += f", {e.not_evaluated} {e.not_evaluated_reason}"
    console.print(summary, highlight=False)
    if e.nominated_node:
        verdict = "fits" if e.nominated_fits else "does not fit"
        console.print(f"Nominated node {e.nominated_node} tried first: {verdict}", highlight=False)
    if e.pre_filter:
        console.print(f"PreFilter rejected the pod: {e.pre_filter}", highlight=False, markup=False)

    if e.rejected:
        table = Table(title="Filter verdicts (nodes grouped by verdict)", title_justify="left")
        table.add_column("nodes", justify="right")
        table.add_column("examples", overflow="fold")
        table.add_column("rejected by")
        table.add_column("reason", overflow="fold")
        table.add_column("other filters that reject them", overflow="fold")
        for group in e.rejected:
            reasons, also = verdict_cells(group)
            # Unresolvable: preemption cannot help on these nodes (upstream's code).
            code = {"Unschedulable": "", "UnschedulableAndUnresolvable": " (unresolvable)"}.get(
                group.code, f" ({group.code})"
            )
            table.add_row(
                str(len(group.nodes)),
                node_list(group.nodes, examples),
                group.plugin + code,
                reasons,
                also,
            )
        console.print(table)

    if e.scored:
        _print_scores(console, e.scored, examples, top)
    if e.score_skipped:
        console.print(f"Score skipped (PreScore): {', '.join(e.score_skipped)}", highlight=False)
    if e.tie is not None:
        console.print(
            f"Tie: {len(e.tie.nodes)} nodes share the best total "
            f"({node_list(e.tie.nodes, examples)}); chose {e.tie.chosen}: {e.tie.how}",
            highlight=False,
        )
    elif e.node and e.feasible > 1:
        console.print(f"Chosen: {e.node}, the only node with the best total", highlight=False)
    if e.post_filter is not None:
        pf = e.post_filter
        line = f"PostFilter: {pf.message}" if pf.message else "PostFilter:"
        if pf.nominated_node:
            line += f" nominated node {pf.nominated_node} (preemption)"
        elif not pf.message:
            line += " nothing nominated"
        if pf.victims:
            line += f"; victims: {', '.join(pf.victims)}"
        console.print(line, highlight=False, markup=False)


def _print_scores(console: Console, scored: list[ScoredNodes], examples: int, top: int) -> None:
    plugins = [s.plugin for s in scored[0].scores]
    if not plugins:
        nodes = node_list([n for g in scored for n in g.nodes], examples)
        console.print(f"One feasible node ({nodes}): not scored (schedulePod)", highlight=False)
        return
    count = sum(len(g.nodes) for g in scored)
    shown = scored if top <= 0 else scored[:top]
    title = f"Scores of the {count} feasible nodes (grouped by equal scores, best first)"
    if len(shown) < len(scored):
        title += f"; top {len(shown)} of {len(scored)} groups"
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("nodes", justify="right")
    table.add_column("examples", overflow="fold")
    table.add_column("total", justify="right")
    wide = console.width >= _FIXED_SCORE_COLUMNS_WIDTH + _SCORE_COLUMN_WIDTH * len(plugins)
    if wide:
        for plugin in plugins:
            table.add_column(plugin, justify="right", overflow="fold")
    else:
        table.add_column("raw→normalized ×weight = weighted", overflow="fold")
    for rank, group in enumerate(shown, 1):
        cells = [str(rank), str(len(group.nodes)), node_list(group.nodes, examples)]
        cells.append(str(group.total))
        if wide:
            cells.extend(score_cell(s) for s in group.scores)
        else:
            cells.append("\n".join(f"{s.plugin}: {score_cell(s)}" for s in group.scores))
        table.add_row(*cells)
    console.print(table)
