"""Code repair on the engine: sandbox feedback, the incumbent rule, the workflow update, a task file run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsi_workbench.agents import Candidate
from rsi_workbench.config import ConfigError, load_config
from rsi_workbench.domains.code_repair import Sandbox, load_task_file
from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment, RepairPolicy
from rsi_workbench.experiments.code_repair import Config, report, run_experiment
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
    assert not (out / "report.txt").exists()  # viewing never writes; `run`/`resume`/`report --save` do
    assert "wall time (from the events; 1 finished session(s): first" in text
    for m in ("random_k", "static_verifier", "world_adaptive"):
        assert (out / "runs" / f"{m}-seed0" / "events.jsonl").exists()
    from rsi_workbench.records import Run

    kinds = [e.payload["gate"] for e in Run.open(out / "runs" / "world_adaptive-seed0").events("gate")]
    assert "policy" in kinds  # the workflow update was proposed and gated on real sandbox feedback
    # resuming a finished experiment does nothing new and gives the same table
    assert report(run_experiment(cfg, out, resume=True)) == text


BAD_REFERENCE = {  # its reference fails its own hidden test
    "task_id": "demo/bad-ref",
    "entry_point": "neg",
    "program": "def neg(a):\n    return a\n",
    "public_tests": [{"id": "p1", "kind": "assert", "code": "assert neg(1) == -1"}],
    "hidden_tests": [{"id": "h1", "kind": "assert", "code": "assert neg(0) == 0"}],
    "reference": "def neg(a):\n    return -a if a else 1\n",
}


def _small(task_path: Path, seeds: list[int], methods: list[str], **tasks: object) -> Config:
    return Config.model_validate(
        {
            "tasks": {"path": str(task_path), **tasks},
            "methods": methods,
            "seeds": seeds,
            "world": {"encoder": "tiny", "folds": 3, "train_epochs": 1, "adapt_epochs": 1},
            "protocol": {"reliability": {"min_predictions": 1, "min_groups": 1}, "gate_fraction": 0.34},
        }
    )


def test_failing_reference_is_refused_before_any_directory(tmp_path):
    p = tmp_path / "tasks.jsonl"
    p.write_text("".join(json.dumps(t) + "\n" for t in [*TASKS, BAD_REFERENCE]))
    with pytest.raises(ConfigError, match=r"1 task\(s\) whose reference fails its own tests: demo/bad-ref"):
        run_experiment(_small(p, [0], ["random_k"]), tmp_path / "exp")
    assert not (tmp_path / "exp").exists()


def test_extend_rejects_changed_protocol_and_missing_dir(task_file, tmp_path):
    from rsi_workbench.experiments.code_repair.experiment import _extension
    from rsi_workbench.records import RunError

    with pytest.raises(RunError, match="needs an existing experiment"):
        run_experiment(_small(task_file, [0], ["random_k"]), tmp_path / "none", extend=True)
    a = _small(task_file, [0], ["random_k"])
    with pytest.raises(RunError, match=r"also changes \['world'\]"):
        _extension(a, a.model_copy(update={"world": a.world.model_copy(update={"folds": 4})}), tmp_path)
    with pytest.raises(RunError, match="drops"):
        _extension(_small(task_file, [0, 1], ["random_k"]), a, tmp_path)
    assert _extension(a, a, tmp_path) is None
    grown = _extension(a, _small(task_file, [0, 2], ["random_k", "world_fixed"]), tmp_path)
    assert grown == {
        "seeds": [0, 2],
        "methods": ["random_k", "world_fixed"],
        "added_methods": ["world_fixed"],
        "added_seeds": [2],
    }


def _table(text: str, path: Path) -> list[str]:
    """The report without the lines that name the directory or give wall times (the "wall time" line
    and its indented per-run lines)."""
    out, in_wall = [], False
    for ln in text.splitlines():
        in_wall = ln.startswith("wall time") or (in_wall and ln.startswith("  "))
        if not in_wall and str(path) not in ln:
            out.append(ln)
    return out


@pytest.mark.slow
def test_extended_experiment_equals_a_fresh_one(tmp_path):
    """1 seed, 2 methods, extended to 2 seeds and 3 methods: the same table as a fresh run given the
    same caches (execution cache and training transitions, whose measured runtimes are training
    targets); nothing finished is re-run or re-trained; a failing reference is counted apart."""
    import shutil

    from rsi_workbench.cli import main
    from rsi_workbench.experiments.code_repair.experiment import stored_config
    from rsi_workbench.records import Run

    p = tmp_path / "tasks.jsonl"
    p.write_text("".join(json.dumps(t) + "\n" for t in [*TASKS, BAD_REFERENCE]))
    small = _small(p, [0], ["random_k", "static_verifier"], allow_failing_reference=True)
    big = _small(p, [0, 1], ["random_k", "static_verifier", "world_fixed"], allow_failing_reference=True)
    ext = run_experiment(small, tmp_path / "ext")
    trained = {e.seq: e.payload for e in Run.open(ext / "predictors" / "seed0").events("predictor_trained")}
    runs0 = (ext / "runs" / "random_k-seed0" / "events.jsonl").read_bytes()
    run_experiment(big, ext, extend=True)
    assert stored_config(ext) == big
    assert (ext / "runs" / "random_k-seed0" / "events.jsonl").read_bytes() == runs0  # not re-run
    seed0 = Run.open(ext / "predictors" / "seed0").events("predictor_trained")
    assert {e.seq: e.payload for e in seed0 if e.payload["kind"] == "static_verifier"} == trained
    (tmp_path / "fresh").mkdir()  # the same caches: sandbox outcomes and the E0 training transitions
    shutil.copy(ext / "exec_cache.jsonl", tmp_path / "fresh" / "exec_cache.jsonl")
    shutil.copytree(ext / "transitions", tmp_path / "fresh" / "transitions")
    fresh = run_experiment(big, tmp_path / "fresh")
    t_ext, t_fresh = report(ext), report(fresh)
    assert _table(t_ext, ext) == _table(t_fresh, fresh)
    assert "1 task(s) whose reference fails its own tests (allow_failing_reference)" in t_ext
    assert "extension +methods ['world_fixed'] +seeds [1]" in t_ext
    assert "random_k-seed1" in t_ext.split("wall time")[1]
    # `resume` continues with the extended config; `report` prints without writing, `--save` writes
    assert main(["resume", str(ext)]) == 0 and (ext / "report.txt").exists()
    (ext / "report.txt").unlink()
    assert main(["report", str(ext)]) == 0 and not (ext / "report.txt").exists()
    assert main(["report", str(ext), "--save"]) == 0 and (ext / "report.txt").exists()
