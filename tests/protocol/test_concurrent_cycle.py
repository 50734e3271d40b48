"""A cycle's proposals in flight together, predictions batched, evaluations in parallel: the same
records as the sequential loop (rsi_workbench.protocol.concurrent)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from concurrent_doubles import BatchPredictorDouble, run_concurrent_double

from rsi_workbench.protocol.loop import effective_events
from rsi_workbench.protocol.report import decision_lines, summarize_run
from rsi_workbench.records import Run
from rsi_workbench.records.ordered import ordered_map

HERE = Path(__file__).resolve().parent
HOW = ("execution", "execution_workers")  # how a cycle runs, not what it decides
WALL = ("latency_s",)  # wall-clock fields of model_call events


def _strip(kind: str, payload: dict) -> dict:
    p = {k: v for k, v in payload.items() if k not in WALL}
    if kind == "loop_opened":
        p["settings"] = {k: v for k, v in p["settings"].items() if k not in HOW}
    return p


def _records(path: Path, seq: bool = True) -> list[tuple]:
    """The effective events minus wall-clock fields, in order (``seq``: with their positions in the
    log; a resumed log also holds the cut-off attempt, so its positions differ)."""
    return [
        (e.seq if seq else None, e.kind, e.cycle, _strip(e.kind, e.payload))
        for e in effective_events(Run.open(path))
        if e.kind != "cycle_attempt_discarded"
    ]


def _table(path: Path) -> tuple:
    s = summarize_run(path)
    return (s.rate("hidden_all_pass"), s.calls_per_task, s.update_compute, s.brier, tuple(decision_lines(s)))


def _assert_opened_and_audited_in_parallel(con: Path, con_env, seq_env) -> None:
    """Cycle 1's initial observations and the final audits ran several at once (the sequential run:
    one at a time); the task solved by its initial observation never proposed."""
    assert seq_env.most_at_once == {"initial": 1, "final_audit": 1}
    assert con_env.most_at_once["initial"] > 1 and con_env.most_at_once["final_audit"] > 1
    evs = list(Run.open(con).events())
    opened = [e.payload["task_id"] for e in evs if e.kind == "initial_observation"]
    assert len(opened) == 12 and max(i for i, e in enumerate(evs) if e.kind == "initial_observation") < min(
        i for i, e in enumerate(evs) if e.kind == "proposal"
    )
    assert "t3" not in {e.payload["task_id"] for e in evs if e.kind == "proposal"}


@pytest.mark.parametrize("external", [1000.0, 20.0])  # 20: the budget runs out mid-cycle (refusals)
def test_concurrent_cycle_writes_the_sequential_records(tmp_path, external):
    BatchPredictorDouble.batched_calls.clear()
    seq, _, seq_env = run_concurrent_double(tmp_path / "seq", "sequential", external=external)
    assert not BatchPredictorDouble.batched_calls  # the sequential loop predicts per task
    con, model, con_env = run_concurrent_double(tmp_path / "con", "concurrent", external=external)
    assert model.max_in_flight > 1  # proposals really were in flight together
    assert BatchPredictorDouble.batched_calls and max(BatchPredictorDouble.batched_calls) > 1
    assert Run.open(con).manifest["cycle_execution"]["propose"] is True
    assert _records(con) == _records(seq)  # model_call events included, in the sequential order
    assert _table(con) == _table(seq)
    _assert_opened_and_audited_in_parallel(con, con_env, seq_env)
    kinds = {e.kind for e in Run.open(con).events()}
    assert {"model_call", "proposal", "selection", "observation", "audit"} <= kinds
    if external < 100:
        sel = [e.payload["outcome"] for e in Run.open(con).events("selection")]
        assert "refused_budget" in sel
    else:  # every evaluation made ahead was used (none made twice)
        assert con_env.calls == seq_env.calls


@pytest.mark.parametrize("external", [1000.0, 20.0])
def test_pipelined_cycle_writes_the_sequential_records(tmp_path, external):
    """φ_k without predict_many: each task's prediction and evaluation start when its own proposal
    is back; predictions still one at a time, in task order; the records are the sequential ones."""
    from concurrent_doubles import OrderCheckingPredictorDouble

    OrderCheckingPredictorDouble.calls.clear()
    seq, _, seq_env = run_concurrent_double(tmp_path / "seq", "sequential", external=external, batched=False)
    seq_calls = list(OrderCheckingPredictorDouble.calls)
    OrderCheckingPredictorDouble.calls.clear()
    con, model, con_env = run_concurrent_double(
        tmp_path / "con", "concurrent", external=external, batched=False
    )
    assert model.max_in_flight > 1
    assert OrderCheckingPredictorDouble.calls == seq_calls  # the same calls, in the same order
    assert _records(con) == _records(seq)
    assert _table(con) == _table(seq)
    _assert_opened_and_audited_in_parallel(con, con_env, seq_env)
    if external > 100:
        assert con_env.calls == seq_env.calls  # every evaluation made ahead was used


def test_ordered_map_holds_appends_and_writes_them_in_item_order(tmp_path):
    run = Run.create(tmp_path / "r", {})

    def work(i: int) -> int:
        time.sleep(0.002 * (5 - i))  # later items finish first
        run.append("item", {"i": i})
        run.append("item_done", {"i": i})
        return i * i

    out, held = ordered_map(work, list(range(5)), workers=3)
    assert out == [0, 1, 4, 9, 16] and not run.events()
    for h in held:
        h.flush()
    assert [(e.kind, e.payload["i"]) for e in run.events()] == [
        (k, i) for i in range(5) for k in ("item", "item_done")
    ]


@pytest.mark.slow
def test_a_concurrent_run_killed_mid_cycle_resumes_to_the_sequential_records(tmp_path):
    ref, _, _ = run_concurrent_double(tmp_path / "ref", "sequential", model_run=tmp_path / "ref-model")
    out = tmp_path / "killed"
    repo = str(HERE.parent.parent)
    env = {
        **os.environ,
        "MODEL_DOUBLE_DELAY": "0.4",
        "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "concurrent_doubles.py"), str(out), "concurrent"], env=env
    )
    events = out / "events.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline:  # kill once cycle 2 is under way (its proposals in flight)
        assert proc.poll() is None, "the run under test exited before it could be killed"
        if events.exists() and '"kind":"cycle_started","cycle":2' in events.read_text():
            time.sleep(0.1)
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert '"kind":"cycle_finished","cycle":2' not in events.read_text(), "the kill should land mid-cycle 2"
    run_concurrent_double(out, "concurrent", model_run=tmp_path / "killed-model")  # resume
    assert [e.kind for e in Run.open(out).events("cycle_attempt_discarded")] == ["cycle_attempt_discarded"]
    assert _records(out, seq=False) == _records(ref, seq=False)
    assert _table(out) == _table(ref)


def test_phase_threads_outlive_their_phase():
    """A process started from a phase thread with a parent-death signal (bubblewrap's
    --die-with-parent: a pooled sandbox judge) must not die when the phase ends."""
    import threading

    seen, _ = ordered_map(lambda _: threading.current_thread(), [0, 1], workers=2)
    again, _ = ordered_map(lambda _: threading.current_thread(), [0], workers=1)
    assert all(t.is_alive() for t in seen + again)
