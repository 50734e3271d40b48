"""The code-repair binding of the memory room: hidden tests stay host-only, practice is disjoint from
the targets, the public-test verifier, and a built-in actor whose memory changes what it tries
(stored recipes first, a lesson's candidates skipped, contradicted entries deleted).

Small HumanEvalFix tasks (few mutation sites, one or two public tests) keep the sandbox runs short."""

from __future__ import annotations

import json

import pytest

from rsi_workbench.domains.code_repair.rsiagent_env import (
    CodeRepairEnv,
    CodeRepairSettings,
    PublicTestVerifier,
    RecipeRepairActor,
    RepairCurriculum,
    recipes,
)
from rsi_workbench.memory import (
    EMPTY,
    Attempt,
    CurriculumRequest,
    Environment,
    Evidence,
    MemoryTree,
    Project,
    ProjectRejected,
    VerifierReport,
)
from rsi_workbench.memory.handoff import parse_handoff


@pytest.fixture(scope="module")
def env() -> CodeRepairEnv:
    settings = CodeRepairSettings(targets=["Python/30"], practice=["Python/26", "Python/2"], budget=16)
    return CodeRepairEnv(settings)


def _practice(tid: str) -> Project:
    return Project(f"practice-{tid.lower().replace('/', '-')}", f"repair {tid}")


def test_targets_practice_and_hidden_tests_stay_apart(env: CodeRepairEnv) -> None:
    assert isinstance(env, Environment)
    with pytest.raises(AssertionError, match="disjoint"):
        CodeRepairEnv(CodeRepairSettings(targets=["Python/30"], practice=["Python/30"]))
    (target,) = env.targets()
    assert target.id == "python-30" and target.is_target
    with pytest.raises(ProjectRejected, match="is a target"):
        env.open(Project("p", "repair Python/30"), seed=1, purpose="practice")
    with pytest.raises(ProjectRejected, match="not in the practice pool"):
        env.open(Project("p", "repair Python/99"), seed=1, purpose="practice")
    with pytest.raises(ProjectRejected, match="names a pool task"):
        env.open(Project("p", "do something fun"), seed=1, purpose="practice")
    ws = env.open(Project("p", "practise an excess logic bug"), seed=2, purpose="practice")
    assert ws.entry_point == "truncate_number"  # Python/2, the pool's excess-logic task
    tws = env.open(target, seed=1000, purpose="target")
    with pytest.raises(AssertionError, match="disjoint"):
        env.open(_practice("Python/26"), seed=1000, purpose="practice")
    hidden = env.host_only_texts()
    assert hidden and not any(h in json.dumps(vars(tws), default=str) for h in hidden)
    ev = tws.evidence({})
    assert not any(h in ev.requirements + json.dumps(dict(ev.execution)) for h in hidden)
    assert 0.0 <= env.official_score(tws) < 1.0  # the buggy program fails some hidden test


def test_public_test_verifier(env: CodeRepairEnv) -> None:
    ver = PublicTestVerifier(env.sandbox)
    ws = env.open(env.targets()[0], seed=1001, purpose="evaluation")
    assert ver.verify(ws.project, ws.evidence({})).verdict == "FAIL"
    ws.submit(env._targets["python-30"].reference or "")
    rep = ver.verify(ws.project, ws.evidence({}))
    assert rep.verdict == "PASS" and set(rep.checks) == {t.id for t in ws.public_tests}
    assert env.official_score(ws) == 1.0
    assert ver.verify(ws.project, Evidence("r", {"program": "x"}, {})).verdict == "UNVERIFIED"


def test_a_verified_recipe_is_tried_first_on_the_next_task(env: CodeRepairEnv) -> None:
    actor, ver = RecipeRepairActor(budget=16), PublicTestVerifier(env.sandbox)
    p = _practice("Python/26")
    att = actor.attempt(p, env.open(p, seed=3, purpose="practice"), EMPTY, None)
    rep = ver.verify(p, att.evidence)
    assert rep.verdict == "PASS" and att.private["fix"]["source"] == "search"
    mem = actor.distil(att, rep, EMPTY)
    (op,) = att.private["fix"]["operators"]
    assert recipes(mem) == [(op, 1, 0)]
    assert actor.distil(att, VerifierReport("UNVERIFIED", ("?",)), EMPTY) is EMPTY
    target = env.targets()[0]
    att2 = actor.attempt(target, env.open(target, seed=1002, purpose="target"), mem, None)
    assert att2.private["tried"][0]["source"] == "memory"
    assert att2.private["tried"][0]["operators"] == [op]


def test_a_lesson_is_skipped_on_retry_and_deleted_once_solved(env: CodeRepairEnv) -> None:
    p = _practice("Python/2")
    ver = PublicTestVerifier(env.sandbox)
    short = RecipeRepairActor(budget=1, max_recipes=0)
    att = short.attempt(p, env.open(p, seed=4, purpose="practice"), EMPTY, None)
    rep = ver.verify(p, att.evidence)
    if rep.verdict == "PASS":
        pytest.skip("the first candidate already fixes the task")
    mem = short.distil(att, rep, EMPTY)
    first = att.private["tried"][0]["sha"]
    assert json.loads(mem.read_text("lessons/practice-python-2.json"))["tried"] == [first]
    full = RecipeRepairActor(budget=16)
    att2 = full.attempt(p, env.open(p, seed=5, purpose="practice"), mem, None)
    assert att2.private["skipped"] == 1 and first not in {t["sha"] for t in att2.private["tried"]}
    rep2 = ver.verify(p, att2.evidence)
    assert rep2.verdict == "PASS"
    assert "lessons/practice-python-2.json" not in full.distil(att2, rep2, mem)


def test_reconcile_deletes_a_recipe_its_evidence_contradicts() -> None:
    canonical = MemoryTree(
        {
            "procedures/swap_vars.json": json.dumps(
                {"operator": "swap_vars", "verified_fixes": 0, "failed_uses": 2}
            )
        }
    )
    tried = [{"operators": ["swap_vars"], "edits": ["x"], "sha": "s1", "passed": 0, "source": "memory"}]
    att = Attempt(Project("p", "repair Python/2"), Evidence("r", {}, {}), {"tried": tried, "fix": None})
    out = RecipeRepairActor().distil(att, VerifierReport("FAIL", ("1 of 1 public tests fail",)), canonical)
    assert "procedures/swap_vars.json" not in out and "lessons/p.json" in out


def test_builtin_curriculum_handoffs_validate(env: CodeRepairEnv) -> None:
    cur = RepairCurriculum(env, wave_size=1)
    h = parse_handoff(cur.author(CurriculumRequest("broad", 0, tuple(env.targets()), EMPTY, ())))
    assert h.decision == "WAVE" and h.projects[0].instruction == "repair Python/26"
    deep = CurriculumRequest("deep", 1, tuple(env.targets()), None, (), target_passed=True)
    assert parse_handoff(cur.author(deep)).decision == "SATURATED"


def test_model_answers_run_through_the_workspace_text_interface(env: CodeRepairEnv) -> None:
    ws = env.open(_practice("Python/26"), seed=6, purpose="practice")
    assert "Public tests that fail" in ws.observe()
    ev, details = ws.act("I do not know.")
    assert details["invalid"].startswith("unparseable") and ev.final_state["program"] == ws.program
    fixed = env._practice["Python/26"].reference or ""
    ev, details = ws.act(f"```python\n{fixed}\n```")
    assert "invalid" not in details and ev.execution["actor_public_results"][0]["status"] == "AC"
