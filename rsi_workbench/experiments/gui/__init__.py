"""RSI-Anything's GUI experiment (MiniWoB++) on the retained-pair engine (``experiment: gui``).

``rsi-workbench run configs/gui/click_checkboxes.yaml`` runs it; ``rsi-workbench report DIR`` prints
the table. This module is what :data:`rsi_workbench.cli.EXPERIMENT_KINDS` points at.
"""

from __future__ import annotations

from rsi_workbench.experiments.gui.experiment import CHILD_RUN_EVENTS, Config, check_config, run_experiment
from rsi_workbench.experiments.gui.report import report

__all__ = ["CHILD_RUN_EVENTS", "Config", "check_config", "report", "run_experiment"]
