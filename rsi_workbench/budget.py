"""Budget ledger: named budgets that only go down; every spend is an event.

External feedback (e.g. online test calls, replayed experiments), update compute (adaptation,
re-scoring, gate evaluation) and agent calls are ledgered separately and reported separately.
A spend beyond the remainder is refused with :class:`BudgetExceeded` and nothing is recorded.

Work in flight (model calls made from several threads at once) first **holds** what it may spend
(:meth:`BudgetLedger.hold`): a hold is refused when the budget left after every other hold cannot
cover it, so calls in flight together never spend more than the budget, as they could when each
only checked the remainder when it started. A hold is not a spend: nothing is recorded, and what
the work does not spend returns when it ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rsi_workbench.records.run import Run

EXTERNAL_FEEDBACK = "external_feedback"
UPDATE_COMPUTE = "update_compute"
AGENT_CALLS = "agent_calls"
MODEL_TOKENS = "model_tokens"  # language-model tokens in + out, charged per live model call
USD = "usd"  # money for hosted models: each live call's price (the model block's price per 1k tokens)


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
    held: dict[str, float] = field(default_factory=dict)  # set aside by work in flight, not spent
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

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

    def free(self, name: str) -> float:
        """What is left of budget ``name`` after every hold of work in flight."""
        with self._lock:
            return self.remaining(name) - self.held.get(name, 0.0)

    @contextmanager
    def hold(self, name: str, amount: float, *, need: float | None = None) -> Iterator[Hold]:
        """Set ``amount`` of budget ``name`` aside while the block runs (work in flight), refused
        with :class:`BudgetExceeded` unless :meth:`free` covers ``need`` (default: ``amount``; pass
        e.g. a token to start a call that may use more than is left, as a single call may). Spend
        through the :class:`Hold`, which releases that much of it first; the rest returns at the end.

        ```python
        led = BudgetLedger({"agent_calls": 3})
        with led.hold("agent_calls", 1) as h:  # a second thread now sees 2 free, not 3
            h.spend(1, reason="model chat")
        ```
        """
        need = amount if need is None else need
        with self._lock:
            free = self.remaining(name) - self.held.get(name, 0.0)
            if need > free + 1e-12:
                inflight = self.held.get(name, 0.0)
                raise BudgetExceeded(
                    f"budget {name!r}: {need:g} needed, {self.remaining(name):g} left"
                    + (f", of which {inflight:g} is held by work in flight" if inflight else "")
                )
            self.held[name] = self.held.get(name, 0.0) + amount
        h = Hold(self, name, amount)
        try:
            yield h
        finally:
            h.release(h.left)

    def spend(
        self, name: str, amount: float, *, reason: str = "", cycle: int | None = None, **detail: Any
    ) -> float:
        """Spend ``amount`` from budget ``name``; returns what remains. Refuses overspending."""
        with self._lock:
            return self._spend(name, amount, reason=reason, cycle=cycle, **detail)

    def _spend(self, name: str, amount: float, *, reason: str, cycle: int | None, **detail: Any) -> float:
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


@dataclass
class Hold:
    """A budget set aside by work in flight (:meth:`BudgetLedger.hold`); ``left`` is still held."""

    ledger: BudgetLedger
    name: str
    left: float

    def release(self, amount: float) -> None:
        """Return up to ``amount`` of the hold to the budget's free part (nothing is recorded)."""
        with self.ledger._lock:
            x = max(0.0, min(float(amount), self.left))
            self.left -= x
            self.ledger.held[self.name] = self.ledger.held.get(self.name, 0.0) - x

    def spend(self, amount: float, *, release: float | None = None, **kw: Any) -> float:
        """Spend ``amount`` (:meth:`BudgetLedger.spend`), first releasing ``release`` (default:
        ``amount``) of the hold, in one step: no other thread sees both the spend and the hold."""
        with self.ledger._lock:
            self.release(amount if release is None else release)
            return self.ledger.spend(self.name, amount, **kw)
