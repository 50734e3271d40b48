"""Experiment-level fan-out of the code-repair experiment (``executor: {kind: ray}``).

The (method, seed) runs are independent once their predictors exist, so with Ray each runs as one
task (on any node that sees the experiment directory through a shared filesystem):

1. the driver builds the E0 training transitions (once; its sandbox executions fan out as Ray tasks);
2. one task per seed trains (or loads) that seed's predictors: ``predictors/seed<s>`` has one writer;
3. one task per pending (method, seed) run: it takes ``runs/<name>/writer.lock`` (taken over from a
   dead holder only: :class:`~rsi_workbench.execute.writer_lock.WriterLock`), resumes or creates its
   run directory and runs the protocol loop, its sandbox executions in-process.

With a model coder (``coder.kind: llm|hybrid``) the methods of a seed share one record of coder
calls, ``coder/seed<s>`` (a later method's first-round requests are answered from an earlier one's
records), which must keep one writer. Steps 2 and 3 are then one task per seed
(:func:`run_seed_group`): it takes ``coder/seed<s>/writer.lock``, trains (or loads) the seed's
predictors and runs the seed's pending methods in job order, each under its run's writer lock, with
the model loaded once inside the task (never sent from the driver) and shared by the methods. Seeds
run in parallel; a seed's methods run one after another, as they do under ``process``.

A task whose worker dies is retried by Ray and resumes its own run directory from its events, so
nothing is appended twice and no budget is charged twice. The driver alone appends the experiment's
events (``run_finished``, in job order) and alone appends to the shared ``exec_cache.jsonl``: a task
reads that file (tolerating a torn last line) and writes new outcomes to ``runs/<name>/exec_cache.jsonl``,
which the driver merges when the run returns.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rsi_workbench.domains.code_repair.binding import CACHE_KEY_VERSION, ExecutionCache
from rsi_workbench.experiments.code_repair.config import NO_MINILM

RUN_CACHE = "exec_cache.jsonl"  # a run's own new sandbox outcomes, merged by the driver


def read_cache_rows(path: Path) -> dict[str, Any]:
    """The rows of an execution-cache file read without writing to it (a torn last line, an append
    in progress, is skipped; stale-key rows are ignored as :class:`ExecutionCache` does)."""
    if not path.exists():
        return {}
    rows: dict[str, Any] = {}
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key, outcomes = str(row["key"]), row["outcomes"]
        except (json.JSONDecodeError, KeyError, TypeError):
            if i == len(lines) - 1:
                continue
            raise ValueError(f"{path}:{i + 1}: undecodable execution-cache line") from None
        if key.startswith(CACHE_KEY_VERSION + "|"):
            rows[key] = outcomes
    return rows


class RunExecutionCache(ExecutionCache):
    """A task's view of the cache: the experiment's shared file (read only) plus the run's own file
    (read and appended: the task is its one writer, so it may cut a torn last line); ``also``: more
    files read only (the caches of the runs a seed-group task ran before this one)."""

    def __init__(self, shared: Path, own: Path, also: Sequence[Path] = ()):
        super().__init__(own)
        for src in (shared, *also):
            for k, v in read_cache_rows(src).items():
                self.data.setdefault(k, v)


def merge_run_cache(cache: ExecutionCache, run_dir: Path) -> int:
    """Append the outcomes a finished run executed that the shared cache lacks (driver only)."""
    new = {k: v for k, v in read_cache_rows(run_dir / RUN_CACHE).items() if k not in cache.data}
    if new and cache.path is not None:
        cache.data.update(new)
        with open(cache.path, "a") as f:
            f.write("".join(json.dumps({"key": k, "outcomes": v}) + "\n" for k, v in new.items()))
    return len(new)


def _predictor_kinds(methods: list[str]) -> list[str]:
    """The predictors ``methods`` need, in the order the serial experiment trains them."""
    kinds = [
        "static_verifier" if m == "static_verifier" else "world_model" for m in methods if m not in NO_MINILM
    ]
    return list(dict.fromkeys(kinds))


def prepare_seed(config: Any, seed: int, kinds: list[str], out: Path) -> int:
    """Task: train (or load) the predictors of one seed; the seed's training run has this one writer."""
    from rsi_workbench.domains.code_repair import Sandbox
    from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment
    from rsi_workbench.domains.code_repair.predictor import (
        deterministic_torch,
        save_features,
        trained_predictor,
    )
    from rsi_workbench.domains.code_repair.task_source import load_tasks
    from rsi_workbench.experiments.code_repair.runs import training_inputs

    deterministic_torch(config.torch_threads)
    tasks = load_tasks(config.tasks)
    env = CodeRepairEnvironment(tasks, Sandbox(config.sandbox.mode))
    for kind in kinds:
        trained_predictor(config.world, kind, seed, tasks, env, out, **training_inputs(config))
    save_features()
    return seed


def env_settings(env: Any) -> dict[str, Any]:
    """The driver environment's plain settings (e.g. ``track_attempts``) a task's environment copies,
    so a run computes the same in a task as in the driver (not: tasks, sandbox, executor, cache)."""
    skip = {"tasks", "sandbox", "executor", "cache"}
    return {k: v for k, v in vars(env).items() if k not in skip and isinstance(v, (bool, int, float, str))}


