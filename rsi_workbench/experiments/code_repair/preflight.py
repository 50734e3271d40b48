"""Checks of a code-repair config that need its inputs (task file, transitions run), made when the config
is validated (``rsi-workbench run`` checks them before it creates any directory).

Each failure is a :class:`~rsi_workbench.config.ConfigError` ``<config>: <field>: <what is wrong>``,
or the task loader's own :class:`~rsi_workbench.domains.code_repair.tasks.TaskFileError`
(``<task file>:<line>: <field>: ...``; a buggy program or reference that does not compile is one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rsi_workbench.config import config_error
from rsi_workbench.experiments.code_repair.config import NO_MINILM

MIN_PROBLEMS = 3  # cross-fitting: an audit fold, a gate fold and at least one training fold


def preflight(config: Any, source: str) -> None:
    """Check the task batch (ids, programs that compile, enough problems for cross-fitting) and the
    ``world.transitions`` run of a code-repair config; raises ConfigError or TaskFileError."""
    from rsi_workbench.domains.code_repair.task_source import load_tasks

    src = config.tasks
    pool = _task_source(config, source)
    if src.ids:
        known = {t.task_id for t in pool}
        missing = [i for i in src.ids if i not in known]
        if missing:
            raise config_error(
                source,
                "tasks.ids",
                f"unknown task id(s) {missing[:5]}{' ...' if len(missing) > 5 else ''} "
                f"(not in {src.path or 'HumanEvalFix'}; it holds {len(pool)} task(s), e.g. "
                f"{[t.task_id for t in pool[:3]]})",
            )
    batch = load_tasks(src)
    if not batch:
        raise config_error(source, "tasks", "the task source holds no tasks")
    lm = config.world.lm_readout
    if lm is not None and not (Path(lm.pools) / "pools.json").is_file():
        raise config_error(
            source,
            "world.lm_readout.pools",
            f"{lm.pools} holds no pools.json (build it with `rsi-workbench tasks pools TASKS --out DIR`)",
        )
    if config.world.transitions:
        _check_transitions(config.world.transitions, source)
    elif any(m not in NO_MINILM for m in config.methods):  # MiniLM φ
        _check_folds(config, source, batch, pool)


def _task_source(config: Any, source: str) -> list[Any]:
    """Every task of the source (before ``ids``/``limit``): the task file (its own errors name file,
    line and field) or HumanEvalFix."""
    from rsi_workbench.domains.code_repair import load_humanevalfix, load_task_file
    from rsi_workbench.domains.code_repair.tasks import TaskFileError

    path = config.tasks.path
    if path is None:
        return load_humanevalfix()
    if not Path(path).is_file():
        raise config_error(
            source,
            "tasks.path",
            f"task file not found: {path} (relative paths resolve against the config file's folder)",
        )
    try:
        return load_task_file(path)
    except TaskFileError as e:  # names the task file, line and field; the config's field first
        raise config_error(source, "tasks.path", str(e)) from None


def _check_folds(config: Any, source: str, batch: list[Any], pool: list[Any]) -> None:
    """Every cross-fitting split must have training problems: the batch's problems outside its audit
    and gate folds, or the extra training tasks of ``world.train_pool`` (problems outside the batch)."""
    from rsi_workbench.domains.code_repair.world_transitions import problem_of

    problems = sorted({problem_of(t.task_id) for t in batch})
    ids = {t.task_id for t in batch}
    extra = [t for t in pool if t.task_id not in ids][: config.world.train_pool]
    extra_problems = {problem_of(t.task_id) for t in extra} - set(problems)
    where = config.tasks.path or "HumanEvalFix"
    k = config.world.folds
    if len(problems) >= MIN_PROBLEMS and k > len(problems):  # a fold per problem at most: none empty
        raise config_error(
            source,
            "world.folds",
            f"{k}-fold cross-fitting by problem puts each of the task batch's {len(problems)} problems "
            f"({', '.join(problems[:5])}{' ...' if len(problems) > 5 else ''} of {where}) into one of {k} "
            f"folds, so {k - len(problems)} fold(s) would be empty (a predictor trained for no audit task, "
            f"or calibrated on no gate task). Set world.folds to a value from {MIN_PROBLEMS} to "
            f"{len(problems)} (e.g. world.folds: {min(4, len(problems))}), or add tasks",
        )
    if len(problems) >= MIN_PROBLEMS or extra_problems:
        return
    raise config_error(
        source,
        "world.folds",
        f"{config.world.folds}-fold cross-fitting by problem needs at least {MIN_PROBLEMS} problems in the "
        f"task batch (audit, gate and training folds); got {len(problems)} problem(s) in {len(batch)} "
        f"task(s) of {where} ({', '.join(sorted(ids)[:5])}; a problem is a task id's part after the last "
        f"'/'). Add tasks, set world.train_pool to train on tasks of the source outside the batch (it has "
        f"{len(pool) - len(ids)}), or run only methods: [random_k]",
    )


def _check_transitions(path: str, source: str) -> None:
    from rsi_workbench.records import has_events

    if not Path(path).is_dir() or not has_events(path):
        raise config_error(
            source,
            "world.transitions",
            f"{path}: not a world-transitions run directory (relative paths resolve against the "
            "config file's folder; build one with `python -m rsi_workbench.domains.code_repair."
            "world_adapter build DIR`, or set world.transitions: null to build them in the run)",
        )
