"""Matched learning budgets, the verifier audit, fresh-instance seeds, seed-varied targets and the
matched report (issue 35 item 2), without a browser: test doubles stand in for the actor, the
workspace and the verifier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rsi_workbench.config import ConfigError
from rsi_workbench.domains.gui.rsiagent import matched, miniwob
from rsi_workbench.memory import Attempt, Evidence, InfraFailure, Project, ProjectRejected, VerifierReport
from rsi_workbench.memory.ledger import WAVE_COMMITTED, WAVE_STARTED
from rsi_workbench.memory.tree import EMPTY
from rsi_workbench.records import Run
from studies.rsiagent_matched_report import matched_report


class FakeWorkspace:
    """A test double of a MiniWoB++ workspace: only its purpose matters here."""

    def __init__(self, purpose: str) -> None:
        self.purpose = purpose


class FakeActor:
    """A test double that 'plays' an episode per attempt (records it as the thread's last episode)."""

    def __init__(self, fail_with: Exception | None = None) -> None:
        self.calls, self.fail_with = 0, fail_with

    def attempt(self, project: Project, ws: Any, memory: Any, feedback: Any) -> Attempt:
        if self.fail_with is not None:
            raise self.fail_with
        self.calls += 1
        miniwob._LAST.episode = {
            "page": "click-button",
            "seed": 7,
            "purpose": ws.purpose,
            "raw_reward": 1.0 if self.calls % 2 else -1.0,
            "outcome": "done",
        }
        return Attempt(project, Evidence("u", {}, {}), {"n": self.calls}, calls=1)

    def distil(self, attempt: Attempt, report: VerifierReport, canonical: Any) -> Any:
        return canonical

    def summarise_failure(self, attempt: Attempt, report: VerifierReport) -> str:
        return "failed"


class FakeVerifier:
    """A test double that passes every attempt."""

    def verify(self, project: Project, evidence: Evidence) -> VerifierReport:
        return VerifierReport("PASS", ("ok",), {})


P = Project("p1", "page: click-button")


def test_the_cap_rejects_new_branches_and_repeats_the_last_attempt_of_a_running_one() -> None:
    budget = matched.LearningBudget(2)
    inner = FakeActor()
    actor = matched.LearningActor(inner, budget)
    ws = FakeWorkspace("practice")
    first = actor.attempt(P, ws, EMPTY, None)
    actor.attempt(P, ws, EMPTY, VerifierReport("FAIL", ("x",)))
    assert budget.spent == 2 and inner.calls == 2
    again = actor.attempt(P, ws, EMPTY, VerifierReport("FAIL", ("x",)))  # over the cap: no episode
    assert inner.calls == 2 and again.private == {"n": 2} and again is not first
    with pytest.raises(ProjectRejected, match=r"learning-episode budget \(2\) is spent"):
        actor.attempt(Project("p2", "page: click-button"), ws, EMPTY, None)
    actor.attempt(P, FakeWorkspace("evaluation"), EMPTY, None)  # evaluation is never counted
    assert budget.spent == 2 and inner.calls == 3


def test_an_infra_failure_gives_its_episode_back_and_a_resumed_budget_is_capped() -> None:
    budget = matched.LearningBudget(3)
    with pytest.raises(InfraFailure):
        matched.LearningActor(FakeActor(InfraFailure("browser")), budget).attempt(
            P, FakeWorkspace("target"), EMPTY, None
        )
    assert budget.spent == 0
    assert matched.LearningBudget(3, spent=9).spent == 3 and matched.LearningBudget(None, 9).spent == 9


def test_the_audit_logs_verdict_beside_raw_reward_for_committed_units_only(tmp_path: Path) -> None:
    run = Run.create(tmp_path / "arm", {"x": 1})
    actor = matched.LearningActor(FakeActor(), matched.LearningBudget(None))
    verifier = matched.AuditingVerifier(FakeVerifier(), run)
    key = run.append(WAVE_STARTED, {"wave": 1}).seq
    for _ in range(2):  # raw rewards 1 then -1, both PASSed: one agreement, one false PASS
        verifier.verify(P, actor.attempt(P, FakeWorkspace("practice"), EMPTY, None).evidence)
    run.append(WAVE_COMMITTED, {"wave_key": key, "wave": 1, "episodes": 2})
    run.append(WAVE_STARTED, {"wave": 2})  # an abandoned unit: its audit record is not counted
    verifier.verify(P, actor.attempt(P, FakeWorkspace("practice"), EMPTY, None).evidence)
    actor.attempt(P, FakeWorkspace("evaluation"), EMPTY, None)
    verifier.verify(P, Evidence("u", {}, {}))  # after an evaluation episode: no audit record
    run.commit()
    events = [e.payload for e in run.events(matched.AUDIT)]
    assert len(events) == 3 and {"verdict", "raw_reward", "success", "agree", "purpose"} <= set(events[0])
    recs = matched.audit_events(run)
    assert [r["raw_reward"] for r in recs] == [1.0, -1.0]
    s = matched.audit_summary(recs)["all"]
    assert s["confusion"] == {"PASS/failure": 1, "PASS/success": 1} and s["agreement"] == 0.5
    assert matched.committed_attempts(run) == 2


def test_fresh_seeds_are_distinct_and_disjoint_from_every_other_range() -> None:
    seeds = miniwob.fresh_seeds("salt", 0, "click-button", 10)
    assert len(set(seeds)) == 10
    assert all(miniwob.FRESH_BASE <= s < miniwob.FRESH_BASE + miniwob.SPAN for s in seeds)
    assert not set(seeds) & set(miniwob.fresh_seeds("salt", 1, "click-button", 10))
    targets = {miniwob.target_seed_for("salt", "click-button", 0, sd) for sd in range(3)}
    assert len(targets) == 3 and all(
        miniwob.TARGET_BASE <= t < miniwob.TARGET_BASE + miniwob.SPAN for t in targets
    )

    class Env:  # a test double: the target seeds the check compares against
        target_seeds = frozenset(targets)

    matched.check_fresh_disjoint(Env(), seeds, targets)  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="disjoint"):
        matched.check_fresh_disjoint(Env(), [*seeds[:9], next(iter(targets))], targets)  # type: ignore[arg-type]


