"""Validation before anything is created: every check a run makes on its config's inputs (task ids,
programs that compile, enough problems for cross-fitting, grids, transitions, model blocks, datasets)
happens when the config is validated, as one ``error: <file>: <field>: ...`` line with exit status 2
and no run directory; input paths resolve against the config file; a run that fails while setting up
leaves nothing behind, one that fails mid-way keeps its directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rsi_workbench import cli
from rsi_workbench.cli import load_experiment_config, main
from rsi_workbench.config import ConfigError

TASK = {  # the README's "Code-repair tasks" example
    "entry_point": "inc",
    "prompt": "Return x + 1.",
    "program": "def inc(x):\n    return x - 1\n",
    "public_tests": [{"id": "p0", "kind": "io", "args": [1], "expected": 2, "compare": "exact"}],
    "hidden_tests": [
        {"id": "h0", "kind": "assert", "code": "assert inc(2) == 3"},
        {"id": "h1", "kind": "io", "args": [0.5], "expected": 1.5, "compare": "approx"},
    ],
    "reference": "def inc(x):\n    return x + 1\n",
    "source": "mine",
    "meta": {},
}
# the README's "Any task file" config
README_CONFIG = """experiment: code_repair
tasks: {path: my_tasks.jsonl}        # null = HumanEvalFix; optional `ids: [...]`, `limit: N`
methods: [random_k, static_verifier, world_fixed, world_adaptive]   # (+ info_gain, reported apart)
seeds: [0, 1, 2]
world: {encoder: minilm, folds: 4, train_pool: 0}   # cross-fitting by problem needs ≥ 3 problems
"""


def tasks_file(path: Path, n: int, **first: Any) -> Path:
    """``n`` tasks ``inc/0`` .. in the task format; ``first`` overrides fields of the first one."""
    rows = [{**TASK, "task_id": f"inc/{i}", **(first if i == 0 else {})} for i in range(n)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def readme_config(folder: Path, n_tasks: int, **first: Any) -> Path:
    tasks_file(folder / "my_tasks.jsonl", n_tasks, **first)
    cfg = folder / "config.yaml"
    cfg.write_text(README_CONFIG)
    return cfg


def run_fails(capsys: pytest.CaptureFixture[str], cfg: Path, out: Path) -> str:
    """``rsi-workbench run CFG --out OUT``: exit 2, one ``error:`` line, no directory; the line."""
    assert main(["run", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert not out.exists()
    return err[0]


def test_readme_example_with_two_tasks_names_folds_problems_and_minimum(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = readme_config(tmp_path, 2)
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line == (
        f"error: {cfg}: world.folds: 4-fold cross-fitting by problem needs at least 3 problems in the "
        f"task batch (audit, gate and training folds); got 2 problem(s) in 2 task(s) of "
        f"{tmp_path / 'my_tasks.jsonl'} (inc/0, inc/1; a problem is a task id's part after the last '/'). "
        "Add tasks, set world.train_pool to train on tasks of the source outside the batch (it has 0), "
        "or run only methods: [random_k]"
    )


def test_readme_example_with_four_tasks_validates(tmp_path: Path) -> None:
    cfg = load_experiment_config(readme_config(tmp_path, 4))
    assert cfg.tasks.path == str(tmp_path / "my_tasks.jsonl")


def test_two_tasks_pass_with_a_training_pool_or_random_k_only(tmp_path: Path) -> None:
    # 4 tasks in the file, 2 in the batch: the other 2 are training data (world.train_pool)
    tasks_file(tmp_path / "my_tasks.jsonl", 4)
    cfg = tmp_path / "pool.yaml"
    cfg.write_text(
        README_CONFIG.replace("{path: my_tasks.jsonl}", "{path: my_tasks.jsonl, limit: 2}").replace(
            "train_pool: 0", "train_pool: 2"
        )
    )
    load_experiment_config(cfg)
    tasks_file(tmp_path / "two.jsonl", 2)
    cfg.write_text("experiment: code_repair\ntasks: {path: two.jsonl}\nmethods: [random_k]\n")
    load_experiment_config(cfg)


def test_problem_is_the_task_id_after_the_last_slash(tmp_path: Path) -> None:
    # inc/0, dec/0, neg/0: three tasks, one problem ("0"): too few to cross-fit
    path = tmp_path / "my_tasks.jsonl"
    rows = [{**TASK, "task_id": f"{name}/0"} for name in ("inc", "dec", "neg")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "config.yaml").write_text(README_CONFIG)
    with pytest.raises(ConfigError, match=r"world\.folds: .* got 1 problem\(s\) in 3 task\(s\)"):
        load_experiment_config(tmp_path / "config.yaml")


def test_buggy_program_that_does_not_compile_is_refused_by_run_and_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = readme_config(tmp_path, 4, program="def inc(x)\n    return x - 1\n")
    line = run_fails(capsys, cfg, tmp_path / "run")
    tasks = tmp_path / "my_tasks.jsonl"
    assert line == (
        f"error: {cfg}: tasks.path: {tasks}:1: program: task 'inc/0': does not compile: expected ':' (line 1)"
    )
    for extra in ([], ["--run"]):  # `tasks validate --run` no longer passes it
        assert main(["tasks", "validate", str(tasks), *extra]) == 2
        cap = capsys.readouterr()
        assert (
            cap.err == f"error: {tasks}:1: program: task 'inc/0': does not compile: expected ':' (line 1)\n"
        )
        assert "valid" not in cap.out


def test_reference_that_does_not_compile_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tasks_file(tmp_path / "t.jsonl", 1, reference="def inc(x):\nreturn x + 1\n")
    assert main(["tasks", "validate", str(tasks)]) == 2
    assert capsys.readouterr().err == (
        f"error: {tasks}:1: reference: task 'inc/0': does not compile: expected an indented block after "
        "function definition on line 1 (line 2)\n"
    )


def test_misspelled_task_key_lists_the_tasks_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a task-level key ending in ``_tests`` once listed a test's fields
    cfg = readme_config(tmp_path, 4, extra_tests=[])
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line == (
        f"error: {cfg}: tasks.path: {tmp_path / 'my_tasks.jsonl'}:1: extra_tests: unknown field (allowed: "
        "task_id, entry_point, prompt, program, public_tests, hidden_tests, reference, source, meta)"
    )


def test_unknown_task_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = readme_config(tmp_path, 4)
    cfg.write_text(
        README_CONFIG.replace("{path: my_tasks.jsonl}", "{path: my_tasks.jsonl, ids: [inc/0, inc/9]}")
    )
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line == (
        f"error: {cfg}: tasks.ids: unknown task id(s) ['inc/9'] (not in {tmp_path / 'my_tasks.jsonl'}; "
        "it holds 4 task(s), e.g. ['inc/0', 'inc/1', 'inc/2'])"
    )


def test_relative_task_path_resolves_against_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = readme_config(tmp_path / "project" / "configs", 4)
    cfg.write_text(README_CONFIG.replace("my_tasks.jsonl", "../data/tasks.jsonl"))
    tasks_file(tmp_path / "project" / "data" / "tasks.jsonl", 4)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_experiment_config(cfg).tasks.path == str(tmp_path / "project" / "data" / "tasks.jsonl")
    cfg.write_text(README_CONFIG.replace("my_tasks.jsonl", "../data/missing.jsonl"))
    line = run_fails(capsys, cfg, Path("run"))  # --out stays relative to the working directory
    assert line == (
        f"error: {cfg}: tasks.path: task file not found: {tmp_path / 'project' / 'data' / 'missing.jsonl'} "
        "(relative paths resolve against the config file's folder)"
    )
    assert list(elsewhere.iterdir()) == []


def test_missing_transitions_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = readme_config(tmp_path, 4)
    cfg.write_text(README_CONFIG.replace("train_pool: 0", "train_pool: 0, transitions: runs/hef"))
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line.startswith(
        f"error: {cfg}: world.transitions: {tmp_path / 'runs' / 'hef'}: not a world-transitions run directory"
    )


def test_model_block_naming_no_local_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = readme_config(tmp_path, 4)
    cfg.write_text(README_CONFIG + "coder: {kind: llm, model: {name: /nonexistent/ckpt}}\n")
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line == (
        f"error: {cfg}: coder.model.name: model '/nonexistent/ckpt' is neither an alias (default) nor a "
        "checkpoint directory with config.json nor a .gguf file (relative paths: to the working directory; "
        "nothing is downloaded)"
    )


def test_model_block_api_key_variable_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RSI_TEST_UNSET_KEY", raising=False)
    cfg = readme_config(tmp_path, 4)
    cfg.write_text(
        README_CONFIG + "coder:\n  kind: llm\n  model: {backend: openai, base_url: 'http://127.0.0.1:9/v1', "
        "name: m, api_key_env: RSI_TEST_UNSET_KEY}\n"
    )
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert (
        line == f"error: {cfg}: coder.model.api_key_env: the API key variable RSI_TEST_UNSET_KEY is not set"
    )


def test_reactions_grid_file_resolves_against_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cfg"
    folder.mkdir()
    rows = ["a,b,y"] + [f"{a},{b},{10 * i + j}" for i, a in enumerate("xy") for j, b in enumerate("uvw")]
    (folder / "grid.csv").write_text("\n".join(rows) + "\n")
    spec = "{name: mine, path: grid.csv, factors: [{column: a}, {column: b}], yield_column: y}"
    cfg = folder / "r.yaml"
    cfg.write_text(f"experiment: reactions\ngrids: [{spec}]\nn_initial: 2\nn_total: 4\nreport_at: [4]\n")
    monkeypatch.chdir(tmp_path)
    assert load_experiment_config(cfg).grids[0].path == str(folder / "grid.csv")
    cfg.write_text(cfg.read_text().replace("column: b}", "column: c}"))
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert (
        line
        == f"error: {cfg}: grids.0: {folder / 'grid.csv'}: missing column(s) ['c']; the file has ['a', 'b', 'y']"
    )


@pytest.mark.parametrize(
    ("grids", "expected"),
    [
        (
            "[perera]",
            "grids: unknown built-in grid 'perera'; the registered grids are edbo-suzuki, perera2018-suzuki, "
            "shields2021-direct-arylation, or give a spec (name, path or dataset, factors, yield_column)",
        ),
        (
            "[{name: mine, path: grid.csv, factors: [{column: a}]}]",
            "grids.0.spec.yield_column: required field is missing",
        ),
        (
            "[{name: mine, path: grid.csv, factors: [{column: a}], yield_column: y, colour: red}]",
            "grids.0.spec.colour: unknown key (allowed here: name, path, dataset, factors, yield_column, "
            "yield_range, campaign_columns, campaign)",
        ),
        (
            "[3]",
            "grids.0: a grid is a built-in grid's name or a spec mapping (name, path or dataset, factors, "
            "yield_column...); got 3",
        ),
    ],
)
def test_reactions_grid_errors_in_the_projects_words(tmp_path: Path, grids: str, expected: str) -> None:
    """An unknown grid name lists the registered grids; a malformed spec names its field; neither
    shows pydantic's union branches (``grids.0.str``, ``function-after[_check(), GridSpec]``)."""
    cfg = tmp_path / "r.yaml"
    cfg.write_text(f"experiment: reactions\ngrids: {grids}\n")
    with pytest.raises(ConfigError) as e:
        load_experiment_config(cfg)
    assert str(e.value) == f"{cfg}: invalid config (1 error(s)):\n  - {expected}"


