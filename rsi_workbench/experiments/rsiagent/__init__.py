"""RSIAgent bindings and experiment (``experiment: rsiagent``): MiniWoB++ environment, built-in roles.

``rsi-workbench run configs/rsiagent/smoke.yaml`` runs it; ``rsi-workbench report DIR`` prints the
main table, recursion curves and the four-way ablation. Kept import-light: the experiment module is
imported lazily so the environment and roles can be used without it.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("Config", "run_experiment"):
        from rsi_workbench.experiments.rsiagent import experiment

        return getattr(experiment, name)
    if name == "report":
        from rsi_workbench.experiments.rsiagent.report import report

        return report
    raise AttributeError(name)
