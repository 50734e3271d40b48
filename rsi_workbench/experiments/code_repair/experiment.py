"""The code-repair experiment (``experiment: code_repair``): four selection methods sharing one
proposer and candidate budget, several seeds, one run per (method, seed), one experiment directory.

Layout of an experiment directory::

    <out>/config.json, events.jsonl        the experiment (a run of kind code_repair_experiment)
    <out>/predictors/seed<s>/              training runs: cross-fitted predictor checkpoints (artifacts)
    <out>/runs/<method>-seed<s>/           one protocol run per (method, seed)
    <out>/exec_cache.jsonl                 sandbox outcomes shared by the runs (same program, same tests)
    <out>/report.txt                       the results table (written by `rsi-workbench run`/`resume`)

Everything is resumable: finished runs are skipped, an interrupted run resumes from its events. A
finished experiment grows (``rsi-workbench run CONFIG --out DIR --extend``): a config that differs only
by added seeds or methods appends an ``experiment_extended`` event and runs only the new (method, seed)
runs, reusing the transitions, the per-seed predictors and the execution cache already in ``DIR``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment, ExecutionCache
from rsi_workbench.domains.code_repair.coder_settings import close_coder
from rsi_workbench.domains.code_repair.predictor import deterministic_torch, save_features
from rsi_workbench.domains.code_repair.task_source import load_tasks
from rsi_workbench.experiments.code_repair.config import (
    EXTENSIBLE,
    Config,
    executor_spec,
    stored_config,
    wants_gpu,
)
from rsi_workbench.experiments.code_repair.runs import (
    build_predictor,
    finished_children,
    make_spec,
    method_settings,
    open_or_create,
)
from rsi_workbench.protocol.loop import Loop
from rsi_workbench.records import Run, has_events

CHILD_RUN_EVENTS = ("run_finished",)  # the experiment's events that finish a child run (records.children)


def _extension(stored: Config, config: Config, path: Path) -> dict[str, Any] | None:
    """What ``config`` adds to the stored experiment (None: nothing), or a RunError when it differs
    in anything but added seeds and methods."""
    from rsi_workbench.records import RunError

    a, b = stored.model_dump(mode="json"), config.model_dump(mode="json")
    changed = sorted(k for k in a if k not in EXTENSIBLE and a[k] != b[k])
    if changed:
        raise RunError(
            f"{path}: --extend only adds seeds or methods; the config also changes {changed} "
            "(start a new experiment for that)"
        )
    dropped = {k: sorted(set(a[k]) - set(b[k])) for k in EXTENSIBLE if set(a[k]) - set(b[k])}
    if dropped:
        raise RunError(f"{path}: --extend keeps every finished run; the config drops {dropped}")
    added = {f"added_{k}": [x for x in b[k] if x not in a[k]] for k in sorted(EXTENSIBLE)}
    if not any(added.values()):
        return None
    return {"seeds": b["seeds"], "methods": b["methods"], **added}


def run_experiment(config: Config, out: Path, *, resume: bool = False, extend: bool = False) -> Path:
    """Run (or resume, or extend with more seeds or methods) every (method, seed) run of the experiment."""
    from tqdm.auto import tqdm

    from rsi_workbench.domains.code_repair import Sandbox
    from rsi_workbench.execute import make_executor

    out = Path(out)
    tasks = load_tasks(config.tasks)  # fails before any directory is made
    if not tasks:
        raise ValueError("the task source holds no tasks")
    sandbox = Sandbox(config.sandbox.mode)
    started = _started(out)
    failing = started.get("failing_reference", []) if started else _failing_references(config, sandbox, tasks)
    exp = _open_experiment(out, config, resume=resume, extend=extend)
    deterministic_torch(config.torch_threads)
    cache = ExecutionCache(out / "exec_cache.jsonl")
    t0 = time.time()
    done = {e.payload["run"] for e in exp.events("run_finished")}
    where = executor_spec(config)
    with make_executor(where) as ex:
        fan_out = where.kind == "ray" or (where.kind == "process" and where.workers != 1)
        env = CodeRepairEnvironment(tasks, sandbox, executor=ex if fan_out else None, cache=cache)
        if not exp.events("experiment_started"):
            exp.append(
                "experiment_started",
                {
                    "tasks": [t.task_id for t in tasks],
                    "methods": config.methods,
                    "seeds": config.seeds,
                    "sandbox": sandbox.isolation_record(),  # the isolation achieved and the effective mode
                    "failing_reference": failing,
                },
            )
            exp.commit()
        jobs = [(m, s) for s in config.seeds for m in config.methods]
        ran = any(f"{m}-seed{s}" not in done for m, s in jobs)
        if where.kind == "ray":  # runs (a model coder: seed groups) as Ray tasks (experiment-level fan-out)
            from rsi_workbench.experiments.code_repair.fanout import run_fanned_out

            pending = [(m, s) for m, s in jobs if f"{m}-seed{s}" not in done]
            run_fanned_out(config, out, tasks, env, exp, pending, ex)
            jobs = []
        bar = tqdm(jobs, desc="code-repair runs", unit="run")
        for method, seed in bar:
            name = f"{method}-seed{seed}"
            bar.set_postfix_str(name)
            if name in done:
                continue
            t_setup = time.time()
            predictor = build_predictor(config, method, seed, tasks, env, out)
            t1 = time.time()
            path = out / "runs" / name
            spec = make_spec(config, env, tasks, predictor, method, seed=seed, out=out)
            run = open_or_create(
                path, config, {"method": method, "seed": seed}, kind="code_repair_run", resume=True
            )
            with run:
                loop = Loop.open(
                    spec, run, method_settings(config.protocol, method), seed=seed, progress=True
                )
                loop.run()
            close_coder(spec)
            save_features()
            exp.append(
                "run_finished",
                {
                    "run": name,
                    "method": method,
                    "seed": seed,
                    "wall_s": time.time() - t1,
                    "predictor_s": t1 - t_setup,  # training or loading φ_0 (0-ish when reused)
                    **finished_children(config, out, name, seed),
                },
            )
            exp.commit()
    if ran or not exp.events("experiment_finished"):  # a no-op resume records no session
        exp.append("experiment_finished", {"wall_s": time.time() - t0})
        exp.commit()
    exp.close()
    return out


def _open_experiment(out: Path, config: Config, *, resume: bool, extend: bool) -> Run:
    """The experiment run: created, re-opened (resume: the same config), or extended (``extend``: the
    stored config plus seeds or methods, recorded as an ``experiment_extended`` event)."""
    from rsi_workbench.records import RunError

    if not extend:
        return open_or_create(out, config, {}, kind="code_repair_experiment", resume=resume)
    if not (out / "config.json").exists():
        raise RunError(f"{out}: --extend needs an existing experiment directory (none here)")
    added = _extension(stored_config(out), config, out)
    exp = Run.open(out, mode="a")
    if added is not None:
        exp.append("experiment_extended", added)
        exp.commit()
    return exp


def _started(out: Path) -> dict[str, Any] | None:
    """The ``experiment_started`` payload of an existing experiment directory (None: not started)."""
    if not has_events(out):  # plain or compacted
        return None
    ev = Run.open(out).events("experiment_started")
    return ev[0].payload if ev else None


def _failing_references(config: Config, sandbox: Any, tasks: list[Any]) -> list[str]:
    """Task-file tasks whose reference fails one of its own tests (public or hidden), checked before
    any directory is made: refused unless ``tasks.allow_failing_reference``; the report counts them
    apart. HumanEvalFix (no ``tasks.path``) is not re-checked."""
    if config.tasks.path is None:
        return []
    from rsi_workbench.config import ConfigError

    env = CodeRepairEnvironment(tasks, sandbox)  # its own in-memory cache: the experiment's stays as it was

    failing = [
        t.task_id
        for t in tasks
        if t.reference is not None
        and any(
            o.status.value != "AC"
            for suite in ("public", "hidden")
            for o in env.run(t.task_id, [t.reference], suite)[0]
        )
    ]
    if failing and not config.tasks.allow_failing_reference:
        raise ConfigError(
            f"{config.tasks.path}: {len(failing)} task(s) whose reference fails its own tests: "
            f"{', '.join(failing)} (see `rsi-workbench tasks validate --run {config.tasks.path}`; "
            "set tasks.allow_failing_reference: true to run them anyway, reported apart)",
            file=config.tasks.path,
        )
    return failing


__all__ = [  # the config and one run's pieces are re-exported: the experiment's table of contents
    "CHILD_RUN_EVENTS",
    "Config",
    "build_predictor",
    "executor_spec",
    "make_spec",
    "method_settings",
    "run_experiment",
    "stored_config",
    "wants_gpu",
]
