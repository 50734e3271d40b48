"""DFM-Bench rubric from executed evidence: the noise control scores low; critique is blinded."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rsi_workbench.discovery.assess import (
    AXIS_WEIGHTS,
    PATH_WEIGHTS,
    BlindedCritique,
    RubricInputs,
    blinded_dossier,
    check_blinded,
    judge_progress,
    profile,
    rubric_inputs,
    weighted,
)
from rsi_workbench.discovery.records import HypothesisVersion, validate_hypothesis
from rsi_workbench.domains import tabular

FAST = {"n_bootstrap": 100, "outer_folds": 3}


def test_paper_weights():
    assert AXIS_WEIGHTS == {
        "importance": 20,
        "novelty": 20,
        "evidence": 15,
        "falsifiability": 10,
        "data_solvability": 10,
        "feasibility": 10,
        "alternatives": 10,
        "actionability": 5,
    }
    assert list(PATH_WEIGHTS.values()) == [5, 30, 20, 20, 10, 10, 5]
    assert weighted({k: 10.0 for k in AXIS_WEIGHTS}) == 10.0
    assert weighted({k: 1.0 for k in AXIS_WEIGHTS}) == 1.0


def _assessed(spec, tmp_path):
    task = tabular.compile_task(spec, task_id=f"t-{'-'.join(spec.added)}")
    res = tabular.run_task(task, tmp_path / task["task_id"])
    x = rubric_inputs(
        task, res, threshold=spec.threshold, preregistered=True, overlap=0.0, controls_offered=2
    )
    return x, profile(x)


def _version(spec, hid="h"):
    return HypothesisVersion(
        hypothesis_id=hid,
        family=hid,
        version=0,
        parents=[],
        operation="restart",
        episode=0,
        round=0,
        domain="tabular",
        direction=spec.direction,
        content=validate_hypothesis(tabular.hypothesis_content(spec)),
        publisher="e000-generation",
        created_at=0.0,
        draft_id="d0",
    )


def test_noise_control_scores_low_and_loses_the_blinded_critique(tmp_path):
    direction = "sklearn-diabetes/progression"
    noise = replace(tabular.control_spec(direction), **FAST)
    real = tabular.AnalysisSpec(direction, ("demographics",), ("bmi",), 0.01, **FAST)
    xn, pn = _assessed(noise, tmp_path)
    xr, pr = _assessed(real, tmp_path)
    # it executes fine (readiness) ...
    assert xn.executed and pn["feasibility"] == 10.0
    # ... and is still judged scientifically worthless: the value axes come from the evidence
    assert pn["importance"] < 2 and pn["novelty"] < 2 and pn["evidence"] < 2 and pn["alternatives"] < 2
    assert weighted(pn) < 4.5 < weighted(pr)
    crit = BlindedCritique()
    da, db = blinded_dossier(_version(noise, "n"), xn), blinded_dossier(_version(real, "r"), xr)
    assert crit.compare(da, db) == "b" and crit.compare(db, da) == "a"


def test_blinded_dossier_has_no_identity_or_lineage():
    spec = tabular.AnalysisSpec("sklearn-diabetes/progression", ("demographics",), ("bmi",), 0.01)
    x = RubricInputs(
        executed=True,
        checks_passed=1.0,
        data_available=1.0,
        decidable=True,
        preregistered=True,
        verdict="supports",
        threshold=0.01,
        delta=0.3,
        baseline=0.02,
        ci_lo=0.2,
        ci_hi=0.4,
    )
    d = blinded_dossier(_version(spec, "h017-3"), x)
    check_blinded(d, {"h017-3", "e000-generation", "d0"})
    with pytest.raises(ValueError, match="leaks"):
        check_blinded({**d, "parents": []}, set())
    with pytest.raises(ValueError, match="mentions"):
        check_blinded({**d, "note": "revised from h017-3"}, {"h017-3"})


def test_critique_abstains_on_incomparable_investigations():
    a = tabular.AnalysisSpec("sklearn-diabetes/progression", ("demographics",), ("bmi",), 0.01)
    b = tabular.AnalysisSpec("sklearn-breast-cancer/malignant", ("size",), ("texture",), 0.005)
    x = RubricInputs(
        executed=True,
        checks_passed=1.0,
        data_available=1.0,
        decidable=True,
        preregistered=True,
        verdict="supports",
        threshold=0.01,
        ci_lo=0.2,
        ci_hi=0.4,
    )
    assert (
        BlindedCritique().compare(blinded_dossier(_version(a), x), blinded_dossier(_version(b), x))
        == "abstain"
    )
    same = blinded_dossier(_version(a), x)
    assert BlindedCritique().compare(same, same) == "tie"


def test_blocked_hypothesis_is_low_on_data_and_feasibility_but_keeps_criteria():
    x = RubricInputs(
        executed=False,
        checks_passed=0.0,
        data_available=2 / 3,
        decidable=False,
        preregistered=True,
        verdict=None,
        threshold=0.005,
    )
    p = profile(x)
    assert p["feasibility"] == 1.0 and p["importance"] == 1.0
    assert p["data_solvability"] == pytest.approx(7.0)
    assert p["falsifiability"] == pytest.approx(1 + 9 * 0.3)


def test_progress_labels_against_the_true_predecessor():
    kw = dict(fingerprint="f2", earlier_fingerprints={"f1"}, defects_child=[], margin=0.2)
    assert (
        judge_progress(
            operation="evolve",
            executed=True,
            weighted_child=7.0,
            weighted_predecessors=[6.0],
            defects_predecessors=[],
            **kw,
        )[0]
        == "substantive_progress"
    )
    assert (
        judge_progress(
            operation="repair",
            executed=True,
            weighted_child=6.0,
            weighted_predecessors=[2.0],
            defects_predecessors=["unavailable_data"],
            **kw,
        )[0]
        == "necessary_repair"
    )
    assert (
        judge_progress(
            operation="evolve",
            executed=True,
            weighted_child=6.1,
            weighted_predecessors=[6.0],
            defects_predecessors=[],
            **kw,
        )[0]
        == "insufficient_evidence"
    )
    assert (
        judge_progress(
            operation="evolve",
            executed=False,
            weighted_child=2.0,
            weighted_predecessors=[6.0],
            defects_predecessors=[],
            **kw,
        )[0]
        == "insufficient_evidence"
    )
    dup = {**kw, "fingerprint": "f1"}
    assert (
        judge_progress(
            operation="evolve",
            executed=True,
            weighted_child=9.0,
            weighted_predecessors=[6.0],
            defects_predecessors=[],
            **dup,
        )[0]
        == "duplicate"
    )
