"""The tabular domain's compiled investigations really run and keep unavailable data explicit."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import replace

from rsi_workbench.domains import tabular

FAST = {"n_bootstrap": 100, "outer_folds": 3}


def test_fixed_splits_are_patient_level_and_reproducible():
    a = tabular.fixed_splits("sklearn-breast-cancer/malignant", 5, 0)
    b = tabular.fixed_splits("sklearn-breast-cancer/malignant", 5, 0)
    assert len(a) == 569 and (a == b).all()
    assert sorted(set(a.tolist())) == [0, 1, 2, 3, 4]
    assert not (a == tabular.fixed_splits("sklearn-breast-cancer/malignant", 5, 1)).all()


def test_compiled_task_runs_and_produces_required_outputs(tmp_path):
    spec = tabular.AnalysisSpec("sklearn-diabetes/progression", ("demographics",), ("bmi",), 0.01, **FAST)
    task = tabular.compile_task(spec, task_id="t1")
    assert task["executable"] and task["required_outputs"] == list(tabular.REQUIRED_OUTPUTS)
    assert {"python", "scikit-learn", "numpy"} <= set(task["environment"])
    assert task["inputs"]["added_columns"] == ["bmi"]
    res = tabular.run_task(task, tmp_path)
    assert res["status"] == "ok", res["error"]
    assert set(res["outputs"]) == set(tabular.REQUIRED_OUTPUTS)
    assert all(res["checks"].values()) and set(res["checks"]) == set(tabular.CHECKS)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["ci_lo"] <= metrics["delta"] <= metrics["ci_hi"]
    assert metrics["verdict"] == "supports"  # BMI is a well-known predictor of progression
    split_sha = hashlib.sha256((tmp_path / "splits.csv").read_bytes()).hexdigest()
    assert split_sha == task["inputs"]["split_sha256"]
    rows = (tmp_path / "predictions.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 442


def test_unavailable_data_stays_an_explicit_dependency(tmp_path):
    spec = tabular.AnalysisSpec("sklearn-breast-cancer/malignant", ("size",), ("brca_status",), 0.005, **FAST)
    task = tabular.compile_task(spec, task_id="t2")
    dep = [d for d in task["dependencies"] if d["name"] == "brca_status"]
    assert dep and dep[0]["available"] is False and dep[0]["required"] and dep[0]["reason"]
    assert task["executable"] is False
    res = tabular.run_task(task, tmp_path)
    assert res["status"] == "blocked" and "brca_status" in res["error"]
    assert "unavailable_data" in tabular.spec_defects(spec)
    # a repair substitutes a recorded proxy and keeps the missing measurement as a deferred dependency
    fixed, changes = tabular.repair_spec(spec, tabular.spec_defects(spec))
    assert "brca_status" in fixed.deferred and "brca_status" not in fixed.added and changes
    t2 = tabular.compile_task(fixed, task_id="t3")
    assert t2["executable"]
    assert any(
        d["name"] == "brca_status" and not d["available"] and not d["required"] for d in t2["dependencies"]
    )
    content = tabular.hypothesis_content(fixed)
    assert any("brca_status" in x for x in content["plan"]["dependencies"])


def test_operators_respect_lineage_shapes():
    rng = random.Random(0)
    a = tabular.restart_spec("sklearn-diabetes/progression", rng, set(), unavailable_rate=0.0)
    b = replace(a, added=("glucose",) if a.added != ("glucose",) else ("lipids",))
    child, why = tabular.evolve_spec(a, rng, {tabular.spec_key(a)})
    assert tabular.spec_key(child) != tabular.spec_key(a) and why
    cross = tabular.crossover_spec([a, b])
    assert set(a.added) | set(b.added) == set(cross.added)
    assert not set(cross.baseline) & set(cross.added)


def test_noise_control_carries_no_information():
    spec = replace(tabular.control_spec("sklearn-diabetes/progression"), **FAST)
    res, _, _ = tabular.run_analysis(spec)
    assert res["verdict"] != "supports"
    assert res["controls"]["added_alone"]["gain_over_chance"] < 0.02
