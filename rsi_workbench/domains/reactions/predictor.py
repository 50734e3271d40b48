"""The yield predictor p(y | reaction, conditions): the world package's Gaussian deep ensemble over
the shared condition encoding (:mod:`rsi_workbench.world.ensemble`), under its reaction names."""

from __future__ import annotations

from rsi_workbench.world.ensemble import EnsembleConfig, GaussianEnsemble, GaussianPrediction

DeepEnsembleYieldPredictor = GaussianEnsemble
YieldPrediction = GaussianPrediction

__all__ = ["DeepEnsembleYieldPredictor", "EnsembleConfig", "YieldPrediction"]
