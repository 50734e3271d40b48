"""The yield predictors p(y | reaction, conditions): the world package's Gaussian deep ensemble
(:mod:`rsi_workbench.world.ensemble`) under its reaction names and a Gaussian process of the GP-EI
baseline's model family (:mod:`rsi_workbench.domains.reactions.gp`), both over the shared condition
encoding, and an ensemble over learned condition embeddings (:mod:`rsi_workbench.domains.reactions.embed`)."""

from __future__ import annotations

from rsi_workbench.domains.reactions.embed import EmbedConfig, EmbeddingEnsemble
from rsi_workbench.domains.reactions.gp import GPYieldModel
from rsi_workbench.world.ensemble import EnsembleConfig, GaussianEnsemble, GaussianPrediction

DeepEnsembleYieldPredictor = GaussianEnsemble
YieldPrediction = GaussianPrediction

__all__ = [
    "DeepEnsembleYieldPredictor",
    "EmbedConfig",
    "EmbeddingEnsemble",
    "EnsembleConfig",
    "GPYieldModel",
    "YieldPrediction",
]
