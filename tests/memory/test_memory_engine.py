"""BRS waves, serial audited commits, snapshot immutability, DRS stop rules, freeze and evaluation."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from memory_doubles import (
    AnswerVerifierDouble,
    FamilyEnvDouble,
    RecordingActorDouble,
    ScriptedCurriculumDouble,
    handoff,
    practice_waves,
)

from rsi_workbench.memory import (
    EMPTY,
    FrozenMemoryMismatch,
    MaterialisedMemory,
    MemoryTree,
    partial_binary,
    run_rsiagent,
)
from rsi_workbench.records import Run


def _run(tmp_path, name: str = "r") -> Run:
    return Run.create(tmp_path / name, {"test": name})


def _go(
    tmp_path,
    cur: ScriptedCurriculumDouble,
    env: FamilyEnvDouble | None = None,
    actor: Any = None,
    **settings: Any,
):
    env = env or FamilyEnvDouble()
    run = _run(tmp_path, settings.pop("name", "r"))
    res = run_rsiagent(env, actor or RecordingActorDouble, AnswerVerifierDouble(), cur, settings, run)
    return res, run, env


def test_partial_and_binary_together() -> None:
    pb = partial_binary({"a": 1.0, "b": 0.5, "c": 0.0})
    assert pb.partial == pytest.approx(50.0) and pb.binary == pytest.approx(100 / 3) and pb.n == 3
    with pytest.raises(ValueError):
        partial_binary([1.2])


def test_memory_helps_and_ablation_none_learns_nothing(tmp_path) -> None:
    full, run, env = _go(
        tmp_path, ScriptedCurriculumDouble(practice_waves(["alpha"], ["beta"])), max_parallel=2
    )
    assert full.status == "done" and full.scores == {"t-alpha": 1.0, "t-beta": 1.0}
    assert (
        (full.partial, full.binary) == (100.0, 100.0)
        and full.brs_projects == 2
        and full.brs_end == "saturated"
    )
    assert full.frozen_hash == full.memory.tree_hash() and "procedures/alpha.txt" in full.memory
    none, _, env0 = _go(
        tmp_path, ScriptedCurriculumDouble(practice_waves(["alpha"])), ablation="none", name="n"
    )
    assert (
        none.memory == EMPTY
        and none.episodes == 0
        and none.waves == 0
        and (none.partial, none.binary) == (0.0, 0.0)
    )
    assert [p for _, _, p in env0.opened] == ["evaluation", "evaluation"]
    brs, _, _ = _go(
        tmp_path, ScriptedCurriculumDouble(practice_waves(["alpha"])), ablation="brs_only", name="b"
    )
    assert brs.scores == {"t-alpha": 1.0, "t-beta": 0.0} and brs.drs_ends == {}
    cur = ScriptedCurriculumDouble(deep=practice_waves(["alpha"]))
    drs, _, _ = _go(tmp_path, cur, ablation="drs_only", stop_policy="verifier_pass", name="d")
    assert drs.brs_end is None and drs.scores["t-alpha"] == 1.0 and drs.drs_ends["t-alpha"] == "pass"


def test_official_score_only_in_evaluation_and_curve_probes(tmp_path) -> None:
    res, run, env = _go(tmp_path, ScriptedCurriculumDouble(practice_waves(["alpha"])), ablation="brs_only")
    assert env.scored == ["t-alpha", "t-beta"]
    res, run, env = _go(
        tmp_path,
        ScriptedCurriculumDouble(practice_waves(["alpha"])),
        ablation="brs_only",
        curve=True,
        name="c",
    )
    points = [
        (e.payload["wave"], e.payload["target"], e.payload["score"]) for e in run.events("memory_curve_point")
    ]
    assert points[:2] == [(0, "t-alpha", 0.0), (0, "t-beta", 0.0)] and (1, "t-alpha", 1.0) in points


def test_serial_commits_in_authored_order_from_one_snapshot(tmp_path) -> None:
    last_done = threading.Event()
    log: list[tuple[Any, ...]] = []

    def hold_early_branches(actor, project, ws, memory) -> None:  # type: ignore[no-untyped-def]
        if not project.id.startswith("w1-2"):
            assert last_done.wait(30), "the third branch never ran concurrently"

    class OrderActorDouble(RecordingActorDouble):
        def attempt(self, project, workspace, memory, feedback):  # type: ignore[no-untyped-def]
            out = super().attempt(project, workspace, memory, feedback)
            if project.id.startswith("w1-2"):
                last_done.set()
            return out

    cur = ScriptedCurriculumDouble(practice_waves(["alpha", "beta", "gamma"]))
    res, run, _ = _go(
        tmp_path,
        cur,
        actor=lambda: OrderActorDouble(log, on_attempt=hold_early_branches),
        max_parallel=3,
        ablation="brs_only",
    )
    attempts = [x for x in log if x[0] == "attempt" and x[3] == "practice"]
    assert attempts[0][1].startswith("w1-2")  # the last-authored branch finished first ...
    assert {x[2] for x in attempts} == {
        EMPTY.tree_hash()
    }  # ... and every branch saw the same pre-wave snapshot
    distils = [x for x in log if x[0] == "distil"]
    assert [x[1] for x in distils] == ["w1-0-alpha", "w1-1-beta", "w1-2-gamma"]  # commits in authored order
    outcomes = [e.payload for e in run.events("memory_outcome")]
    assert [o["project_index"] for o in outcomes] == [1, 2, 3]
    for d, o in zip(distils, outcomes, strict=True):
        assert d[2] == o["memory_before"]  # each distil saw the CURRENT canonical memory
    assert [o["memory_before"] for o in outcomes[1:]] == [o["memory_after"] for o in outcomes[:-1]]
    assert outcomes[1]["files"]["created"] == ["procedures/beta.txt"] and outcomes[1]["files"][
        "unchanged"
    ] == ["procedures/alpha.txt"]
    serial, _, _ = _go(
        tmp_path,
        ScriptedCurriculumDouble(practice_waves(["alpha", "beta", "gamma"])),
        max_parallel=1,
        ablation="brs_only",
        name="s",
    )
    assert serial.memory == res.memory


def test_a_branch_writing_into_its_snapshot_fails(tmp_path) -> None:
    seen: dict[str, str] = {}

    def vandal(actor, project, ws, memory) -> None:  # type: ignore[no-untyped-def]
        assert isinstance(memory, MaterialisedMemory)
        if project.id == "w2-0-alpha":
            (memory.path / "procedures" / "alpha.txt").write_text(
                "overwritten"
            )  # root ignores read-only bits
        seen[project.id] = MemoryTree.from_dir(memory.path).tree_hash()

    cur = ScriptedCurriculumDouble(practice_waves(["alpha"], ["alpha", "beta"]))
    res, run, _ = _go(
        tmp_path,
        cur,
        actor=lambda: RecordingActorDouble(on_attempt=vandal),
        ablation="brs_only",
        max_parallel=2,
    )
    out = {e.payload["project_id"]: e.payload for e in run.events("memory_outcome")}
    bad = out["w2-0-alpha"]
    assert bad["terminal_outcome"] == "snapshot_write" and bad["memory_before"] == bad["memory_after"]
    assert res.memory.read_text("procedures/alpha.txt") == "ahpla"  # the write never reached memory
    assert seen["w2-1-beta"] == out["w2-0-alpha"]["memory_before"]  # the other branch kept a clean copy
    assert out["w2-1-beta"]["terminal_outcome"] == "PASS"


def test_budget_is_checked_only_between_whole_waves(tmp_path) -> None:
    cur = ScriptedCurriculumDouble(practice_waves(["alpha", "beta", "gamma"], ["delta"]))
    res, run, _ = _go(tmp_path, cur, project_budget=2, ablation="brs_only")
    assert res.brs_projects == 3 and res.brs_end == "budget" and len(cur.requests) == 1


def test_rejected_project_is_a_failed_project_with_reason(tmp_path) -> None:
    cur = ScriptedCurriculumDouble([handoff("WAVE", ("bad", "reject me"), ("ok", "alpha drill"))])
    res, run, _ = _go(tmp_path, cur, ablation="brs_only")
    out = run.events("memory_outcome")
    assert out[0].payload["terminal_outcome"] == "rejected" and "cannot run" in out[0].payload["error"]
    assert (
        out[0].payload["memory_before"] == out[0].payload["memory_after"]
        and "procedures/alpha.txt" in res.memory
    )
    assert cur.requests[-1].results[0].outcome == "rejected"


def test_failed_turns_are_recorded_and_end_brs_stalled(tmp_path) -> None:
    class GarbageCurriculumDouble:
        def __init__(self) -> None:
            self.texts = ["nonsense", handoff("WAVE"), handoff("WAVE", ("alpha-1", "alpha drill"))]

        def author(self, request: Any) -> str:
            return self.texts.pop(0) if self.texts else "{}"

    res, run, _ = _go(tmp_path, GarbageCurriculumDouble(), ablation="brs_only", max_failed_turns=2)  # type: ignore[arg-type]
    turns = [(e.payload["ok"], e.payload.get("reason", "")) for e in run.events("memory_handoff")]
    assert turns[0][0] is False and "not valid JSON" in turns[0][1] and "at least one project" in turns[1][1]
    assert turns[2] == (True, "") and res.brs_projects == 1
    assert res.brs_end == "failed_turns"  # wave 2: three failed turns in a row


def test_curriculum_sees_a_copy_or_nothing(tmp_path) -> None:
    cur = ScriptedCurriculumDouble(practice_waves(["alpha"], ["beta"]))
    _go(tmp_path, cur, ablation="brs_only")
    assert cur.requests[0].memory == EMPTY and "procedures/alpha.txt" in cur.requests[1].memory
    assert cur.requests[1].results[0].verdict == "PASS"
    cur2 = ScriptedCurriculumDouble(practice_waves(["alpha"], ["beta"]))
    _go(tmp_path, cur2, ablation="brs_only", curriculum_memory="none", name="n")
    assert all(r.memory is None for r in cur2.requests)


def test_drs_fail_practice_retry_and_failure_summary(tmp_path) -> None:
    cur = ScriptedCurriculumDouble(deep=practice_waves(["alpha"]))
    res, run, _ = _go(
        tmp_path, cur, env=FamilyEnvDouble(("alpha",)), ablation="drs_only", stop_policy="verifier_pass"
    )
    units = [(e.payload["unit"], e.payload.get("verdict")) for e in run.events("memory_wave_committed")]
    assert units == [("drs_target", "FAIL"), ("drs_practice", None), ("drs_target", "PASS")]
    assert "t-alpha failed" in cur.requests[0].failure_summary and cur.requests[0].target_passed is False
    assert res.drs_ends == {"t-alpha": "pass"}


def test_drs_contrast_practice_after_pass_under_curriculum_review(tmp_path) -> None:
    waves = practice_waves(["alpha"])
    cur = ScriptedCurriculumDouble(broad=waves, deep=practice_waves(["beta"]))
    res, run, _ = _go(tmp_path, cur, env=FamilyEnvDouble(("alpha",)))
    deep = [r for r in cur.requests if r.phase == "deep"]
    assert deep[0].target_passed is True and deep[0].failure_summary is None
    assert res.drs_ends == {"t-alpha": "saturated_after_pass"} and "procedures/beta.txt" in res.memory


def test_unverified_stops_and_stalled_gets_one_final_test(tmp_path) -> None:
    res, run, _ = _go(
        tmp_path, ScriptedCurriculumDouble(), env=FamilyEnvDouble(("fuzzy",)), ablation="drs_only"
    )
    assert res.drs_ends == {"t-fuzzy": "unverified"} and res.memory == EMPTY  # UNVERIFIED is no lesson
    cur = ScriptedCurriculumDouble(deep=[handoff("STALLED")])
    res, run, _ = _go(tmp_path, cur, env=FamilyEnvDouble(("alpha",)), ablation="drs_only", name="s")
    units = [(e.payload["unit"], e.payload.get("verdict")) for e in run.events("memory_wave_committed")]
    assert units == [("drs_target", "FAIL"), ("drs_practice", None), ("drs_target", "FAIL")]
    assert res.drs_ends == {"t-alpha": "stalled_final_test_FAIL"} and "lessons/t-alpha.txt" in res.memory


def test_evaluation_writing_memory_is_a_frozen_hash_mismatch(tmp_path) -> None:
    def tamper(actor, project, ws, memory) -> None:  # type: ignore[no-untyped-def]
        if ws.purpose == "evaluation":
            (memory.path / "lessons").mkdir(exist_ok=True)
            (memory.path / "lessons" / "late.txt").write_text("learnt during evaluation")

    with pytest.raises(FrozenMemoryMismatch, match="must not write memory"):
        _go(
            tmp_path,
            ScriptedCurriculumDouble(practice_waves(["alpha"])),
            actor=lambda: RecordingActorDouble(on_attempt=tamper),
            ablation="brs_only",
        )


def test_evaluation_uses_fresh_actors_and_never_learns(tmp_path) -> None:
    log: list[tuple[Any, ...]] = []
    res, run, env = _go(
        tmp_path,
        ScriptedCurriculumDouble(practice_waves(["alpha"])),
        actor=lambda: RecordingActorDouble(log),
        ablation="brs_only",
    )
    evals = [x for x in log if x[0] == "attempt" and x[3] == "evaluation"]
    assert len(evals) == 2 and {x[2] for x in evals} == {res.frozen_hash}
    assert log[-1][0] == "attempt" and not any(x[0] == "distil" for x in log[log.index(evals[0]) :])
    assert [e.payload["memory"] for e in run.events("memory_evaluation")] == [res.frozen_hash] * 2
    again = run_rsiagent(
        env,
        RecordingActorDouble,
        AnswerVerifierDouble(),
        ScriptedCurriculumDouble(),
        {"ablation": "brs_only"},
        run,
    )
    assert (
        again.frozen_hash == res.frozen_hash and again.scores == res.scores
    )  # a finished run returns its record


def test_drs_order_seeded_shuffles_targets_per_seed_and_replays(tmp_path) -> None:
    from rsi_workbench.memory.engine import drs_order
    from rsi_workbench.memory.settings import RsiAgentSettings

    fams = ("alpha", "beta", "gamma", "delta", "eps")
    orders = {tuple(drs_order(5, RsiAgentSettings(drs_order="seeded", seed=s))) for s in range(8)}
    assert len(orders) > 1 and all(sorted(o) == list(range(5)) for o in orders)  # varied, a permutation
    assert drs_order(5, RsiAgentSettings(seed=3)) == [0, 1, 2, 3, 4]  # the default: as listed
    for seed in (0, 1):
        env = FamilyEnvDouble(fams)
        res, run, _ = _go(
            tmp_path,
            ScriptedCurriculumDouble(),
            env=env,
            ablation="drs_only",
            drs_order="seeded",
            seed=seed,
            max_drs_steps=1,
            name=f"o{seed}",
        )
        visited = [e.payload["target"] for e in run.events("memory_wave_committed")]
        expect = [f"t-{fams[i]}" for i in drs_order(5, RsiAgentSettings(drs_order="seeded", seed=seed))]
        assert visited == expect and list(res.drs_ends) == expect
        again = run_rsiagent(
            env,
            RecordingActorDouble,
            AnswerVerifierDouble(),
            ScriptedCurriculumDouble(),
            {"ablation": "drs_only", "drs_order": "seeded", "seed": seed, "max_drs_steps": 1},
            run,
        )
        assert again.drs_ends == res.drs_ends  # a resume replays the same order
