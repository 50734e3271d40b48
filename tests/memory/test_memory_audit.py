"""The n-word shingle audit: memory files sharing a shingle with host-only text are silently rejected."""

from __future__ import annotations

from memory_doubles import (
    AnswerVerifierDouble,
    FamilyEnvDouble,
    RecordingActorDouble,
    ScriptedCurriculumDouble,
    practice_waves,
)

from rsi_workbench.memory import MemoryTree, run_rsiagent, shingle_audit
from rsi_workbench.records import Run

HOST = ["Select the words Lorem Ipsum and click Submit now please", "click"]


def test_new_file_with_a_shared_shingle_is_dropped() -> None:
    cand = MemoryTree(
        {"facts/a.md": "to finish, select the WORDS lorem ipsum and click submit.", "facts/b.md": "ok"}
    )
    res = shingle_audit(cand, HOST[:1], 4)
    assert res.rejected == ("facts/a.md",) and "facts/b.md" in res.accepted
    assert "facts/a.md" not in res.accepted and res.rejects[0].shingle == ("select", "the", "words", "lorem")


def test_modified_file_falls_back_to_its_canonical_version() -> None:
    canonical = MemoryTree({"facts/a.md": "old safe text"})
    cand = canonical.with_changes({"facts/a.md": "now: lorem ipsum and click submit"})
    res = shingle_audit(cand, HOST[:1], 3, canonical=canonical)
    assert res.accepted.read_text("facts/a.md") == "old safe text" and res.rejects[0].restored
    assert shingle_audit(cand, HOST[:1], 8, canonical=canonical).rejected == ()  # no 8-word overlap


def test_host_text_shorter_than_n_is_one_shingle() -> None:
    res = shingle_audit(MemoryTree({"a": "Click it", "b": "no match here"}), ["click"], 8)
    assert res.rejected == ("a",)


def test_engine_rejects_silently_and_logs_an_event_agents_never_see(tmp_path) -> None:
    env = FamilyEnvDouble(target_families=("alpha",), host_only=["alpha drill 0 secret"])
    # the actor's lesson for a failing practice project quotes its instruction: "... alpha drill 0 ..."
    cur = ScriptedCurriculumDouble(broad=practice_waves(["alpha"]))

    class QuotingActorDouble(RecordingActorDouble):
        def distil(self, attempt, report, canonical):  # type: ignore[no-untyped-def]
            out = super().distil(attempt, report, canonical)
            return out.with_changes({"lessons/quote.txt": f"task said: {attempt.project.instruction} secret"})

    run = Run.create(tmp_path / "r", {"t": "audit"})
    res = run_rsiagent(
        env, QuotingActorDouble, AnswerVerifierDouble(), cur, {"shingle_n": 3, "ablation": "brs_only"}, run
    )
    assert "lessons/quote.txt" not in res.memory and "procedures/alpha.txt" in res.memory
    rejects = run.events("memory_audit_reject")
    assert [e.payload["path"] for e in rejects] == ["lessons/quote.txt"]
    assert rejects[0].payload["hidden_from_agents"] is True
    seen = repr(cur.requests)  # what the curriculum saw: no trace of the reject
    assert "quote" not in seen and "audit" not in seen
