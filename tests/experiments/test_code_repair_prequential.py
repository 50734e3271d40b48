"""``gate_data: prequential`` through the code-repair binding: a tiny task-file experiment whose
adaptive run judges every adapted predictor on the prequential window of the latest rounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench.experiments.code_repair import Config, report, run_experiment
from rsi_workbench.records import Run

TASKS = [
    {
        "task_id": "demo/add",
        "entry_point": "add",
        "program": "def add(a, b):\n    return a - b\n",
        "public_tests": [{"id": "p1", "kind": "assert", "code": "assert add(1, 2) == 3"}],
        "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert add(5, 7) == 12"}],
        "reference": "def add(a, b):\n    return a + b\n",
    },
    {
        "task_id": "demo/smaller",
        "entry_point": "smaller",
        "program": "def smaller(a, b):\n    return a if a > b else b\n",
        "public_tests": [{"id": "p1", "kind": "assert", "code": "assert smaller(1, 2) == 1"}],
        "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert smaller(9, 3) == 3"}],
        "reference": "def smaller(a, b):\n    return a if a < b else b\n",
    },
    {
        "task_id": "demo/count",
        "entry_point": "count",
        "program": "def count(xs):\n    n = 0\n    for x in xs:\n        n += 2\n    return n\n",
        "public_tests": [{"id": "p1", "kind": "assert", "code": "assert count([1, 2, 3]) == 3"}],
        "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert count([7]) == 1"}],
        "reference": "def count(xs):\n    n = 0\n    for x in xs:\n        n += 1\n    return n\n",
    },
]


@pytest.mark.slow
def test_prequential_gate_data_runs_through_code_repair(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    cfg = Config.model_validate(
        {
            "tasks": {"path": str(tasks)},
            "methods": ["world_adaptive"],
            "seeds": [0],
            "world": {"encoder": "tiny", "folds": 3, "train_epochs": 1, "adapt_epochs": 1},
            "protocol": {
                "reliability": {"min_predictions": 1, "min_groups": 1, "max_brier": 0.0},  # never reliable
                "adaptation": {"min_examples": 1},
                "gate_data": "prequential",
            },
        }
    )
    out = run_experiment(cfg, tmp_path / "exp")
    run = Run.open(out / "runs" / "world_adaptive-seed0")
    assert run.config["experiment"]["protocol"]["gate_data"] == "prequential"
    splits = {e.payload["pair"]["split"] for e in run.events("observation")}
    assert splits == {"prequential"}
    gates = [e.payload for e in run.events("gate") if e.payload["gate"] == "predictor"]
    assert gates, "an adaptation was triggered and gated"
    for g in gates:
        gd = g["gate_data"]
        assert gd["rule"] == "prequential" and g["n_units"] == len(gd["window"]) > 0
        assert all(not refused for refused in gd["refused"].values())
    assert "world_adaptive" in report(out)