def test_unknown_dataset_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "smoke.yaml"
    cfg.write_text("experiment: records_smoke\ndatasets: [no-such-dataset]\n")
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line.startswith(f"error: {cfg}: datasets: unknown dataset(s) ['no-such-dataset'] (registered: [")


def test_no_default_run_directory_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("RSI_WORKBENCH_RUNS", str(runs))
    assert main(["run", str(readme_config(tmp_path, 2))]) == 2
    assert "world.folds" in capsys.readouterr().err
    assert not runs.exists() or list(runs.iterdir()) == []


class SetupFailsDouble:
    """A test double for an experiment module whose ``run_experiment`` creates its directory, then fails
    with ``error`` (a setup error: a loader's error; anything else: a failure mid-way)."""

    def __init__(self, real: Any, error: BaseException):
        self.Config, self.error = real.Config, error

    def run_experiment(self, config: Any, out: Path, *, resume: bool = False) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        (out / "events.jsonl").write_text("")
        raise self.error

    def report(self, path: Path) -> str:  # pragma: no cover - never reached
        return ""


@pytest.mark.parametrize("setup_error", [True, False])
def test_a_failed_start_leaves_nothing_a_failure_mid_way_keeps_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], setup_error: bool
) -> None:
    cfg = tmp_path / "smoke.yaml"
    cfg.write_text("experiment: records_smoke\ndatasets: []\n")
    real = cli.experiment_module("records_smoke")
    err = ConfigError("x.yaml: field: broken") if setup_error else RuntimeError("mid-way")
    monkeypatch.setattr(cli, "experiment_module", lambda kind: SetupFailsDouble(real, err))
    out = tmp_path / "run"
    if setup_error:
        assert main(["run", str(cfg), "--out", str(out)]) == 2
        assert capsys.readouterr().err == (
            f"note: removed {out} (the run failed while setting up)\nerror: x.yaml: field: broken\n"
        )
        assert not out.exists()
    else:
        with pytest.raises(RuntimeError, match="mid-way"):
            main(["run", str(cfg), "--out", str(out)])
        assert (out / "events.jsonl").exists()  # resumable as before
        # a directory that existed before the command is never removed, whatever the error
        monkeypatch.setattr(cli, "experiment_module", lambda kind: SetupFailsDouble(real, ConfigError("x")))
        assert main(["run", str(cfg), "--out", str(out), "--resume"]) == 2
        assert (out / "events.jsonl").exists()


