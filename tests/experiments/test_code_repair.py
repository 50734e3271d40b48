"""Code repair on the engine: sandbox feedback, the incumbent rule, the workflow update, a task file run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench.agents import Candidate
from rsi_workbench.config import ConfigError, load_config
from rsi_workbench.domains.code_repair import Sandbox, load_task_file
from rsi_workbench.experiments.code_repair import Config, report, run_experiment
from rsi_workbench.experiments.code_repair.binding import CodeRepairEnvironment, RepairPolicy
from rsi_workbench.protocol.spec import Observation, PairRecord

TASKS = [
    {
        "task_id": "demo/add",
        "entry_point": "add",
        "program": "def add(a, b):\n    return a - b\n",
        "public_tests": [
            {"id": "p1", "kind": "assert", "code": "assert add(1, 2) == 3"},
            {"id": "p2", "kind": "assert", "code": "assert add(0, 0) == 0"},
        ],
        "hidden_tests": [
            {"id": "h1", "kind": "assert", "code": "assert add(5, 7) == 12"},
            {"id": "h2", "kind": "assert", "code": "assert add(-1, 1) == 0"},
        ],
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
        "hidden_tests": [
            {"id": "h1", "kind": "assert", "code": "assert count([]) == 0"},
            {"id": "h2", "kind": "assert", "code": "assert count([7]) == 1"},
        ],
        "reference": "def count(xs):\n    n = 0\n    for x in xs:\n        n += 1\n    return n\n",
    },
]


@pytest.fixture(scope="module")
def task_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("tasks") / "my_tasks.jsonl"
    p.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    return p


@pytest.fixture(scope="module")
def env(task_file) -> CodeRepairEnvironment:
    return CodeRepairEnvironment(load_task_file(task_file), Sandbox("best_effort"))


def test_online_feedback_stop_rule_and_incumbent_rule(env):
    state, obs = env.initial("demo/add")
    assert obs.cost == 1.0 and obs.evidence == "E0" and not obs.solved
    assert obs.labels == [1, 0]  # WA, AC (add(0, 0) passes) — per-test status indices
    assert obs.utility_terms == {"p_all_pass": 0.0, "pass_fraction": 0.5}
    fix = Candidate("def add(a, b):\n    return a + b\n")
    good = env.evaluate("demo/add", state, fix)
    assert good.solved and good.utility_terms["p_all_pass"] == 1.0
    assert env.advance("demo/add", state, fix, good).program == fix.program
    worse = Candidate("def add(a, b):\n    return 1 / 0\n")
    bad = env.evaluate("demo/add", state, worse)
    assert bad.labels == [3, 3]  # RE
    assert env.advance("demo/add", state, worse, bad).program == state.program  # incumbent kept
    audit = env.audit("demo/add", state, [fix, worse])
    assert [a["hidden_all_pass"] for a in audit] == [True, False]
    assert env.final_audit("demo/add", state)["hidden_all_pass"] is False
    assert env.signature("demo/add", state) == env.signature(
        "demo/add", env.load_state(env.dump_state(state))
    )


def _record(env, op: str, susp: float, improved: bool) -> PairRecord:
    state, _ = env.initial("demo/add")
    obs = Observation(
        {"p_all_pass": 0.0, "pass_fraction": 1.0 if improved else 0.0},
        [0, 0] if improved else [1, 1],
        detail={"passed": 2 if improved else 0, "outcomes": []},
    )
    return PairRecord(
        "demo/add",
        1,
        env.dump_state(state),
        {"program": "", "diff": "", "meta": {"operators": [op], "suspiciousness": [susp]}},
        None,
        obs,
        "p",
        None,
        "update",
    )


def test_workflow_update_reweights_operator_and_location_preferences(env):
    pol = RepairPolicy(env)
    recs = [
        _record(env, "arith_swap", 0.8, True),
        _record(env, "arith_swap", 0.7, True),
        _record(env, "delete_stmt", 0.0, False),
        _record(env, "delete_stmt", 0.0, False),
    ]
    new = pol.update(recs, [], seed=0)
    assert new.generation == 1 and new.version != pol.version
    ratio_old = pol.prior["arith_swap"] / pol.prior["delete_stmt"]
    assert new.prior["arith_swap"] / new.prior["delete_stmt"] > ratio_old  # the successful operator gains
    assert new.uncovered_weight < pol.uncovered_weight  # uncovered-line edits failed: less preferred
    again = RepairPolicy.from_bytes(env, new.to_bytes())
    assert again.version == new.version and again.prior == new.prior


def test_config_errors_name_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiment: code_repair\nmethods: [random_k, nonsense]\n")
    with pytest.raises(ConfigError, match="methods"):
        load_config(bad, Config)
    bad.write_text("experiment: code_repair\nworld: {encoderr: tiny}\n")
    with pytest.raises(ConfigError, match="world.encoderr"):
        load_config(bad, Config)


@pytest.mark.slow
def test_a_task_file_runs_unchanged_end_to_end(task_file, tmp_path):
    cfg = Config.model_validate(
        {
            "tasks": {"path": str(task_file)},
            "methods": ["random_k", "static_verifier", "world_adaptive", "info_gain"],
            "seeds": [0],
            "world": {"encoder": "tiny", "folds": 3, "train_epochs": 2, "adapt_epochs": 2},
            "protocol": {
                "reliability": {"min_predictions": 1, "min_groups": 1},
                "adaptation": {"min_examples": 1},
                "gate_fraction": 0.34,
                "policy_update": {"enabled": True, "min_records": 1},  # joint policy + predictor updates
            },
        }
    )
    out = run_experiment(cfg, tmp_path / "exp")
    text = report(out)
    assert "random_k" in text and "world_adaptive" in text and "Δ vs static_verifier" in text
    assert "acquisition rule" in text.split("info_gain")[0]  # reported apart from utility ranking
    assert (out / "report.txt").exists()
    for m in ("random_k", "static_verifier", "world_adaptive"):
        assert (out / "runs" / f"{m}-seed0" / "events.jsonl").exists()
    from rsi_workbench.records import Run

    kinds = [e.payload["gate"] for e in Run.open(out / "runs" / "world_adaptive-seed0").events("gate")]
    assert "policy" in kinds  # the workflow update was proposed and gated on real sandbox feedback
    # resuming a finished experiment does nothing new and gives the same table
    assert report(run_experiment(cfg, out, resume=True)) == text