def run_one(
    config: Any,
    method: str,
    seed: int,
    out: Path,
    settings: dict[str, Any],
    *,
    coder_load: Callable[[], Any] | None = None,
    also: Sequence[Path] = (),
) -> dict[str, Any]:
    """Task: one (method, seed) run, created or resumed, under the run directory's writer lock
    (``coder_load``, ``also``: from :func:`run_seed_group`, the seed's shared model and earlier caches)."""
    from rsi_workbench.domains.code_repair import Sandbox
    from rsi_workbench.domains.code_repair.binding import CodeRepairEnvironment
    from rsi_workbench.domains.code_repair.coder_settings import close_coder
    from rsi_workbench.domains.code_repair.predictor import deterministic_torch, save_features
    from rsi_workbench.domains.code_repair.task_source import load_tasks
    from rsi_workbench.execute.writer_lock import WriterLock
    from rsi_workbench.experiments.code_repair import runs as R
    from rsi_workbench.protocol.loop import Loop

    name = f"{method}-seed{seed}"
    path = out / "runs" / name
    with WriterLock(path) as lock:
        t_setup = time.time()
        deterministic_torch(config.torch_threads)
        tasks = load_tasks(config.tasks)
        cache = RunExecutionCache(out / "exec_cache.jsonl", path / RUN_CACHE, also)
        env = CodeRepairEnvironment(tasks, Sandbox(config.sandbox.mode), cache=cache)
        for k, v in settings.items():
            setattr(env, k, v)
        predictor = R.build_predictor(config, method, seed, tasks, env, out)
        t1 = time.time()
        spec = R.make_spec(config, env, tasks, predictor, method, seed=seed, out=out, coder_load=coder_load)
        run = R.open_or_create(
            path, config, {"method": method, "seed": seed}, kind="code_repair_run", resume=True
        )
        with run:
            Loop.open(spec, run, R.method_settings(config.protocol, method), seed=seed, progress=False).run()
        close_coder(spec)
        save_features()
    took = lock.took_over
    return {
        "run": name,
        "method": method,
        "seed": seed,
        "wall_s": time.time() - t1,
        "predictor_s": t1 - t_setup,
        "worker": {"host": socket.gethostname(), "pid": os.getpid()},
        **({"took_over_from": {k: took.get(k) for k in ("host", "pid")}} if took else {}),
    }


def run_seed_group(
    config: Any, seed: int, methods: list[str], out: Path, settings: dict[str, Any]
) -> list[dict[str, Any]]:
    """Task (a model coder): one seed's pending ``methods`` in order, the seed's coder record
    (``coder/seed<s>``) with this one writer; the model block's backend is loaded here, on the
    first live call, once for all the methods (a fully recorded seed never loads it)."""
    from rsi_workbench.domains.code_repair.coder_settings import coder_run_path
    from rsi_workbench.execute.writer_lock import WriterLock
    from rsi_workbench.models import shared_loaders

    load = shared_loaders({"coder": config.coder.model})["coder"]
    done: list[dict[str, Any]] = []
    with WriterLock(coder_run_path(out, seed)) as lock:
        prepare_seed(config, seed, _predictor_kinds(methods), out)
        for i, m in enumerate(methods):
            earlier = [out / "runs" / f"{p}-seed{seed}" / RUN_CACHE for p in methods[:i]]
            done.append(run_one(config, m, seed, out, settings, coder_load=load, also=earlier))
    took = lock.took_over
    if took and done:  # the coder record's writer lock taken over from a dead attempt of this task
        done[0]["coder_took_over_from"] = {k: took.get(k) for k in ("host", "pid")}
    return done


def seed_groups(jobs: Sequence[tuple[str, int]]) -> list[tuple[int, list[str]]]:
    """``jobs`` (method, seed) grouped by seed, seeds and methods in job order."""
    groups: dict[int, list[str]] = {}
    for m, s in jobs:
        groups.setdefault(s, []).append(m)
    return list(groups.items())


def run_fanned_out(
    config: Any, out: Path, tasks: list[Any], env: Any, exp: Any, jobs: Sequence[tuple[str, int]], ex: Any
) -> None:
    """The pending ``jobs`` as Ray tasks through ``ex`` (a RayExecutor): one per run, or one per seed
    with a model coder; the driver appends ``run_finished`` for each run in job order and merges each
    run's new executions into the shared cache."""
    from rsi_workbench.domains.code_repair.coder_settings import uses_model
    from rsi_workbench.domains.code_repair.predictor import _transitions

    seeds = sorted({s for m, s in jobs if m not in NO_MINILM})
    if seeds and config.world.transitions is None:
        _transitions(
            config.world, tasks, env, out, source=config.tasks.path, workers=config.sandbox.workers
        )  # once, by the driver
    results: Iterable[dict[str, Any]]
    if uses_model(config.coder):
        groups = seed_groups(jobs)
        group_calls = [(config, s, ms, out, env_settings(env)) for s, ms in groups]
        results = (r for rs in ex.run_tasks(run_seed_group, group_calls) for r in rs)
    else:
        if seeds:
            calls = [(config, s, _predictor_kinds([m for m, s2 in jobs if s2 == s]), out) for s in seeds]
            for _ in ex.run_tasks(prepare_seed, calls):
                pass
        results = ex.run_tasks(run_one, [(config, m, s, out, env_settings(env)) for m, s in jobs])
    from rsi_workbench.experiments.code_repair.runs import finished_children

    for (method, seed), res in zip(jobs, results, strict=True):
        merge_run_cache(env.cache, out / "runs" / f"{method}-seed{seed}")
        exp.append("run_finished", {**res, **finished_children(config, out, res["run"], seed)})
        exp.commit()


__all__ = [
    "RunExecutionCache",
    "merge_run_cache",
    "prepare_seed",
    "read_cache_rows",
    "run_fanned_out",
    "run_one",
    "run_seed_group",
    "seed_groups",
]
