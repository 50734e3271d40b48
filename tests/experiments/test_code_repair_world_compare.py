"""``world_compare``: encoders x recipe variants vs the static verifier, on a transitions JSONL
(synthetic outcomes for six HumanEvalFix tasks; the ``tiny`` encoder)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from rsi_workbench.domains.code_repair import load_humanevalfix
from rsi_workbench.domains.code_repair.world_transitions import Transition, problem_of
from studies.code_repair_world_compare.world_compare import (
    METRICS,
    CompareConfig,
    compare,
    format_compare,
    merge_results,
    read_transitions,
    subsample,
)


def _outcomes(tests, passed):
    return [
        {"test_id": t.id, "status": "AC" if passed or j % 2 else "WA", "runtime_s": 0.01, "message": ""}
        for j, t in enumerate(tests)
    ]


@pytest.fixture(scope="module")
def transitions_file(tmp_path_factory):
    tasks = {t.task_id: t for t in load_humanevalfix()}
    rows = []
    for n in range(6):
        task = tasks[f"Python/{n}"]
        state_public = _outcomes(task.public_tests, False)
        for i in range(4):
            ok = i == n % 4  # one fixing candidate per state
            t = Transition(
                f"{task.task_id}#humanevalfix",
                task.task_id,
                problem_of(task.task_id),
                "humanevalfix",
                task.program,
                state_public,
                task.program + f"\n# candidate {i}\n",
                _outcomes(task.public_tests, ok),
                _outcomes(task.hidden_tests, ok),
            )
            rows.append(json.dumps(dataclasses.asdict(t)))
    path = tmp_path_factory.mktemp("cmp") / "transitions.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_read_and_subsample_transitions(transitions_file, tmp_path):
    tr = read_transitions(transitions_file)
    assert len(tr) == 24 and {t.problem for t in tr} == {str(i) for i in range(6)}
    sub = subsample(tr, 3)
    assert len({t.problem for t in sub}) == 3 and len(sub) == 12 and subsample(tr, 3) == sub
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"group_id": "x"}) + "\n")
    with pytest.raises(ValueError, match="lacks"):
        read_transitions(bad)


@pytest.mark.slow
def test_compare_scores_every_variant_against_the_verifier(transitions_file, tmp_path):
    cfg = CompareConfig(
        encoders=("tiny",),
        variants=("base", "both"),
        seeds=(0,),
        k=3,
        epochs=1,
        features_dir=str(tmp_path / "features"),
    )
    res = compare(transitions_file, cfg, progress=False)
    info = res["encoders"]["tiny"]
    metrics = info["seeds"]["0"]["metrics"]
    assert set(metrics) == {"verifier", "base", "both"}
    for m in metrics.values():
        assert all(np.isfinite(m[k]) for k in METRICS if k != "ranking_accuracy")
    folds = info["seeds"]["0"]["folds"]
    assert len(folds) == 3 and all(f["listwise_pools"]["pools"] >= 1 for f in folds)
    assert [s[0] for s in folds[0]["stages_both"]] == [
        "initial",
        "semantic",
        "semantic",
        "expanded",
        "incumbent",
    ]
    assert "stages_base" not in folds[0]
    table = format_compare(res)
    assert "static verifier" in table and "world model, both" in table
    again = compare(transitions_file, cfg, progress=False)  # features come from the disk cache
    assert again["encoders"]["tiny"]["encoded"] == 0
    assert again["encoders"]["tiny"]["seeds"] == res["encoders"]["tiny"]["seeds"]
    other = {**again, "encoders": {"tiny2": again["encoders"]["tiny"]}}
    merged = merge_results([res, other])
    assert list(merged["encoders"]) == ["tiny", "tiny2"] and "| tiny2 | static verifier |" in format_compare(
        merged
    )
    with pytest.raises(ValueError, match="differ"):
        merge_results([res, {**other, "config": {**other["config"], "epochs": 3}}])
    with pytest.raises(ValueError, match="twice"):
        merge_results([res, again])
    seed1 = {**again, "encoders": {"tiny": {**again["encoders"]["tiny"], "seeds": {"1": info["seeds"]["0"]}}}}
    assert list(merge_results([res, seed1])["encoders"]["tiny"]["seeds"]) == ["0", "1"]
