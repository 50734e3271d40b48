"""Checks a run would otherwise make only after it created its directory, made when a config is
validated (``rsi-workbench run`` calls :func:`preflight` before anything is written).

Schema checks (unknown keys, types, ranges) are the config models' own; these need the config's
inputs: every ``model:`` block (a local model that exists, an API key variable that is set), the
experiment's references (task ids, dataset names, grid files) and, per kind, what its loop needs
(code repair: programs that compile, enough problems for cross-fitting). Each failure is a
:class:`~rsi_workbench.config.ConfigError` ``<config>: <field>: <what is wrong>``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rsi_workbench.config import config_error


def preflight(config: Any, source: str) -> None:
    """Run every input check of ``config`` (read from ``source``); raises ConfigError (or a task or
    grid loader's own error, which names its file and line)."""
    for field, model in model_blocks(config):
        check_model_block(model, source, field)
    kind = getattr(config, "experiment", None)
    if kind == "code_repair":
        from rsi_workbench.experiments.code_repair.preflight import preflight as code_repair

        code_repair(config, source)
    elif kind == "reactions":
        check_grids(config.grids, source)
        from rsi_workbench.domains.reactions.transfer import check_priors

        check_priors(config.methods, config.grids, source)
    elif kind == "records_smoke":
        check_dataset_names(config.datasets, source, "datasets")
    elif kind == "gui":
        from rsi_workbench.domains.gui.tasks import UnknownTaskError, resolve_task

        try:
            resolve_task(config.task)
        except UnknownTaskError as e:
            raise config_error(source, "task", str(e)) from None
    elif kind == "rsiagent" and getattr(config.environment, "kind", None) == "code_repair":
        check_humanevalfix_ids(config.environment, source)
    elif kind in ("program_agent", "dreaming") and getattr(config.task, "kind", None) == "openevolve":
        check_openevolve_dir(config.task.dir, source)
    elif kind == "discovery_round":
        check_run_dir(config.campaign, source, "campaign", "the finished campaign's run directory")


def check_openevolve_dir(path: str, source: str) -> None:
    """``task.dir``: an OpenEvolve task directory (initial_program.py with evolve-block markers,
    evaluator.py defining evaluate, a readable config.yaml evaluator section)."""
    from rsi_workbench.domains.openevolve import OpenEvolveTaskError, check_task_dir

    try:
        check_task_dir(Path(path))
    except OpenEvolveTaskError as e:
        raise config_error(source, "task.dir", str(e)) from None


def check_humanevalfix_ids(env: Any, source: str) -> None:
    """The RSIAgent code-repair environment's targets and practice pool: HumanEvalFix task ids, the
    two lists disjoint."""
    from rsi_workbench.domains.code_repair import load_humanevalfix

    known = {t.task_id for t in load_humanevalfix()}
    for name in ("targets", "practice"):
        missing = [t for t in getattr(env, name) if t not in known]
        if missing:
            raise config_error(
                source,
                f"environment.{name}",
                f"unknown HumanEvalFix task id(s) {missing} (ids are Python/0 .. Python/{len(known) - 1})",
            )
    overlap = sorted(set(env.targets) & set(env.practice))
    if overlap:
        raise config_error(
            source, "environment.practice", f"must be disjoint from environment.targets; both hold {overlap}"
        )


def check_run_dir(path: str, source: str, field: str, what: str) -> None:
    """``path`` is a run directory (it holds an event log): an earlier run a config reads."""
    from rsi_workbench.records import has_events

    if not has_events(path):
        raise config_error(
            source,
            field,
            f"{path}: not a run directory (no events.jsonl; {what}; relative paths resolve against the "
            "config file's folder)",
        )


def model_blocks(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every ``ModelConfig`` inside a config, with its field path (``coder.model``, ``roles.actor.model``)."""
    from rsi_workbench.models.config import ModelConfig

    if isinstance(obj, ModelConfig):
        yield prefix, obj
    elif isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            yield from model_blocks(getattr(obj, name), f"{prefix}.{name}" if prefix else name)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from model_blocks(v, f"{prefix}.{k}")
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            yield from model_blocks(v, f"{prefix}.{i}")


def check_model_block(model: Any, source: str, field: str) -> None:
    """A ``model:`` block a run can open: a local model (alias, checkpoint directory with config.json
    or .gguf file) that exists, an adapter directory that exists, a ``replay_from`` run, and the API
    key variable of a served model set in the environment (unless the block only replays)."""
    from rsi_workbench.models.prepare import ALIASES
    from rsi_workbench.records import has_events

    if model.backend == "transformers":
        name = model.name
        if name not in ALIASES:
            p = Path(name).expanduser()
            if not ((p.is_dir() and (p / "config.json").exists()) or (p.is_file() and p.suffix == ".gguf")):
                raise config_error(
                    source,
                    f"{field}.name",
                    f"model {name!r} is neither an alias ({', '.join(sorted(ALIASES))}) nor a checkpoint "
                    "directory with config.json nor a .gguf file (relative paths: to the working "
                    "directory; nothing is downloaded)",
                )
        if model.adapter and not Path(model.adapter).expanduser().is_dir():
            raise config_error(source, f"{field}.adapter", f"adapter directory not found: {model.adapter}")
    elif model.api_key_env and not model.replay and not os.environ.get(model.api_key_env):
        raise config_error(
            source, f"{field}.api_key_env", f"the API key variable {model.api_key_env} is not set"
        )
    if model.replay_from and not has_events(model.replay_from):
        raise config_error(
            source, f"{field}.replay_from", f"{model.replay_from}: not a run directory (no events.jsonl)"
        )


def check_dataset_names(names: list[str], source: str, field: str) -> None:
    """Every name is a registered dataset (``rsi_workbench/datasets.json``)."""
    from rsi_workbench.datasets import registry

    known = registry()
    bad = [n for n in names if n not in known]
    if bad:
        raise config_error(source, field, f"unknown dataset(s) {bad} (registered: {sorted(known)})")


def check_grids(grids: list[Any], source: str) -> None:
    """Every grid of a reactions config loads: a registered dataset or an existing CSV (relative paths
    resolve against the config file's folder) with the declared factor and yield columns."""
    from rsi_workbench.datasets import DatasetError
    from rsi_workbench.domains.reactions.grid import GridError, IncompleteGridWarning, load_grid

    for i, g in enumerate(grids):
        if not isinstance(g, str) and g.dataset is not None:
            check_dataset_names([g.dataset], source, f"grids.{i}.dataset")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", IncompleteGridWarning)  # the run warns, it does not fail
                load_grid(g)
        except (GridError, DatasetError) as e:
            raise config_error(source, f"grids.{i}", str(e)) from None
