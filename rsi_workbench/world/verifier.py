"""The capacity-matched static verifier: the baseline the paper compares the world model against.

Same encoder head (Linear + LayerNorm over the same backbone features) on state, action and
context, concatenated, then an MLP classification head whose width is chosen so its parameter
count matches the world model's OPF + predictors + readouts. Trained by cross-entropy only on the
same transitions — no latent prediction, no OPF, no EMA target — trained once, never adapted.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from rsi_workbench.world.model import (
    N_STATUS,
    OutcomeWorldModel,
    Predictions,
    Projection,
    WorldModelConfig,
    _to_predictions,
    temperature_of,
)


def matched_hidden(config: WorldModelConfig) -> int:
    """Width h of the 2-hidden-layer head with about as many parameters as OPF + F + readouts."""
    ref = OutcomeWorldModel(config)
    roles = ref.roles()
    target = sum(p.numel() for n, p in ref.named_parameters() if roles.get(n) in ("opf", "readout"))
    d_in, d_out = 3 * config.dim, 2 * N_STATUS + 1
    # params(h) = d_in*h + h + h*h + h + h*d_out + d_out
    b = d_in + 2 + d_out
    return max(8, int((-b + math.sqrt(b * b + 4 * (target - d_out))) / 2))


class StaticVerifier(nn.Module):
    """Encoder head + capacity-matched MLP: 5 per-test logits, 5 suite logits, 1 pass-fraction logit."""

    kind = "static_verifier"
    adaptable = False

    def __init__(self, config: WorldModelConfig, encoder: nn.Module | None = None):
        super().__init__()
        self.config = config
        self.encoder = encoder if encoder is not None else Projection(config.input_dim, config.dim)
        h = matched_hidden(config)
        self.head = nn.Sequential(
            nn.Linear(3 * config.dim, h),
            nn.GELU(),
            nn.Linear(h, h),
            nn.GELU(),
            nn.Linear(h, 2 * N_STATUS + 1),
        )
        self.log_temperature = nn.Parameter(torch.zeros(()), requires_grad=False)
        self.version = "untrained"

    def roles(self) -> dict[str, str]:
        out = {}
        for name, _ in self.named_parameters():
            out[name] = (
                "temperature"
                if name == "log_temperature"
                else "backbone"
                if name.startswith("encoder")
                else "readout"
            )
        return out

    def forward(self, state: Any, action: Any, context: Any, outcome: Any = None) -> dict[str, torch.Tensor]:
        x = torch.cat([self.encoder(state), self.encoder(action), self.encoder(context)], -1)
        y = self.head(x)
        temp = temperature_of(self.log_temperature)
        return {
            "status_logits": y[:, :N_STATUS] / temp,
            "suite_logits": y[:, N_STATUS : 2 * N_STATUS] / temp,
            "pass_logit": y[:, 2 * N_STATUS],
        }

    @torch.no_grad()
    def predict(self, state: Any, action: Any, context: Any) -> Predictions:
        was = self.training
        self.eval()
        o = self.forward(state, action, context)
        self.train(was)
        return _to_predictions(o, self.version)
