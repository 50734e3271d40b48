"""Infrastructure failures, resume from the last committed wave, and refusal of a broken ledger."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from memory_doubles import (
    AnswerVerifierDouble,
    FamilyEnvDouble,
    RecordingActorDouble,
    ScriptedCurriculumDouble,
    practice_waves,
)

from rsi_workbench.memory import LedgerError, read_ledger, run_rsiagent
from rsi_workbench.records import Run

HERE = Path(__file__).resolve().parent
WAVES = (["alpha", "gamma"], ["beta", "delta"], ["gamma"])
SETTINGS = {"max_parallel": 2, "stop_policy": "curriculum_review"}


class SimulatedKill(BaseException):
    """Stands for SIGKILL inside the process: nothing after it runs, no handler catches it."""


def _clean_hash(tmp_path: Path) -> str:
    run = Run.create(tmp_path / "clean", {"t": 1})
    cur = ScriptedCurriculumDouble(practice_waves(*WAVES))
    res = run_rsiagent(FamilyEnvDouble(), RecordingActorDouble, AnswerVerifierDouble(), cur, SETTINGS, run)
    assert res.status == "done"
    return res.memory.tree_hash()


def test_infra_retried_twice_never_a_lesson(tmp_path) -> None:
    env = FamilyEnvDouble(infra={"w1-0-alpha": 2})
    verifier = AnswerVerifierDouble(infra_on={"w2-0-beta": 2})
    run = Run.create(tmp_path / "r", {"t": 1})
    res = run_rsiagent(
        env, RecordingActorDouble, verifier, ScriptedCurriculumDouble(practice_waves(*WAVES)), SETTINGS, run
    )
    assert res.status == "done" and res.memory.tree_hash() == _clean_hash(tmp_path)
    assert len(run.events("memory_infra")) == 4
    out = {e.payload["project_id"]: e.payload for e in run.events("memory_outcome")}
    assert out["w1-0-alpha"]["infra_retries"] == 2 and out["w1-0-alpha"]["terminal_outcome"] == "PASS"
    assert not any("crash" in v.decode() or "transport" in v.decode() for v in res.memory.files.values())


def test_third_infra_failure_stops_the_run_resumably(tmp_path) -> None:
    env = FamilyEnvDouble(infra={"w2-1-delta": 3})
    cur = ScriptedCurriculumDouble(practice_waves(*WAVES))
    run = Run.create(tmp_path / "r", {"t": 1})
    res = run_rsiagent(env, RecordingActorDouble, AnswerVerifierDouble(), cur, SETTINGS, run)
    assert res.status == "infra" and "w2-1-delta" in res.stop_reason and not res.scores
    assert [e.payload["wave"] for e in run.events("memory_wave_committed")] == [1]  # wave 2 not committed
    assert not [e for e in run.events("memory_outcome") if e.payload["wave"] == 2]  # never scored, no lesson
    assert run.events("memory_run_stopped")[0].payload["status"] == "infra"
    resumed = run_rsiagent(env, RecordingActorDouble, AnswerVerifierDouble(), cur, SETTINGS, run)
    assert resumed.status == "done" and resumed.memory.tree_hash() == _clean_hash(tmp_path)
    assert run.events("memory_resumed")[0].payload["from_wave"] == 1


def test_kill_mid_wave_resumes_to_the_same_final_memory(tmp_path) -> None:
    def kill_in_second_commit(actor: Any, canonical: Any) -> None:
        if actor.history and actor.history[0].startswith("w2-1-delta"):
            raise SimulatedKill

    cur = ScriptedCurriculumDouble(practice_waves(*WAVES))
    run = Run.create(tmp_path / "r", {"t": 1})
    with pytest.raises(SimulatedKill):
        run_rsiagent(
            FamilyEnvDouble(),
            lambda: RecordingActorDouble(on_distil=kill_in_second_commit),
            AnswerVerifierDouble(),
            cur,
            SETTINGS,
            run,
        )
    run.close()
    assert [e.payload["project_index"] for e in run.events("memory_outcome")] == [
        1,
        2,
        3,
    ]  # half of wave 2 committed
    n_asked = len(cur.requests)
    run = Run.open(tmp_path / "r", mode="a")
    res = run_rsiagent(FamilyEnvDouble(), RecordingActorDouble, AnswerVerifierDouble(), cur, SETTINGS, run)
    assert res.status == "done" and res.memory.tree_hash() == _clean_hash(tmp_path)
    resumed = run.events("memory_resumed")[0].payload
    assert resumed["from_wave"] == 1 and len(resumed["abandoned_wave_keys"]) == 1
    assert all(r.wave != 2 for r in cur.requests[n_asked:])  # wave 2's recorded handoff was reused
    ledger = read_ledger(run.events())
    assert [r["project_index"] for r in ledger.records][:5] == [1, 2, 3, 4, 5]  # contiguous after the resume


def _stopped_run(tmp_path: Path) -> Path:
    """A run stopped (infra) in wave 2: wave 1's two projects are committed."""
    run = Run.create(tmp_path / "broken", {"t": 1})
    env = FamilyEnvDouble(infra={"w2-0-beta": 3})
    res = run_rsiagent(
        env,
        RecordingActorDouble,
        AnswerVerifierDouble(),
        ScriptedCurriculumDouble(practice_waves(*WAVES)),
        SETTINGS,
        run,
    )
    assert res.status == "infra"
    run.close()
    return run.path