def test_discovery_round_campaign_resolves_against_the_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "configs"
    folder.mkdir()
    cfg = folder / "round.yaml"
    cfg.write_text(
        "experiment: discovery_round\ncampaign: ../runs/my-campaign\n"
        "dev_directions: [sklearn-diabetes/high_progression]\n"
    )
    monkeypatch.chdir(tmp_path)
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line == (
        f"error: {cfg}: campaign: {tmp_path / 'runs' / 'my-campaign'}: not a run directory (no events.jsonl; "
        "the finished campaign's run directory; relative paths resolve against the config file's folder)"
    )


def test_unknown_gui_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("miniwob")
    cfg = tmp_path / "gui.yaml"
    cfg.write_text("experiment: gui\ntask: click-chekboxes\nseeds: [0]\n")
    line = run_fails(capsys, cfg, tmp_path / "run")
    assert line.startswith(
        f"error: {cfg}: task: unknown MiniWoB++ task 'click-chekboxes'; did you mean: click-checkboxes,"
    )


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        ("[Python/43, Python/999]", "environment.targets: unknown HumanEvalFix task id(s) ['Python/999']"),
        ("[Python/43, Python/15]", "environment.practice: must be disjoint from environment.targets"),
    ],
)
def test_rsiagent_code_repair_task_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], targets: str, expected: str
) -> None:
    cfg = tmp_path / "rsa.yaml"
    cfg.write_text(
        f"experiment: rsiagent\nenvironment: {{kind: code_repair, targets: {targets}, "
        "practice: [Python/15, Python/41]}\nablations: [none]\nseeds: [0]\n"
    )
    assert run_fails(capsys, cfg, tmp_path / "run").startswith(f"error: {cfg}: {expected}")


