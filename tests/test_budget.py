"""Budgets only go down; overspending is refused; the ledger restores from a run's events."""

from __future__ import annotations

from pathlib import Path

import pytest

from rsi_workbench.budget import (
    EXTERNAL_FEEDBACK,
    UPDATE_COMPUTE,
    BudgetExceeded,
    BudgetLedger,
    UnknownBudget,
)
from rsi_workbench.records import Run


def test_spend_and_refusal_without_run() -> None:
    led = BudgetLedger.open(None, {EXTERNAL_FEEDBACK: 3})
    assert led.spend(EXTERNAL_FEEDBACK, 2) == 1
    with pytest.raises(BudgetExceeded, match="exceeds the remaining 1"):
        led.spend(EXTERNAL_FEEDBACK, 2)
    assert led.remaining(EXTERNAL_FEEDBACK) == 1  # a refused spend records nothing
    with pytest.raises(ValueError, match="only go down"):
        led.spend(EXTERNAL_FEEDBACK, -1)
    with pytest.raises(UnknownBudget):
        led.spend("gpu_hours", 1)


def test_ledger_events_and_restore(tmp_path: Path) -> None:
    run = Run.create(tmp_path / "r", {})
    led = BudgetLedger.open(run, {EXTERNAL_FEEDBACK: 10, UPDATE_COMPUTE: 5})
    led.spend(EXTERNAL_FEEDBACK, 4, reason="online test calls", cycle=0)
    led.spend(UPDATE_COMPUTE, 1.5, reason="adapt", cycle=0)
    run.close()
    run = Run.open(tmp_path / "r", mode="a")
    led2 = BudgetLedger.open(run, {EXTERNAL_FEEDBACK: 10, UPDATE_COMPUTE: 5})
    assert led2.remaining(EXTERNAL_FEEDBACK) == 6 and led2.remaining(UPDATE_COMPUTE) == 3.5
    assert led2.report()[UPDATE_COMPUTE] == {"initial": 5.0, "spent": 1.5, "remaining": 3.5}
    spent = run.events("budget_spent")
    assert [e.payload["budget"] for e in spent] == [EXTERNAL_FEEDBACK, UPDATE_COMPUTE]
    assert spent[0].payload["remaining"] == 6
    with pytest.raises(ValueError, match="was opened with budgets"):
        BudgetLedger.open(run, {EXTERNAL_FEEDBACK: 99})
    run.close()
