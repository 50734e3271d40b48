"""RSIAgent experiment (``experiment: rsiagent``): the memory engine bound to MiniWoB++ (the environment and
roles of :mod:`rsi_workbench.domains.gui.rsiagent`) or code repair.

``rsi-workbench run configs/rsiagent/smoke.yaml`` runs it; ``rsi-workbench report DIR`` prints the
main table, recursion curves and the four-way ablation. This module is what
:data:`rsi_workbench.cli.EXPERIMENT_KINDS` points at.
"""

from __future__ import annotations

from rsi_workbench.experiments.rsiagent.experiment import CHILD_RUN_EVENTS, Config, run_experiment
from rsi_workbench.experiments.rsiagent.report import report

__all__ = ["CHILD_RUN_EVENTS", "Config", "report", "run_experiment"]
