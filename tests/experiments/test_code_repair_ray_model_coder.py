"""A code-repair experiment with a model coder on Ray (the session's local instance): one task per
seed runs that seed's methods in order, loading the model inside the Ray worker; the report equals
the ``process`` experiment's and each seed's coder record has one writer and no call twice, also
when the worker running seed 0 is killed mid-task (Ray retries the seed's task, which takes the dead
holder's locks over and resumes).

The model is a tiny random Llama saved as a checkpoint directory (built from a config, no download),
named by the ``model:`` block like any local checkpoint; ``hybrid`` fills k with mutants where its
samples do not parse."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable
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


RESUMED = re.compile(r"; \d+ cut-off cycle attempt\(s\) discarded on resume$")


def _table(out: Path) -> list[str]:
    """The report without lines naming the directory or giving wall times, without the model calls'
    generation seconds, and without the note that a resumed run discarded a cut-off cycle attempt."""
    from rsi_workbench.experiments.code_repair import report

    lines, in_wall = [], False
    for ln in report(out).splitlines():
        in_wall = ln.startswith("wall time") or (in_wall and ln.startswith("  "))
        if not in_wall and str(out) not in ln:
            lines.append(RESUMED.sub("", re.sub(r"(= \d+), [0-9.]+ s\)", r"\1, - s)", ln)))
    return lines


def _effective(run_dir: Path) -> list[tuple[str, int | None]]:
    """(kind, cycle) of a run's effective events: a cut-off cycle attempt stays in the append-only
    log but is void once the cycle is rerun (the rerun records ``cycle_attempt_discarded``)."""
    from rsi_workbench.protocol.loop import effective_events
    from rsi_workbench.records import Run

    evs = effective_events(Run.open(run_dir))
    return [(e.kind, e.cycle) for e in evs if e.kind != "cycle_attempt_discarded"]


def _events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (run_dir / "events.jsonl").open()]


def _run_killing(cfg: Any, out: Path, lock: Path, ready: Callable[[], bool]) -> list[int]:
    """Run the experiment in a thread; SIGKILL the (local) process holding ``lock`` once ``ready()``."""
    from lock_holder_kill import run_killing_lock_holder

    from rsi_workbench.experiments.code_repair import run_experiment

    killed = run_killing_lock_holder(lambda: run_experiment(cfg, out), lock, ready)
    assert killed, "seed 0 finished before its worker could be killed"
    return killed


def _calls(run_dir: Path) -> list[tuple[str, int]]:
    return [
        (e["payload"]["key"], e["payload"]["ordinal"]) for e in _events(run_dir) if e["kind"] == "model_call"
    ]


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
    out = tmp_path / "r"
    out.mkdir()  # one execution cache and one set of training transitions for both
    shutil.copy(proc / "exec_cache.jsonl", out / "exec_cache.jsonl")
    shutil.copytree(proc / "transitions", out / "transitions")
    # seed 0's worker dies in its second method's second cycle (the coder record holds the first
    # method's calls and the second's first cycle): the retry replays what was recorded
    run0 = out / "runs" / "static_verifier-seed0"
    events = run0 / "events.jsonl"

    def ready() -> bool:
        return events.exists() and b'"kind":"cycle_finished"' in events.read_bytes()

    killed = _run_killing(_config(tasks, tiny_checkpoint, {"kind": "ray"}), out, run0 / "writer.lock", ready)

    assert _table(out) == _table(proc)  # the same numbers, budgets and decisions
    from rsi_workbench.experiments.code_repair import report

    notes = [bool(RESUMED.search(ln)) for ln in report(out).splitlines() if "-seed0:" in ln]
    cut_off = any(e["kind"] == "cycle_attempt_discarded" for e in _events(run0))
    assert notes == [False, cut_off]  # the killed run says so when it discarded a cut-off attempt
    fin = [e.payload for e in Run.open(out).events("run_finished")]
    assert [f["run"] for f in fin] == [
        f"{m}-seed{s}" for s in (0, 1) for m in ("random_k", "static_verifier")
    ]
    assert fin[0]["coder_took_over_from"]["pid"] == fin[1]["took_over_from"]["pid"] == killed[0]
    workers = {s: {f["worker"]["pid"] for f in fin if f["seed"] == s} for s in (0, 1)}
    assert all(len(w) == 1 and os.getpid() not in w for w in workers.values())  # one Ray task per seed
    assert not list(out.glob("**/writer.lock"))  # the runs' and the coder records' locks released
    for seed in (0, 1):
        calls = _calls(out / "coder" / f"seed{seed}")
        assert calls and max(Counter(calls).values()) == 1  # one writer: no call recorded twice
        assert calls == _calls(proc / "coder" / f"seed{seed}")
    kinds = [[e["kind"] for e in _events(d / "coder" / "seed1")] for d in (out, proc)]
    assert kinds[0] == kinds[1] and "model_replay" in kinds[0]  # the second method replayed round 1
    for run in (out / "runs").iterdir():  # nothing counted twice, also in the resumed run
        assert _effective(run) == _effective(proc / "runs" / run.name)
