"""``WorldModel``: a predictor bundled with its text backbone and feature cache, scoring from text.

This is what the protocol engine calls: ``WorldModel.predict(states, actions, contexts)`` takes the
domain adapter's encoded texts (for code repair see ``domains.code_repair.world_adapter``) and
returns :class:`~rsi_workbench.world.model.Predictions` carrying the component version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from rsi_workbench.world.data import make_batch
from rsi_workbench.world.encoders import FeatureCache, TextBackbone
from rsi_workbench.world.model import Predictions
from rsi_workbench.world.train import predict_batch


@dataclass
class WorldModel:
    """Predictor phi (world model or static verifier) + the backbone whose cached features it reads."""

    predictor: nn.Module
    backbone: TextBackbone
    cache: FeatureCache

    @property
    def version(self) -> str:
        return str(getattr(self.predictor, "version", ""))

    def features(self, texts: Sequence[str]) -> torch.Tensor:
        return torch.as_tensor(self.cache.featurize(self.backbone, list(texts)))

    def predict(self, states: Sequence[str], actions: Sequence[str], contexts: Sequence[str]) -> Predictions:
        """Scores for each (state, action, context) text triple (contexts: a test, or the whole suite)."""
        if not (len(states) == len(actions) == len(contexts)):
            raise ValueError(
                f"states/actions/contexts lengths differ: {len(states)}, {len(actions)}, {len(contexts)}"
            )
        batch = make_batch(
            self.features(states), self.features(actions), self.features(contexts), [0] * len(states)
        )
        return predict_batch(self.predictor, batch)
