"""The yield predictors p(y | reaction, conditions) over the shared condition encoding: the world
package's Gaussian deep ensemble (:mod:`rsi_workbench.world.ensemble`) under its reaction names, and
a Gaussian process of the GP-EI baseline's model family (:mod:`rsi_workbench.domains.reactions.gp`)."""

from __future__ import annotations

from rsi_workbench.domains.reactions.gp import GPYieldModel
from rsi_workbench.world.ensemble import EnsembleConfig, GaussianEnsemble, GaussianPrediction

DeepEnsembleYieldPredictor = GaussianEnsemble
YieldPrediction = GaussianPrediction

__all__ = ["DeepEnsembleYieldPredictor", "EnsembleConfig", "GPYieldModel", "YieldPrediction"]
