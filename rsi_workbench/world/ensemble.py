"""A vector-input world model with a Gaussian readout: a small batched deep ensemble.

For domains whose state/action is already a feature vector (a reaction's encoded conditions, a
tabular row) rather than text. Each member follows the world model's functional roles (eqs. 2–5):
an encoder E (features → latent z), a latent predictor F (z → ẑ, residual) and a readout R
(ẑ → scalar outcome). M members start from different initialisations and each carries a fixed
random prior function (randomised prior networks, Osband et al. 2018) so members disagree away
from the data; the predictive distribution is Gaussian with mean = member average and variance =
member spread (epistemic) + the fit's residual noise (aleatoric).

:class:`GaussianEnsemble` holds one ensemble per *replicate* (independent seeded runs), so runs
advancing in lockstep can train as one batched network — each replicate's parameters, data,
initialisation and optimiser state stay its own (the batch changes nothing but speed). ``fit``
trains chosen replicates from scratch; ``adapt`` continues from their current weights (the
conditional adaptation of eq. 11–12). Each bumps that replicate's version. The reactions domain
uses it as its yield predictor p(y | reaction, conditions)
(:mod:`rsi_workbench.domains.reactions.predictor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field

from rsi_workbench.config import StrictModel


class EnsembleConfig(StrictModel):
    """Size and training schedule of the deep ensemble."""

    members: int = Field(default=5, ge=2)
    hidden: int = Field(default=16, ge=1)
    fit_steps: int = Field(default=200, ge=1, description="Adam steps of a fit from scratch")
    adapt_steps: int = Field(default=50, ge=1, description="Adam steps of an adaptation (warm start)")
    lr: float = Field(default=0.02, gt=0)
    weight_decay: float = Field(default=1e-3, ge=0)
    noise_floor: float = Field(default=0.05, gt=0, description="min aleatoric std, in units of the yield std")
    prior_scale: float = Field(
        default=1.0, ge=0, description="β of each member's fixed random prior function (0 = plain ensemble)"
    )


@dataclass
class GaussianPrediction:
    """Predictive mean and variance of the outcome for each (replicate, input row), with versions."""

    mean: np.ndarray  # (R, N)
    var: np.ndarray  # (R, N)
    version: list[str]  # per replicate

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.var)


class GaussianEnsemble:
    """Deep ensembles (one per replicate) over a shared feature encoding; mean/variance readout."""

    def __init__(self, n_features: int, seeds: Sequence[int], config: EnsembleConfig | None = None) -> None:
        self.config = config or EnsembleConfig()
        self.d = n_features
        self.seeds = [int(s) for s in seeds]
        self.fits = [0] * len(self.seeds)  # refits/adaptations per replicate (the version counter)
        self._params: list[Any] | None = None  # each (R, M, ...) float64
        self._y_mean = np.zeros(len(self.seeds))
        self._y_std = np.ones(len(self.seeds))
        self._noise = np.ones(len(self.seeds))

    def version(self, r: int) -> str:
        return f"ensemble-s{self.seeds[r]}-v{self.fits[r]}"

    # -- the network: E (encoder) -> F (latent predictor) -> R (readout), batched over (R, M) -------
    def _init_one(self, r: int) -> list[Any]:
        import torch

        g = torch.Generator().manual_seed(self.seeds[r] * 1_000_003 + self.fits[r])
        m, h, d = self.config.members, self.config.hidden, self.d

        def lin(i: int, o: int) -> list[Any]:
            w = (torch.rand(m, i, o, generator=g, dtype=torch.float64) * 2 - 1) / np.sqrt(i)
            return [w, torch.zeros(m, 1, o, dtype=torch.float64)]

        prior = torch.randn(m, d, 1, generator=g, dtype=torch.float64) * self.config.prior_scale
        return [*lin(d, h), *lin(h, h), *lin(h, 1), prior]

    @staticmethod
    def _forward(params: Sequence[Any], x: Any) -> Any:
        """x: (B, M, n, d) -> (B, M, n) member predictions in standardised units."""
        import torch

        we, be, wf, bf, wr, br, prior = params
        z = torch.tanh(x @ we + be)  # E: condition encoding -> latent z           (eq. 2)
        zh = torch.tanh(z @ wf + bf) + z  # F: action-conditioned latent ẑ         (eq. 3)
        out = zh @ wr + br + torch.tanh(x @ prior)  # R: readout + fixed prior      (eq. 4/5)
        return out.squeeze(-1)

    def _train(self, rows: list[int], x: np.ndarray, y: np.ndarray, steps: int, fresh: bool) -> None:
        import torch

        m = self.config.members
        ys = (y - self._y_mean[rows, None]) / self._y_std[rows, None]
        xt = torch.as_tensor(x, dtype=torch.float64)[:, None].expand(-1, m, -1, -1)
        yt = torch.as_tensor(ys, dtype=torch.float64)[:, None, :]
        if fresh or self._params is None:
            per = [self._init_one(r) for r in rows]
            params = [torch.stack([p[i] for p in per]) for i in range(7)]
        else:
            idx = torch.as_tensor(rows)
            params = [p[idx].clone() for p in self._params]
        for p in params[:6]:  # the prior (last) stays fixed
            p.requires_grad_(True)
        opt = torch.optim.Adam(params[:6], lr=self.config.lr, weight_decay=self.config.weight_decay)
        for _ in range(steps):
            opt.zero_grad()
            loss = ((self._forward(params, xt) - yt) ** 2).mean(dim=-1).sum()
            loss.backward()
            opt.step()
        with torch.no_grad():
            resid = self._forward(params, xt).mean(1) - yt[:, 0]
            noise = resid.pow(2).mean(-1).sqrt().numpy()
            if self._params is None:
                r_all, shapes = len(self.seeds), [p.shape[1:] for p in params]
                self._params = [torch.zeros(r_all, *s, dtype=torch.float64) for s in shapes]
            for store, p in zip(self._params, params):
                store[torch.as_tensor(rows)] = p.detach()
        self._noise[rows] = np.maximum(noise, self.config.noise_floor)

    def _standardise(self, rows: list[int], y: np.ndarray) -> None:
        self._y_mean[rows] = y.mean(1)
        sd = y.std(1)
        self._y_std[rows] = np.where(sd > 1e-9, sd, 1.0)

    def fit(self, rows: Sequence[int], x: np.ndarray, y: np.ndarray) -> None:
        """Train the ensembles of ``rows`` from fresh initialisations on x (r, n, d), y (r, n)."""
        self._refit(rows, x, y, self.config.fit_steps, fresh=True)

    def adapt(self, rows: Sequence[int], x: np.ndarray, y: np.ndarray) -> None:
        """Continue training the ensembles of ``rows`` on all their observations (warm start)."""
        self._refit(rows, x, y, self.config.adapt_steps, fresh=False)

    def _refit(self, rows: Sequence[int], x: np.ndarray, y: np.ndarray, steps: int, fresh: bool) -> None:
        rows = list(rows)
        if not rows:
            return
        for r in rows:
            self.fits[r] += 1
        self._standardise(rows, y)
        self._train(rows, x, y, steps, fresh=fresh)

    def init_prior(self) -> None:
        """Untrained initialisations for every replicate (version v0: the prior φ_0, before any data)."""
        import torch

        per = [self._init_one(r) for r in range(len(self.seeds))]
        self._params = [torch.stack([p[i] for p in per]) for i in range(7)]

    def state_dict(self) -> dict[str, Any]:
        """Everything a reload needs (parameters, standardisation, noise, version counters)."""
        return {
            "config": self.config.model_dump(),
            "d": self.d,
            "seeds": self.seeds,
            "fits": list(self.fits),
            "params": self._params,
            "y_mean": self._y_mean.tolist(),
            "y_std": self._y_std.tolist(),
            "noise": self._noise.tolist(),
        }

    @classmethod
    def from_state_dict(cls, st: dict[str, Any]) -> GaussianEnsemble:
        out = cls(int(st["d"]), st["seeds"], EnsembleConfig.model_validate(st["config"]))
        out.fits = [int(f) for f in st["fits"]]
        out._params = st["params"]
        out._y_mean = np.asarray(st["y_mean"], dtype=float)
        out._y_std = np.asarray(st["y_std"], dtype=float)
        out._noise = np.asarray(st["noise"], dtype=float)
        return out

    def predict(self, x: np.ndarray) -> GaussianPrediction:
        """Predictive distribution of every replicate's model on the rows x (N, d), in outcome units."""
        import torch

        if self._params is None:
            raise RuntimeError("predictor has not been fitted")
        with torch.no_grad():
            out = self._forward(self._params, torch.as_tensor(x, dtype=torch.float64)[None, None]).numpy()
        mean = out.mean(1) * self._y_std[:, None] + self._y_mean[:, None]
        var = (out.var(1) + self._noise[:, None] ** 2) * self._y_std[:, None] ** 2
        return GaussianPrediction(
            mean=mean, var=var, version=[self.version(r) for r in range(len(self.seeds))]
        )
