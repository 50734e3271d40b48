"""A Gaussian process whose mean function is a transfer prior: adaptation as a Bayesian update.

The deep ensemble's adaptation (:class:`~rsi_workbench.domains.reactions.binding.EnsemblePredictor`)
refits on the target's observations and forgets the prior where they say nothing. Here the prior
stays: with m(x) the transfer prior's predicted yield at every pool condition (its φ0's mean), the
model is

    y(x) = m(x) + r(x),   r ~ GP(0, s² k(x, x')),   y_obs = y(x) + ε,  ε ~ N(0, σ²),

with k BoTorch's default ARD RBF kernel (unit variance; ``residual_sd`` = s is the declared yield
scale of the prior's error) and σ² the fitted noise. Eq. 12's Adapt is the residual posterior on the
target's observations: where there are none, the posterior is the prior N(m(x), s² + σ²); where
there are many, it follows the data. The residual GP has a zero mean and no centring (a constant
learned offset would move the prediction away from the prior where no data are), so the only thing
adaptation can change far from the data is the noise estimate.

Hyperparameters (lengthscales, noise) are fitted like GP-EI's (:func:`~rsi_workbench.domains.reactions.baselines.fit_gp`:
a fixed number of Adam steps on the exact marginal likelihood), warm-started from the previous fit.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import numpy as np
from pydantic import Field

from rsi_workbench.config import StrictModel
from rsi_workbench.domains.reactions.baselines import BOConfig, fit_gp


class PriorGPConfig(StrictModel):
    """The prior-mean GP's settings (``prior_gp:`` of a reactions config)."""

    residual_sd: float = Field(
        default=20.0,
        gt=0,
        description="s: the prior's expected error in yield points (the residual GP's standard deviation)",
    )
    fit_steps: int = Field(default=100, ge=1, description="Adam steps of the marginal-likelihood fit")
    lr: float = Field(default=0.05, gt=0, description="Adam learning rate of the hyperparameter fit")
    warm_start: bool = Field(default=True, description="start each fit from the previous hyperparameters")

    def bo(self) -> BOConfig:
        """The fit settings in GP-EI's form (one fitting routine for both)."""
        return BOConfig(fit_steps=self.fit_steps, lr=self.lr, warm_start=self.warm_start)


class PriorMeanGP:
    """The residual GP over a fixed encoded pool with the transfer prior ``mean`` (one value per pool
    row) as its mean function: ``fit`` on (pool index, yield) pairs, ``predict`` by index."""

    def __init__(self, features: np.ndarray, mean: np.ndarray, seed: int, config: PriorGPConfig) -> None:
        if len(mean) != len(features):
            raise ValueError(f"prior mean has {len(mean)} values for a pool of {len(features)}")
        self.features = features
        self.mean = np.asarray(mean, dtype=float)
        self.seed = int(seed)
        self.config = config
        self.fits = 0
        self.train_index: list[int] = []
        self.train_y: list[float] = []
        self._hyper: dict[str, Any] | None = None
        self._gp: Any = None

    def _model(self, idx: list[int], y: list[float]) -> Any:
        import torch
        from botorch.exceptions.warnings import InputDataWarning
        from botorch.models import SingleTaskGP
        from gpytorch.means import ZeroMean

        i = np.asarray(idx, dtype=int)
        x = torch.as_tensor(self.features[i], dtype=torch.float64)
        r = (np.asarray(y, dtype=float) - self.mean[i]) / self.config.residual_sd
        with warnings.catch_warnings():  # residuals in units of s, deliberately not standardised
            warnings.simplefilter("ignore", InputDataWarning)
            return SingleTaskGP(
                x,
                torch.as_tensor(r, dtype=torch.float64)[:, None],
                mean_module=ZeroMean(),
                outcome_transform=None,
            )

    def fit(self, idx: list[int], y: list[float]) -> PriorMeanGP:
        """The residual posterior on ``(idx, y)`` (hyperparameters warm-started); self unchanged."""
        import torch

        if not idx:
            raise ValueError("a prior-mean GP update needs at least 1 observation")
        out = PriorMeanGP(self.features, self.mean, self.seed, self.config)
        out.fits = self.fits + 1
        out.train_index, out.train_y = [int(i) for i in idx], [float(v) for v in y]
        torch.manual_seed(self.seed * 1009 + len(idx))
        gp = out._model(out.train_index, out.train_y)
        if self._hyper is not None and self.config.warm_start:
            gp.load_state_dict(self._hyper)
        fit_gp(gp, self.config.bo())
        gp.eval()
        out._gp = gp
        out._hyper = {k: v.detach().clone() for k, v in gp.state_dict().items()}
        return out

    def predict(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior predictive (mean, sd) of a measured yield at pool rows ``idx``: m(x) plus the
        residual's posterior; the prior N(m(x), s²) before any observation."""
        idx = np.asarray(idx, dtype=int)
        s = self.config.residual_sd
        if self._gp is None:
            return self.mean[idx].copy(), np.full(len(idx), s)
        import torch

        x = torch.as_tensor(self.features[idx], dtype=torch.float64)
        with torch.no_grad():
            post = self._gp.posterior(x, observation_noise=True)
            mu = post.mean[..., 0].numpy()
            sd = post.variance[..., 0].clamp_min(1e-12).sqrt().numpy()
        return self.mean[idx] + s * mu.astype(float), s * sd.astype(float)

    # -- persistence: the prior mean, the training data and the fitted state rebuild the posterior --
    def to_bytes(self) -> bytes:
        import torch

        buf = io.BytesIO()
        torch.save(
            {
                "seed": self.seed,
                "fits": self.fits,
                "config": self.config.model_dump(),
                "mean": torch.as_tensor(self.mean, dtype=torch.float64),
                "train_index": self.train_index,
                "train_y": self.train_y,
                "state": self._hyper,
            },
            buf,
        )
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, features: np.ndarray) -> PriorMeanGP:
        import torch

        st = torch.load(io.BytesIO(data), weights_only=True)
        m = cls(features, st["mean"].numpy(), int(st["seed"]), PriorGPConfig.model_validate(st["config"]))
        m.fits = int(st["fits"])
        m.train_index, m.train_y = [int(i) for i in st["train_index"]], [float(v) for v in st["train_y"]]
        if st["state"] is not None:
            gp = m._model(m.train_index, m.train_y)
            gp.load_state_dict(st["state"])
            gp.eval()
            m._gp, m._hyper = gp, st["state"]
        return m