def _rewrite(path: Path, edit: Any) -> None:
    lines = [json.loads(x) for x in (path / "events.jsonl").read_text().splitlines()]
    lines = edit(lines)
    for i, obj in enumerate(lines):
        obj["seq"] = i
    (path / "events.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))


def _resume(path: Path) -> None:
    run = Run.open(path, mode="a")
    run_rsiagent(
        FamilyEnvDouble(),
        RecordingActorDouble,
        AnswerVerifierDouble(),
        ScriptedCurriculumDouble(practice_waves(*WAVES)),
        SETTINGS,
        run,
    )


def test_resume_refuses_memory_before_that_is_not_the_previous_memory_after(tmp_path) -> None:
    path = _stopped_run(tmp_path)

    def edit(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rec = [o for o in lines if o["kind"] == "memory_outcome"][1]
        rec["payload"]["memory_before"] = "0" * 64
        return lines

    _rewrite(path, edit)
    with pytest.raises(
        LedgerError, match=r"wave 1 project 2 \(w1-1-gamma\): memory_before 000000000000 != previous"
    ):
        _resume(path)


def test_resume_refuses_a_ledger_with_a_missing_record(tmp_path) -> None:
    path = _stopped_run(tmp_path)

    def edit(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first = next(o for o in lines if o["kind"] == "memory_outcome")
        return [o for o in lines if o is not first]

    _rewrite(path, edit)
    with pytest.raises(LedgerError, match="wave 1: 1 outcome records in the log, its commit says 2"):
        _resume(path)


def test_resume_refuses_non_contiguous_waves(tmp_path) -> None:
    path = _stopped_run(tmp_path)

    def edit(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for o in lines:
            if o["kind"] == "memory_wave_committed":
                o["payload"]["wave"] = 2
        return lines

    _rewrite(path, edit)
    with pytest.raises(LedgerError, match="wave 2 where wave 1 was expected"):
        _resume(path)


CHILD = """
import os, sys, time
from memory_doubles import *
from rsi_workbench.memory import run_rsiagent
from rsi_workbench.records import Run

marker = sys.argv[2]
def hang_in_wave_two(actor, canonical):
    if actor.history and actor.history[0].startswith("w2-1-delta"):
        open(marker, "w").write(str(os.getpid()))
        time.sleep(600)

run = Run.create(sys.argv[1], {"t": 1})
cur = ScriptedCurriculumDouble(practice_waves(["alpha", "gamma"], ["beta", "delta"], ["gamma"]))
run_rsiagent(FamilyEnvDouble(), lambda: RecordingActorDouble(on_distil=hang_in_wave_two), AnswerVerifierDouble(), cur,
             {"max_parallel": 2, "stop_policy": "curriculum_review"}, run)
"""


def test_sigkill_mid_wave_resumes_to_the_same_final_memory(tmp_path) -> None:
    marker = tmp_path / "in-wave-2"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "r"), str(marker)], env=env)
    try:
        deadline = time.monotonic() + 120  # a guard against a hung child, not a timing assertion
        while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"the child never reached wave 2 (exit code {child.poll()})"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    run = Run.open(tmp_path / "r", mode="a")
    res = run_rsiagent(
        FamilyEnvDouble(),
        RecordingActorDouble,
        AnswerVerifierDouble(),
        ScriptedCurriculumDouble(practice_waves(*WAVES)),
        SETTINGS,
        run,
    )
    assert res.status == "done" and res.memory.tree_hash() == _clean_hash(tmp_path)
    assert run.events("memory_resumed")[0].payload["from_wave"] == 1


def test_curriculum_transport_failure_is_infra_not_a_failed_turn(tmp_path) -> None:
    from rsi_workbench.memory import InfraFailure

    class FlakyCurriculumDouble(ScriptedCurriculumDouble):
        def __init__(self, failures: int) -> None:
            super().__init__(practice_waves(*WAVES))
            self.failures = failures

        def author(self, request: Any) -> str:
            if self.failures > 0:
                self.failures -= 1
                raise InfraFailure("model server unreachable")
            return super().author(request)

    run = Run.create(tmp_path / "r", {"t": 1})
    res = run_rsiagent(
        FamilyEnvDouble(),
        RecordingActorDouble,
        AnswerVerifierDouble(),
        FlakyCurriculumDouble(3),
        SETTINGS,
        run,
    )
    assert res.status == "infra" and "curriculum" in res.stop_reason and not run.events("memory_handoff")
    res = run_rsiagent(
        FamilyEnvDouble(),
        RecordingActorDouble,
        AnswerVerifierDouble(),
        FlakyCurriculumDouble(2),
        SETTINGS,
        run,
    )
    assert res.status == "done" and res.memory.tree_hash() == _clean_hash(tmp_path)


def test_kill_in_a_drs_practice_wave_resumes_to_the_same_final_memory(tmp_path) -> None:
    from memory_doubles import handoff

    deep = {6: handoff("WAVE", ("contrast-1", "epsilon contrast drill"))}

    def kill_in_contrast(actor: Any, canonical: Any) -> None:
        if actor.history and actor.history[0].startswith("contrast-1"):
            raise SimulatedKill

    def go(name: str, actor: Any) -> Any:
        run = (
            Run.open(tmp_path / name, mode="a")
            if (tmp_path / name).exists()
            else Run.create(tmp_path / name, {"t": 1})
        )
        cur = ScriptedCurriculumDouble(practice_waves(*WAVES), deep=dict(deep))
        return run_rsiagent(FamilyEnvDouble(), actor, AnswerVerifierDouble(), cur, SETTINGS, run), run

    clean, _ = go("clean-drs", RecordingActorDouble)
    assert "procedures/epsilon.txt" in clean.memory
    with pytest.raises(SimulatedKill):
        go("killed", lambda: RecordingActorDouble(on_distil=kill_in_contrast))
    res, run = go("killed", RecordingActorDouble)
    assert res.memory.tree_hash() == clean.memory.tree_hash() and res.drs_ends == clean.drs_ends
    assert run.events("memory_resumed")[0].payload["from_wave"] == 5
