"""The engine end to end over the test-double domain: records, budgets, resume after SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from protocol_double_run import SETTINGS, run_double
from protocol_doubles import make_test_double_spec

from rsi_workbench.protocol.loop import Loop, ProtocolSettings, effective_events
from rsi_workbench.protocol.report import acceptance, decision_lines, summarize_run
from rsi_workbench.records import Run

HERE = Path(__file__).resolve().parent


def _records(path: Path) -> list[tuple]:
    """Effective records without wall-clock fields: what must be identical across ways of running."""
    out = []
    for e in effective_events(Run.open(path)):
        if e.kind == "cycle_attempt_discarded":
            continue
        out.append((e.kind, e.cycle, e.payload))
    return out


def _table(path: Path) -> tuple:
    s = summarize_run(path)
    return (
        s.rate("hidden_all_pass"),
        s.calls_per_task,
        s.update_compute,
        s.ranking_accuracy,
        s.brier,
        tuple(decision_lines(s)),
    )


def test_loop_records_every_decision_and_ledgers_budgets_separately(tmp_path):
    p = run_double(tmp_path / "r")
    kinds = {e.kind for e in Run.open(p).events()}
    for k in (
        "proposal",
        "selection",
        "observation",
        "audit",
        "reliability",
        "adaptation_trigger",
        "policy_trigger",
        "gate",
        "assembly",
        "retain",
        "cycle_finished",
        "final_audit",
        "budget_spent",
    ):
        assert k in kinds, k
    s = summarize_run(p)
    assert s.finished and len(s.cycles) == 3
    assert 1.0 <= s.calls_per_task <= 4.0  # initial program + at most three rounds
    assert s.update_compute > 0  # adaptation / gate executions, never counted as online calls
    assert acceptance(s)["adaptations"][0] >= 1
    for e in Run.open(p).events("gate"):
        assert "thresholds" in e.payload and "current" in e.payload and "proposed" in e.payload
    spent = [e.payload for e in Run.open(p).events("budget_spent")]
    assert all(x["remaining"] >= 0 for x in spent)


def test_stepping_and_running_give_identical_records(tmp_path):
    a = run_double(tmp_path / "a")
    b = run_double(tmp_path / "b", step=True)
    c = run_double(tmp_path / "c", n=1)
    c = run_double(tmp_path / "c")  # re-opened after one cycle: resume from events
    assert _records(a) == _records(b) == _records(c)


def test_insufficient_never_triggers_and_pair_gate_is_skipped(tmp_path):
    settings = SETTINGS.model_copy(
        update={"reliability": SETTINGS.reliability.model_copy(update={"min_predictions": 10_000})}
    )
    with Run.create(tmp_path / "r", {"x": 1}) as run:
        Loop.open(make_test_double_spec(), run, settings, seed=0).run()
    evs = Run.open(tmp_path / "r").events()
    assert all(e.payload["verdict"] == "insufficient" for e in evs if e.kind == "reliability")
    assert not any(e.payload["triggered"] for e in evs if e.kind == "adaptation_trigger")
    pair = [e.payload for e in evs if e.kind == "gate" and e.payload["gate"] == "pair"]
    # policy updates are on; cycles where the policy gate failed skip the pair gate with G_pair = 1
    assert any(p["skipped"] and p["passed"] for p in pair) or all(not p["skipped"] for p in pair)


def test_fixed_setting_skips_pair_gate_every_cycle(tmp_path):
    with Run.create(tmp_path / "r", {"x": 1}) as run:
        Loop.open(make_test_double_spec(), run, ProtocolSettings(), seed=0).run()
    pair = [e.payload for e in Run.open(tmp_path / "r").events("gate")]
    assert len(pair) == 3 and all(p["gate"] == "pair" and p["skipped"] and p["passed"] for p in pair)


def test_external_budget_refusal_stops_tasks_without_overspending(tmp_path):
    spec = make_test_double_spec(external=15.0)  # 12 initial calls leave 3 for the first round
    with Run.create(tmp_path / "r", {"x": 1}) as run:
        loop = Loop.open(spec, run, ProtocolSettings(), seed=0)
        loop.run()
        assert loop.ledger.remaining("external_feedback") >= 0
    sel = [e.payload for e in Run.open(tmp_path / "r").events("selection")]
    assert sum(s["outcome"] == "refused_budget" for s in sel) >= 1
    assert sum(s["outcome"] == "selected" for s in sel) == 3


@pytest.mark.slow
def test_sigkill_mid_cycle_then_resume_gives_the_same_table(tmp_path):
    ref = run_double(tmp_path / "ref")
    out = tmp_path / "killed"
    repo = str(HERE.parent.parent)
    env = {
        **os.environ,
        "TEST_DOUBLE_DELAY": "0.02",
        "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    proc = subprocess.Popen([sys.executable, str(HERE / "protocol_double_run.py"), str(out)], env=env)
    events = out / "events.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once cycle 2 is under way (mid-cycle)
        assert proc.poll() is None, "the run under test exited before it could be killed"
        if events.exists() and '"kind":"cycle_started","cycle":2' in events.read_text():
            time.sleep(0.1)
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    text = events.read_text()
    assert '"kind":"cycle_finished","cycle":2' not in text, "the kill should land mid-cycle 2"
    run_double(out)  # resume
    assert [e.kind for e in Run.open(out).events("cycle_attempt_discarded")] == ["cycle_attempt_discarded"]
    assert _table(out) == _table(ref)
    assert _records(out) == _records(ref)


def test_rescoring_history_attributes_predictions_to_the_current_version(tmp_path):
    settings = SETTINGS.model_copy(update={"rescore_history": True})
    with Run.create(tmp_path / "r", {"x": 1}) as run:
        Loop.open(make_test_double_spec(), run, settings, seed=0).run()
    evs = Run.open(tmp_path / "r").events()
    rescored = [e for e in evs if e.kind == "history_rescored"]
    assert rescored, "after an accepted adaptation the new version re-scores the recorded inputs"
    rel = {e.cycle: e.payload for e in evs if e.kind == "reliability"}
    for e in rescored:  # the verdict of that cycle counts the re-scored units as the current version's
        assert rel[e.cycle]["version"] == e.payload["version"]
        assert rel[e.cycle]["n_predictions"] >= e.payload["units"]
    assert any(e.payload["reason"] == "history re-scoring" for e in evs if e.kind == "budget_spent")
