"""Code-repair world adapter: encoding, no hidden-test leakage, cross-fitting, the E0 builder."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rsi_workbench.domains.code_repair import load_humanevalfix
from rsi_workbench.domains.code_repair.world_adapter import (
    PROVENANCE_FLAGS,
    SUITE_CONTEXT,
    TransitionConfig,
    build_transitions,
    check_no_leakage,
    cross_fit_splits,
    encode_action,
    encode_state,
    load_transitions,
    observed_utility,
    problem_of,
    render_test,
    score_candidates,
    suite_status,
    transition_rows,
)


@pytest.fixture(scope="module")
def tasks():
    return load_humanevalfix()


def _hidden_only_asserts(task):
    pub = {ln.strip() for t in task.public_tests for ln in (t.code or "").splitlines()}
    return {
        ln.strip()
        for t in task.hidden_tests
        for ln in (t.code or "").splitlines()
        if ln.strip().startswith("assert") and ln.strip() not in pub
    }


def _hidden_only_io(task):
    """Hidden io tests (no code) as a context would render them; most HumanEvalFix tests are io."""
    pub = {render_test(t) for t in task.public_tests if not t.code}
    return {render_test(t) for t in task.hidden_tests if not t.code} - pub


def test_state_holds_program_and_public_tests_never_hidden(tasks):
    n_io = 0
    for task in tasks:
        s = encode_state(task, task.program, [{"test_id": task.public_tests[0].id, "status": "WA"}])
        assert task.program.strip() in s and "[WA]" in s
        assert all(line not in s for line in _hidden_only_asserts(task)), task.task_id
        lines = {ln.strip() for ln in s.splitlines()}
        assert not (lines & _hidden_only_io(task)), task.task_id
        n_io += len(_hidden_only_io(task))
    assert n_io > 0  # the io check is not vacuous
    a = encode_action("x = 1\n", "x = 2\n")
    assert a.startswith("Candidate action:") and "-x = 1" in a and "+x = 2" in a


def test_suite_labels_and_utility():
    outs = [{"status": "AC"}, {"status": "TLE"}, {"status": "WA"}, {"status": "AC"}]
    assert suite_status(outs) == 2  # first failing test: TLE
    assert suite_status([{"status": "AC"}] * 3) == 0
    assert observed_utility(outs) == pytest.approx(0.25 * 0.5)
    assert observed_utility([{"status": "AC"}] * 2) == pytest.approx(1.25)


def test_cross_fit_splits_are_disjoint_and_cover_every_problem(tasks):
    problems = [problem_of(t.task_id) for t in tasks]
    assert problem_of("Python/12") == problem_of("HumanEval/12") == "12"
    splits = cross_fit_splits(problems, k=4, seed=0)
    audited = [p for s in splits for p in s.audit]
    assert sorted(audited) == sorted(set(problems))
    for s in splits:
        assert not (s.audit & s.gate) and not (s.audit & s.train) and not (s.gate & s.train)
        assert len(s.audit | s.gate | s.train) == 164
    assert cross_fit_splits(problems, 4, 1)[0].audit != splits[0].audit
    with pytest.raises(ValueError, match="k >= 3"):
        cross_fit_splits(problems, k=2)


@pytest.mark.slow
def test_builder_records_e0_transitions_resumably_and_rows_do_not_leak(tasks, tmp_path, tiny_backbone_world):
    by_id = {t.task_id: t for t in tasks}
    two = [by_id["Python/0"], by_id["Python/2"]]
    cfg = TransitionConfig(k=2, injected_per_problem=1, workers=1)
    run_dir = build_transitions(tmp_path / "transitions", two, cfg, progress=False)
    tr = load_transitions(run_dir)
    assert {t.source for t in tr} == {"humanevalfix", "injected"}
    assert 3 <= len({t.group_id for t in tr}) <= 4 and len(tr) <= 8
    for t in tr:
        task = by_id[t.task_id]
        assert [o["test_id"] for o in t.public] == [x.id for x in task.public_tests]
        assert [o["test_id"] for o in t.hidden] == [x.id for x in task.hidden_tests]
    from rsi_workbench.records import Run

    run = Run.open(run_dir)
    assert all(
        e.payload["evidence"] == "E0" and e.payload["provenance"]["coder"]
        for e in run.events("world_transition")
    )
    assert run.manifest["hidden_tests_in_context"] is False and run.manifest["evidence"] == "E0"
    assert all(run.manifest[k] is False for k in PROVENANCE_FLAGS)
    n_events = len(run.events())
    build_transitions(run_dir, two, cfg, progress=False)  # resume: nothing left to do
    assert len(Run.open(run_dir).events()) == n_events

    rows = transition_rows(tr, by_id, role="train")
    assert {k: rows.manifest[k] for k in PROVENANCE_FLAGS} == PROVENANCE_FLAGS
    assert sum(rows.is_suite) == len(tr) and SUITE_CONTEXT in rows.context
    check_no_leakage(rows, by_id, tr)
    leaks = sorted(_hidden_only_asserts(by_id["Python/0"]) | _hidden_only_io(by_id["Python/0"]))
    assert leaks
    for leak in leaks[:2]:
        bad = dataclasses.replace(rows, context=[c + "\n" + leak for c in rows.context])
        with pytest.raises(AssertionError, match="hidden test leaked"):
            check_no_leakage(bad, by_id, tr)
    code_line = next(
        ln[1:].strip()
        for ln in rows.action[0].splitlines()
        if ln.startswith("+") and len(ln) > 14 and not ln.startswith("+++")
    )
    bad = dataclasses.replace(rows, outcome=[o + code_line for o in rows.outcome])
    with pytest.raises(AssertionError, match="candidate code in a target"):
        check_no_leakage(bad, by_id, tr)

    wm = tiny_backbone_world
    scores = score_candidates(wm, two[0], two[0].program, tr[0].state_public, [t.program for t in tr[:2]])
    n_pub = len(two[0].public_tests)
    assert scores.utility.shape == (2,) and scores.public_status_probs.shape == (2, n_pub, 5)
    assert np.allclose(scores.public_status_probs.sum(-1), 1, atol=1e-5)
    assert scores.component_version == wm.version


@pytest.fixture(scope="module")
def tiny_backbone_world():
    from rsi_workbench.world.api import WorldModel
    from rsi_workbench.world.encoders import FeatureCache, load_backbone
    from rsi_workbench.world.model import OutcomeWorldModel, WorldModelConfig

    bb = load_backbone("tiny", device="cpu")
    return WorldModel(
        OutcomeWorldModel(WorldModelConfig(input_dim=bb.hidden_size)),
        bb,
        FeatureCache(bb.fingerprint, bb.hidden_size),
    )


class InvalidFirstCoderDouble:
    """Test double for a model coder: an invalid sample (as ``LLMCoder`` marks one), then the reference."""

    name = "llm"

    def propose(self, task, program, feedback, k, rng):
        from rsi_workbench.agents import Candidate

        bad = Candidate("def broken(:\n", "", {"invalid": "unparseable: test double", "raw": "prose"})
        return [bad, Candidate(task.reference, "", {"coder": "llm"})]


def test_builder_records_invalid_model_samples_and_never_executes_them(tasks, tmp_path):
    by_id = {t.task_id: t for t in tasks}
    cfg = TransitionConfig(k=2, injected_per_problem=0, workers=1, coder="llm:double")
    run_dir = build_transitions(
        tmp_path / "t", [by_id["Python/0"]], cfg, progress=False, coder=InvalidFirstCoderDouble()
    )
    tr = load_transitions(run_dir)
    assert [t.program for t in tr] == [by_id["Python/0"].reference]  # only the valid one was executed
    assert all(o["status"] == "AC" for o in tr[0].hidden)
    from rsi_workbench.records import Run

    run = Run.open(run_dir)
    (inv,) = [e.payload for e in run.events("world_invalid_candidate")]
    assert inv["reason"] == "unparseable: test double" and inv["raw"] == "prose"
    assert run.events("world_group_done")[0].payload == {
        "group_id": "Python/0#humanevalfix",
        "candidates": 1,
        "invalid": 1,
    }