def test_misspelled_config_key_lists_the_fields_of_its_own_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "keys.yaml"
    cfg.write_text(
        "experiment: code_repair\ntasks: {path: t.jsonl, limt: 2}\ncoder: {kind: llm, model: {nam: x}}\n"
    )
    assert main(["run", str(cfg), "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {cfg}: invalid config (2 error(s)):",
        "  - tasks.limt: unknown key (allowed here: path, ids, limit, allow_failing_reference)",
        "  - coder.model.nam: unknown key (allowed here: backend, name, device, dtype, adapter, base_url, "
        "api_key_env, timeout_s, concurrency, max_retries, replay, replay_from, cpu_threads, cache, batch_across_tasks, "
        "price)",
    ]
    assert not (tmp_path / "run").exists()


def test_a_stored_config_keeps_its_paths_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # runs made before inputs resolved against the config file stored relative paths: `resume DIR`
    # takes them as written (the working directory), so their child runs' stored configs still match
    from rsi_workbench.experiments.code_repair.experiment import Config, stored_config
    from rsi_workbench.records import Run

    old = Config.model_validate({"tasks": {"path": "my_tasks.jsonl"}}).model_dump(mode="json")
    Run.create(tmp_path / "exp", old, kind="code_repair_experiment").close()
    monkeypatch.chdir(tmp_path)
    assert stored_config(tmp_path / "exp").tasks.path == "my_tasks.jsonl"