def test_seeds_take_different_templates_where_the_page_has_several() -> None:
    draws = [(10, "a"), (11, "b"), (12, "a"), (13, "c"), (14, "b")]
    picks = [miniwob.template_targets(draws, sd) for sd in range(3)]
    assert picks == [10, 11, 13]  # templates a, b, c
    one = [(20, "a"), (21, "a"), (22, "a")]
    assert [miniwob.template_targets(one, sd) for sd in range(3)] == [20, 21, 22]  # different instances


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("learning_episodes: 0\n", "learning_episodes: Input should be greater than or equal to 1"),
        ("fresh_instances: 101\n", "fresh_instances: Input should be less than or equal to 100"),
    ],
)
def test_config_errors_name_the_file_and_field(tmp_path: Path, extra: str, expected: str) -> None:
    from rsi_workbench.cli import load_experiment_config

    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        "experiment: rsiagent\nenvironment: {kind: miniwob, targets: [{page: click-button}]}\n" + extra
    )
    with pytest.raises(ConfigError) as err:
        load_experiment_config(cfg, check=False)
    assert str(cfg) in str(err.value) and expected in str(err.value)


def test_fresh_instances_need_the_miniwob_environment(tmp_path: Path) -> None:
    from rsi_workbench.cli import load_experiment_config

    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "experiment: rsiagent\nenvironment: {kind: code_repair, targets: [Python/43], practice: [Python/15]}\n"
        "fresh_instances: 3\n"
    )
    with pytest.raises(ConfigError, match="fresh_instances and audit: only with environment kind miniwob"):
        load_experiment_config(cfg, check=False)


def _arm(ab: str, seed: int, fresh: dict[str, list[float]], spent: int) -> dict[str, Any]:
    return {
        "ablation": ab,
        "seed": seed,
        "targets": {t: f"page: {t}" for t in fresh},
        "scores": {t: 1.0 for t in fresh},
        "fresh": fresh,
        "learning_episodes_spent": spent,
        "learning_episodes_cap": 10,
        "wall_s": 1.0,
        "audit": {
            "all": {
                "episodes": 4,
                "decided": 4,
                "agree": 3,
                "confusion": {"PASS/success": 3, "FAIL/success": 1},
            }
        },
    }


