"""The code-repair experiment of RSI-Anything on the retained-pair engine (``experiment: code_repair``).

``rsi-workbench run configs/code_repair/small.yaml`` runs it; ``rsi-workbench report DIR`` prints the
table. This module is what :data:`rsi_workbench.cli.EXPERIMENT_KINDS` points at.
"""

from __future__ import annotations

from rsi_workbench.experiments.code_repair.experiment import (
    CHILD_RUN_EVENTS,
    Config,
    run_experiment,
    stored_config,
)
from rsi_workbench.experiments.code_repair.report import report

__all__ = ["CHILD_RUN_EVENTS", "Config", "report", "run_experiment", "stored_config"]
