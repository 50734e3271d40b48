"""The predictor phi: encoder E (eq. 2), OPF latent predictor F (eq. 3), readouts R (eqs. 4-5).

Generic pieces other domains reuse:

* :class:`JEPACore` — any ``encoder`` module (inputs -> ``[N, D]``), its EMA target copy (decay
  0.996, updated under ``no_grad``, never receives gradients), the orthogonal factor projection
  (D split into K factors of rank R) with one predictor per factor, and the representation loss
  (prediction + orthogonality + factor activity + encoder variance).
* :class:`OutcomeWorldModel` — JEPACore + any readout heads; the code-repair default has a
  5-status + runtime readout and a whole-suite readout (P(all pass), pass fraction), giving
  utility = P(all pass) + 0.25 * pass fraction (equation 7 with the paper's code-repair weights).

A reaction domain plugs in a condition-vector encoder as ``encoder`` and its own yield readout
(see README "World models"). Parameters carry a *role* (``backbone``/``opf``/``readout``/
``temperature``) used for optimizer groups and for ``Adapt``'s declared trainable subset.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from rsi_workbench.config import StrictModel

STATUS_CLASSES: tuple[str, ...] = ("AC", "WA", "TLE", "RE", "CE")
N_STATUS = len(STATUS_CLASSES)
UTILITY_WEIGHTS = (1.0, 0.25)  # w_{d,1} for P(all pass), w_{d,2} for pass fraction (eq. 7, code repair)
TEMPERATURE_RANGE = (0.2, 5.0)
ROLES = ("backbone", "opf", "readout", "temperature")


class WorldModelConfig(StrictModel):
    """Shape of an :class:`OutcomeWorldModel` (saved with every checkpoint)."""

    input_dim: int
    dim: int = 256
    n_factors: int = 4
    rank: int = 64
    factor_hidden: int = 128
    readout_hidden: int = 64
    ema_decay: float = 0.996
    encoder: str = "projection"  # Linear(input_dim, dim) + LayerNorm over cached backbone features


class Projection(nn.Module):
    """Encoder head of E: Linear(hidden, D) + LayerNorm over pooled backbone features."""

    def __init__(self, input_dim: int, dim: int):
        super().__init__()
        self.linear = nn.Linear(input_dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.linear(x))


class OrthogonalFactorProjection(nn.Module):
    """D-dim latent <-> K factors of rank R through a learnable basis B in R^{D x KR} (soft Gram)."""

    def __init__(self, dim: int = 256, n_factors: int = 4, rank: int = 64):
        super().__init__()
        if n_factors * rank > dim:
            raise ValueError(f"OPF needs n_factors*rank <= dim, got {n_factors}*{rank} > {dim}")
        self.dim, self.n_factors, self.rank = dim, n_factors, rank
        basis = torch.empty(dim, n_factors * rank)
        nn.init.orthogonal_(basis)
        self.basis = nn.Parameter(basis)

    def split(self, z: torch.Tensor) -> torch.Tensor:
        """``[N, D] -> [N, K, R]``: coordinates of z in each factor subspace."""
        return (z @ self.basis).view(z.shape[0], self.n_factors, self.rank)

    def combine(self, factors: torch.Tensor) -> torch.Tensor:
        """``[N, K, R] -> [N, D]``: recombination of the per-factor predictions."""
        return factors.reshape(factors.shape[0], -1) @ self.basis.T

    def orthogonality_penalty(self) -> torch.Tensor:
        """Soft Gram penalty ||B^T B - I||_F^2 / (K R); zero iff the factor bases are orthonormal."""
        gram = self.basis.T @ self.basis
        eye = torch.eye(gram.shape[0], device=gram.device, dtype=gram.dtype)
        return ((gram - eye) ** 2).sum() / gram.shape[0]


class FactorPredictors(nn.Module):
    """One MLP per factor: u_k + mlp_k([u_k, a_k, c_k]) (an unconstrained multi-head predictor)."""

    def __init__(self, n_factors: int, rank: int, hidden: int):
        super().__init__()
        self.heads = nn.ModuleList(
            nn.Sequential(nn.Linear(3 * rank, hidden), nn.GELU(), nn.Linear(hidden, rank))
            for _ in range(n_factors)
        )

    def forward(self, u: torch.Tensor, a: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        outs = [u[:, k] + h(torch.cat([u[:, k], a[:, k], c[:, k]], -1)) for k, h in enumerate(self.heads)]
        return torch.stack(outs, 1)


class JEPACore(nn.Module):
    """z_t = E(s_t), z_hat_{t+1} = F(z_t, a_t, c) with OPF, and the EMA target encoder of o_{t+1}."""

    def __init__(
        self,
        encoder: nn.Module,
        dim: int = 256,
        n_factors: int = 4,
        rank: int = 64,
        factor_hidden: int = 128,
        ema_decay: float = 0.996,
    ):
        super().__init__()
        self.encoder = encoder
        self.target_encoder = copy.deepcopy(encoder)
        for p in self.target_encoder.parameters():
            p.requires_grad_(False)
        self.opf = OrthogonalFactorProjection(dim, n_factors, rank)
        self.predictors = FactorPredictors(n_factors, rank, factor_hidden)
        self.ema_decay = ema_decay

    def encode(self, x: Any) -> torch.Tensor:
        return self.encoder(x)

    def predict_latent(
        self, z: torch.Tensor, a: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Equation 3 with OPF: factor prediction, then recombination (plus the off-factor residual)."""
        u, ua, uc = self.opf.split(z), self.opf.split(a), self.opf.split(c)
        u_hat = self.predictors(u, ua, uc)
        z_hat = z - self.opf.combine(u) + self.opf.combine(u_hat)
        return z_hat, u_hat

    def encode_target(self, x_next: Any) -> torch.Tensor:
        """Target latent of the observed next state: EMA encoder, ``no_grad``, detached."""
        with torch.no_grad():
            return self.target_encoder(x_next).detach()

    @torch.no_grad()
    def ema_update(self) -> None:
        """target <- decay * target + (1 - decay) * online (after each optimizer step)."""
        d = self.ema_decay
        for t, s in zip(self.target_encoder.parameters(), self.encoder.parameters()):
            t.mul_(d).add_(s.detach().to(t.dtype), alpha=1.0 - d)
        for tb, sb in zip(self.target_encoder.buffers(), self.encoder.buffers()):
            tb.copy_(sb)

    def representation_loss(
        self, z: torch.Tensor, z_hat: torch.Tensor, u_hat: torch.Tensor, target: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """prediction + orthogonality + factor activity + encoder variance (JEPA-Anything objective)."""
        prediction = F.mse_loss(z_hat, target)
        orthogonality = self.opf.orthogonality_penalty()
        if u_hat.shape[0] > 1:
            factor_std = u_hat.std(0).mean(-1)  # [K]
            factor_activity = F.relu(0.1 - factor_std).mean()
            encoder_variance = F.relu(1.0 - z.std(0)).mean()
        else:
            factor_activity = encoder_variance = z.new_zeros(())
        total = prediction + orthogonality + factor_activity + encoder_variance
        return {
            "prediction": prediction,
            "orthogonality": orthogonality,
            "factor_activity": factor_activity,
            "encoder_variance": encoder_variance,
            "representation": total,
        }


def _readout(dim: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, out))