def test_the_matched_report_reads_the_preregistered_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    pages = [f"p{i}" for i in range(12)]
    fake = []
    for sd in range(3):
        fake.append(_arm("none", sd, {p: [0.0] * 10 for p in pages}, 0))
        fake.append(_arm("drs_only", sd, {p: [0.0] * 5 + [1.0] * 5 for p in pages}, 10))
        fake.append(
            _arm("full", sd, {p: [1.0] * 10 if i < 6 else [0.0] * 10 for i, p in enumerate(pages)}, 10)
        )
    fake.append(_arm("none", 3, {p: [1.0] * 10 for p in pages}, 0))  # a seed not every arm finished
    monkeypatch.setattr(matched_report, "arms", lambda path: fake)
    s = matched_report.summary(["x"])
    assert s["incomplete_seeds"] == ["3"] and "3" not in s["arms"]["none"]
    v = matched_report.verdict(s)
    assert v["full_minus_none"][0] == pytest.approx(0.5) and v["full_minus_none"][1] > 0
    assert v["best_single"] == "drs_only" and v["full_minus_best_single"][0] == pytest.approx(0.0)
    assert v["reading"] == "inconclusive"  # full does not beat the best single-stage arm
    text = matched_report.tables(s)
    assert "| full RSI | 100.0 (n=36) | 50.0 | 50.0 | 360 | 10 (4), 10 (4), 10 (4) | -, -, - |" in text
    assert "agreement with the raw reward 75.0% (18/24)" in text
    row = matched_report.headline_row(s)
    assert row["unit"] == "pages" and row["arms"]["full"]["p0"] == [1.0, 1.0, 1.0]


def test_the_verifier_call_budget_matches_spend_and_counts_repeats() -> None:
    budget, calls = matched.LearningBudget(None), matched.LearningBudget(2)
    inner = FakeActor()
    actor = matched.LearningActor(inner, budget, calls)
    ws = FakeWorkspace("practice")
    actor.attempt(P, ws, EMPTY, None)
    actor.attempt(P, ws, EMPTY, VerifierReport("FAIL", ("x",)))
    assert (budget.spent, calls.spent, inner.calls) == (2, 2, 2)
    actor.attempt(P, ws, EMPTY, VerifierReport("FAIL", ("x",)))  # calls spent: a repeat, no episode
    assert (budget.spent, inner.calls) == (2, 2) and calls.spent == 3  # the verifier still judged it
    with pytest.raises(ProjectRejected, match=r"verifier-call budget \(2\) is spent"):
        actor.attempt(Project("p2", "page: click-button"), ws, EMPTY, None)


def test_cross_page_broad_waves_never_practise_a_target_page() -> None:
    import json

    from rsi_workbench.domains.gui.rsiagent.curriculum import BuiltinCurriculum
    from rsi_workbench.memory.roles import CurriculumRequest

    targets = (
        Project("t1", "page: click-checkboxes", is_target=True),
        Project("t2", "page: login-user", is_target=True),
    )
    req = CurriculumRequest("broad", 1, targets, None, ())

    def pages(cur: BuiltinCurriculum) -> set[str]:
        return {p["instruction"].removeprefix("page: ") for p in json.loads(cur.author(req))["projects"]}

    assert pages(BuiltinCurriculum()) == {
        "click-checkboxes",
        "login-user",
        "click-button",
        "enter-text",
        "enter-password",
    }
    assert pages(BuiltinCurriculum(brs_pages="others")) == {"click-button", "enter-text", "enter-password"}
    other = BuiltinCurriculum(brs_pages="others", transfer_pages=["click-link", "login-user"])
    assert pages(other) == {"click-link"}  # a target page named in transfer_pages is still left out
    none_left = BuiltinCurriculum(brs_pages="others", transfer_pages=["login-user"])
    assert json.loads(none_left.author(req))["decision"] == "SATURATED"
    with pytest.raises(ValueError):
        BuiltinCurriculum(brs_pages="all")


def test_reload_between_candidates_reaches_the_workspace_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    from rsi_workbench.domains.gui.rsiagent.settings import (
        CurriculumSettings,
        MiniwobSettings,
        build_miniwob_arm,
    )

    made: list[dict[str, Any]] = []

    class FakeEnv:
        def __init__(self, page: str, **kw: Any) -> None:
            made.append({"page": page, **kw})

        def start(self) -> FakeEnv:
            return self

        def close(self) -> None:
            pass

    monkeypatch.setattr(miniwob, "GuiEnv", FakeEnv)
    e = MiniwobSettings.model_validate(
        {"targets": [{"page": "choose-date"}], "reload_between_candidates": True}
    )
    env, _, _, cur = build_miniwob_arm(e, CurriculumSettings(brs_pages="others"), 0)
    env.open(env.targets()[0], seed=0, purpose="target").close()
    assert made[-1]["reload_every"] == 1 and cur.brs_pages == "others"
    env2, *_ = build_miniwob_arm(
        MiniwobSettings.model_validate({"targets": [{"page": "choose-date"}]}), CurriculumSettings(), 0
    )
    env2.open(env2.targets()[0], seed=0, purpose="target").close()
    assert made[-1]["reload_every"] == 0
