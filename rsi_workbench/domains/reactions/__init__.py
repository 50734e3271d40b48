"""Reaction-condition optimisation as an offline sequential replay over measured yield grids.

``grid`` loads and validates any CSV condition grid and holds the one shared encoding; ``replay``
is the environment that reveals a run condition's measured yield (evidence E3) and spends the
experiment budget; ``predictor`` names the yield predictors p(y | reaction, conditions) — the deep
ensemble, the GP (``gp``) and the ensemble over learned condition embeddings (``embed``);
``baselines`` are BoTorch GP + expected improvement and random selection. The experiment driver is
``rsi_workbench.experiments.reactions.experiment``.
"""

from __future__ import annotations

from rsi_workbench.domains.reactions.grid import (
    BUILTIN_GRIDS,
    ConditionGrid,
    FactorSpec,
    GridError,
    GridSpec,
    encode_conditions,
    load_grid,
)
from rsi_workbench.domains.reactions.replay import (
    EVIDENCE_LEVEL,
    Observation,
    PoolView,
    ReplayEnvironment,
    ReplayError,
)

__all__ = [
    "BUILTIN_GRIDS",
    "EVIDENCE_LEVEL",
    "ConditionGrid",
    "FactorSpec",
    "GridError",
    "GridSpec",
    "Observation",
    "PoolView",
    "ReplayEnvironment",
    "ReplayError",
    "encode_conditions",
    "load_grid",
]