@dataclass
class Predictions:
    """Per-row outputs of a predictor, as numpy; every prediction names the component version.

    Rows are (state, action, context) triples. ``status_probs``/``runtime_s`` come from the
    per-test readout (meaningful on per-test rows); ``suite_status_probs``, ``p_all_pass``,
    ``pass_fraction`` and ``utility`` from the whole-suite readout (meaningful on suite rows).
    """

    status_probs: np.ndarray  # [N, 5] over STATUS_CLASSES
    runtime_s: np.ndarray  # [N]
    suite_status_probs: np.ndarray  # [N, 5]
    p_all_pass: np.ndarray  # [N]
    pass_fraction: np.ndarray  # [N]
    utility: np.ndarray  # [N] = P(all pass) + 0.25 * pass fraction
    component_version: str

    def __len__(self) -> int:
        return int(self.status_probs.shape[0])


@runtime_checkable
class Predictor(Protocol):
    """What the protocol needs from any predictor (world model or static verifier)."""

    version: str

    def predict(self, state: Any, action: Any, context: Any) -> Predictions: ...


def temperature_of(log_temperature: torch.Tensor) -> torch.Tensor:
    return log_temperature.exp().clamp(*TEMPERATURE_RANGE)


def utility_from(p_all_pass: torch.Tensor, pass_fraction: torch.Tensor) -> torch.Tensor:
    """Equation 7 for code repair: w1 * P(all pass) + w2 * pass fraction, no uncertainty penalty."""
    return UTILITY_WEIGHTS[0] * p_all_pass + UTILITY_WEIGHTS[1] * pass_fraction


def state_dict_version(module: nn.Module, prefix: str) -> str:
    """Component version = ``prefix-`` + 12 hex of sha256 over the parameters and buffers."""
    h = hashlib.sha256()
    for k, v in sorted(module.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().float().cpu().contiguous().numpy().tobytes())
    return f"{prefix}-{h.hexdigest()[:12]}"


