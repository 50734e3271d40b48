"""The oracle-budget reference: one event per (seed, task), resumable, with a printable report."""

from __future__ import annotations

from pathlib import Path

from rsi_workbench.domains.code_repair import RepairTask, Sandbox, TestCase
from rsi_workbench.domains.code_repair.oracle import (
    oracle_report,
    oracle_summary,
    repair_with_oracle,
    run_oracle,
)
from rsi_workbench.domains.code_repair.sandbox import default_mode
from rsi_workbench.records import Run

TASK = RepairTask(
    task_id="add",
    entry_point="add",
    program="def add(a, b):\n    return a - b\n",
    public_tests=[
        TestCase(id="p0", kind="assert", code="assert add(1, 2) == 3"),
        TestCase(id="p1", kind="assert", code="assert add(2, 2) == 4"),
    ],
    hidden_tests=[TestCase(id="h0", kind="io", args=[5, 7], expected=12)],
)
SOLVED = TASK.model_copy(update={"task_id": "done", "program": "def add(a, b):\n    return a + b\n"})


def test_loop_stops_when_public_tests_pass() -> None:
    sb = Sandbox(mode=default_mode())
    done = repair_with_oracle(SOLVED, sb, seed=0, rounds=3, k=2)
    assert done["rounds_used"] == 0 and done["success"] and not done["changed"]
    res = repair_with_oracle(TASK, sb, seed=0, rounds=1, k=3)
    assert res["rounds_used"] == 1 and len(res["history"][0]["scores"]) == 3
    assert res["public_executions"] == 2 + 3 * 2


def test_run_is_resumable_and_reported(tmp_path: Path) -> None:
    out = tmp_path / "oracle"
    run_oracle(out, [SOLVED], seeds=[0, 1], rounds=1, k=2, workers=1)
    assert len(Run.open(out).events("oracle_task")) == 2
    run_oracle(out, [SOLVED], seeds=[0, 1], rounds=1, k=2, workers=1)  # nothing left to do
    assert len(Run.open(out).events("oracle_task")) == 2
    s = oracle_summary(out)
    assert s["complete_seeds"] == 2 and s["mean_solved"] == 1 and s["std_solved"] == 0
    text = oracle_report(out)
    assert "mean over 2 complete seed(s): 1.00/1" in text and not (out / "report.txt").exists()
