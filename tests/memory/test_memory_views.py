"""Rows read back from a run's events (what reports and dashboards draw)."""

from __future__ import annotations

from memory_doubles import (
    AnswerVerifierDouble,
    FamilyEnvDouble,
    RecordingActorDouble,
    ScriptedCurriculumDouble,
    practice_waves,
)

from rsi_workbench.memory import load_snapshot, run_rsiagent, views
from rsi_workbench.records import Run


def test_views_of_a_finished_run(tmp_path) -> None:
    run = Run.create(tmp_path / "r", {"t": 1})
    cur = ScriptedCurriculumDouble(practice_waves(["alpha"], ["beta"]))
    res = run_rsiagent(
        FamilyEnvDouble(), RecordingActorDouble, AnswerVerifierDouble(), cur, {"curve": True}, run
    )
    ev = run.events()
    ledger = views.ledger_rows(ev)
    assert [r["project_index"] for r in ledger] == list(range(1, len(ledger) + 1))
    assert ledger[0]["n_created"] == 1 and ledger[0]["terminal_outcome"] == "PASS"
    assert [w["unit"] for w in views.wave_rows(ev)][:3] == ["brs", "brs", "brs"]
    curve = views.curve_rows(ev)
    assert curve[0]["wave"] == 0 and curve[-1]["score"] == 1.0
    assert {r["target"]: r["score"] for r in views.evaluation_rows(ev)} == res.scores
    assert views.result_payload(ev)["frozen_hash"] == res.frozen_hash
    snaps = views.snapshot_rows(ev)
    assert snaps[-1]["label"] == "frozen" and load_snapshot(run, snaps[-1]["tree_hash"]) == res.memory
    assert views.audit_reject_rows(ev) == [] and views.handoff_rows(ev)[0]["ok"] is True
    assert {r["target"] for r in views.phase_end_rows(ev)} == {None, "t-alpha", "t-beta"}
