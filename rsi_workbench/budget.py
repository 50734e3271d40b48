"""Budget ledger: named budgets that only go down; every spend is an event.

External feedback (e.g. online test calls, replayed experiments), update compute (adaptation,
re-scoring, gate evaluation) and agent calls are ledgered separately and reported separately.
A spend beyond the remainder is refused with :class:`BudgetExceeded` and nothing is recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.records.run import Run

EXTERNAL_FEEDBACK = "external_feedback"
UPDATE_COMPUTE = "update_compute"
AGENT_CALLS = "agent_calls"
MODEL_TOKENS = "model_tokens"  # language-model tokens in + out, charged per live model call


class BudgetExceeded(RuntimeError):
    """A spend would take a budget below zero."""


class UnknownBudget(KeyError):
    """No budget of that name was opened."""


@dataclass
class BudgetLedger:
    """Remaining amounts per named budget; optionally bound to a run whose events it writes.

    ``BudgetLedger.open(run, {"external_feedback": 600})`` writes a ``budget_opened`` event the first
    time and, when the run is resumed, rebuilds the remainders from its ``budget_spent`` events.
    """

    initial: dict[str, float]
    spent: dict[str, float] = field(default_factory=dict)
    run: Run | None = None

    def __post_init__(self) -> None:
        for name, amount in self.initial.items():
            if amount < 0:
                raise ValueError(f"budget {name!r} must be >= 0, got {amount}")
            self.spent.setdefault(name, 0.0)

    @classmethod
    def open(cls, run: Run | None, budgets: Mapping[str, float]) -> BudgetLedger:
        """Open budgets on a run, or restore them from its events if it already has them."""
        if run is None:
            return cls(dict(budgets))
        opened = run.events("budget_opened")
        if opened:
            initial = {k: float(v) for k, v in opened[0].payload["budgets"].items()}
            if initial != {k: float(v) for k, v in budgets.items()}:
                raise ValueError(f"run {run.path} was opened with budgets {initial}, not {dict(budgets)}")
            ledger = cls(initial, run=run)
            for ev in run.events("budget_spent"):
                ledger.spent[ev.payload["budget"]] += float(ev.payload["amount"])
            return ledger
        ledger = cls({k: float(v) for k, v in budgets.items()}, run=run)
        run.append("budget_opened", {"budgets": ledger.initial})
        return ledger

    def remaining(self, name: str) -> float:
        if name not in self.initial:
            raise UnknownBudget(f"no budget named {name!r}; opened: {sorted(self.initial)}")
        return self.initial[name] - self.spent[name]

    def can_spend(self, name: str, amount: float) -> bool:
        return amount <= self.remaining(name) + 1e-12

    def spend(
        self, name: str, amount: float, *, reason: str = "", cycle: int | None = None, **detail: Any
    ) -> float:
        """Spend ``amount`` from budget ``name``; returns what remains. Refuses overspending."""
        if amount < 0:
            raise ValueError(f"cannot spend a negative amount ({amount}) — budgets only go down")
        rem = self.remaining(name)
        if amount > rem + 1e-12:
            raise BudgetExceeded(
                f"budget {name!r}: spending {amount} ({reason or 'no reason given'}) exceeds the remaining {rem}"
            )
        self.spent[name] += amount
        if self.run is not None:
            self.run.append(
                "budget_spent",
                {"budget": name, "amount": amount, "remaining": rem - amount, "reason": reason, **detail},
                cycle=cycle,
            )
        return rem - amount

    def report(self) -> dict[str, dict[str, float]]:
        """Initial, spent and remaining amount per budget (reported separately, never summed)."""
        return {
            n: {"initial": self.initial[n], "spent": self.spent[n], "remaining": self.remaining(n)}
            for n in self.initial
        }
