"""A code-repair experiment with a model coder on Ray (the session's local instance): one task per
seed runs that seed's methods in order, loading the model inside the Ray worker; the report equals
the ``process`` experiment's and each seed's coder record has one writer and no call twice.

The model is a tiny random Llama saved as a checkpoint directory (built from a config, no download),
named by the ``model:`` block like any local checkpoint; ``hybrid`` fills k with mutants where its
samples do not parse."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from code_repair_demo import TASKS


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from rsi_workbench.discovery.sft import byte_level_tokenizer, tiny_causal_lm

    tok = byte_level_tokenizer()
    d = tmp_path_factory.mktemp("tiny-coder-ckpt")
    tiny_causal_lm(len(tok), seed=0).save_pretrained(d)
    tok.save_pretrained(d)
    return d


def _config(tasks: Path, ckpt: Path, executor: dict[str, Any]) -> Any:
    from rsi_workbench.experiments.code_repair import Config

    return Config.model_validate(
        {
            "tasks": {"path": str(tasks)},
            "methods": ["random_k", "static_verifier"],
            "seeds": [0, 1],
            "coder": {
                "kind": "hybrid",
                "max_tokens": 12,
                "sample_cap": 2,
                "model": {"name": str(ckpt), "device": "cpu", "dtype": "fp32", "cpu_threads": 1},
            },
            "world": {"encoder": "tiny", "folds": 3, "train_epochs": 2, "adapt_epochs": 2},
            "protocol": {"k": 2, "max_rounds": 2, "gate_fraction": 0.34},
            "executor": executor,
        }
    )


def _table(out: Path) -> list[str]:
    """The report without lines naming the directory or giving wall times."""
    from rsi_workbench.experiments.code_repair import report

    lines, in_wall = [], False
    for ln in report(out).splitlines():
        in_wall = ln.startswith("wall time") or (in_wall and ln.startswith("  "))
        if not in_wall and str(out) not in ln:
            lines.append(ln)
    return lines


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (run_dir / "events.jsonl").open()]


@pytest.mark.slow
@pytest.mark.ray
def test_model_coder_on_ray_runs_by_seed_and_equals_the_process_experiment(
    local_ray: Any, tiny_checkpoint: Path, tmp_path: Path
) -> None:
    from rsi_workbench.experiments.code_repair import run_experiment
    from rsi_workbench.records import Run

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    proc = run_experiment(_config(tasks, tiny_checkpoint, {"kind": "process", "workers": 2}), tmp_path / "p")
    (tmp_path / "r").mkdir()  # one execution cache and one set of training transitions for both
    shutil.copy(proc / "exec_cache.jsonl", tmp_path / "r" / "exec_cache.jsonl")
    shutil.copytree(proc / "transitions", tmp_path / "r" / "transitions")
    out = run_experiment(_config(tasks, tiny_checkpoint, {"kind": "ray"}), tmp_path / "r")

    assert _table(out) == _table(proc)
    fin = [e.payload for e in Run.open(out).events("run_finished")]
    assert [f["run"] for f in fin] == [
        f"{m}-seed{s}" for s in (0, 1) for m in ("random_k", "static_verifier")
    ]
    workers = {s: {f["worker"]["pid"] for f in fin if f["seed"] == s} for s in (0, 1)}
    assert all(len(w) == 1 and os.getpid() not in w for w in workers.values())  # one Ray task per seed
    assert not list(out.glob("**/writer.lock"))  # the runs' and the coder records' locks released
    for seed in (0, 1):
        mine, theirs = _events(out / "coder" / f"seed{seed}"), _events(proc / "coder" / f"seed{seed}")
        calls = [(e["payload"]["key"], e["payload"]["ordinal"]) for e in mine if e["kind"] == "model_call"]
        assert calls and max(Counter(calls).values()) == 1  # one writer: no call recorded twice
        assert calls == [
            (e["payload"]["key"], e["payload"]["ordinal"]) for e in theirs if e["kind"] == "model_call"
        ]
        assert [e["kind"] for e in mine] == [e["kind"] for e in theirs]  # replays to the second method too
        assert any(e["kind"] == "model_replay" for e in mine)
    for run in (out / "runs").iterdir():
        assert [e["kind"] for e in _events(run)] == [e["kind"] for e in _events(proc / "runs" / run.name)]
