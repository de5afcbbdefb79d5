"""What a differential run reports: the agreement rates added up over scenarios
(Totals) and the document a regression file keeps of a disagreement."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.differential.harness.records import Comparison


# --------------------------------------------------------------------- aggregates
@dataclass
class Totals:
    scenarios: int = 0
    scenarios_ok: int = 0
    steps: int = 0
    compared: int = 0
    bound_agree: int = 0
    unbound_both: int = 0
    message_agree: int = 0
    unique: int = 0
    unique_agree: int = 0
    ties: int = 0
    swaps: int = 0
    indirect: int = 0
    diverged: int = 0
    claims: int = 0
    claims_agree: int = 0
    member_orders: int = 0
    attempts: int = 0
    attempts_agree: int = 0
    simulated: int = 0
    simulated_agree: int = 0
    kinds: Counter[str] = field(default_factory=Counter)

    def add(self, c: Comparison) -> None:
        self.scenarios += 1
        self.scenarios_ok += c.ok
        for name in (
            "steps",
            "compared",
            "bound_agree",
            "unbound_both",
            "message_agree",
            "unique",
            "unique_agree",
            "ties",
            "swaps",
            "indirect",
            "claims",
            "claims_agree",
            "member_orders",
            "attempts",
            "attempts_agree",
            "simulated",
            "simulated_agree",
        ):
            setattr(self, name, getattr(self, name) + getattr(c, name))
        self.diverged += c.diverged_at is not None
        self.kinds.update(d.kind for d in c.disagreements)

    def lines(self) -> list[str]:
        def rate(n: int, d: int) -> str:
            return f"{n}/{d} ({100.0 * n / d:.1f}%)" if d else "0/0 (-)"

        return [
            f"scenarios without disagreement: {rate(self.scenarios_ok, self.scenarios)}",
            f"steps compared:                 {rate(self.compared, self.steps)}: "
            f"{self.compared - self.indirect} run against run, {self.indirect} each run "
            f"against kubesched in-process",
            f"ties:                           {self.ties} ({self.swaps} resolved as "
            f"interchangeable nodes, {self.diverged} scenarios diverged after one)",
            f"bound set agreement:            {rate(self.bound_agree, self.compared)}",
            f"message agreement:              {rate(self.message_agree, self.unbound_both)}"
            + (
                f" ({self.member_orders} as gang members in another order)"
                if self.member_orders
                else ""
            ),
            f"node agreement (unique best):   {rate(self.unique_agree, self.unique)}",
            f"claims allocated alike (dra):   {rate(self.claims_agree, self.claims)}",
            f"attempts per pod (where both deterministic): "
            f"{rate(self.attempts_agree, self.attempts)}",
            f"  kubesched simulate, pods one at a time: "
            f"{rate(self.simulated_agree, self.simulated)}",
            "disagreements by kind:          "
            + (", ".join(f"{k}={v}" for k, v in sorted(self.kinds.items())) or "none"),
        ]


def regression_document(scenario: Mapping[str, Any], comparison: Comparison) -> dict[str, Any]:
    """A regression file: the scenario plus what was seen (for humans; the test
    re-runs both schedulers)."""
    return {
        "scenario": dict(scenario),
        "found": comparison.report(),
    }
