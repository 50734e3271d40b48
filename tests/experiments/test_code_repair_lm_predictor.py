"""Issue 33 item 4: the LM-likelihood readout as the code-repair experiment's protocol predictor
(a tiny random model built from a config, no download), its on-disk score cache, and the
``world.lr`` field's validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "code_repair_tasks" / "tasks.jsonl"
TASKS = ("mine/is_leap", "mine/median")  # both fixable within their first 4 mutants


class ScoringDouble:
    """Test double for a scoring backend: log p = -len(program), counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def score(self, prompt: str, programs: list[str]) -> list[float]:
        self.calls += 1
        return [-float(len(p)) for p in programs]


def test_score_cache_hits_misses_and_keys_on_the_model(tmp_path: Path) -> None:
    from rsi_workbench.domains.code_repair.lm_ranker import LMScorer

    path = tmp_path / "scores.jsonl"
    llm = ScoringDouble()
    a = LMScorer(llm, "model-a", path)
    first = a.score("prompt", ["x = 1", "y = 22"])
    assert llm.calls == 1 and first[0][0] == -5.0
    a.score("prompt", ["x = 1", "y = 22"])
    assert llm.calls == 1  # an in-memory hit
    again = ScoringDouble()
    b = LMScorer(again, "model-a", path)  # a fresh scorer on the same file: hits from disk
    assert b.score("prompt", ["y = 22", "x = 1"]) == [first[1], first[0]] and again.calls == 0
    b.score("another prompt", ["x = 1"])
    assert again.calls == 1  # the prompt is part of the key
    other = ScoringDouble()
    c = LMScorer(other, "model-b", tmp_path / "b.jsonl")
    assert c.seed_from(path) == 3  # read only: the file's rows enter c's memory, keyed under model-a
    c.score("prompt", ["x = 1"])
    assert other.calls == 1  # another model identity never reuses model-a's scores
    d = LMScorer(ScoringDouble(), "model-a", tmp_path / "d.jsonl")
    d.seed_from(path)
    d.score("prompt", ["x = 1"])
    assert d.llm.calls == 0 and not (tmp_path / "d.jsonl").exists()


