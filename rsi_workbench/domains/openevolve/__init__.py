"""OpenEvolve task directories as program-evolution tasks (used unchanged; evaluated in the sandbox).

See :mod:`.task` (the directory, its evolve block, ``config.yaml``'s evaluator settings, one
sandboxed evaluation and the verdict rule), :mod:`.harness` (the in-sandbox side) and :mod:`.mutate`
(the non-LLM baseline proposer), and docs/extending-dreaming.md.
"""

from rsi_workbench.domains.openevolve.mutate import mutate_block
from rsi_workbench.domains.openevolve.task import (
    END,
    START,
    TASK_ROOT,
    EvaluatorSettings,
    EvolveBlock,
    OpenEvolveTask,
    OpenEvolveTaskError,
    check_task_dir,
    load_task,
    openevolve_isolation,
    read_settings,
    split_evolve_block,
    verdict,
)

__all__ = [
    "END",
    "START",
    "TASK_ROOT",
    "EvaluatorSettings",
    "EvolveBlock",
    "OpenEvolveTask",
    "OpenEvolveTaskError",
    "check_task_dir",
    "load_task",
    "mutate_block",
    "openevolve_isolation",
    "read_settings",
    "split_evolve_block",
    "verdict",
]