class OutcomeWorldModel(nn.Module):
    """W: JEPACore + per-test readout (5 statuses + runtime) + suite readout (+ pass fraction)."""

    kind = "world_model"

    def __init__(self, config: WorldModelConfig, encoder: nn.Module | None = None):
        super().__init__()
        self.config = config
        enc = encoder if encoder is not None else Projection(config.input_dim, config.dim)
        self.core = JEPACore(
            enc, config.dim, config.n_factors, config.rank, config.factor_hidden, config.ema_decay
        )
        self.readout = _readout(config.dim, config.readout_hidden, N_STATUS + 1)
        # suite readout = the readout plus one pass-fraction channel (paper: copy rows, zero the new one)
        self.suite_readout = copy.deepcopy(self.readout)
        old = self.suite_readout[-1]
        assert isinstance(old, nn.Linear)
        new = nn.Linear(old.in_features, N_STATUS + 2)
        with torch.no_grad():
            new.weight[: N_STATUS + 1].copy_(old.weight)
            new.bias[: N_STATUS + 1].copy_(old.bias)
            new.weight[N_STATUS + 1].zero_()
            new.bias[N_STATUS + 1].zero_()
        self.suite_readout[-1] = new
        self.log_temperature = nn.Parameter(torch.zeros(()), requires_grad=False)  # fit_temperature only
        self.version = "untrained"

    def roles(self) -> dict[str, str]:
        """Parameter name -> role (``backbone``/``opf``/``readout``/``temperature``)."""
        out: dict[str, str] = {}
        for name, _ in self.named_parameters():
            if name == "log_temperature":
                out[name] = "temperature"
            elif name.startswith("core.target_encoder"):
                continue  # EMA only, never optimized
            elif name.startswith("core.encoder"):
                out[name] = "backbone"
            elif name.startswith("core."):
                out[name] = "opf"
            else:
                out[name] = "readout"
        return out

    def forward(self, state: Any, action: Any, context: Any, outcome: Any = None) -> dict[str, torch.Tensor]:
        core = self.core
        z, a, c = core.encode(state), core.encode(action), core.encode(context)
        z_hat, u_hat = core.predict_latent(z, a, c)
        out = {"z": z, "z_hat": z_hat, "u_hat": u_hat}
        r = self.readout(z_hat)
        s = self.suite_readout(z_hat)
        temp = temperature_of(self.log_temperature)
        out["status_logits"] = r[:, :N_STATUS] / temp
        out["runtime"] = F.softplus(r[:, N_STATUS])
        out["suite_logits"] = s[:, :N_STATUS] / temp
        out["suite_runtime"] = F.softplus(s[:, N_STATUS])
        out["pass_logit"] = s[:, N_STATUS + 1]
        if outcome is not None:
            out["target"] = core.encode_target(outcome)
        return out

    @torch.no_grad()
    def predict(self, state: Any, action: Any, context: Any) -> Predictions:
        """Scores for (state, action, context) rows; eval mode, no gradients."""
        was = self.training
        self.eval()
        o = self.forward(state, action, context)
        self.train(was)
        return _to_predictions(o, self.version)


def _to_predictions(o: dict[str, torch.Tensor], version: str) -> Predictions:
    probs = o["status_logits"].float().softmax(-1)
    suite = o["suite_logits"].float().softmax(-1)
    frac = torch.sigmoid(o["pass_logit"].float())
    util = utility_from(suite[:, 0], frac)
    rt = o["runtime"].float() if "runtime" in o else torch.full_like(frac, math.nan)
    return Predictions(
        status_probs=probs.cpu().numpy(),
        runtime_s=rt.cpu().numpy(),
        suite_status_probs=suite.cpu().numpy(),
        p_all_pass=suite[:, 0].cpu().numpy(),
        pass_fraction=frac.cpu().numpy(),
        utility=util.cpu().numpy(),
        component_version=version,
    )


def concat_predictions(parts: Sequence[Predictions]) -> Predictions:
    if not parts:
        raise ValueError("no predictions to concatenate")
    versions = {p.component_version for p in parts}
    if len(versions) != 1:
        raise ValueError(f"predictions from different component versions: {sorted(versions)}")
    arrays = {f: np.concatenate([getattr(p, f) for p in parts]) for f in _ARRAY_FIELDS}
    return Predictions(**arrays, component_version=parts[0].component_version)


_ARRAY_FIELDS = ("status_probs", "runtime_s", "suite_status_probs", "p_all_pass", "pass_fraction", "utility")