def test_world_learning_rates_are_validated_naming_file_and_field(tmp_path: Path) -> None:
    from rsi_workbench.cli import load_experiment_config
    from rsi_workbench.config import ConfigError
    from rsi_workbench.domains.code_repair.predictor import _recipe

    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: code_repair\nworld: {lr: {readout: 0}}\n")
    with pytest.raises(ConfigError) as e:
        load_experiment_config(bad, check=False)
    assert str(bad) in str(e.value) and "world.lr.readout" in str(e.value)
    good = tmp_path / "good.yaml"
    good.write_text("experiment: code_repair\nworld: {lr: {opf: 0.001, readout: 0.003}}\n")
    cfg = load_experiment_config(good, check=False)
    assert _recipe(cfg.world) == {"staged": False, "lr_opf": 0.001, "lr_readout": 0.003}
    plain = tmp_path / "plain.yaml"
    plain.write_text("experiment: code_repair\n")
    # unset: dumped absent, so the stored configs of older runs still resume
    assert "lr" not in load_experiment_config(plain, check=False).world.model_dump()
    lm = tmp_path / "lm.yaml"
    lm.write_text("experiment: code_repair\nmethods: [random_k, lm_fixed]\n")
    with pytest.raises(ConfigError, match="need world.lm_readout"):
        load_experiment_config(lm, check=False)


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random causal LM and byte-level tokenizer saved as a local checkpoint (no download)."""
    pytest.importorskip("transformers")
    from rsi_workbench.discovery.sft import byte_level_tokenizer, tiny_causal_lm

    d = tmp_path_factory.mktemp("tiny-lm")
    tok = byte_level_tokenizer()
    tiny_causal_lm(len(tok), seed=0).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def test_lm_readout_drives_the_experiment_on_two_tasks(tmp_path: Path, tiny_model_dir: Path) -> None:
    from rsi_workbench.domains.code_repair.pools import build_pools
    from rsi_workbench.experiments.code_repair.experiment import Config, run_experiment
    from rsi_workbench.experiments.code_repair.report import report
    from rsi_workbench.records import Run

    rows = [json.loads(x) for x in EXAMPLES.read_text().splitlines() if x.strip()]
    tf = tmp_path / "tasks.jsonl"
    tf.write_text("".join(json.dumps(r) + "\n" for r in rows if r["task_id"] in TASKS))
    build_pools(str(tf), tmp_path / "pools", n=4, pools_per_task=2)
    model = {"backend": "transformers", "name": str(tiny_model_dir), "cpu_threads": 1}
    cfg = Config.model_validate(
        {
            "tasks": {"path": str(tf)},
            "methods": ["random_k", "lm_fixed", "lm_adaptive"],
            "seeds": [0],
            "baseline": "random_k",
            "world": {"lm_readout": {"pools": str(tmp_path / "pools"), "model": model, "folds": 2}},
            "protocol": {
                "k": 2,
                "max_rounds": 2,
                "gate_fraction": 0.34,
                "reliability": {"min_predictions": 2, "min_groups": 1},
                "adaptation": {"min_examples": 1},
            },
        }
    )
    out = run_experiment(cfg, tmp_path / "exp")
    exp = Run.open(out)
    assert sorted(e.payload["run"] for e in exp.events("run_finished")) == [
        "lm_adaptive-seed0",
        "lm_fixed-seed0",
        "random_k-seed0",
    ]
    cache = (out / "lm_scores.jsonl").read_text().splitlines()
    assert cache, "the experiment's score cache holds the scored candidates"
    text = report(out)
    assert "lm_fixed" in text and "lm_adaptive" in text
    assert "\nReading: " in text  # the two lines saying what the table shows
    assert "proposal reach: not measured" not in text  # audits are on here
    trig = [e for e in Run.open(out / "runs" / "lm_adaptive-seed0").events() if "adapt" in e.kind]
    assert trig, "the adaptive run recorded its adaptation decisions"
    n = len(cache)
    run_experiment(cfg, out, resume=True)  # a resume re-scores nothing
    assert len((out / "lm_scores.jsonl").read_text().splitlines()) == n


def test_readout_round_trips_with_its_training_rows() -> None:
    from rsi_workbench.domains.code_repair.lm_ranker import ReadoutPredictor
    from rsi_workbench.domains.code_repair.lm_readout import CrossFitReadout, task_folds

    feats: list[tuple[dict[str, float], float]] = [
        ({"suspiciousness": s / 10, "multi_edit": 0.0}, float(s > 5)) for s in range(10)
    ]
    folds = task_folds(["a", "b", "c"], 2, seed=0)
    r = {f: ReadoutPredictor.fit({}, None, feats, use_lm=False) for f in set(folds.values())}
    pred: Any = CrossFitReadout(r, folds, {}, None, use_lm=False)
    back = pred.load_bytes(pred.to_bytes())
    assert back.version == pred.version and back.to_bytes() == pred.to_bytes()
    assert all(len(x.train) == 10 for x in back.readouts.values())


def test_outcomes_table_and_the_preregistered_verdict() -> None:
    from studies.code_repair_fixable.outcomes import paired, table, verdict

    tasks = [f"t{i}" for i in range(8)]
    data = {
        "methods": ["random_k", "lm_adaptive"],
        "seeds": {"random_k": [0, 1], "lm_adaptive": [0, 1]},
        "hidden_all_pass": {
            "random_k": {t: [0, 0] for t in tasks},
            "lm_adaptive": {t: [1, 1] if i < 6 else [0, 0] for i, t in enumerate(tasks)},
        },
        "online_calls": {m: {t: [4.0, 4.0] for t in tasks} for m in ("random_k", "lm_adaptive")},
    }
    m, lo, hi, n = paired(data, "lm_adaptive", "random_k") or (0.0, 0.0, 0.0, 0)
    assert (m, n) == (0.75, 8) and 0 < lo <= m <= hi <= 1
    assert verdict(data).startswith("success: lm_adaptive − random_k = +75.0 pp")
    assert "| lm_adaptive − random_k | 8 |" in table(data, [("lm_adaptive", "random_k")])
    from studies.code_repair_fixable.outcomes import with_control

    control = {**data, "seeds": {**data["seeds"], "lm_fixed": [0, 1]}}
    control["hidden_all_pass"] = {**data["hidden_all_pass"], "lm_fixed": data["hidden_all_pass"]["random_k"]}
    control["online_calls"] = {**data["online_calls"], "lm_fixed": data["online_calls"]["random_k"]}
    both = with_control(data, control)
    assert paired(both, "lm_adaptive", "features_fixed") == paired(data, "lm_adaptive", "random_k")
    other = {**control, "hidden_all_pass": {**control["hidden_all_pass"], "random_k": {"t0": [1, 1]}}}
    with pytest.raises(ValueError, match="random_k outcomes differ"):
        with_control(data, other)
    data["hidden_all_pass"]["lm_adaptive"] = {t: [0, 0] for t in tasks}
    assert verdict(data).startswith("falsified")
